"""Judge budgets (issue 46): a rate-limited endpoint is waited for, never failed on.

A stub judge on loopback answers 429 (with ``Retry-After``) past N requests in its window; the
batch, scored through ``rewardkit.load(...).score(...)`` under ``onError: raise``, completes with
every candidate scored (none charged, none an error) and the wait in the ``rate_wait_s``
diagnostic. The client's own ``requests_per_minute`` and ``tokens_per_minute`` pace the requests
(the wait reported alike), and ``retries_per_minute`` bounds the retries a failing endpoint gets.
The windows are short (``rate_window_s``) so the tests run in seconds; nothing here is timed.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any

import pytest
from nih_judge_helpers import RUBRIC, judge_params, rollouts

import rewardkit
from rewardkit.plugin import ParamsError, validate_params
from rewardkit_nih_judge.params import RubricParams
from rewardkit_nih_judge.testing import Reply, ScriptedJudge, graded

pytest_plugins = ("nih_judge_fixtures",)  # the `judge` fixture

WINDOW_S = 0.5
ANSWERS = [f"{half / 2:g}" for half in range(1, 17)]  # 16 distinct scores (0.5 to 8) on the scale 0..10


class RateLimited:
    """A judge's rate limiter: at most ``limit`` verdicts per ``window_s``; past it 429 with
    ``Retry-After`` (the seconds until the oldest request leaves the window, as servers say)."""

    def __init__(self, limit: int, window_s: float = WINDOW_S) -> None:
        self.limit = limit
        self.window_s = window_s
        self.served: deque[float] = deque()
        self.refused = 0

    def __call__(self, body: dict[str, Any]) -> Reply | dict[str, Any]:
        now = time.monotonic()
        while self.served and self.served[0] <= now - self.window_s:
            self.served.popleft()
        if len(self.served) >= self.limit:
            self.refused += 1
            wait = self.served[0] + self.window_s - now
            return Reply("rate limit reached", status=429, headers={"Retry-After": f"{wait:.3f}"})
        self.served.append(now)
        return {"score": float(graded(body)), "rationale": "graded"}


def config(judge: ScriptedJudge, **params: Any) -> dict[str, Any]:
    spec = {
        "provider": "nih-rubric",
        "params": judge_params(judge, rubric=RUBRIC, scale=[0, 10], max_concurrency=16, **params),
    }
    return {"rl": {"group_size": 8, "reward": spec}, "rewards": {"concurrency": 4}}


def batch_of_sixteen() -> list[tuple[str, list[dict[str, Any]]]]:
    return [("g0", rollouts(*ANSWERS[:8])), ("g1", rollouts(*ANSWERS[8:]))]


def assert_every_candidate_scored_and_the_wait_reported(batch: Any) -> float:
    candidates = [candidate for _, candidate in batch.candidates()]
    assert [candidate.final for candidate in candidates] == [float(answer) / 10 for answer in ANSWERS]
    for candidate in candidates:
        assert candidate.breakdown["nih-rubric"]["status"] == "scored"
        said = candidate.diagnostics["nih-rubric"]
        assert (
            said["verdict_unreadable"] == said["off_scale"] == said["verdict_refused"] == 0.0
        )  # none charged
    assert batch.metrics["train/reward/infra_error_rate"] == 0.0
    waited = sum(candidate.diagnostics["nih-rubric"]["rate_wait_s"] for candidate in candidates)
    assert waited > 0
    assert batch.metrics["train/reward_provider/nih-rubric/rate_wait_s"] == pytest.approx(waited / 16)
    return waited


def test_a_judge_answering_429_past_n_requests_is_waited_out_never_charged(judge):
    limiter = RateLimited(limit=4)
    judge.answer = limiter
    # retries 0: a 429 is no retry (before, the first 429 was an error that failed the batch)
    with rewardkit.load(config(judge, retries=0)) as reward:  # onError: raise
        batch = reward.score(batch_of_sixteen())
    assert limiter.refused > 0  # the server did say 429
    assert_every_candidate_scored_and_the_wait_reported(batch)
    assert len(judge.requests) == 16 + limiter.refused  # each refused request sent again, nothing else


@pytest.mark.parametrize(
    "budget",
    [
        {"requests_per_minute": 4},
        # each request counts its prompt's estimate plus max_tokens: two fit in 20000
        {"tokens_per_minute": 20000, "max_tokens": 8000},
    ],
    ids=["requests_per_minute", "tokens_per_minute"],
)
def test_the_clients_budgets_pace_the_requests_and_report_the_wait(judge, budget):
    judge.answer = lambda body: {"score": float(graded(body)), "rationale": "graded"}
    with rewardkit.load(config(judge, rate_window_s=WINDOW_S, **budget)) as reward:
        batch = reward.score(batch_of_sixteen())
    assert_every_candidate_scored_and_the_wait_reported(batch)
    assert len(judge.requests) == 16


def test_the_retry_budget_bounds_the_retries_of_a_failing_endpoint(judge):
    judge.answer = lambda body: Reply("overloaded", status=503)
    config_ = config(judge, retries=10, retries_per_minute=2)
    provider = config_["rl"]["reward"]
    config_["rl"]["reward"] = {"spec": {"onError": "zero", "components": [provider]}}
    config_["rl"]["group_size"] = 4
    with rewardkit.load(config_) as reward:
        batch = reward.score([("g", rollouts("1", "2", "3", "4"))])
    reasons = [candidate.breakdown["nih-rubric"]["reason"] for _, candidate in batch.candidates()]
    assert all("503" in reason and "the canary (" in reason for reason in reasons), reasons
    assert any("retries_per_minute (2) are spent" in reason for reason in reasons), reasons
    # 4 first tries, the 2 retries the minute allows, and the canary's one try: not 11 per request
    assert len(judge.requests) == 4 + 2 + 1


def test_the_budgets_are_operator_only_and_bounded():
    schema = RubricParams.model_json_schema()["properties"]
    for name in ("requests_per_minute", "tokens_per_minute", "retries_per_minute", "rate_window_s"):
        assert schema[name]["operator_only"] == "resource", name
    base = {"base_url": "http://127.0.0.1:1/v1", "model": "m", "rubric": "r"}
    with pytest.raises(ParamsError, match="requests_per_minute"):
        validate_params(RubricParams, {**base, "requests_per_minute": 0})
