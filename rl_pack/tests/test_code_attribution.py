"""Who caused it: a fault is charged to the candidate only on evidence, else it is infrastructure.

- A run starved of CPU by load outside the sandbox is run again, not scored 0; starved twice, it
  is an infrastructure error (the batch fails under the default ``onError: raise``).
- A sandbox that cannot start (bwrap missing) fails the batch with a clear error, after the
  candidate was tried again and a canary failed too.
- A candidate that breaks the sandbox in two fresh slots while a canary passes is charged
  (``sandbox_broken_by_candidate``); its siblings score as they would alone.

Needs root, bubblewrap and a writable pids cgroup (CI has all three).
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

import rewardkit
from rewardkit.composition import CompositionError
from rewardkit_rl.code import sandbox
from rewardkit_rl.code.sandbox import SandboxError

REFERENCE = {"test_list": ["assert sort_desc([3, 1, 2]) == [3, 2, 1]", "assert sort_desc([]) == []"]}
HONEST = "def sort_desc(xs):\n    return sorted(xs, reverse=True)\n"
# Honest, and it needs a little CPU before it answers: under heavy load it cannot finish in time.
HONEST_WORK = (
    "import time\nstarted = time.process_time()\nwhile time.process_time() - started < 0.3:\n    pass\n"
) + HONEST
TIMEOUT_S = 2.0
HOGS = 24 * (os.cpu_count() or 1)


def config(**params: object) -> dict:
    base = {"timeout_s": TIMEOUT_S, "cgroup": "required", "concurrency": 1}
    return {"rl": {"reward": {"provider": "code-tests", "params": {**base, **params}}, "group_size": 1}}


def group(program: str, group_id: str = "g") -> dict:
    completion = f"```python\n{program}```"
    return {
        "group_id": group_id,
        "rollouts": [{"trajectory_id": "t", "completion": completion, "reference": REFERENCE}],
    }


def diagnostics(candidate) -> dict[str, float]:
    return candidate.diagnostics["code-tests"]


@contextmanager
def saturated(seconds: float) -> Iterator[None]:
    """``HOGS`` busy processes outside the sandbox, all spinning from now until ``seconds`` from now.

    Each in a session of its own: with the kernel's autogroup scheduling a session shares the CPUs
    as one, so hogs in one session would only ever take half of them from the sandbox's slot.
    """
    hog = (
        "import sys, time\n"
        "sys.stdout.write('up\\n')\n"
        "sys.stdout.flush()\n"
        "until = float(sys.stdin.readline())\n"
        "while time.time() < until:\n"
        "    pass\n"
    )
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", hog],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        for _ in range(HOGS)
    ]
    try:
        for process in processes:
            assert process.stdout is not None and process.stdout.readline() == "up\n"
        until = time.time() + seconds
        for process in processes:
            assert process.stdin is not None
            process.stdin.write(f"{until}\n")
            process.stdin.flush()
        yield
    finally:
        for process in processes:
            process.kill()
            process.wait()


def test_an_honest_program_starved_by_load_outside_the_sandbox_is_run_again_not_scored_zero():
    with rewardkit.load(config()) as reward:
        reward.score([group(HONEST, "warm")])  # the slot is warm: no start inside the window
        with saturated(TIMEOUT_S + 0.5):
            batch = reward.score([group(HONEST_WORK)])
    [(_, candidate)] = batch.candidates()
    assert candidate.final == 1.0, candidate
    assert diagnostics(candidate)["starved_reruns"] == 1.0, candidate


def test_a_run_starved_twice_is_an_infrastructure_error_that_fails_the_batch():
    with rewardkit.load(config()) as reward:
        reward.score([group(HONEST, "warm")])
        with saturated(3 * TIMEOUT_S + 2), pytest.raises(CompositionError, match="starved of CPU twice"):
            reward.score([group(HONEST_WORK)])


def test_a_busy_loop_under_no_load_is_the_programs_own_timeout():
    busy = "while True:\n    pass\n"
    with rewardkit.load(config(timeout_s=1.0)) as reward:
        batch = reward.score([group(busy)])
    [(_, candidate)] = batch.candidates()
    seen = diagnostics(candidate)
    assert candidate.final == 0.0 and seen["timeout"] == 1.0, candidate
    assert seen["starved_reruns"] == 0.0
    assert "deadline" in candidate.breakdown["code-tests"]["reason"]


def test_a_sandbox_that_cannot_start_fails_the_batch_naming_the_cause():
    with rewardkit.load(config()) as reward:
        [bound] = reward.worker.providers.values()
        provider = bound.provider
        provider.config = dataclasses.replace(provider.config, bwrap_path="/nonexistent/bwrap")
        with pytest.raises(CompositionError) as raised:
            reward.score([group(HONEST)])
    message = str(raised.value)
    assert "bwrap_path '/nonexistent/bwrap' is not an executable file" in message
    assert "a canary program failed too" in message


def test_a_candidate_that_breaks_fresh_slots_where_a_canary_passes_is_charged(monkeypatch):
    real_run = sandbox.Slot.run

    def run(slot: sandbox.Slot, request: dict) -> dict:
        if "BREAKS_THE_SANDBOX" in request["program"]:
            slot.close()  # as a runner that stops answering leaves it
            raise SandboxError("the sandbox runner did not answer in time and was killed")
        return real_run(slot, request)

    monkeypatch.setattr(sandbox.Slot, "run", run)
    breaker = "BREAKS_THE_SANDBOX = 1\n" + HONEST
    with rewardkit.load({**config(), "rl": {**config()["rl"], "group_size": 3}}) as reward:
        rollouts = [
            {"trajectory_id": f"t{i}", "completion": f"```python\n{program}```", "reference": REFERENCE}
            for i, program in enumerate([HONEST, breaker, HONEST])
        ]
        batch = reward.score([{"group_id": "g", "rollouts": rollouts}])
    honest, broken, other = (candidate for _, candidate in batch.candidates())
    assert (honest.final, broken.final, other.final) == (1.0, 0.0, 1.0)
    assert diagnostics(broken)["sandbox_broken_by_candidate"] == 1.0
    assert "broke the sandbox twice" in broken.breakdown["code-tests"]["reason"]
    assert diagnostics(honest)["sandbox_broken_by_candidate"] == 0.0


def test_a_process_left_in_the_slot_after_an_answer_restarts_the_slot_and_is_charged():
    # The runner ends every process of a run before it answers; the host checks the slot's cgroup
    # anyway. A process there under one of the slot's uids (put there by hand, as one the runner
    # missed) restarts the slot and charges the run that just answered.
    with rewardkit.load(config()) as reward:
        reward.score([group(HONEST, "warm")])
        [bound] = reward.worker.providers.values()
        [slot] = bound.provider._pool._slots
        assert slot.cgroup is not None and slot.starts == 1
        assert slot.uids is not None
        intruder = subprocess.Popen(["sleep", "60"], user=slot.uids.start)  # a uid of an earlier run
        try:
            slot.cgroup.procs_file.write_text(f"{intruder.pid}\n")
            batch = reward.score([group(HONEST)])
            assert intruder.wait(timeout=10) == -9  # the restart killed it
        finally:
            intruder.kill()
            intruder.wait()
        [(_, candidate)] = batch.candidates()
        assert candidate.final == 0.0 and diagnostics(candidate)["sandbox_broken_by_candidate"] == 1.0
        assert "left processes running" in candidate.breakdown["code-tests"]["reason"]
        again = reward.score([group(HONEST, "after")])
        assert [c.final for _, c in again.candidates()] == [1.0] and slot.starts == 2


# Honest beside candidates that keep 15 processes busy until their deadline: each slot has a CPU
# of its own, so the crowd never reaches the honest run (else it would look starved, twice, and
# fail the batch: one candidate failing its siblings). On a kernel with autogroup scheduling each
# slot's session also gets its own share of the CPUs; the pinning holds without it.
CROWD = "import os\nfor _ in range(14):\n    if os.fork() == 0:\n        break\nwhile True:\n    pass\n"


def test_a_crowd_of_busy_processes_in_one_slot_does_not_starve_a_sibling():
    programs = [CROWD, HONEST_WORK, CROWD, HONEST_WORK, CROWD, CROWD]
    rollouts = [
        {"trajectory_id": f"t{i}", "completion": f"```python\n{program}```", "reference": REFERENCE}
        for i, program in enumerate(programs)
    ]
    concurrency = min(2, os.cpu_count() or 1)
    big = {
        **config(concurrency=concurrency),
        "rl": {**config(concurrency=concurrency)["rl"], "group_size": 6},
    }
    with rewardkit.load(big) as reward:  # onError: raise
        batch = reward.score([{"group_id": "crowd", "rollouts": rollouts}])
    finals = [candidate.final for _, candidate in batch.candidates()]
    assert finals == [0.0, 1.0, 0.0, 1.0, 0.0, 0.0], batch
    honest = [candidate for _, candidate in batch.candidates()][1]
    assert diagnostics(honest)["starved_reruns"] == 0.0


def test_a_run_cannot_leave_its_slots_cpu():
    program = (
        "import os\n"
        "def sort_desc(xs):\n"
        "    try:\n"
        "        os.sched_setaffinity(0, set(range(os.cpu_count())))\n"
        "    except PermissionError:\n"
        "        return sorted(xs, reverse=True)\n"
        "    return []\n"
    )
    with rewardkit.load(config()) as reward:
        batch = reward.score([group(program)])
    [(_, candidate)] = batch.candidates()
    assert candidate.final == 1.0, candidate
