"""The ``math`` verifier charges what a candidate's text causes, and only what it causes (issue 40: a
candidate can only hurt itself): cost bombs and answers whose cost cannot be estimated are refused
before any worker (deterministic); a worker's timeout, ``MemoryError``, exception or death is charged
only when it reproduces on a worker leased for it, just after the canary (the group's reference
compared with itself) passed there; a fault that does not reproduce leaves the second verdict; a
canary that fails is the infrastructure's, and under ``onError: raise`` the batch fails naming it.

This module is also the workers' target in the fault tests (``check`` and ``crash``, below): ``check``
answers like the real check, except for a few marker answers that spin, sleep, exhaust memory or
die (always, or once); ``crash`` kills every worker it runs in (a machine, not a candidate, at fault).
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
from rewardkit.scoring.composition import CompositionError
from rewardkit.scoring.scored import ScoredBatch, ScoredCandidate
from rewardkit_rl.verifiers import math_check
from rewardkit_rl.verifiers.math_cost import measure, refusal
from rewardkit_rl.verifiers.math_verifier import CANARY_NAME, MathVerifier

TESTS = str(Path(__file__).resolve().parent)
TARGET = "test_math_attribution:check"
CRASHING_TARGET = "test_math_attribution:crash"
SPIN = "\\spin"  # computes until it is killed
SLEEP = "\\sleep"  # waits until it is killed (no CPU)
HOG = "\\hog"  # computes a while, then runs out of memory
DIE = "\\die"  # killed by a signal the pool did not send (as by the OOM killer)
# Killed the first time a worker meets it (whichever worker unlinks the file named by
# DIE_ONCE_FILE), then compared as the rest of the answer: a fault of the machine that passes.
DIE_ONCE = "\\dieonce "
DIE_ONCE_FILE = "REWARDKIT_TEST_MATH_DIE_ONCE"
SPINNING_REFERENCE = "\\spinref"  # a reference whose own check never ends
# A real answer that makes the comparison raise (a TypeError in SymPy: "x \\le i" compares with a
# non-real number), whatever the reference; revision 6 made it an error, which failed the batch.
RAISING = "x\\lei"
# A real answer that the cost guards let through (a few hundred digits) but that keeps math-verify busy
# for 6 to 8 s against a number, whatever the hash seed (``2^{2^{11}}+1`` against ``2^{2048}`` takes
# seconds under most seeds, none under some).
SLOW = "(\\sqrt{2}+\\sqrt{3}+\\sqrt{5})^{300}"
SLOW_REFERENCE = "2"
CANARY_WORDS = f"the canary ({CANARY_NAME})"


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
# What the reader of revision 6 could not price and let through to a worker: the gamma function
# (read as a variable: \\Gamma(10^7) kept a worker busy for minutes) and \\operatorname names that
# math-verify's parser turns into matrix builders.
UNPRICED = [
    "\\Gamma(10^{7})",
    "\\gamma\\left(10^6\\right)",
    "\\operatorname{eye}(10^5)",
    "\\operatorname{zeros}(10^4, 10^4)",
]


# -- the workers' targets -----------------------------------------------------------------------


def check(request: tuple[str, ...]) -> tuple[str, Any]:
    """``math_check.check``, except for the marker answers (and the marker reference)."""
    if request[1] == SPINNING_REFERENCE and request[0] in ("gold", "verify", "canary"):
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
        if answer.startswith(DIE_ONCE.strip()):
            try:
                os.unlink(os.environ[DIE_ONCE_FILE])
            except FileNotFoundError:
                return math_check.check(("verify", request[1], answer[len(DIE_ONCE) :]))
            os.kill(os.getpid(), signal.SIGKILL)
    return math_check.check(request)


def crash(request: tuple[str, ...]) -> tuple[str, Any]:
    """A broken machine: every request kills the worker it runs in, the canary's too."""
    os.kill(os.getpid(), signal.SIGKILL)
    raise AssertionError("unreachable")


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


