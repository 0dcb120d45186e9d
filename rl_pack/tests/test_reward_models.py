"""``reward-model`` and ``reward-model-ensemble`` in process, on tiny models built here.

Each model is a random 2-layer ``LlamaForSequenceClassification`` (num_labels=1) with a
word-level tokenizer and a chat template, saved with ``save_pretrained`` into a temporary folder
and loaded through the provider: the real loading path, nothing downloaded. The reference of
every score is a plain ``transformers`` forward pass of that one text alone.

Needs torch and transformers: runs in tox env ``rm`` (env ``rl`` leaves it out).
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest

# Runs in tox env rm (CPU torch, transformers); env rl leaves this module out, so a missing torch
# here is an import error, never a skip.
import torch
import transformers

import rewardkit
from rewardkit.contracts.errors import PreflightError
from rewardkit.seam.catalog import resolve_catalog
from rewardkit_rl.reward_models.text import chat_messages
from rewardkit_testing import Case, RewardProviderTests, Sample
from rewardkit_vllm.testing import build_tiny_reward_model as build_reward_model
from rewardkit_vllm.testing import tiny_tokenizer

PROMPT = "is the cat good"
COMPLETIONS = [
    "yes",
    "no the cat is bad",
    "maybe the dog is good and the cat is very bad",
    "yes yes yes the cat is the best cat and the dog is the worst dog of all the dogs",
    "one two three",
    "the sun is hot and the moon is cold",
]


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("reward-models")
    os.environ.setdefault("REWARDKIT_CACHE_DIR", str(root / "hash-cache"))
    found = {"a": build_reward_model(root / "a", seed=0), "b": build_reward_model(root / "b", seed=1)}
    found["a-copy"] = Path(shutil.copytree(found["a"], root / "a-copy"))
    left = Path(shutil.copytree(found["a"], root / "a-left"))
    settings = json.loads((left / "tokenizer_config.json").read_text())
    settings["padding_side"] = "left"
    (left / "tokenizer_config.json").write_text(json.dumps(settings))
    found["a-left"] = left
    plain = Path(shutil.copytree(found["a"], root / "a-plain"))
    (plain / "chat_template.jinja").unlink()
    settings = json.loads((plain / "tokenizer_config.json").read_text())
    settings.pop("chat_template", None)
    (plain / "tokenizer_config.json").write_text(json.dumps(settings))
    found["a-plain"] = plain
    found["a-head"] = build_backbone_plus_head(found["a"], root / "a-head")
    return found


def build_backbone_plus_head(classifier: Path, folder: Path) -> Path:
    """The classifier saved as a bare backbone (``LlamaModel``) plus a ``score.weight`` beside it."""
    from safetensors.torch import load_file, save_file

    model = transformers.AutoModel.from_pretrained(classifier, dtype=torch.float32)
    model.save_pretrained(folder, safe_serialization=True)
    transformers.AutoTokenizer.from_pretrained(classifier).save_pretrained(folder)
    weights = load_file(str(folder / "model.safetensors"))
    weights["score.weight"] = load_file(str(classifier / "model.safetensors"))["score.weight"]
    save_file(weights, str(folder / "model.safetensors"), metadata={"format": "pt"})
    assert json.loads((folder / "config.json").read_text())["architectures"] == ["LlamaModel"]
    return folder


class Reference:
    """A plain transformers forward pass of one text at a time."""

    def __init__(self, folder: Path) -> None:
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
        self.model = transformers.AutoModelForSequenceClassification.from_pretrained(
            folder, dtype=torch.float32
        ).eval()

    def chat_ids(self, prompt: Any, completion: str) -> list[int]:
        text = self.tokenizer.apply_chat_template(chat_messages(prompt, completion), tokenize=False)
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def plain_ids(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=True)["input_ids"])

    def score_ids(self, ids: list[int]) -> float:
        with torch.no_grad():
            return float(self.model(torch.tensor([ids])).logits[0, 0])

    def score(self, prompt: Any, completion: str) -> float:
        return self.score_ids(self.chat_ids(prompt, completion))


@pytest.fixture(scope="module")
def reference(models: dict[str, Path]) -> Reference:
    return Reference(models["a"])


def rollouts(completions: list[str], prompt: Any = PROMPT, prefix: str = "t") -> list[dict[str, Any]]:
    return [
        {"trajectory_id": f"{prefix}{index}", "completion": text, "prompt": prompt}
        for index, text in enumerate(completions)
    ]


def scores(bound: Any, rows: list[dict[str, Any]], group: str = "g") -> dict[str, float]:
    result = bound.score_group(group, rows)
    out = {}
    for item in result.items:
        assert item.result.status == "scored", item.result.reason
        out[item.trajectory_id] = item.result.terms["score"]
    return out


def diagnostics(bound: Any, rows: list[dict[str, Any]]) -> list[dict[str, float]]:
    result = bound.score_group("g", rows)
    return [{metric.name: metric.value for metric in item.result.diagnostics} for item in result.items]


def bind(name: str = "reward-model", **params: Any) -> Any:
    return resolve_catalog().bind(name, params)


# -- scores equal transformers, whatever the batch ------------------------------------------------------


@pytest.mark.parametrize("batch_tokens", [64, 200, 16384])
def test_scores_equal_a_plain_forward_of_each_text_alone(models, reference, batch_tokens):
    bound = bind(model=str(models["a"]), batch_tokens=batch_tokens)
    got = scores(bound, rollouts(COMPLETIONS))
    for index, text in enumerate(COMPLETIONS):
        assert got[f"t{index}"] == pytest.approx(reference.score(PROMPT, text), abs=1e-4)


def test_order_and_padding_side_do_not_change_a_score(models, reference):
    right = bind(model=str(models["a"]))
    left = bind(model=str(models["a-left"]))
    assert right.provider.scorer._ready()[0].tokenizer.padding_side == "right"
    assert left.provider.scorer._ready()[0].tokenizer.padding_side == "left"
    rows = rollouts(COMPLETIONS)
    forward = scores(right, rows)
    backward = scores(right, list(reversed(rows)))
    padded_left = scores(left, rows)
    alone = {row["trajectory_id"]: scores(right, [row])[row["trajectory_id"]] for row in rows}
    for key, value in forward.items():
        assert backward[key] == pytest.approx(value, abs=1e-4)
        assert padded_left[key] == pytest.approx(value, abs=1e-4)
        assert alone[key] == pytest.approx(value, abs=1e-4)
    assert len(set(forward.values())) == len(forward), "the model tells the completions apart"


def test_rewardkit_load_scores_groups_on_threads_like_the_reference(models, reference):
    params = {"model": str(models["a"])}
    config = {"rl": {"group_size": 3, "reward": {"provider": "reward-model", "params": params}}}
    groups = [
        {"group_id": f"g{g}", "rollouts": rollouts(COMPLETIONS[g : g + 3], prefix=f"g{g}-")} for g in range(4)
    ]
    with rewardkit.load(config) as reward:
        batch = reward.score(groups)
    for group, scored in zip(groups, batch.groups):
        for row, candidate in zip(group["rollouts"], scored.candidates):
            expected = reference.score(PROMPT, row["completion"])
            assert candidate.breakdown["reward-model"]["value"] == pytest.approx(expected, abs=1e-4)
    assert "train/reward_provider/reward-model/raw_score" in batch.metrics


def test_concurrent_callers_get_their_own_scores(models, reference):
    bound = bind(model=str(models["a"]), batch_tokens=128)
    results: dict[int, dict[str, float]] = {}

    def score(index: int) -> None:
        results[index] = scores(bound, rollouts(COMPLETIONS[index:], prefix=f"c{index}-"), f"g{index}")

    threads = [threading.Thread(target=score, args=(index,)) for index in range(len(COMPLETIONS))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    for index in range(len(COMPLETIONS)):
        for offset, text in enumerate(COMPLETIONS[index:]):
            got = results[index][f"c{index}-{offset}"]
            assert got == pytest.approx(reference.score(PROMPT, text), abs=1e-4)


# -- templates and truncation ---------------------------------------------------------------------


def test_chat_template_renders_prompt_messages_then_the_completion(models, reference):
    messages = [{"role": "system", "content": "be good"}, {"role": "user", "content": "is the dog good"}]
    got = scores(bind(model=str(models["a"]), template="chat"), rollouts(["yes the dog is good"], messages))
    assert got["t0"] == pytest.approx(reference.score(messages, "yes the dog is good"), abs=1e-4)
    plain = scores(bind(model=str(models["a"]), template="plain", separator=" "), rollouts(["yes the dog"]))
    expected = reference.score_ids(reference.plain_ids(PROMPT + " " + "yes the dog"))
    assert plain["t0"] == pytest.approx(expected, abs=1e-4)
    assert abs(plain["t0"] - reference.score(PROMPT, "yes the dog")) > 1e-6, "plain differs from chat"


def test_auto_template_is_plain_without_a_chat_template(models, reference):
    got = scores(bind(model=str(models["a-plain"]), separator=" "), rollouts(["yes the dog"]))
    expected = reference.score_ids(reference.plain_ids(PROMPT + " yes the dog"))
    assert got["t0"] == pytest.approx(expected, abs=1e-4)
    with pytest.raises(PreflightError, match="no chat template"):
        bind(model=str(models["a-plain"]), template="chat")


def test_plain_template_with_a_message_prompt_is_an_error_for_that_group(models):
    bound = bind(model=str(models["a"]), template="plain")
    result = bound.score_group("g", rollouts(["yes"], [{"role": "user", "content": "hi"}]))
    assert result.items[0].result.status == "error"
    assert "plain needs a string prompt" in result.items[0].result.reason


@pytest.mark.parametrize("side", ["left", "right"])
def test_truncation_cuts_by_the_declared_side_and_counts_the_cut(models, reference, side):
    limit = 12
    long_text = COMPLETIONS[3]
    bound = bind(model=str(models["a"]), max_tokens=limit, truncation=side)
    rows = rollouts([long_text, "yes"])
    got = scores(bound, rows)
    full = reference.chat_ids(PROMPT, long_text)
    kept = full[-limit:] if side == "left" else full[:limit]
    assert got["t0"] == pytest.approx(reference.score_ids(kept), abs=1e-4)
    assert got["t1"] == pytest.approx(reference.score(PROMPT, "yes"), abs=1e-4)
    cut, whole = diagnostics(bound, rows)
    assert cut["truncated"] == 1.0 and cut["truncated_tokens"] == len(full) - limit
    assert cut["input_tokens"] == limit
    assert whole["truncated"] == 0.0 and whole["truncated_tokens"] == 0.0


def test_right_truncation_that_leaves_no_completion_is_an_error(models):
    long_prompt = " ".join(["the cat is good"] * 10)
    bound = bind(model=str(models["a"]), max_tokens=16, truncation="right")
    result = bound.score_group("g", rollouts(["yes"], long_prompt))
    assert result.items[0].result.status == "error"
    assert "prompt alone fills max_tokens (16)" in result.items[0].result.reason


def test_an_empty_completion_is_charged_at_its_score_and_the_rest_are_scored(models, reference):
    # Its own doing: a verdict at empty_completion_score, never an error that onError would score
    # (0 by default, above what a centred model gives many real answers).
    bound = bind(model=str(models["a"]), empty_completion_score=-7.5)
    result = bound.score_group("g", rollouts(["yes", "   ", ""]))
    first, blank, empty = (item.result for item in result.items)
    assert first.status == "scored"
    assert first.terms["score"] == pytest.approx(reference.score(PROMPT, "yes"), abs=1e-4)
    for outcome in (blank, empty):
        assert outcome.status == "scored" and outcome.charge == "deterministic"
        assert outcome.terms["score"] == -7.5 and "completion is empty" in str(outcome.reason)
        assert ("empty_completion", 1.0) in {(d.name, d.value) for d in outcome.diagnostics}


def test_the_empty_completion_score_is_below_what_the_model_gives_and_must_be_finite(models):
    assert (
        bind(model=str(models["a"])).score_group("g", rollouts([""])).items[0].result.terms["score"] == -10.0
    )
    with pytest.raises(Exception, match="empty_completion_score"):
        bind(model=str(models["a"]), empty_completion_score=float("nan"))


# -- normalisation ----------------------------------------------------------------------------------


def test_fixed_normalisation_and_length_normalisation(models, reference):
    rows = rollouts(COMPLETIONS[:3])
    raw = scores(bind(model=str(models["a"])), rows)
    centred = scores(bind(model=str(models["a"]), score_mean=0.5, score_std=2.0), rows)
    per_token = scores(bind(model=str(models["a"]), length_normalisation="per_token"), rows)
    linear = scores(bind(model=str(models["a"]), length_normalisation="linear", length_penalty=100.0), rows)
    counted = diagnostics(bind(model=str(models["a"])), rows)
    for index, key in enumerate(raw):
        tokens = len(reference.tokenizer(COMPLETIONS[index], add_special_tokens=False)["input_ids"])
        assert counted[index]["completion_tokens"] == tokens
        assert counted[index]["raw_score"] == pytest.approx(raw[key], abs=1e-6)
        assert centred[key] == pytest.approx((raw[key] - 0.5) / 2.0, abs=1e-5)
        assert per_token[key] == pytest.approx(raw[key] / tokens, abs=1e-5)
        assert linear[key] == pytest.approx(raw[key] - 0.1 * tokens, abs=1e-5)


def test_a_score_does_not_depend_on_what_was_scored_before(models):
    first = bind(model=str(models["a"]))
    fresh = bind(model=str(models["a"]))
    for completion in COMPLETIONS:  # history for `first` only
        scores(first, rollouts([completion]))
    assert scores(first, rollouts(COMPLETIONS[:2])) == pytest.approx(scores(fresh, rollouts(COMPLETIONS[:2])))


# -- loading ------------------------------------------------------------------------------------------


def test_a_backbone_plus_scalar_head_scores_like_the_classifier(models):
    classifier = scores(bind(model=str(models["a"])), rollouts(COMPLETIONS))
    split = bind(model=str(models["a-head"]))
    assert split.provider.settings.facts.kind == "backbone+head"
    for key, value in scores(split, rollouts(COMPLETIONS)).items():
        assert value == pytest.approx(classifier[key], abs=1e-4)


def test_the_model_loads_on_first_evaluate_not_in_the_factory(models):
    bound = bind(model=str(models["a"]))
    assert bound.provider.scorer._backend is None
    scores(bound, rollouts(["yes"]))
    assert bound.provider.scorer._backend is not None
    bound.provider.close()
    assert bound.provider.scorer._backend is None
    scores(bound, rollouts(["yes"]))  # loads again


def test_num_labels_two_and_a_missing_tokenizer_fail_at_load(models, tmp_path):
    two = tmp_path / "two"
    tokenizer = tiny_tokenizer()
    config = transformers.LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64,
                                      num_hidden_layers=1, num_attention_heads=2, num_labels=2,
                                      pad_token_id=tokenizer.pad_token_id)  # fmt: skip
    transformers.LlamaForSequenceClassification(config).save_pretrained(two)
    tokenizer.save_pretrained(two)
    with pytest.raises(PreflightError, match="num_labels=2"):
        bind(model=str(two))
    bare = Path(shutil.copytree(models["a"], tmp_path / "bare"))
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        (bare / name).unlink(missing_ok=True)
    with pytest.raises(PreflightError, match="has no tokenizer"):
        bind(model=str(bare))


def test_a_changed_weight_file_changes_the_identity(models, tmp_path):
    folder = Path(shutil.copytree(models["a"], tmp_path / "moving"))
    before = bind(model=str(folder)).identity
    assert bind(model=str(folder)).identity == before
    build_reward_model(folder, seed=7)  # same path, same file names, new weights
    assert bind(model=str(folder)).identity != before


# -- ensembles -------------------------------------------------------------------------------------------


def ensemble(models: dict[str, Path], names: tuple[str, ...], **params: Any) -> Any:
    return bind("reward-model-ensemble", members=[{"model": str(models[name])} for name in names], **params)


def ensemble_results(bound: Any, rows: list[dict[str, Any]]) -> list[tuple[float, dict[str, float]]]:
    result = bound.score_group("g", rows)
    out = []
    for item in result.items:
        assert item.result.status == "scored", item.result.reason
        out.append((item.result.terms["score"], {m.name: m.value for m in item.result.diagnostics}))
    return out


def test_two_different_models_disagree_and_identical_ones_do_not(models):
    rows = rollouts(COMPLETIONS[:4])
    a = scores(bind(model=str(models["a"])), rows)
    b = scores(bind(model=str(models["b"])), rows)
    different = ensemble_results(ensemble(models, ("a", "b")), rows)
    same = ensemble_results(ensemble(models, ("a", "a-copy")), rows)
    for index, key in enumerate(a):
        score, seen = different[index]
        assert score == pytest.approx((a[key] + b[key]) / 2, abs=1e-5)
        assert seen["disagreement"] == pytest.approx(abs(a[key] - b[key]) / 2, abs=1e-5)
        assert seen["disagreement"] > 0
        assert seen["member_min"] == pytest.approx(min(a[key], b[key]), abs=1e-5)
        assert seen["member_max"] == pytest.approx(max(a[key], b[key]), abs=1e-5)
        score, seen = same[index]
        assert seen["disagreement"] == pytest.approx(0.0, abs=1e-7)
        assert score == pytest.approx(a[key], abs=1e-5)


def test_ensemble_combines_by_min_and_mean_minus_k_std(models):
    rows = rollouts(COMPLETIONS[:3])
    by_mean = ensemble_results(ensemble(models, ("a", "b")), rows)
    by_min = ensemble_results(ensemble(models, ("a", "b"), combine="min"), rows)
    cautious = ensemble_results(ensemble(models, ("a", "b"), combine="mean_minus_std", k=2.0), rows)
    for (mean, seen), (low, _), (careful, _) in zip(by_mean, by_min, cautious):
        assert low == pytest.approx(seen["member_min"], abs=1e-6)
        assert careful == pytest.approx(mean - 2.0 * seen["disagreement"], abs=1e-6)


def test_ensemble_member_problem_is_an_error_naming_the_member(models):
    bound = bind(
        "reward-model-ensemble",
        members=[{"model": str(models["a"])}, {"model": str(models["b"]), "template": "plain"}],
    )
    result = bound.score_group("g", rollouts(["yes", ""], [{"role": "user", "content": "hi"}]))
    assert result.items[0].result.status == "error"
    assert "member 1: template plain needs a string prompt" in result.items[0].result.reason
    # an empty completion is empty for every member: the ensemble's own verdict, charged
    empty = result.items[1].result
    assert empty.status == "scored" and empty.charge == "deterministic" and empty.terms == {"score": -10.0}
    assert "the completion is empty" in str(empty.reason)


# -- the conformance kit -----------------------------------------------------------------------------


KIT_COMPLETIONS = ("yes it is", "no", "the cat is a very good cat")


def kit_cases(expected: dict[str, float]) -> list[Case]:
    # an empty completion gives a reward model nothing to score: a verdict at empty_completion_score
    samples = [Sample(text, value=expected[text]) for text in KIT_COMPLETIONS]
    return [Case(prompt=PROMPT, samples=[*samples, Sample("   ", value=-10.0)])]


class TestRewardModelConformance(RewardProviderTests):
    provider_name = "reward-model"
    tolerance = 1e-4  # batched, padded forward passes differ from a lone one in the last digits
    expected: dict[str, float] = {}

    @pytest.fixture(autouse=True)
    def _model(self, request: pytest.FixtureRequest, models: dict[str, Path], reference: Reference) -> None:
        request.cls.params = {"model": str(models["a"])}
        request.cls.expected = {text: reference.score(PROMPT, text) for text in KIT_COMPLETIONS}

    def cases(self) -> list[Case]:
        return kit_cases(self.expected)


class TestEnsembleConformance(RewardProviderTests):
    provider_name = "reward-model-ensemble"
    tolerance = 1e-4
    expected: dict[str, float] = {}

    @pytest.fixture(autouse=True)
    def _model(self, request: pytest.FixtureRequest, models: dict[str, Path]) -> None:
        request.cls.params = {"members": [{"model": str(models["a"])}, {"model": str(models["b"])}]}
        first, second = Reference(models["a"]), Reference(models["b"])
        request.cls.expected = {
            text: (first.score(PROMPT, text) + second.score(PROMPT, text)) / 2 for text in KIT_COMPLETIONS
        }

    def cases(self) -> list[Case]:
        return kit_cases(self.expected)


# -- the score is read where transformers reads it ------------------------------------------------------
#
# transformers' ``*ForSequenceClassification`` reads the score at the last token that is not the
# config's ``pad_token_id`` (the last token when it has none), not at the last position the
# attention mask marks real. They differ when pad == eos and the text ends with eos: TRL's
# RewardTrainer saves exactly such models for tokenizers without a pad token.

EOS_MESSAGES = [{"role": "system", "content": "be good"}, {"role": "user", "content": "is the dog good"}]


def with_padding_side(folder: Path, copy: Path, side: str) -> Path:
    copied = Path(shutil.copytree(folder, copy))
    settings = json.loads((copied / "tokenizer_config.json").read_text())
    settings["padding_side"] = side
    (copied / "tokenizer_config.json").write_text(json.dumps(settings))
    return copied


@pytest.fixture(scope="module")
def pad_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("pad-models")
    os.environ.setdefault("REWARDKIT_CACHE_DIR", str(root / "hash-cache"))
    eos = build_reward_model(root / "eos", seed=3, pad="eos")
    return {
        "eos": eos,
        "eos-left": with_padding_side(eos, root / "eos-left", "left"),
        "none": build_reward_model(root / "none", seed=3, pad="none"),
    }


def at_last_token(reference: Reference, ids: list[int]) -> float:
    """The classifier's head applied at the last token of ``ids``, whatever that token is."""
    with torch.no_grad():
        hidden = reference.model.model(torch.tensor([ids])).last_hidden_state
        return float(reference.model.score(hidden[:, -1])[0, 0])


