"""The ``math`` verifier charges what a candidate's text causes, and only on evidence (issue: a candidate
can only hurt itself): cost bombs are refused before any worker, worker timeouts and memory errors
are charged when the candidate computed them, anything else stays infrastructure.

This module is also the workers' target in the timeout tests (``check``, below): it answers like
the real check, except for a few marker answers that spin, sleep, exhaust memory or die.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import rewardkit
from rewardkit.contracts import RewardCandidate, RewardContext, RewardGroupRequest, RewardProviderResult
from rewardkit_rl.verifiers import math_check
from rewardkit_rl.verifiers.math_verifier import MathVerifier, _from_outcome
from rewardkit_rl.verifiers.pool import Outcome

TESTS = str(Path(__file__).resolve().parent)
TARGET = "test_math_attribution:check"
SPIN = "\\spin"  # computes until it is killed
SLEEP = "\\sleep"  # waits until it is killed (no CPU)
HOG = "\\hog"  # computes a while, then runs out of memory
DIE = "\\die"  # killed by a signal the pool did not send (as by the OOM killer)
SPINNING_REFERENCE = "\\spinref"  # a reference whose own check never ends


def nested_fractions(depth: int, inner: str) -> str:
    return "\\frac{1}{" * depth + inner + "}" * depth


BOMBS = [
    "9^{9^{9^{9}}}",
    "10^{10^{10}}",
    "2^{2^{40}}",
    "(10^6)!",
    "\\prod_{k=1}^{10^6} k",
    nested_fractions(60, "2"),
    "\\sum_{k=1}^{1000} k!",
    "\\sin(" * 12 + "2" + ")" * 12,
]


# -- the workers' target ------------------------------------------------------------------------


def check(request: tuple[str, ...]) -> tuple[str, Any]:
    """``math_check.check``, except for the marker answers (and the marker reference)."""
    if request == ("gold", SPINNING_REFERENCE) or (
        request[0] == "verify" and request[1] == SPINNING_REFERENCE
    ):
        while True:
            pass
    if request[0] == "verify":
        answer = request[2]
        if answer == SPIN:
            while True:
                pass
        if answer == SLEEP:
            time.sleep(3600)
        if answer == HOG:
            started = time.process_time()
            while time.process_time() - started < 0.3:
                pass
            raise MemoryError
        if answer == DIE:
            os.kill(os.getpid(), signal.SIGKILL)
    return math_check.check(request)


warm_up = math_check.warm_up


@contextmanager
def verifier_with_markers(timeout_s: float = 1.0, workers: int = 2) -> Iterator[MathVerifier]:
    """A ``math`` verifier whose workers run ``check`` above (this folder on their path)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [TESTS, os.environ.get("PYTHONPATH")])))
        provider = MathVerifier(timeout_s=timeout_s, workers=workers)
        provider.check_target = TARGET
        try:
            yield provider
        finally:
            provider.close()


@pytest.fixture(scope="module")
def markers() -> Iterator[MathVerifier]:
    with verifier_with_markers() as provider:
        yield provider


def request(reference: str, *answers: str, group: str = "g") -> RewardGroupRequest:
    candidates = tuple(
        RewardCandidate(f"c{index}", f"The answer is \\boxed{{{answer}}}.")
        for index, answer in enumerate(answers)
    )
    return RewardGroupRequest(group, candidates, RewardContext(reference=reference))


def scores(verifier: MathVerifier, *requests: RewardGroupRequest) -> list[list[RewardProviderResult]]:
    return [[item.result for item in group.items] for group in verifier.evaluate_many(list(requests))]


def diagnostics(result: RewardProviderResult) -> dict[str, float]:
    return {item.name: item.value for item in result.diagnostics}


def settled(verifier: MathVerifier) -> MathVerifier:
    """The verifier once every worker is up: a replacement warming up beside a timed request
    would take CPU from it."""
    pool = verifier.pool
    pool._ensure_started()
    deadline = time.monotonic() + 60
    while len(pool.pids()) < pool.size and time.monotonic() < deadline:
        time.sleep(0.05)
    return verifier


def charged_unless_starved(result: RewardProviderResult, diagnostic: str) -> None:
    """Charged, non-deterministically; on a machine too loaded to give the worker half a CPU the
    rule says infrastructure instead, and the error must say why it was not charged."""
    if result.status == "error":
        assert "not charged" in (result.reason or "") and "of the time on a CPU" in (result.reason or ""), (
            result
        )
        return
    assert_charged(result, diagnostic, deterministic=False)


def assert_charged(result: RewardProviderResult, diagnostic: str, *, deterministic: bool) -> None:
    assert result.status == "scored" and result.terms == {"task": 0.0}, result
    assert diagnostics(result)[diagnostic] == 1.0 and result.reason, result
    assert result.charge == ("deterministic" if deterministic else "nondeterministic"), result


# -- cost bombs ------------------------------------------------------------------------------------


