"""Who caused it: a fault that could be the infrastructure's is charged only when it reproduces.

A run that timed out, or a slot that failed under it, is run once more alone in its slot after a
canary program drawn for the fault passed there (``rewardkit.scoring.reproduction``):

- it faults again: the candidate's (a timed-out case stays ``timeout``, a failed slot is
  ``sandbox_broken_by_candidate``), the evidence in the ``reproduction`` note, siblings untouched;
- it does not: the second run counts (a host stall of the first run costs the candidate nothing);
- the canary fails: an infrastructure error naming the canary (the batch fails under ``raise``);
- past the batch's rerun budget (``reruns.per_batch``) the canary alone decides.

Nothing is read from figures the program controls: helpers that burn CPU and exit before the
deadline (the attack on the removed starvation rule) only make the program's own timeout.

Needs root, bubblewrap and a writable pids cgroup (CI has all three).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import subprocess
import threading
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

import rewardkit
from rewardkit.scoring.composition import CompositionError
from rewardkit.scoring.scored import ScoredBatch, ScoredCandidate
from rewardkit_rl.code import sandbox
from rewardkit_rl.code.sandbox import SandboxError

REFERENCE = {"test_list": ["assert sort_desc([3, 1, 2]) == [3, 2, 1]", "assert sort_desc([]) == []"]}
HONEST = "def sort_desc(xs):\n    return sorted(xs, reverse=True)\n"
# Honest, and it needs a little CPU before it answers.
HONEST_WORK = (
    "import time\nstarted = time.process_time()\nwhile time.process_time() - started < 0.3:\n    pass\n"
) + HONEST
# Honest too, as another sample wrote it: the stall seam picks this one's runs by their program.
HONEST_TWIN = "# another sample's solution\n" + HONEST
TIMEOUT_S = 2.0
# The attack on the removed starvation rule: four helpers and the main process share the slot's CPU
# for 1.2 s (so the main process piles up run-queue wait), the helpers exit, and the main process
# sleeps past the deadline. At the deadline the live threads show little CPU and a long wait: the
# old rule called that "starved by the machine", ran it again, and failed the batch.
STARVED_LOOKING = (
    "import os, time\n"
    "def spin(seconds):\n"
    "    until = time.monotonic() + seconds\n"
    "    while time.monotonic() < until:\n"
    "        pass\n"
    "helpers = []\n"
    "for _ in range(4):\n"
    "    pid = os.fork()\n"
    "    if pid == 0:\n"
    "        spin(1.2)\n"
    "        os._exit(0)\n"
    "    helpers.append(pid)\n"
    "spin(1.2)\n"
    "for pid in helpers:\n"
    "    os.waitpid(pid, 0)\n"
    "time.sleep(600)\n"
) + HONEST
BUSY = "while True:\n    pass\n"
CANARY_WORDS = "the canary (a program adding two numbers drawn for this fault"


def config(group_size: int = 1, on_error: str | None = None, per_batch: int | None = None,
           **params: object) -> dict[str, Any]:  # fmt: skip
    """A one-provider config; ``on_error`` or ``per_batch`` make it a one-component spec."""
    params = {"timeout_s": TIMEOUT_S, "cgroup": "required", "concurrency": 1, **params}
    if on_error is None and per_batch is None:
        reward: dict[str, Any] = {"provider": "code-tests", "params": params}
    else:
        spec: dict[str, Any] = {"components": [{"provider": "code-tests", "params": params}]}
        if on_error is not None:
            spec["onError"] = on_error
        if per_batch is not None:
            spec["reruns"] = {"per_batch": per_batch}
        reward = {"spec": spec}
    return {"rl": {"reward": reward, "group_size": group_size}}


def group(*programs: str, group_id: str = "g") -> dict[str, Any]:
    rollouts = [
        {"trajectory_id": f"t{index}", "completion": f"```python\n{program}```", "reference": REFERENCE}
        for index, program in enumerate(programs)
    ]
    return {"group_id": group_id, "rollouts": rollouts}


def scored(batch: ScoredBatch) -> list[ScoredCandidate]:
    return [candidate for _, candidate in batch.candidates()]


def diagnostics(candidate: ScoredCandidate) -> dict[str, float]:
    return candidate.diagnostics["code-tests"]


def entry(candidate: ScoredCandidate) -> dict[str, Any]:
    """The candidate's breakdown entry: status, reason, and its notes (``reproduction``)."""
    return candidate.breakdown["code-tests"]


