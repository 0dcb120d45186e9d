"""``reward-model`` without torch: registration, load-time checks of a folder, identity, bucketing.

These run in env ``rl`` (no torch, strict plugin loading) and in env ``rm``. The folders are
written by hand (a config, a tokenizer file, a safetensors file made of a header and zeros), so
nothing here loads a model.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rewardkit.artifacts import folder_hash
from rewardkit.contracts.errors import PreflightError
from rewardkit.contracts.params import operator_only_reason
from rewardkit.seam.catalog import resolve_catalog
from rewardkit_rl.reward_models.batching import (
    Coalescer,
    fixed_size_batches,
    padded_tokens,
    token_budget_batches,
)
from rewardkit_rl.reward_models.params import EnsembleParams, RewardModelParams

HIDDEN = 8


def write_safetensors(path: Path, tensors: dict[str, tuple[int, ...]]) -> None:
    """A valid safetensors file of float32 zeros (no torch needed)."""
    header: dict[str, object] = {}
    offset = 0
    for name, shape in tensors.items():
        size = 4
        for dim in shape:
            size *= dim
        header[name] = {"dtype": "F32", "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * offset)


def fake_model(
    folder: Path,
    *,
    architectures: tuple[str, ...] = ("LlamaForSequenceClassification",),
    labels: int = 1,
    tokenizer: bool = True,
    chat_template: bool = True,
    weights: dict[str, tuple[int, ...]] | None = None,
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    config = {"architectures": list(architectures), "model_type": "llama", "hidden_size": HIDDEN}
    if labels:
        config["id2label"] = {str(index): f"LABEL_{index}" for index in range(labels)}
    (folder / "config.json").write_text(json.dumps(config))
    if tokenizer:
        (folder / "tokenizer.json").write_text("{}")
        settings = {"chat_template": "{{ messages }}"} if chat_template else {}
        (folder / "tokenizer_config.json").write_text(json.dumps(settings))
    write_safetensors(folder / "model.safetensors", weights or {"model.embed_tokens.weight": (4, HIDDEN),
                                                               "score.weight": (1, HIDDEN)})  # fmt: skip
    return folder


def bind(**params: object):
    return resolve_catalog().bind("reward-model", params)


# -- registration ----------------------------------------------------------------------------------


def test_registers_and_binds_without_importing_torch(tmp_path: Path):
    folder = fake_model(tmp_path / "rm")
    script = textwrap.dedent(
        f"""
        import sys, threading
        from rewardkit.seam.catalog import resolve_catalog
        catalog = resolve_catalog()
        assert {{"reward-model", "reward-model-ensemble"}} <= set(catalog.names()), catalog.names()
        before = threading.active_count()
        bound = catalog.bind("reward-model", {{"model": {str(folder)!r}}})
        assert len(bound.identity) == 64
        assert threading.active_count() == before, "a factory starts no thread"
        heavy = [name for name in ("torch", "transformers", "tokenizers") if name in sys.modules]
        assert not heavy, heavy
        print("ok")
        """
    )
    env = {**os.environ, "REWARDKIT_STRICT_PLUGINS": "1", "REWARDKIT_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_paths_urls_credentials_and_limits_are_operator_only():
    for name, reason in [("model", "path"), ("base_url", "url"), ("api_key_env", "credential"),
                         ("max_tokens", "resource"), ("batch_tokens", "resource"), ("device", "resource"),
                         ("concurrency", "resource"), ("deadline_s", "resource")]:  # fmt: skip
        assert operator_only_reason(RewardModelParams, name) == reason, name
    assert operator_only_reason(EnsembleParams, "members") == "path"
    assert operator_only_reason(RewardModelParams, "template") is None


# -- load-time checks --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "params", "message"),
    [
        (lambda root: root / "nope", {}, "does not exist"),
        (lambda root: fake_model(root / "m", labels=2), {}, "num_labels=2"),
        (lambda root: fake_model(root / "m", tokenizer=False), {}, "has no tokenizer"),
        (lambda root: fake_model(root / "m", chat_template=False), {"template": "chat"}, "no chat template"),
        (
            lambda root: fake_model(
                root / "m",
                architectures=("LlamaModel",),
                labels=0,
                weights={"layers.0.weight": (HIDDEN, HIDDEN)},
            ),
            {},
            "has no scalar head",
        ),
        (lambda root: fake_model(root / "m"), {"backend": "vllm-classify"}, "needs base_url"),
        (lambda root: fake_model(root / "m"), {"base_url": "http://127.0.0.1:9"}, "base_url is for the HTTP"),
        (lambda root: fake_model(root / "m"), {"api_key_env": "sk-123 secret"}, "NAME of an environment"),
        (lambda root: fake_model(root / "m"), {"length_penalty": 0.5}, "length_normalisation: linear"),
        (lambda root: fake_model(root / "m"), {"max_tokens": "512"}, "max_tokens must be an integer"),
    ],
)
def test_bad_folders_and_params_fail_at_load_naming_the_cause(tmp_path: Path, make, params, message):
    folder = make(tmp_path)
    with pytest.raises(PreflightError, match=message):
        bind(model=str(folder), **params)


def test_config_without_a_head_loads_for_http_backends_only(tmp_path: Path):
    folder = fake_model(tmp_path / "m", architectures=("LlamaModel",), labels=0, weights={"x": (1,)})
    bind(model=str(folder), backend="openrlhf", base_url="http://127.0.0.1:9")
    with pytest.raises(PreflightError, match="has no scalar head"):
        bind(model=str(folder))


def test_a_backbone_plus_head_folder_is_found_by_its_head_weight(tmp_path: Path):
    weights = {"model.layers.0.weight": (HIDDEN, HIDDEN), "value_head.weight": (1, HIDDEN)}
    folder = fake_model(tmp_path / "m", architectures=("LlamaModel",), labels=0, weights=weights)
    settings = RewardModelParams.model_validate({"model": str(folder)})
    assert settings.facts.kind == "backbone+head" and settings.facts.head_key == "value_head.weight"


def test_ensemble_needs_two_members(tmp_path: Path):
    folder = str(fake_model(tmp_path / "m"))
    catalog = resolve_catalog()
    with pytest.raises(PreflightError, match="members"):
        catalog.bind("reward-model-ensemble", {"members": [{"model": folder}]})
    with pytest.raises(PreflightError, match="k applies only"):
        catalog.bind("reward-model-ensemble", {"members": [{"model": folder}] * 2, "k": 2.0})
    catalog.bind("reward-model-ensemble", {"members": [{"model": folder}] * 2})


# -- identity ----------------------------------------------------------------------------------------


def test_identity_covers_the_folder_content_and_the_settings(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("REWARDKIT_CACHE_DIR", str(tmp_path / "cache"))
    folder = fake_model(tmp_path / "m")
    first = bind(model=str(folder)).identity
    assert bind(model=str(folder)).identity == first
    changes = [
        {"truncation": "right"},
        {"max_tokens": 512},
        {"template": "plain"},
        {"score_std": 2.0},
        {"length_normalisation": "per_token"},
        {"backend": "openrlhf", "base_url": "http://h:1"},
    ]
    for changed in changes:
        assert bind(model=str(folder), **changed).identity != first, changed
    weights = folder / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] = 1  # one weight changes; size and path do not
    weights.write_bytes(bytes(data))
    os.utime(weights, ns=(weights.stat().st_atime_ns, weights.stat().st_mtime_ns + 1_000_000))
    assert bind(model=str(folder)).identity != first


def test_preflight_again_reads_no_file_again(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("REWARDKIT_CACHE_DIR", str(tmp_path / "cache"))
    folder = fake_model(tmp_path / "m")
    reads: list[Path] = []
    original = folder_hash._file_sha256
    monkeypatch.setattr(folder_hash, "_file_sha256", lambda path: reads.append(path) or original(path))
    bind(model=str(folder))
    assert reads, "the first preflight hashes the folder"
    reads.clear()
    bind(model=str(folder))
    assert reads == [], "a second preflight (a Ray actor, a resumed run) uses the on-disk cache"


# -- bucketing and coalescing --------------------------------------------------------------------------


@given(st.lists(st.integers(1, 600), min_size=1, max_size=80), st.integers(1, 4096))
def test_buckets_hold_every_index_once_within_the_budget(lengths: list[int], budget: int):
    batches = token_budget_batches(lengths, budget)
    assert sorted(index for batch in batches for index in batch) == list(range(len(lengths)))
    for batch in batches:
        padded = len(batch) * max(lengths[index] for index in batch)
        assert padded <= budget or len(batch) == 1


def test_buckets_pad_less_than_fixed_batches_on_mixed_lengths():
    lengths = [32, 2048, 40, 64, 900, 35, 33, 128, 1500, 50, 37, 256] * 4
    bucketed = padded_tokens(lengths, token_budget_batches(lengths, 8192))
    fixed = padded_tokens(lengths, fixed_size_batches(len(lengths), 8))
    assert bucketed < fixed / 2, (bucketed, fixed)
    assert bucketed >= sum(lengths)


def test_coalescer_scores_waiting_groups_in_one_run_and_keeps_each_order():
    entered, release = threading.Event(), threading.Event()
    calls: list[list[int]] = []

    def run(items: list[int]) -> list[int]:
        calls.append(list(items))
        if len(calls) == 1:
            entered.set()
            release.wait(60)
        return [item * 10 for item in items]

    coalescer: Coalescer[int, int] = Coalescer(run)
    results: dict[str, list[int]] = {}

    def submit(name: str, items: list[int]) -> None:
        results[name] = coalescer.submit(items)

    first = threading.Thread(target=submit, args=("a", [1, 2]))
    first.start()
    entered.wait(60)
    waiting = [
        threading.Thread(target=submit, args=(name, items)) for name, items in (("b", [3]), ("c", [4, 5]))
    ]
    for thread in waiting:
        thread.start()
    while len(coalescer._queue) < 2:  # both queued behind the running batch
        threading.Event().wait(0.01)
    release.set()
    for thread in (first, *waiting):
        thread.join(60)
    assert results == {"a": [10, 20], "b": [30], "c": [40, 50]}
    assert len(calls) == 2 and sorted(calls[1]) == [3, 4, 5], calls


def test_coalescer_raises_a_failed_run_in_every_waiting_caller():
    def run(items: list[int]) -> list[int]:
        raise RuntimeError("the model ran out of memory")

    coalescer: Coalescer[int, int] = Coalescer(run)
    with pytest.raises(RuntimeError, match="out of memory"):
        coalescer.submit([1])
    assert coalescer.submit([]) == []
