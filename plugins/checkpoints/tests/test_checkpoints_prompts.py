"""Checkpoint evaluation reads its prompts through the core's loader and hands them to the reward
as training does; the results it keeps name the reward they were scored under.

Every test runs the real watcher against the core's ``endpoint`` serving strategy and a scripted
OpenAI-compatible server on loopback (checkpoint_fixtures.py); the provider is
``checkpoint_catalog``'s recorder, which keeps what it receives.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import datasets
import pytest
from checkpoint_catalog import RECEIVED
from checkpoint_fixtures import ScriptedModels, ServerThread, chat_reply, write_checkpoint

from rewardkit.cli import main
from rewardkit.config import load_config
from rewardkit.contracts.errors import DataError, IdentityMismatchError, RewardkitError
from rewardkit.contracts.frozen import freeze, strictly_equal, thaw
from rewardkit.scoring.reward import load
from rewardkit.seam.plugins import reset_plugins
from rewardkit_bindings.trl import reward_funcs
from rewardkit_checkpoints.curve import curve_rows
from rewardkit_checkpoints.watcher import Watcher

CATALOG = "checkpoint_catalog:catalog"
N = 2  # samples per prompt: rl.group_size, checkpoints.generation.n and TRL's num_generations

# Chat rows in TRL's conversational form (TRL reads the prompt from a column named "prompt").
CHAT_ROWS: list[dict[str, Any]] = [
    {
        "prompt": [
            {"role": "system", "content": "Answer with a number."},
            {"role": "user", "content": "What is 2 + 3?"},
        ],
        "reward_input": {"answer": "5", "tags": ["sum"]},
        "source_id": "q-sum",
        "topic": "arithmetic",
    },
    {
        "prompt": [{"role": "user", "content": "Name the smallest prime."}],
        "reward_input": {"answer": "2", "tags": ["prime"]},
        "source_id": "q-prime",
        "topic": "numbers",
    },
]


@pytest.fixture
def served():
    script = ScriptedModels()
    with ServerThread(script) as server:
        yield script, server.url


@pytest.fixture(autouse=True)
def clean_recorder(fresh_plugins):
    RECEIVED.clear()
    yield
    RECEIVED.clear()


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _checkpoints(tmp_path: Path, url: str, **extra: Any) -> dict[str, Any]:
    (tmp_path / "run").mkdir(exist_ok=True)
    return {
        "dir": str(tmp_path / "run"),
        "log_dir": str(tmp_path / "logs"),
        "generation": {"mode": "chat", "n": N, "max_tokens": 8, "deadline_s": 20},
        "serving": {"strategy": "endpoint", "params": {"base_url": url, "model": "tiny"}},
        "settle_s": 0.0,
        "scan_interval_s": 0.1,
        **extra,
    }


def _reward(**extra: Any) -> dict[str, Any]:
    return {"provider": "recorder", "catalog": CATALOG, **extra}


def _watch(config: Any) -> list[str]:
    said: list[str] = []
    watcher = Watcher(config, load(config), say=said.append)
    try:
        watcher.scan()
    finally:
        watcher.close()
    return said


def _received() -> list[dict[str, Any]]:
    return [
        {
            "prompt": thaw(item["prompt"]),
            "reference": thaw(item["reference"]),
            "completions": item["completions"],
        }
        for item in RECEIVED
    ]


# -- (a) the same rows through the TRL binding and through `rewardkit checkpoints watch` ----------


def test_chat_rows_reach_the_provider_identically_through_trl_and_the_watcher(tmp_path, served, monkeypatch):
    script, url = served
    rows = _write_jsonl(tmp_path / "rows.jsonl", CHAT_ROWS)
    rl = {"group_size": N, "data": {"response_column": "reward_input"}, "reward": _reward()}

    # TRL: num_generations consecutive samples per prompt, conversational prompts and completions,
    # every other dataset column as a keyword argument (GRPOTrainer._calculate_rewards, trl 1.13).
    funcs, _ = reward_funcs({"rl": rl})
    prompts = [row["prompt"] for row in CHAT_ROWS for _ in range(N)]
    completions = [
        [{"role": "assistant", "content": chat_reply(row["prompt"][-1]["content"], index)}]
        for row in CHAT_ROWS
        for index in range(N)
    ]
    columns = {
        key: [row[key] for row in CHAT_ROWS for _ in range(N)]
        for key in ("reward_input", "source_id", "topic")
    }
    funcs[0](
        prompts=prompts,
        completions=completions,
        completion_ids=[[1, 2, 3]] * len(prompts),
        trainer_state=None,
        log_extra=lambda *args, **kwargs: None,
        log_metric=lambda *args, **kwargs: None,
        **columns,
    )
    through_trl = list(RECEIVED)
    RECEIVED.clear()

    # The watcher, from the command line, over the same rows (rl.data, no checkpoints.prompts).
    config_path = tmp_path / "watch.yaml"
    rl_watch = {**rl, "data": {"path": str(rows), "response_column": "reward_input"}}
    config_path.write_text(json.dumps({"rl": rl_watch, "checkpoints": _checkpoints(tmp_path, url)}))
    monkeypatch.chdir(tmp_path)
    assert main(["checkpoints", "watch", str(config_path), "--once"]) == 0
    through_watcher = list(RECEIVED)

    assert len(through_trl) == len(through_watcher) == len(CHAT_ROWS)
    for trl_group, watched_group, row in zip(through_trl, through_watcher, CHAT_ROWS):
        for key in ("prompt", "reference"):
            assert strictly_equal(trl_group[key], watched_group[key]), key
            assert strictly_equal(watched_group[key], freeze(row[key if key == "prompt" else "reward_input"]))
        assert not isinstance(watched_group["prompt"], str), "the messages were turned into a string"
        assert trl_group["completions"] == watched_group["completions"]
    # and the served model was asked with the messages themselves (chat completions)
    assert script.chat_messages == [row["prompt"] for row in CHAT_ROWS]


# -- (b) seed 001's example as command-line overrides ---------------------------------------------

SEED_ROWS = [
    {
        "messages": [{"role": "user", "content": "Follow the supplied constraints."}],
        "reward_input": {"constraint_ids": ["customer_rule"], "arguments": {"count": 3}},
        "source_id": "stable-customer-row-id",
    },
    {
        "messages": [{"role": "user", "content": "Write three words."}],
        "reward_input": {"constraint_ids": ["word_count"], "arguments": {"count": 3}},
        "source_id": "another-row-id",
    },
]
SEED_OVERRIDES = [
    "rl.data.path=rows.jsonl",
    "rl.data.prompt_column=messages",
    "rl.data.response_column=reward_input",
]


def _seed_config(tmp_path: Path, url: str) -> Path:
    _write_jsonl(tmp_path / "rows.jsonl", SEED_ROWS)
    path = tmp_path / "suite.yaml"
    spec = {"rl": {"group_size": N, "reward": _reward()}, "checkpoints": _checkpoints(tmp_path, url)}
    path.write_text(json.dumps(spec))
    return path


def test_seed_001_data_overrides_drive_checkpoint_evaluation(tmp_path, served, monkeypatch, capsys):
    script, url = served
    config_path = _seed_config(tmp_path, url)
    write_checkpoint(tmp_path / "run", 100)
    monkeypatch.chdir(tmp_path)
    assert main(["checkpoints", "watch", str(config_path), *SEED_OVERRIDES, "--once"]) == 0
    received = _received()
    assert len(received) == 2 * len(SEED_ROWS)  # the base, then step 100
    for group, row in zip(received, SEED_ROWS * 2):
        assert group["prompt"] == row["messages"] and group["reference"] == row["reward_input"]
        assert group["completions"] == tuple(chat_reply(row["messages"][-1]["content"], k) for k in range(N))
    assert script.chat_messages == [row["messages"] for row in SEED_ROWS] * 2
    summary = json.loads((tmp_path / "logs" / "step-100.summary.json").read_text())
    prompts = summary["generation"]["prompts"]
    assert prompts["section"] == "rl.data" and prompts["prompt_column"] == "messages"
    assert prompts["reference_column"] == "reward_input"
    assert [row["step"] for row in curve_rows(tmp_path / "logs")] == ["base", 100]


def test_without_the_overrides_the_suite_names_the_missing_data_path(tmp_path, served, monkeypatch, capsys):
    _, url = served
    config_path = _seed_config(tmp_path, url)
    monkeypatch.chdir(tmp_path)
    assert main(["checkpoints", "watch", str(config_path), "--once"]) == 2
    assert "set rl.data.path (or checkpoints.prompts.path)" in capsys.readouterr().err
    # a misspelt mapping names the key of the section it came from, and the row's columns
    assert main(["checkpoints", "watch", str(config_path), "rl.data.path=rows.jsonl", "--once"]) == 2
    error = capsys.readouterr().err
    assert "line 1" in error and "rl.data.prompt_column is not set" in error and "messages" in error
    assert not RECEIVED and not (tmp_path / "logs" / "base.summary.json").exists()


def test_completions_mode_with_chat_prompts_is_refused_before_serving(tmp_path, served, monkeypatch):
    script, url = served
    config = load_config(
        {
            "rl": {
                "group_size": N,
                "reward": _reward(),
                "data": {
                    "path": str(_write_jsonl(tmp_path / "r.jsonl", CHAT_ROWS)),
                    "response_column": "reward_input",
                },
            },
            "checkpoints": _checkpoints(tmp_path, url, generation={"mode": "completions", "n": N}),
        }
    )
    with pytest.raises(RewardkitError, match=r"record 1: the prompt is chat messages.*mode=chat"):
        Watcher(config, load(config))
    assert script.requests == 0


# -- (c) a datasets source with items_fn --------------------------------------------------------


def _hf_config(tmp_path: Path, url: str, **prompts: Any) -> Any:
    folder = tmp_path / "eval-set"
    datasets.Dataset.from_list(CHAT_ROWS).save_to_disk(str(folder))
    section = {
        "source": "hf",
        "path": str(folder),
        "response_column": "reward_input",
        "id_column": "source_id",
        "cluster_column": "topic",
        **prompts,
    }
    return load_config(
        {
            "rl": {"group_size": N, "reward": _reward()},
            "checkpoints": _checkpoints(tmp_path, url, prompts=section),
        }
    )


def test_an_hf_source_with_items_fn_is_rewritten_before_generation_and_scoring(tmp_path, served):
    script, url = served
    _watch(_hf_config(tmp_path, url, items_fn="checkpoint_catalog:shout"))
    shouted = [
        [
            {**message, "content": message["content"].upper()} if message["role"] == "user" else message
            for message in row["prompt"]
        ]
        for row in CHAT_ROWS
    ]
    assert script.chat_messages == shouted
    assert [group["prompt"] for group in _received()] == shouted
    assert [group["reference"] for group in _received()] == [row["reward_input"] for row in CHAT_ROWS]
    lines = [json.loads(line) for line in (tmp_path / "logs" / "base.jsonl").read_text().splitlines()]
    assert [(line["record"], line["cluster"]) for line in lines] == [
        ("q-sum", "arithmetic"),
        ("q-prime", "numbers"),
    ]


def test_an_items_fn_that_changes_the_row_keys_is_an_error_naming_the_row(tmp_path, served):
    script, url = served
    config = _hf_config(tmp_path, url, items_fn="checkpoint_catalog:drops_a_key")
    with pytest.raises(DataError) as caught:
        Watcher(config, load(config))
    message = str(caught.value)
    assert "row 0" in message and "checkpoints.prompts.items_fn" in message and "removed ['topic']" in message
    assert script.requests == 0


def test_an_hf_source_without_datasets_is_a_one_line_install_hint(tmp_path, served, monkeypatch):
    _, url = served
    config = _hf_config(tmp_path, url)
    monkeypatch.setitem(sys.modules, "datasets", None)  # `import datasets` raises ImportError
    with pytest.raises(DataError) as caught:
        Watcher(config, load(config))
    assert (
        str(caught.value)
        == "checkpoints.prompts.source: hf needs the 'datasets' library: pip install datasets"
    )


def test_id_and_cluster_columns_must_be_on_every_row_and_ids_unique(tmp_path, served):
    _, url = served
    rows = [dict(row) for row in CHAT_ROWS]
    del rows[1]["topic"]
    section = {
        "path": str(_write_jsonl(tmp_path / "p.jsonl", rows)),
        "response_column": "reward_input",
        "id_column": "source_id",
        "cluster_column": "topic",
    }
    config = load_config(
        {
            "rl": {"group_size": N, "reward": _reward()},
            "checkpoints": _checkpoints(tmp_path, url, prompts=section),
        }
    )
    with pytest.raises(
        DataError,
        match=r"line 2, column 'topic': missing column 'topic', named by checkpoints.prompts.cluster_column",
    ):
        Watcher(config, load(config))
    rows = [dict(CHAT_ROWS[0]), dict(CHAT_ROWS[0])]
    section["path"] = str(_write_jsonl(tmp_path / "p.jsonl", rows))
    config = load_config(
        {
            "rl": {"group_size": N, "reward": _reward()},
            "checkpoints": _checkpoints(tmp_path, url, prompts=section),
        }
    )
    with pytest.raises(
        DataError, match=r"prompt row 2, column 'source_id': record id 'q-sum' is also the id of prompt row 1"
    ):
        Watcher(config, load(config))


# -- provenance of the log directory -------------------------------------------------------------


def _suite(tmp_path: Path, url: str, reward: dict[str, Any]) -> Any:
    section = {"path": str(tmp_path / "p.jsonl"), "response_column": "reward_input", "id_column": "source_id"}
    if not (tmp_path / "p.jsonl").exists():
        _write_jsonl(tmp_path / "p.jsonl", CHAT_ROWS)
    return load_config(
        {
            "rl": {"group_size": N, "reward": reward},
            "checkpoints": _checkpoints(tmp_path, url, prompts=section),
        }
    )


def test_the_summary_records_catalog_provider_revision_and_identity(tmp_path, served):
    _, url = served
    config = _suite(tmp_path, url, _reward())
    reward = load(config)
    _watch(config)
    [recorded] = json.loads((tmp_path / "logs" / "base.summary.json").read_text())["providers"]
    [current] = reward.providers
    assert recorded == current.to_json()
    assert (recorded["catalog"], recorded["provider"], recorded["revision"]) == (CATALOG, "recorder", "1")


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ("revision", "revision: recorded '1', now '2'"),
        ("catalog", f"catalog: recorded {CATALOG!r}, now 'checkpoint_catalog:same_catalog'"),
        ("provider", "provider 'recorder' (identity"),
        ("identity", "identity: recorded '"),
    ],
)
def test_resuming_under_another_reward_is_refused_naming_what_differs(
    tmp_path, served, monkeypatch, change, named
):
    script, url = served
    _watch(_suite(tmp_path, url, _reward()))
    requests = script.requests
    reward = _reward()
    if change == "revision":
        monkeypatch.setenv("RECORDER_REVISION", "2")
        reset_plugins()  # the catalog is read again, as by a new process
    elif change == "catalog":
        reward["catalog"] = "checkpoint_catalog:same_catalog"
    elif change == "provider":
        reward["provider"] = "recorder-copy"
    else:
        reward["params"] = {"scale": 2.0}
    with pytest.raises(IdentityMismatchError) as caught:
        _watch(_suite(tmp_path, url, reward))
    message = str(caught.value)
    assert "base.summary.json was scored under another reward" in message and named in message
    assert script.requests == requests, "a checkpoint was evaluated under the other reward"


def test_the_command_line_refuses_a_bumped_revision_with_exit_2(tmp_path, served, monkeypatch, capsys):
    _, url = served
    config_path = _seed_config(tmp_path, url)
    monkeypatch.chdir(tmp_path)
    assert main(["checkpoints", "watch", str(config_path), *SEED_OVERRIDES, "--once"]) == 0
    monkeypatch.setenv("RECORDER_REVISION", "2")
    reset_plugins()
    assert main(["checkpoints", "watch", str(config_path), *SEED_OVERRIDES, "--once"]) == 2
    assert "revision: recorded '1', now '2'" in capsys.readouterr().err


def test_a_code_change_without_a_revision_bump_is_said_and_refused_when_strict(tmp_path, served, monkeypatch):
    _, url = served
    config = _suite(tmp_path, url, _reward())
    _watch(config)
    summary_path = tmp_path / "logs" / "base.summary.json"
    summary = json.loads(summary_path.read_text())
    summary["providers"][0]["code_fingerprint"] = "0" * 64
    summary_path.write_text(json.dumps(summary))
    said = _watch(config)
    assert any(line.startswith("warning:") and "bump the revision" in line for line in said)
    assert not any(line.startswith("evaluating") for line in said)
    monkeypatch.setenv("REWARDKIT_STRICT_IDENTITY", "1")
    with pytest.raises(IdentityMismatchError, match="changed since the recorded run"):
        _watch(config)


def test_changed_prompts_are_refused_naming_the_hash(tmp_path, served):
    _, url = served
    _watch(_suite(tmp_path, url, _reward()))
    rows = [dict(CHAT_ROWS[0], reward_input={"answer": "6", "tags": ["sum"]}), CHAT_ROWS[1]]
    _write_jsonl(tmp_path / "p.jsonl", rows)
    with pytest.raises(
        RewardkitError, match=r"other generation settings or prompts \(generation\.prompts_sha256: recorded"
    ):
        _watch(_suite(tmp_path, url, _reward()))


def test_the_curve_refuses_a_step_scored_under_another_revision_than_the_base(tmp_path, served):
    _, url = served
    config = _suite(tmp_path, url, _reward())
    write_checkpoint(tmp_path / "run", 100)
    _watch(config)
    step = tmp_path / "logs" / "step-100.summary.json"
    summary = json.loads(step.read_text())
    summary["providers"][0]["revision"] = "2"
    step.write_text(json.dumps(summary))
    with pytest.raises(IdentityMismatchError, match="revision: recorded '1', now '2'"):
        curve_rows(tmp_path / "logs")