def provider_of(reward: Any) -> Any:
    [bound] = reward.worker.providers.values()
    return bound.provider


# -- a stall of the host, outside every candidate's control ---------------------------------------


def _run_processes(slot: sandbox.Slot) -> list[int]:
    """The slot's processes that belong to runs: the zygote's children (its blank spares, each
    waiting for the order that makes it a run's process) and all they fork. The slot's own
    processes are the four above them: bwrap, bwrap's init, the runner and the zygote."""
    cgroup = slot.cgroup
    if cgroup is None:
        return []
    parents: dict[int, int] = {}
    for pid in cgroup.pids():
        with contextlib.suppress(OSError):
            stat = Path(f"/proc/{pid}/stat").read_text()
            parents[pid] = int(stat.rsplit(")", 1)[1].split()[1])

    def depth(pid: int) -> int:
        steps = 0
        while parents.get(pid) in parents:
            pid, steps = parents[pid], steps + 1
        return steps

    return [pid for pid in parents if depth(pid) >= 4]


def _signal_all(pids: list[int], signal_number: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):  # it ended since the listing
            os.kill(pid, signal_number)


def _keep_stopped(slot: sandbox.Slot, done: threading.Event) -> None:
    """SIGSTOP every run process of the slot until ``done`` (spares the zygote forks meanwhile too)."""
    while not done.is_set():
        _signal_all(_run_processes(slot), signal.SIGSTOP)
        done.wait(0.005)


@pytest.fixture
def stall_runs(monkeypatch: pytest.MonkeyPatch) -> Callable[[Callable[[Mapping[str, Any]], bool]], None]:
    """A test seam on ``Slot.run``: each run whose request ``should_stall`` picks is frozen by the
    host, as on a machine that stopped scheduling it: the blank processes that will run it are
    stopped before they get their orders, and stay stopped until the runner's deadline kills them.
    The spares the run did not use are resumed afterwards, so later runs are not touched."""
    real_run = sandbox.Slot.run

    def install(should_stall: Callable[[Mapping[str, Any]], bool]) -> None:
        def run(slot: sandbox.Slot, request: Mapping[str, Any]) -> dict[str, Any]:
            if not should_stall(request):
                return real_run(slot, request)
            if not slot.alive:
                slot.start()  # so that its spares exist, and are stopped, before the run begins
            _signal_all(_run_processes(slot), signal.SIGSTOP)
            done = threading.Event()
            stopper = threading.Thread(target=_keep_stopped, args=(slot, done), daemon=True)
            stopper.start()
            try:
                return real_run(slot, request)
            finally:
                done.set()
                stopper.join()
                _signal_all(_run_processes(slot), signal.SIGCONT)

        monkeypatch.setattr(sandbox.Slot, "run", run)

    return install


# -- (1) the candidate's own faults reproduce -----------------------------------------------------


def test_a_busy_loop_times_out_again_beside_a_passing_canary_and_is_its_own_timeout() -> None:
    with rewardkit.load(config(timeout_s=1.0)) as reward:
        [candidate] = scored(reward.score([group(BUSY)]))
    seen = diagnostics(candidate)
    assert candidate.final == 0.0 and seen["timeout"] == 1.0 and seen["cases_timeout"] == 2.0, candidate
    assert seen["reruns"] == 1.0
    assert "ran past its deadline" in entry(candidate)["reason"]
    assert entry(candidate)["reproduction"].startswith("reproduced: scored again alone"), candidate
    assert CANARY_WORDS in entry(candidate)["reproduction"]