def alone(reference: Reference, ids: list[int]) -> float:
    """transformers' own score of ``ids`` sent alone (batch 1, no attention mask)."""
    return reference.score_ids(ids)


def test_pad_is_eos_with_a_trailing_eos_scores_like_transformers(pad_models):
    reference = Reference(pad_models["eos"])
    eos = reference.tokenizer.eos_token_id
    assert reference.tokenizer.pad_token_id == eos == reference.model.config.pad_token_id
    rows = rollouts(COMPLETIONS)
    texts = [reference.chat_ids(PROMPT, text) for text in COMPLETIONS]
    assert all(ids[-1] == eos for ids in texts), "the template ends the text with eos"
    expected = [alone(reference, ids) for ids in texts]
    # the same texts as one right-padded transformers batch (pad == eos, attention mask)
    batch = reference.tokenizer.pad({"input_ids": texts}, padding=True, return_tensors="pt")
    with torch.no_grad():
        batched = reference.model(**batch).logits[:, 0].tolist()
    assert batched == pytest.approx(expected, abs=1e-4)
    # reading at the trailing eos (the last position the mask marks real) gives other numbers
    at_eos = [at_last_token(reference, ids) for ids in texts]
    assert all(abs(a - b) > 1e-3 for a, b in zip(at_eos, expected))
    for folder in ("eos", "eos-left"):
        for batch_tokens in (64, 16384):
            bound = bind(model=str(pad_models[folder]), batch_tokens=batch_tokens)
            got = scores(bound, rows)
            for index, row in enumerate(rows):
                key = row["trajectory_id"]
                assert got[key] == pytest.approx(expected[index], abs=1e-4), (folder, batch_tokens, key)
                assert scores(bound, [row])[key] == pytest.approx(expected[index], abs=1e-4)


