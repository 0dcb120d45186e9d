"""Truncation facts in the bindings, without the trainers: each trainer's rule on plain ids, what each
binding passes on, and the refusal of a field a trainer cannot give (TRL, verl, OpenRLHF)."""

from __future__ import annotations

from functools import partial
from types import SimpleNamespace

import pytest

import rewardkit_bindings.openrlhf as openrlhf
import rewardkit_bindings.verl as verl
from rewardkit import RewardProviderResult, RewardProviderSpec, map_candidates
from rewardkit.contracts import RewardCandidate, RewardContext
from rewardkit.plugin import BindingError
from rewardkit.scoring.reward import load
from rewardkit_bindings.loading import forget_rewards
from rewardkit_bindings.trl import binding
from rewardkit_bindings.truncation import (
    budget_finish_reason,
    needed_candidate_fields,
    stop_token_ids,
    trl_finish_reason,
)


def ending(candidate: RewardCandidate, context: RewardContext) -> RewardProviderResult:
    """Hard needs: 100 when cut at the budget, plus the token count."""
    return RewardProviderResult(
        {"ending": 100.0 * candidate.is_length_truncated + candidate.completion_token_count}
    )


def lenient(candidate: RewardCandidate, context: RewardContext) -> RewardProviderResult:
    """Skips a candidate without a count, as ``overlong`` does."""
    if candidate.completion_token_count is None:
        return RewardProviderResult.skip("no count")
    return RewardProviderResult({"count": float(candidate.completion_token_count)})


def catalog() -> list[RewardProviderSpec]:
    return [
        RewardProviderSpec(
            "ending",
            partial(map_candidates, ending),
            ("completion_token_count", "finish_reason"),
            "1",
            ("ending",),
        ),
        RewardProviderSpec(
            "lenient",
            partial(map_candidates, lenient),
            ("completion_token_count",),
            "1",
            ("count",),
            skip_when_absent=("completion_token_count",),
        ),
    ]


def config(*providers: str, group_size: int | None = None) -> dict:
    out: dict = {
        "rl.reward.catalog": "test_bindings_truncation:catalog",
        "rl.reward.spec": {"components": [{"provider": name} for name in providers]},
    }
    if group_size is not None:
        out["rl.group_size"] = group_size
    return out


@pytest.fixture(autouse=True)
def _fresh() -> None:
    forget_rewards()


# -- the rules ------------------------------------------------------------------------------------


def test_trl_rule_is_last_id_neither_eos_nor_pad():
    stop = frozenset({3, 0})  # eos 3, pad 0
    assert trl_finish_reason([5, 6, 3], stop) == "stop"
    assert trl_finish_reason([5, 6, 0], stop) == "stop"  # TRL counts a trailing pad as stopped too
    assert trl_finish_reason([5, 6, 7], stop) == "length"
    assert trl_finish_reason([3, 6, 7], stop) == "length"  # only the last id counts
    assert trl_finish_reason([], stop) is None


def test_budget_rule_needs_the_budget_reached_without_eos():
    assert budget_finish_reason(4, 4, ends_with_eos=False) == "length"
    assert budget_finish_reason(5, 4, ends_with_eos=False) == "length"
    assert budget_finish_reason(4, 4, ends_with_eos=True) == "stop"  # EOS is checked before the cap
    assert budget_finish_reason(3, 4, ends_with_eos=False) == "stop"  # a stop string, not the budget


def test_stop_token_ids_of_tokenizers_and_processors():
    assert stop_token_ids(SimpleNamespace(eos_token_id=[7, 8], pad_token_id=None)) == {7, 8}
    processor = SimpleNamespace(tokenizer=SimpleNamespace(eos_token_id=2, pad_token_id=0))
    assert stop_token_ids(processor) == {2, 0}
    with pytest.raises(BindingError, match="neither eos_token_id nor pad_token_id"):
        stop_token_ids(SimpleNamespace())


def test_needed_candidate_fields_name_the_providers():
    reward = load(config("ending", "lenient", group_size=1))
    assert needed_candidate_fields(reward) == {
        "completion_token_count": ["ending", "lenient"],
        "finish_reason": ["ending"],
    }
    assert needed_candidate_fields(load({"rl.reward.provider": "nonempty"})) == {}


# -- TRL ------------------------------------------------------------------------------------------


class Trainer:
    """What TRL's log_metric is bound to: a trainer with a processing_class."""

    processing_class = SimpleNamespace(eos_token_id=3, pad_token_id=0)

    def log_metric(self, name: str, value: float) -> None:
        pass


IDS = [[5, 3], [5, 6, 7, 8], [4, 4, 0], [9, 9, 9, 9]]