@pytest.mark.parametrize("on_error", ["raise", "none"])
def test_helpers_that_burn_cpu_and_exit_before_an_idle_timeout_only_charge_the_program(on_error: str) -> None:
    with rewardkit.load(config(group_size=3, on_error=on_error)) as reward:
        batch = reward.score([group(HONEST, STARVED_LOOKING, HONEST_WORK)])  # never raises
    honest, attacker, working = scored(batch)
    assert (honest.final, attacker.final, working.final) == (1.0, 0.0, 1.0), batch
    assert entry(attacker)["status"] == "scored" and diagnostics(attacker)["timeout"] == 1.0
    assert "ran past its deadline" in entry(attacker)["reason"]
    assert entry(attacker)["reproduction"].startswith("reproduced:"), attacker
    assert diagnostics(attacker)["reruns"] == 1.0
    assert diagnostics(honest)["reruns"] == diagnostics(working)["reruns"] == 0.0
    assert attacker.advantage < 0 < honest.advantage
    assert batch.metrics["train/reward/infra_error_rate"] == 0.0


def test_a_candidate_whose_slot_fails_again_where_a_canary_passes_is_charged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real_run = sandbox.Slot.run

    def run(slot: sandbox.Slot, request: Mapping[str, Any]) -> dict[str, Any]:
        if "BREAKS_THE_SANDBOX" in request["program"]:
            slot.close()  # as a runner that stops answering leaves it
            raise SandboxError("the sandbox runner did not answer in time and was killed")
        return real_run(slot, request)

    monkeypatch.setattr(sandbox.Slot, "run", run)
    breaker = "BREAKS_THE_SANDBOX = 1\n" + HONEST
    with rewardkit.load(config(group_size=3)) as reward:
        batch = reward.score([group(HONEST, breaker, HONEST)])
    honest, broken, other = scored(batch)
    assert (honest.final, broken.final, other.final) == (1.0, 0.0, 1.0)
    assert diagnostics(broken)["sandbox_broken_by_candidate"] == 1.0 and diagnostics(broken)["reruns"] == 1.0
    assert "the candidate broke the sandbox" in entry(broken)["reason"]
    assert entry(broken)["reproduction"].startswith("reproduced:")
    assert diagnostics(honest)["sandbox_broken_by_candidate"] == 0.0


def test_a_process_left_in_the_slot_after_an_answer_restarts_the_slot_and_is_charged() -> None:
    # The runner ends every process of a run before it answers; the host checks the slot's cgroup
    # anyway. A process there under one of the slot's uids (put there by hand, as one the runner
    # missed) restarts the slot and charges the run that just answered: deterministic, no rerun.
    with rewardkit.load(config()) as reward:
        reward.score([group(HONEST, group_id="warm")])
        [slot] = provider_of(reward)._pool._slots
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
        [candidate] = scored(batch)
        assert candidate.final == 0.0 and diagnostics(candidate)["sandbox_broken_by_candidate"] == 1.0
        assert diagnostics(candidate)["reruns"] == 0.0
        assert "left processes running" in entry(candidate)["reason"]
        again = reward.score([group(HONEST, group_id="after")])
        assert [c.final for c in scored(again)] == [1.0] and slot.starts == 2


# -- (2) the infrastructure's faults fail the batch, naming the canary -----------------------------


def test_a_sandbox_that_cannot_start_fails_the_batch_naming_the_canary(tmp_path: Path) -> None:
    broken_bwrap = tmp_path / "bwrap"
    broken_bwrap.write_text("#!/bin/sh\necho 'bwrap: cannot set up the namespaces' >&2\nexit 1\n")
    broken_bwrap.chmod(0o755)
    with rewardkit.load(config(group_size=2)) as reward:
        provider = provider_of(reward)
        provider.config = dataclasses.replace(provider.config, bwrap_path=str(broken_bwrap))
        with pytest.raises(CompositionError) as raised:
            reward.score([group(HONEST, HONEST)])
    message = str(raised.value)
    assert CANARY_WORDS in message and "failed too" in message, message
    assert "bwrap: cannot set up the namespaces" in message