@pytest.fixture
def target(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Point the workers of every ``math`` provider loaded in the test at a target of this module."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [TESTS, os.environ.get("PYTHONPATH")])))

    def point(name: str) -> None:
        monkeypatch.setattr(MathVerifier, "check_target", name)

    return point


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


def assert_charged(result: RewardProviderResult, diagnostic: str, *, reproduced: bool = False) -> None:
    assert result.status == "scored" and result.terms == {"task": 0.0}, result
    assert diagnostics(result)[diagnostic] == 1.0 and result.reason, result
    assert result.charge == "deterministic", result
    if reproduced:
        assert result.notes["reproduction"].startswith("reproduced: scored again alone"), result
        assert CANARY_WORDS in result.notes["reproduction"] and diagnostics(result)["reruns"] == 1.0


def config(group_size: int, on_error: str | None = None, per_batch: int | None = None,
           **params: object) -> dict[str, Any]:  # fmt: skip
    """A ``math`` config; ``on_error`` or ``per_batch`` make it a one-component spec."""
    if on_error is None and per_batch is None:
        reward: dict[str, Any] = {"provider": "math", "params": params}
    else:
        spec: dict[str, Any] = {"components": [{"provider": "math", "params": params}]}
        if on_error is not None:
            spec["onError"] = on_error
        if per_batch is not None:
            spec["reruns"] = {"per_batch": per_batch}
        reward = {"spec": spec}
    return {"rl": {"reward": reward, "group_size": group_size}}


def group(reference: str, *answers: str, group_id: str = "g") -> dict[str, Any]:
    rollouts = [
        {"trajectory_id": f"t{index}", "completion": f"So \\boxed{{{answer}}}.", "reference": reference}
        for index, answer in enumerate(answers)
    ]
    return {"group_id": group_id, "rollouts": rollouts}


def scored(batch: ScoredBatch) -> list[ScoredCandidate]:
    return [candidate for _, candidate in batch.candidates()]


def entry(candidate: ScoredCandidate) -> dict[str, Any]:
    """The candidate's breakdown entry: status, reason, and its notes (``reproduction``)."""
    return candidate.breakdown["math"]


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
            assert_charged(result, "refused_cost")
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
    assert_charged(tower[3], "refused_cost")
    # the reference nests 9 fractions (over the limit of 8) too: compared
    assert [result.terms["task"] for result in fractions] == [0.0, 1.0]
    assert all(diagnostics(result)["refused_cost"] == 0.0 for result in fractions)


def test_what_the_guards_cannot_price_counts_as_expensive() -> None:
    """Revision 6 read ``\\Gamma`` and an unknown ``\\operatorname`` as variables: each of these
    reached a worker (``\\Gamma(10^7)`` ran for minutes there). Now each is refused unevaluated,
    in the calling process; a reference that uses the construct lets it through, and the names the
    reader prices (lcm, floor, ...) stay priced."""
    verifier = MathVerifier(timeout_s=5.0, workers=1)
    try:
        (results,) = scores(verifier, request("2", *UNPRICED, "\\Gamma(3)"))
        for result in results[: len(UNPRICED)]:
            assert_charged(result, "refused_cost")
        assert "explode" in (results[0].reason or "")
        assert "cost cannot be estimated" in (results[2].reason or "")
        assert results[-1].status == "scored" and diagnostics(results[-1])["refused_cost"] == 0.0
        assert verifier._pool is not None  # \\Gamma(3) was compared by a worker, the others were not
    finally:
        verifier.close()
    two = measure("2")
    assert refusal(measure("\\operatorname{eye}(3)"), measure("\\operatorname{eye}(10^5)")) is None
    assert refusal(two, measure("\\operatorname{lcm}(4, 6)")) is None
    assert refusal(two, measure("\\angle\\gamma + \\Gamma")) is None  # letters, not the function


# -- a fault that reproduces is the candidate's ------------------------------------------------------


@pytest.mark.parametrize("on_error", ["raise", "none"])
def test_an_answer_that_makes_the_comparison_raise_is_its_own_zero(on_error: str) -> None:
    """Revision 6 made the exception an error ("math-verify failed"): under ``raise`` the batch
    failed, and the right siblings spelled as the reference, whose reference no worker had vouched
    for, became errors too."""
    reference = "(-\\infty, 2]"
    answers = (RAISING, reference, "(-\\infty,2]", "(-\\infty, 3]")
    with rewardkit.load(config(len(answers), on_error=on_error)) as reward:
        batch = reward.score([group(reference, *answers)])  # never raises
    attacker, spelled, respaced, wrong = scored(batch)
    assert [c.final for c in (attacker, spelled, respaced, wrong)] == [0.0, 1.0, 1.0, 0.0], batch
    assert entry(attacker)["status"] == "scored" and "raised TypeError" in entry(attacker)["reason"]
    assert entry(attacker)["reproduction"].startswith("reproduced: scored again alone"), attacker
    assert CANARY_WORDS in entry(attacker)["reproduction"]
    assert attacker.diagnostics["math"]["comparison_error"] == 1.0
    assert attacker.diagnostics["math"]["reruns"] == 1.0
    assert "reproduction" not in entry(spelled) and spelled.diagnostics["math"]["reruns"] == 0.0
    assert attacker.advantage is not None and attacker.advantage < 0 < (spelled.advantage or 0)
    assert batch.metrics["train/reward/infra_error_rate"] == 0.0


def test_an_answer_the_guards_let_through_that_costs_a_worker_its_timeout_is_charged_when_it_recurs() -> None:
    """Revision 6 charged it on the worker's CPU share (a figure a candidate can steer), without
    looking again; now it is compared once more, alone on a worker whose canary just passed."""
    answers = (SLOW, SLOW_REFERENCE, "3")
    assert refusal(measure(SLOW_REFERENCE), measure(SLOW)) is None  # the guards let it through
    with rewardkit.load(config(len(answers), timeout_s=1.0)) as reward:
        slow, right, wrong = scored(reward.score([group(SLOW_REFERENCE, *answers)]))
    assert (slow.final, right.final, wrong.final) == (0.0, 1.0, 0.0)
    assert slow.diagnostics["math"]["timeout"] == 1.0 and slow.diagnostics["math"]["reruns"] == 1.0
    assert "did not finish" in entry(slow)["reason"]
    assert entry(slow)["reproduction"].startswith(
        "reproduced: scored again alone, it faulted the same way"
    ), slow


def test_timeouts_memory_errors_and_deaths_that_reproduce_are_charged(markers: MathVerifier) -> None:
    """Whether the worker computed or waited decides nothing any more: each of these faults again
    beside a passing canary, so each is its candidate's; the right sibling keeps its 1."""
    ((spin, sleep, hog, died, right),) = scores(markers, request("x+1", SPIN, SLEEP, HOG, DIE, "1+x"))
    assert_charged(spin, "timeout", reproduced=True)
    assert_charged(sleep, "timeout", reproduced=True)
    assert_charged(hog, "out_of_memory", reproduced=True)
    assert_charged(died, "worker_crash", reproduced=True)
    assert "worker died" in (died.reason or "")
    assert right.terms == {"task": 1.0} and diagnostics(right)["reruns"] == 0.0


# -- a fault that does not reproduce: the second verdict counts ------------------------------------


def test_a_worker_killed_once_is_compared_again_and_its_second_verdict_counts(
    target: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Revision 6 made a worker killed by a signal the pool did not send an error (the batch
    failed under ``raise``); now the comparison runs again, and the right answer keeps its 1."""
    target(TARGET)
    once = tmp_path / "die-once"
    once.touch()
    monkeypatch.setenv(DIE_ONCE_FILE, str(once))
    with rewardkit.load(config(2, workers=2)) as reward:
        killed, right = scored(reward.score([group("x+1", DIE_ONCE + "1+x", "x + 1")]))
    assert not once.exists(), "the seam never killed a worker"
    assert (killed.final, right.final) == (1.0, 1.0), killed
    assert killed.diagnostics["math"]["reruns"] == 1.0 and killed.diagnostics["math"]["worker_crash"] == 0.0
    assert entry(killed)["reproduction"].startswith("not reproduced: the worker comparing it was killed")


# -- a canary that fails is the infrastructure's ---------------------------------------------------


def test_a_worker_that_always_crashes_fails_the_batch_naming_the_canary(target: Any) -> None:
    target(CRASHING_TARGET)
    with rewardkit.load(config(2, workers=2)) as reward, pytest.raises(CompositionError) as raised:
        reward.score([group("x+1", "1+x", "x+1")])
    message = str(raised.value)
    assert CANARY_WORDS in message and "failed too on that worker: worker died" in message, message


def test_under_on_error_none_a_failed_canary_is_an_error_counted_in_infra_error_rate(target: Any) -> None:
    target(CRASHING_TARGET)
    reference = "(-\\infty, 2]"
    with rewardkit.load(config(2, on_error="none", workers=2)) as reward:
        batch = reward.score(
            [group("x+1", "1+x", "x+1"), group(reference, "(-\\infty, 2.0]", reference, group_id="h")]
        )
    compared, plain_spelled, interval, interval_spelled = scored(batch)
    # An answer spelled as a plain expression needs no worker; one spelled as a reference that only
    # a worker can vouch for is not scored when none could.
    assert plain_spelled.final == 1.0
    for candidate in (compared, interval, interval_spelled):
        assert candidate.final is None and entry(candidate)["status"] == "error", candidate
        assert CANARY_WORDS in entry(candidate)["reason"]
    assert batch.metrics["train/reward/infra_error_rate"] == 0.75


def test_a_reference_whose_own_check_never_ends_is_infrastructure(markers: MathVerifier) -> None:
    ((spin,),) = scores(markers, request(SPINNING_REFERENCE, SPIN))
    assert spin.status == "error" and CANARY_WORDS in (spin.reason or ""), spin


def test_a_canary_that_finds_the_reference_unusable_skips_the_group(markers: MathVerifier) -> None:
    """The reference cannot be parsed: the group is skipped as when a worker finds it, whatever
    the faulting answer did."""
    ((spin, spelled),) = scores(markers, request("\\frac{", SPIN, "\\frac{"))
    assert spin.status == spelled.status == "skipped" and "could not be parsed" in (spin.reason or "")


# -- past the batch's rerun budget, the canary decides ---------------------------------------------


def test_with_no_reruns_left_a_passing_canary_charges_the_fault_without_a_rerun() -> None:
    with rewardkit.load(config(2, per_batch=0)) as reward:
        attacker, right = scored(reward.score([group("(-\\infty, 2]", RAISING, "(-\\infty, 2]")]))
    assert (attacker.final, right.final) == (0.0, 1.0)
    assert attacker.diagnostics["math"]["comparison_error"] == 1.0
    assert attacker.diagnostics["math"]["reruns"] == 0.0
    assert "this batch's 0 reruns were spent; a canary passed" in entry(attacker)["reproduction"]
