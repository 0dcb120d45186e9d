"""What each line of `rewardkit score --out` shows: every term of a multi-term provider, the
completion it was scored on, and the text an answer verifier read as the answer (notes)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import rewardkit
from rewardkit.contracts import NOTE_MAX_CHARS, RewardProviderSpec
from rewardkit.contracts.errors import RegistrationError, RewardContractError
from rewardkit.scoring.pointwise import map_candidates

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
EXAMPLE = ROOT / "examples" / "gsm8k"


def score_cli(config: Path, out: Path, *overrides: str) -> list[dict[str, Any]]:
    """``rewardkit score CONFIG [overrides] --out OUT`` as a program (this folder's fixture
    catalogs importable); returns the lines it wrote."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])),
    }
    completed = subprocess.run(
        [sys.executable, "-m", "rewardkit.cli", "score", str(config), *overrides, "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert completed.returncode == 0, completed.stderr
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


def write_job(folder: Path, reward: str, rows: list[dict[str, Any]], group_size: int = 2) -> Path:
    (folder / "rollouts.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    config = folder / "config.yaml"
    data = "{rollouts_path: rollouts.jsonl}"
    config.write_text(
        f"rl:\n  group_size: {group_size}\n  data: {data}\n  reward: {{{reward}}}\n", encoding="utf-8"
    )
    return config


# -- item 6: every declared term of a multi-term provider -----------------------------------------


@pytest.mark.parametrize(
    ("catalog", "provider"),
    [("reasons_fixtures:catalog", "two-terms"), ("rows_fixtures:catalog", "two-terms-cheap")],
    ids=["group-by-group", "one-pass"],
)
@pytest.mark.parametrize("chosen", [None, "format"])
def test_each_row_shows_every_declared_term_and_which_one_is_optimised(
    tmp_path: Path, catalog: str, provider: str, chosen: str | None
):
    rows = [{"group_id": "g", "completion": "yes"}, {"group_id": "g", "completion": "no"}]
    config = write_job(tmp_path, f"catalog: '{catalog}', provider: {provider}", rows)
    overrides = [f"rl.reward.term={chosen}"] if chosen else []
    lines = score_cli(config, tmp_path / "results.jsonl", *overrides)
    term = chosen or "correct"
    entries = [line["breakdown"][provider] for line in lines]
    assert [entry["terms"] for entry in entries] == [
        {"correct": 1.0, "format": 0.5},
        {"correct": 0.0, "format": 0.5},
    ]
    # ``term`` names the one in ``value``: the only one that enters the reward.
    assert [entry["term"] for entry in entries] == [term, term]
    assert [entry["value"] for entry in entries] == [entry["terms"][term] for entry in entries]
    assert [line["final"] for line in lines] == [entry["terms"][term] for entry in entries]


def test_a_single_term_provider_keeps_its_breakdown_entry_as_it_was(tmp_path: Path):
    config = write_job(tmp_path, "provider: nonempty", [{"group_id": "g", "completion": "x"}] * 2)
    (line, _) = score_cli(config, tmp_path / "results.jsonl")
    assert line["breakdown"]["nonempty"].keys() == {
        "status",
        "value",
        "weight",
        "contribution",
        "reason",
        "gate",
    }


# -- item 7: the completion, and the answer a verifier read ----------------------------------------


def test_the_readme_job_rows_carry_the_completion_and_the_extracted_answer(tmp_path: Path):
    shutil.copytree(EXAMPLE, tmp_path / "gsm8k")
    lines = score_cli(tmp_path / "gsm8k" / "config.yaml", tmp_path / "results.jsonl")
    source = [
        json.loads(line) for line in (EXAMPLE / "rollouts.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    assert [line["completion"] for line in lines] == [row["completion"] for row in source]
    # The first line: the completion ends "A: 26" and the gold answer is 18.
    assert lines[0]["breakdown"]["gsm8k"]["extracted_answer"] == "26"
    missing = 0
    for line, row in zip(lines, source):
        entry, extracted = line["breakdown"]["gsm8k"], line["diagnostics"]["gsm8k"]["extracted"]
        if "extracted_answer" not in entry:
            assert extracted == 0.0
            missing += 1
            continue
        answer = entry["extracted_answer"]
        assert answer and answer in line["completion"]
        # Read independently of the verifier: a number stated plainly, perhaps with $ and commas.
        stated = float(answer.replace(",", "").removeprefix("$"))
        gold = float(row["answer"].rsplit("####", 1)[1].strip().replace(",", ""))
        assert line["final"] == float(stated == gold), (answer, row["answer"][-20:])
    assert missing == sum(line["diagnostics"]["gsm8k"]["extracted"] == 0.0 for line in lines) == 1
    # Notes are text for the reader, never metrics: the diagnostics stay numbers.
    assert all(set(line["diagnostics"]["gsm8k"]) == {"extracted"} for line in lines)


@pytest.mark.parametrize(
    ("provider", "reference", "completion", "shown"),
    [
        ("gsm8k", "#### 18", "So the total is 9 + 9 = 18. Done.\n#### 18", "18"),
        ("gsm8k", "#### 18", "The answer is 18 or 19.", "18 or 19"),  # states no single number
        ("arithmetic", "3*(4+5)", "\\boxed{27}", "27"),
        (
            "countdown",
            {"numbers": [79, 17, 60], "target": 36},
            "<answer> 79 - 60 + 17 </answer>",
            "79 - 60 + 17",
        ),
    ],
)
def test_answer_verifiers_show_the_text_they_read(provider: str, reference: Any, completion: str, shown: str):
    reward = rewardkit.load({"rl": {"group_size": 1, "reward": {"provider": provider}}})
    rollout = {"trajectory_id": "t", "completion": completion, "reference": reference}
    ((_, candidate),) = reward.score([("g", [rollout])]).candidates()
    assert candidate.breakdown[provider]["extracted_answer"] == shown


def test_a_flooded_answer_is_cut_and_an_absent_one_is_not_shown(tmp_path: Path):
    rows = [
        {"group_id": "g", "reference": "#### 3", "completion": "#### " + "9" * 5000},
        {"group_id": "g", "reference": "#### 3", "completion": "no number here"},
    ]
    config = write_job(tmp_path, "provider: gsm8k", rows)
    flooded, absent = score_cli(config, tmp_path / "results.jsonl")
    answer = flooded["breakdown"]["gsm8k"]["extracted_answer"]
    assert len(answer) == NOTE_MAX_CHARS and answer.endswith("…") and answer.startswith("9999")
    assert "extracted_answer" not in absent["breakdown"]["gsm8k"]
    assert absent["completion"] == "no number here"


def test_a_providers_declared_notes_are_shown_and_an_undeclared_one_is_refused_by_name():
    config = {"rl": {"group_size": 2, "reward": {"catalog": "rows_fixtures:catalog", "provider": "noted"}}}
    groups = [
        (
            "g",
            [
                {"trajectory_id": f"g/{n}", "completion": text}
                for n, text in enumerate(("alpha beta", "gamma"))
            ],
        )
    ]
    batch = rewardkit.load(config).score(groups)
    assert [c.breakdown["noted"]["first_word"] for _, c in batch.candidates()] == ["alpha", "gamma"]
    assert not any("first_word" in name for name in batch.metrics)
    config["rl"]["reward"]["provider"] = "unnoted"
    with pytest.raises(RewardContractError, match=r"undeclared note 'first_word'.*notes=") as caught:
        rewardkit.load(config).score(groups)
    assert "unnoted" in str(caught.value) and "g/0" in str(caught.value)


def test_note_names_must_not_shadow_the_breakdown_fields():
    with pytest.raises(RegistrationError, match=r"note names \['value'\].*reserved"):
        RewardProviderSpec("shadow", map_candidates, (), "1", ("task",), notes=("value",))


def test_the_first_line_shown_in_configuration_md_is_the_readme_jobs(tmp_path: Path):
    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    shown = (
        page.split("The first line of the README's job", 1)[1].split("```json\n", 1)[1].split("\n```", 1)[0]
    )
    shutil.copytree(EXAMPLE, tmp_path / "gsm8k")
    (first, *_) = score_cli(tmp_path / "gsm8k" / "config.yaml", tmp_path / "results.jsonl")
    assert json.loads(shown) == first