def test_a_host_that_freezes_every_run_fails_the_batch_naming_the_canary(
    stall_runs: Callable[[Callable[[Mapping[str, Any]], bool]], None],
) -> None:
    stall_runs(lambda request: True)  # the canary too: the machine, not a candidate, is at fault
    with rewardkit.load(config(timeout_s=1.0)) as reward, pytest.raises(CompositionError) as raised:
        reward.score([group(HONEST_TWIN)])
    message = str(raised.value)
    assert CANARY_WORDS in message and "failed too on that worker: it ran past its deadline" in message


def test_under_on_error_none_a_failed_canary_is_an_error_counted_in_infra_error_rate(
    stall_runs: Callable[[Callable[[Mapping[str, Any]], bool]], None],
) -> None:
    stall_runs(lambda request: True)
    with rewardkit.load(config(on_error="none", timeout_s=1.0)) as reward:
        batch = reward.score([group(HONEST_TWIN)])
    [candidate] = scored(batch)
    assert candidate.final is None and entry(candidate)["status"] == "error"
    assert CANARY_WORDS in entry(candidate)["reason"]
    assert batch.metrics["train/reward/infra_error_rate"] == 1.0


# -- (3) a fault that does not reproduce: the second run counts -----------------------------------


def test_a_run_the_host_froze_once_is_run_again_and_its_second_answer_counts(
    stall_runs: Callable[[Callable[[Mapping[str, Any]], bool]], None],
) -> None:
    stalled: list[str] = []

    def first_run_of_the_twin(request: Mapping[str, Any]) -> bool:
        if request["program"] == HONEST_TWIN and not stalled:
            stalled.append(request["program"])
            return True
        return False

    stall_runs(first_run_of_the_twin)
    with rewardkit.load(config(group_size=2, timeout_s=1.0)) as reward:
        honest, twin = scored(reward.score([group(HONEST, HONEST_TWIN)]))
    assert stalled, "the seam never froze a run"
    assert (honest.final, twin.final) == (1.0, 1.0), twin
    assert diagnostics(twin)["reruns"] == 1.0 and diagnostics(twin)["timeout"] == 0.0
    assert entry(twin)["reproduction"].startswith("not reproduced: the program ran past its deadline")
    assert "reproduction" not in entry(honest)


# -- (4) past the batch's rerun budget, the canary decides ----------------------------------------


def test_with_no_reruns_left_a_passing_canary_charges_the_timeout_without_a_rerun() -> None:
    with rewardkit.load(config(group_size=2, per_batch=0, timeout_s=1.0)) as reward:
        honest, busy = scored(reward.score([group(HONEST, BUSY)]))
    assert (honest.final, busy.final) == (1.0, 0.0)
    assert diagnostics(busy)["timeout"] == 1.0 and diagnostics(busy)["reruns"] == 0.0
    assert "this batch's 0 reruns were spent; a canary passed" in entry(busy)["reproduction"]


def test_the_budget_is_the_batchs_reruns_then_the_canary_decides() -> None:
    with rewardkit.load(config(group_size=3, per_batch=1, timeout_s=1.0)) as reward:
        # two texts, so two suspects (code-tests runs equal answers once and shares the result)
        batch = reward.score([group(BUSY, HONEST, "# another sample's copy\n" + BUSY)])
        first, honest, second = scored(batch)
        assert (first.final, honest.final, second.final) == (0.0, 1.0, 0.0)
        assert sorted(diagnostics(c)["reruns"] for c in (first, second)) == [0.0, 1.0]
        # The next batch has a budget of its own.
        again, _, _ = scored(reward.score([group(BUSY, HONEST, HONEST, group_id="next")]))
        assert diagnostics(again)["reruns"] == 1.0


def test_with_no_reruns_left_a_failing_canary_still_fails_the_batch(
    stall_runs: Callable[[Callable[[Mapping[str, Any]], bool]], None],
) -> None:
    stall_runs(lambda request: True)
    spent = config(per_batch=0, timeout_s=1.0)
    with rewardkit.load(spent) as reward, pytest.raises(CompositionError) as raised:
        reward.score([group(HONEST_TWIN)])
    assert CANARY_WORDS in str(raised.value)


# -- the removed starvation rule's params -----------------------------------------------------------