def test_trl_passes_counts_and_finish_reasons_from_completion_ids():
    bound = binding(config("ending", group_size=2), tokenizer=Trainer.processing_class)
    total = bound.functions()[0]
    got = total(prompts=["p", "p", "q", "q"], completions=["a", "b", "c", "d"], completion_ids=IDS)
    assert got == [2.0, 104.0, 3.0, 104.0]


def test_trl_finds_the_tokenizer_of_the_trainer_calling():
    total = binding(config("ending", group_size=2)).functions()[0]
    got = total(
        prompts=["p", "p", "q", "q"],
        completions=["a", "b", "c", "d"],
        completion_ids=IDS,
        log_metric=Trainer().log_metric,
    )
    assert got == [2.0, 104.0, 3.0, 104.0]


def test_trl_without_any_tokenizer_refuses_a_reward_that_needs_finish_reason():
    total = binding(config("ending", group_size=2)).functions()[0]
    with pytest.raises(BindingError, match=r"'finish_reason'.*pass tokenizer="):
        total(prompts=["p", "p", "q", "q"], completions=["a", "b", "c", "d"], completion_ids=IDS)
    # A reward that only reads counts does not need the tokenizer.
    counts = binding(config("lenient", group_size=2)).functions()[0]
    got = counts(prompts=["p", "p", "q", "q"], completions=["a", "b", "c", "d"], completion_ids=IDS)
    assert got == [2.0, 4.0, 3.0, 4.0]


# -- verl -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("provider", ["ending", "lenient"])
def test_verl_without_the_rewardkit_manager_refuses_naming_the_field(provider):
    with pytest.raises(BindingError, match="'completion_token_count'") as refused:
        verl.compute_score("d", "text", "ref", {}, config=config(provider))
    assert "RewardkitRewardManager" in str(refused.value)
    with pytest.raises(BindingError, match="'completion_token_count'"):
        verl.preflight(config(provider))


def test_verl_scores_what_the_manager_passes():
    got = verl.compute_score(
        "d", "text", "ref", {}, config=config("ending"), completion_token_count=7, finish_reason="length"
    )
    assert got == {"score": 107.0, "ending": 107.0}
    verl.preflight(config("ending"), provided=("completion_token_count", "finish_reason"))


def test_verl_routed_selection_is_checked_too():
    routed = {
        "rl.reward.catalog": "test_bindings_truncation:catalog",
        "rl.reward.provider": "nonempty",
        "rl.reward.by_data_source": {"long": {"provider": "ending"}},
    }
    assert verl.compute_score("short", "text", "ref", {}, config=routed)["score"] == 1.0
    with pytest.raises(BindingError, match="data_source 'long'"):
        verl.compute_score("long", "text", "ref", {}, config=routed)
    with pytest.raises(BindingError, match="data_source 'long'"):
        verl.preflight(routed)


# -- OpenRLHF -------------------------------------------------------------------------------------


class WordTokenizer:
    """A tokenizer of whitespace-separated words, ``</s>`` its EOS."""

    eos_token = "</s>"

    def __call__(self, text: str, add_special_tokens: bool = True) -> dict:
        return {"input_ids": text.split()}


def test_openrlhf_refuses_a_reward_it_cannot_feed(monkeypatch):
    monkeypatch.delenv(openrlhf.TOKENIZER_ENV, raising=False)
    monkeypatch.delenv(openrlhf.MAX_NEW_TOKENS_ENV, raising=False)
    with pytest.raises(BindingError, match=r"'completion_token_count'.*OpenRLHF") as refused:
        openrlhf.score(["q a"], ["q"], None, config=config("lenient"))
    assert openrlhf.TOKENIZER_ENV in str(refused.value)
    with pytest.raises(BindingError, match="'finish_reason'"):
        openrlhf.preflight(config("ending"))


def test_openrlhf_with_a_limit_derives_counts_and_verdicts():
    limit = openrlhf.GenerationLimit(WordTokenizer(), 3)
    queries = ["q a b c", "q a b </s>", "q a"]
    totals, components = openrlhf.score(queries, ["q"] * 3, None, config=config("ending"), limit=limit)
    assert totals == [103.0, 3.0, 1.0]
    assert components == {"ending": totals}
    openrlhf.preflight(config("ending"), limit=limit)


def test_openrlhf_limit_from_the_environment_is_checked(monkeypatch):
    monkeypatch.setenv(openrlhf.MAX_NEW_TOKENS_ENV, "0")
    monkeypatch.setenv(openrlhf.TOKENIZER_ENV, "/nowhere")
    with pytest.raises(BindingError, match="positive integer"):
        openrlhf.limit_from_environment()
    monkeypatch.delenv(openrlhf.TOKENIZER_ENV)
    with pytest.raises(BindingError, match=openrlhf.TOKENIZER_ENV):
        openrlhf.limit_from_environment()