def test_pad_is_eos_without_a_trailing_eos_and_with_eos_inside(pad_models):
    reference = Reference(pad_models["eos"])
    eos = reference.tokenizer.eos_token_id
    # plain: the tokenizer adds no eos, so the text ends with the completion's last word
    plain_rows = rollouts(COMPLETIONS[:4])
    plain = [reference.plain_ids(PROMPT + " " + text) for text in COMPLETIONS[:4]]
    assert all(ids[-1] != eos for ids in plain)
    for folder in ("eos", "eos-left"):
        got = scores(bind(model=str(pad_models[folder]), template="plain", separator=" "), plain_rows)
        for index, ids in enumerate(plain):
            assert got[f"t{index}"] == pytest.approx(alone(reference, ids), abs=1e-4), folder
    # chat: eos closes every message, inside the text as well as at its end
    chat = [reference.chat_ids(EOS_MESSAGES, text) for text in COMPLETIONS[:4]]
    assert all(ids.count(eos) == 3 for ids in chat)
    for folder in ("eos", "eos-left"):
        got = scores(bind(model=str(pad_models[folder])), rollouts(COMPLETIONS[:4], EOS_MESSAGES))
        for index, ids in enumerate(chat):
            assert got[f"t{index}"] == pytest.approx(alone(reference, ids), abs=1e-4), folder