def test_the_starvation_params_still_load_with_a_future_warning_and_change_nothing() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old = rewardkit.load(config(starved_cpu_share=0.5, starved_wait_share=0.25))
    with old, rewardkit.load(config()) as plain:
        assert [bound.identity for bound in old.worker.providers.values()] == [
            bound.identity for bound in plain.worker.providers.values()
        ]
    [warning] = [w for w in caught if issubclass(w.category, FutureWarning)]
    message = str(warning.message)
    assert "starved_cpu_share" in message and "starved_wait_share" in message and "0.3" in message


# -- a crowded slot stays its own ------------------------------------------------------------------

# Honest beside candidates that keep 15 processes busy until their deadline: each slot has a CPU
# of its own, so the crowd never reaches the honest run. On a kernel with autogroup scheduling each
# slot's session also gets its own share of the CPUs; the pinning holds without it.
CROWD = "import os\nfor _ in range(14):\n    if os.fork() == 0:\n        break\nwhile True:\n    pass\n"


def test_a_crowd_of_busy_processes_in_one_slot_does_not_reach_a_sibling() -> None:
    concurrency = min(2, os.cpu_count() or 1)
    with rewardkit.load(config(group_size=6, concurrency=concurrency)) as reward:  # onError: raise
        # each a distinct text (code-tests runs equal answers once), so four crowds run at once
        crowds = [f"{CROWD}# crowd {number}\n" for number in range(4)]
        honest = [f"{HONEST_WORK}# honest {number}\n" for number in range(2)]
        batch = reward.score([group(crowds[0], honest[0], crowds[1], honest[1], crowds[2], crowds[3])])
    finals = [candidate.final for candidate in scored(batch)]
    assert finals == [0.0, 1.0, 0.0, 1.0, 0.0, 0.0], batch
    honest = scored(batch)[1]
    assert diagnostics(honest)["reruns"] == 0.0


def test_a_run_cannot_leave_its_slots_cpu() -> None:
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
        [candidate] = scored(reward.score([group(program)]))
    assert candidate.final == 1.0, candidate


# -- stdin/stdout tests: one candidate spends at most one of the batch's reruns ---------------------

# Six cases, each of which the attacker runs past its deadline; rerunning each case would spend six
# reruns of the batch, leaving none for an honest sibling whose run the host froze once.
IO_REFERENCE = {"inputs": [f"{number}\n" for number in range(6)], "outputs": [str(2 * n) for n in range(6)]}
IO_HONEST = "print(2 * int(input()))\n"
IO_ATTACKER = "import time\nif int(input()) >= 0:\n    time.sleep(600)\n"


def test_an_io_candidate_whose_every_case_times_out_spends_one_rerun_and_a_flaky_sibling_keeps_its_own(
    stall_runs: Callable[[Callable[[Mapping[str, Any]], bool]], None],
) -> None:
    stalled: list[str] = []

    def the_honest_run_once(request: Mapping[str, Any]) -> bool:
        # the honest candidate runs after the attacker (one worker, candidates in order)
        if request["program"] == IO_HONEST and not stalled:
            stalled.append(str(request["stdin"]))
            return True
        return False

    stall_runs(the_honest_run_once)
    rollouts = [
        {"trajectory_id": name, "completion": f"```python\n{program}```", "reference": IO_REFERENCE}
        for name, program in (("attacker", IO_ATTACKER), ("honest", IO_HONEST))
    ]
    with rewardkit.load(config(group_size=2, per_batch=2, timeout_s=1.0)) as reward:  # onError: raise
        batch = reward.score([{"group_id": "io", "rollouts": rollouts}])
    attacker, honest = scored(batch)
    assert stalled, "the seam never froze the honest run"
    assert (attacker.final, honest.final) == (0.0, 1.0), honest
    assert diagnostics(attacker)["cases_timeout"] == 6.0 and diagnostics(attacker)["reruns"] == 1.0
    assert entry(attacker)["reproduction"].startswith("reproduced: scored again alone")
    assert diagnostics(honest)["reruns"] == 1.0 and diagnostics(honest)["timeout"] == 0.0