def test_cost_bombs_score_zero_and_the_batch_completes_under_raise() -> None:
    """Today each bomb keeps a worker busy until its timeout, an error, and ``onError: raise``
    (the default) fails the batch."""
    honest = ["\\frac{1}{2}", "0.5", "\\dfrac{2}{4}", "3", "\\frac{2}{4}"]
    answers = honest + BOMBS
    rollouts = [
        {"trajectory_id": f"t{index}", "completion": f"So \\boxed{{{answer}}}.", "reference": "\\frac12"}
        for index, answer in enumerate(answers)
    ]
    with rewardkit.load({"rl": {"reward": {"provider": "math"}, "group_size": len(rollouts)}}) as reward:
        batch = reward.score([("q1", rollouts)])
    candidates = [candidate for _, candidate in batch.candidates()]
    assert [candidate.final for candidate in candidates[: len(honest)]] == [1.0, 1.0, 1.0, 0.0, 1.0]
    for candidate in candidates[len(honest) :]:
        assert candidate.final == 0.0, candidate
        assert candidate.diagnostics["math"]["refused_cost"] == 1.0, candidate
        assert "refused unevaluated" in candidate.breakdown["math"]["reason"], candidate


def test_bombs_are_refused_before_any_worker_starts() -> None:
    verifier = MathVerifier(timeout_s=5.0, workers=1)
    try:
        (results,) = scores(verifier, request("\\frac{1}{2}", *BOMBS, "\\dfrac{1}{2}", "7"))
        for result in results[: len(BOMBS)]:
            assert_charged(result, "refused_cost", deterministic=True)
        assert [result.terms["task"] for result in results[len(BOMBS) :]] == [1.0, 0.0]
        assert verifier._pool is None  # decided in the calling process: no worker was started
    finally:
        verifier.close()


def test_a_structure_the_reference_shares_is_compared_not_refused(markers: MathVerifier) -> None:
    """The reference 9^{9^{9}} is itself a tower over the digits limit: answers of that size are
    compared (here: not equal, told apart in milliseconds), an answer spelled as the reference is
    never refused, and a bomb of another kind (nested fractions) still is."""
    tower, fractions = scores(
        markers,
        request("9^{9^{9}}", "9^{9^{9}}+1", "2\\cdot 9^{9^{9}}", "9^{ 9^{9} }", nested_fractions(60, "2")),
        request(
            nested_fractions(9, "2"),
            nested_fractions(9, "3"),
            nested_fractions(9, "2").replace("}", "} "),
        ),
    )
    assert [result.terms["task"] for result in tower[:3]] == [0.0, 0.0, 1.0]
    assert all(
        result.status == "scored" and diagnostics(result)["refused_cost"] == 0.0 for result in tower[:3]
    )
    assert_charged(tower[3], "refused_cost", deterministic=True)
    # the reference nests 9 fractions (over the limit of 8) too: compared
    assert [result.terms["task"] for result in fractions] == [0.0, 1.0]
    assert all(diagnostics(result)["refused_cost"] == 0.0 for result in fractions)


# -- worker timeouts and memory errors ------------------------------------------------------------------


def test_a_timeout_the_candidate_computed_is_charged(markers: MathVerifier) -> None:
    """Today a timeout is always an error: ``onError: raise`` fails the batch on one candidate."""
    ((spin, right, wrong),) = scores(settled(markers), request("x+1", SPIN, "1+x", "x+2"))
    charged_unless_starved(spin, "timeout")
    assert "computed" in (spin.reason or "")
    assert [right.terms["task"], wrong.terms["task"]] == [1.0, 0.0]


def test_a_memory_error_the_candidate_computed_is_charged(markers: MathVerifier) -> None:
    ((hog, right),) = scores(settled(markers), request("x+1", HOG, "1+x"))
    charged_unless_starved(hog, "out_of_memory")
    assert right.terms["task"] == 1.0


def test_a_lone_timeout_is_charged_after_a_canary(markers: MathVerifier) -> None:
    """No other check in the batch: the reference's own check runs as a canary and finishes."""
    ((spin,),) = scores(settled(markers), request("y-3", SPIN))
    charged_unless_starved(spin, "timeout")


def test_a_timeout_while_the_worker_waited_is_an_error(markers: MathVerifier) -> None:
    ((sleep, right),) = scores(settled(markers), request("x+1", SLEEP, "1+x"))
    assert sleep.status == "error" and sleep.charge is None
    assert "not charged" in (sleep.reason or "") and "CPU" in (sleep.reason or "")
    assert right.terms["task"] == 1.0


def test_a_timeout_without_a_usable_reference_is_an_error(markers: MathVerifier) -> None:
    """The reference's check itself never finishes (the canary fails): nothing is known."""
    ((spin,),) = scores(settled(markers), request(SPINNING_REFERENCE, SPIN))
    assert spin.status == "error" and "not charged" in (spin.reason or ""), spin


def test_a_kill_the_pool_did_not_send_is_an_error(markers: MathVerifier) -> None:
    """A worker killed by a signal the pool did not send (as by the OOM killer) is infrastructure;
    a memory error the candidate computed is charged."""
    ((hog,),) = scores(settled(markers), request("x+1", HOG))
    ((died, right),) = scores(markers, request("x+1", DIE, "1+x"))
    assert died.status == "error" and died.charge is None and "worker died" in (died.reason or "")
    assert right.terms["task"] == 1.0
    charged_unless_starved(hog, "out_of_memory")


def test_the_cpu_share_decides() -> None:
    spun = Outcome("timeout", reason="timeout: no verdict within 1s", cpu_share=0.9)
    waited = Outcome("timeout", reason="timeout: no verdict within 1s", cpu_share=0.2)
    unknown = Outcome("timeout", reason="timeout: no verdict within 1s", cpu_share=None)
    assert_charged(_from_outcome(spun, None), "timeout", deterministic=False)
    for outcome in (waited, unknown):
        assert _from_outcome(outcome, None).status == "error"
    assert _from_outcome(spun, "no check finished within its time").status == "error"