def test_a_model_without_a_pad_token_is_read_at_its_last_token(pad_models):
    # transformers reads the last token (and refuses batches); rewardkit batches and reads the same
    reference = Reference(pad_models["none"])
    assert reference.tokenizer.pad_token_id is None and reference.model.config.pad_token_id is None
    rows = rollouts(COMPLETIONS)
    got = scores(bind(model=str(pad_models["none"]), batch_tokens=16384), rows)
    for index, text in enumerate(COMPLETIONS):
        ids = reference.chat_ids(PROMPT, text)
        assert ids[-1] == reference.tokenizer.eos_token_id
        assert got[f"t{index}"] == pytest.approx(alone(reference, ids), abs=1e-4)


def test_a_backbone_plus_head_is_read_at_the_last_real_token_as_openrlhf_reads_it(pad_models, tmp_path):
    # OpenRLHF's reward model gathers at the last position its attention mask marks real (eos
    # included), so a bare backbone plus ``score`` keeps that rule even when pad == eos
    split = build_backbone_plus_head(pad_models["eos"], tmp_path / "eos-head")
    reference = Reference(pad_models["eos"])
    got = scores(bind(model=str(split)), rollouts(COMPLETIONS[:3]))
    for index, text in enumerate(COMPLETIONS[:3]):
        last = at_last_token(reference, reference.chat_ids(PROMPT, text))
        assert got[f"t{index}"] == pytest.approx(last, abs=1e-4)
