"""A judge request that fails (a 5xx, a timeout, a dropped connection) is charged to the candidate
only when it reproduces beside a canary that passed (issue 40).

A candidate's text can make a judge's server fail: a payload that crashes the model server, trips
a proxy, or stalls generation. Before, any such failure was the infrastructure's, an ``error``
outcome: under the default ``onError: raise`` one candidate failed the whole batch, and under
``none`` it escaped its negative advantage. Now the request's failure is decided like an
unreadable verdict: a canary (another answer of the group a verdict read) is asked live, then the
candidate once more alone; it fails again while the canary passes: charged (score 0, the reason,
``request_failed`` = 1, the evidence in the ``reproduction`` note). A failure that does not
reproduce scores the second verdict; a canary that fails too is the judge's fault and fails the
batch, naming the canary.

Every judge here is a scripted OpenAI-compatible server on loopback (``ScriptedJudge``), and every
score goes through ``rewardkit.load(...).score(...)``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from nih_judge_helpers import judge_params, rollouts

import rewardkit
from rewardkit.contracts.errors import RewardkitError
from rewardkit.scoring.scored import ScoredBatch, ScoredCandidate
from rewardkit_nih_judge.testing import Reply, ScriptedJudge, graded, listed, pair

pytest_plugins = ("nih_judge_fixtures",)  # the `judge` fixture

PAYLOAD = "CRASH-THE-SERVER"  # text that makes the scripted judge's server fail, every time
HONEST = ("42", "41", "6 * 7 = 42")
# How the server fails on the payload, and what the candidate's reason then says. Each is what a
# real server does when a request brings it down: an error answer, no answer in time, a hang-up.
FAULTS = {
    "500": (Reply("model worker crashed", status=500), "answered 500"),
    "timeout": (Reply('{"score": 10}', delay_s=3.0), "no answer within 0.5 s"),
    "dropped": (Reply(drop=True), "ServerDisconnectedError"),
}
# Fast failure handling: one try per question, so a payload's fault costs two requests (the
# question and its rerun) and a timeout costs 0.5 s each.
FAST = {"retries": 0, "timeout_s": 0.5}


def grade(answer: str) -> int:
    return 10 if "42" in answer else 2


def config(
    judge: ScriptedJudge, group_size: int, *, mode: str | None = None, on_error: str = "raise"
) -> dict[str, Any]:
    """A one-component spec on ``nih-rubric`` (``mode``: on ``nih-compare``)."""
    if mode is None:
        component = {"provider": "nih-rubric", "params": judge_params(judge, rubric="be right", **FAST)}
    else:
        component = {"provider": "nih-compare", "params": judge_params(judge, mode=mode, **FAST)}
    spec = {"components": [component], "onError": on_error}
    return {"rl": {"group_size": group_size, "reward": {"spec": spec}}}


def scored(batch: ScoredBatch) -> list[ScoredCandidate]:
    return [candidate for _, candidate in batch.candidates()]


def answers_of(body: dict[str, Any], mode: str | None) -> tuple[str, ...]:
    if mode is None:
        return (graded(body),)
    return pair(body) if mode == "pairwise" else tuple(listed(body).values())


def failing_on_the_payload(fault: Reply, mode: str | None) -> Any:
    """A judge whose server fails on every request holding the payload and answers the rest."""

    def answer(body: dict[str, Any]) -> Reply | dict[str, Any]:
        if any(PAYLOAD in text for text in answers_of(body, mode)):
            return fault
        if mode is None:
            return {"score": grade(graded(body)), "rationale": "graded"}
        if mode == "listwise":
            named = listed(body)
            return {"ranking": sorted(named, key=lambda name: -grade(named[name]))}
        first, second = (grade(text) for text in pair(body))
        return {"winner": "tie" if first == second else ("A" if first > second else "B")}

    return answer


# -- (1) a fault that reproduces beside a passing canary is the candidate's ----------------------------


@pytest.mark.parametrize("on_error", ["raise", "none"])
@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_a_rubric_candidate_whose_text_makes_the_server_fail_every_time_is_charged(
    judge: ScriptedJudge, fault: str, on_error: str
) -> None:
    reply, said = FAULTS[fault]
    judge.answer = failing_on_the_payload(reply, None)
    with rewardkit.load(config(judge, 4, on_error=on_error)) as reward:
        batch = reward.score([("q", rollouts(*HONEST, f"42. {PAYLOAD}"))])  # never raises
    *honest, attacker = scored(batch)
    assert [candidate.final for candidate in honest] == pytest.approx([1.0, 1 / 9, 1.0])
    for candidate in honest:
        assert candidate.breakdown["nih-rubric"]["status"] == "scored"
        assert candidate.diagnostics["nih-rubric"]["request_failed"] == 0.0
    charged = attacker.breakdown["nih-rubric"]
    assert charged["status"] == "scored" and attacker.final == 0.0, charged
    assert said in charged["reason"], charged
    assert charged["reproduction"].startswith(
        "reproduced: scored again alone, it faulted the same way where the canary (the answer of 't"
    ), charged
    assert attacker.diagnostics["nih-rubric"]["request_failed"] == 1.0
    assert attacker.advantage < 0 < honest[0].advantage
    assert batch.metrics["train/reward/infra_error_rate"] == 0.0
    # the payload was asked twice (its question and its rerun), never more
    assert sum(PAYLOAD in graded(body) for body in judge.requests) == 2


@pytest.mark.parametrize("on_error", ["raise", "none"])
@pytest.mark.parametrize("mode", ["pairwise", "listwise"])
def test_a_compared_candidate_whose_text_makes_the_server_fail_every_time_is_charged_and_forfeits(
    judge: ScriptedJudge, mode: str, on_error: str
) -> None:
    judge.answer = failing_on_the_payload(FAULTS["500"][0], mode)
    with rewardkit.load(config(judge, 4, mode=mode, on_error=on_error)) as reward:
        batch = reward.score([("q", rollouts("42", "41", f"6 * 7 = 42 {PAYLOAD}", "6 * 7 = 42"))])
    right, wrong, attacker, also_right = scored(batch)
    charged = attacker.breakdown["nih-compare"]
    assert charged["status"] == "scored" and attacker.final == 0.0, charged
    assert "answered 500" in charged["reason"] and charged["reproduction"].startswith("reproduced:")
    assert attacker.diagnostics["nih-compare"]["request_failed"] == 1.0
    for honest in (right, wrong, also_right):
        assert honest.breakdown["nih-compare"]["status"] == "scored", honest.breakdown
        assert "reproduction" not in honest.breakdown["nih-compare"]
    if mode == "pairwise":  # each honest answer won its forfeit; the 42s tie, both beat 41
        assert [right.final, wrong.final, also_right.final] == pytest.approx([5 / 6, 1 / 3, 5 / 6])
    else:  # ranked last; the others ranked again among themselves
        assert wrong.final < min(right.final, also_right.final) and attacker.final < wrong.final
    assert attacker.advantage < 0 < right.advantage
    assert batch.metrics["train/reward/infra_error_rate"] == 0.0


# -- (2) a fault that does not reproduce: the second verdict counts -------------------------------------


@pytest.mark.parametrize("mode", [None, "pairwise"])
def test_a_one_off_server_error_is_asked_again_and_scored_normally(
    judge: ScriptedJudge, mode: str | None
) -> None:
    failed: Counter[str] = Counter()

    def hiccups_once(body: dict[str, Any]) -> Reply | dict[str, Any]:
        if any("FLAKY" in text for text in answers_of(body, mode)) and not failed:
            failed["FLAKY"] += 1
            return Reply("a hiccup", status=503)
        return failing_on_the_payload(Reply(), mode)(body)

    judge.answer = hiccups_once
    name = "nih-rubric" if mode is None else "nih-compare"
    with rewardkit.load(config(judge, 3, mode=mode)) as reward:
        batch = reward.score([("q", rollouts("42", "41", "6 * 7 = 42, FLAKY"))])
    right, wrong, flaky = scored(batch)
    assert failed["FLAKY"] == 1
    for candidate in (right, wrong, flaky):
        assert candidate.breakdown[name]["status"] == "scored", candidate.breakdown
        assert "reproduction" not in candidate.breakdown[name]
        assert candidate.diagnostics[name]["request_failed"] == 0.0
    if mode is None:
        assert [right.final, wrong.final, flaky.final] == pytest.approx([1.0, 1 / 9, 1.0])
    else:  # 42 beat 41; the flaky 42 compared again with 42 (a tie) or with 41 (a win), drawn per request
        assert (right.final, wrong.final) == (1.0, 0.0) and flaky.final in (0.5, 1.0)
    assert batch.metrics["train/reward/infra_error_rate"] == 0.0


# -- (3) a judge that fails for everyone is the infrastructure's: the batch fails naming the canary ----


@pytest.mark.parametrize("mode", [None, "pairwise", "listwise"])
def test_a_judge_failing_for_everyone_fails_the_batch_naming_the_canary_and_charges_no_one(
    judge: ScriptedJudge, mode: str | None
) -> None:
    judge.answer = lambda body: Reply("model worker crashed", status=500)
    with rewardkit.load(config(judge, 3, mode=mode)) as reward, pytest.raises(RewardkitError) as caught:
        reward.score([("q", rollouts(*HONEST))])
    message = str(caught.value)
    assert "answered 500" in message
    assert "; and the canary (" in message and "failed too on that endpoint: " in message, message
    # under `none` nothing is charged either: every candidate is an error, counted as infrastructure
    name = "nih-rubric" if mode is None else "nih-compare"
    with rewardkit.load(config(judge, 3, mode=mode, on_error="none")) as reward:
        batch = reward.score([("q", rollouts(*HONEST))])
    for candidate in scored(batch):
        assert candidate.breakdown[name]["status"] == "error", candidate.breakdown
        assert "reproduction" not in candidate.breakdown[name]
    assert batch.metrics["train/reward/infra_error_rate"] == 1.0


# -- (4) a 429 is the endpoint's pace, never the candidate's fault ------------------------------------


def test_a_candidate_whose_requests_meet_429s_until_the_deadline_is_never_charged(
    judge: ScriptedJudge,
) -> None:
    # A 429 says the endpoint's budget is spent, not that the request broke anything: it is waited
    # out (budgets.py), and one that outlasts the group's deadline is an error, never a charge,
    # even when it came back for this candidate alone while its siblings were read.
    def rate_limits_the_payload(body: dict[str, Any]) -> Reply | dict[str, Any]:
        if PAYLOAD in graded(body):
            return Reply("slow down", status=429, headers={"Retry-After": "0.05"})
        return {"score": grade(graded(body)), "rationale": "graded"}

    judge.answer = rate_limits_the_payload
    spec = config(judge, 4, on_error="none")
    spec["rl"]["reward"]["spec"]["components"][0]["params"]["deadline_s"] = 2.0
    with rewardkit.load(spec) as reward:
        batch = reward.score([("q", rollouts(*HONEST, f"42. {PAYLOAD}"))])
    *honest, limited = scored(batch)
    assert [candidate.final for candidate in honest] == pytest.approx([1.0, 1 / 9, 1.0])
    entry = limited.breakdown["nih-rubric"]
    assert entry["status"] == "error" and "reproduction" not in entry, entry
    # held by the 429s until the deadline (the last attempt may find the deadline already gone)
    assert "deadline" in entry["reason"], entry
    assert sum(PAYLOAD in graded(body) for body in judge.requests) >= 2  # it was asked, and waited
