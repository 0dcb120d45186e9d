"""``rewardkit compare``: the README's gsm8k rollouts scored strictly (A) and with
``fallback_last_number: true`` (B). The lists it prints are checked against a direct computation:
both rewards loaded with ``rewardkit.load`` and scored in process on the same rollouts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from view_helpers import (
    LENIENT,
    README_CONFIG,
    expected,
    plant_hedges,
    readme_rollouts,
    rewardkit,
    score,
    write_rollouts,
)


def reported(comparison: dict[str, Any]) -> dict[str, Any]:
    return {
        "only_a_pays": comparison["only_a_pays"],
        "only_b_pays": comparison["only_b_pays"],
        "changed": sorted(item["t"] for item in comparison["changed"]),
        "flipped_groups": sorted(flip["group"] for flip in comparison["flipped_groups"]),
    }


@pytest.mark.parametrize("hedged", [False, True], ids=["readme-as-shipped", "readme-with-hedges"])
def test_strict_against_lenient_lists_what_a_direct_computation_finds(tmp_path: Path, hedged: bool) -> None:
    rows = plant_hedges(readme_rollouts()) if hedged else readme_rollouts()
    rollouts = write_rollouts(tmp_path / "rollouts.jsonl", rows)
    done = rewardkit(
        "compare",
        str(README_CONFIG),
        str(README_CONFIG),
        str(rollouts),
        "--set-b",
        LENIENT,
        "--json",
        "comparison.json",
        "--html",
        "comparison.html",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    comparison = json.loads((tmp_path / "comparison.json").read_text())
    want = expected(rows)
    assert reported(comparison) == want
    if hedged:
        # the hedges ending on the gold number, and nothing else, are what only the lenient one pays
        hedges = [row["trajectory_id"] for row in rows if " or maybe " in row["completion"]]
        assert want["only_b_pays"] == hedges[::2] and len(want["only_b_pays"]) == 6
        assert want["flipped_groups"]  # a paid hedge turns a negative advantage positive
    else:
        assert want == {"only_a_pays": [], "only_b_pays": [], "changed": [], "flipped_groups": []}

    # provenance of both sides first, then the counts, then each listed candidate
    lines = done.stdout.splitlines()
    assert lines[0] == f"A: {README_CONFIG}" and lines[3] == f"B: {README_CONFIG} {LENIENT}"
    assert "identity 705bc22ab05d65a6" in lines[2] and "{'fallback_last_number': True}" in lines[5]
    assert (
        f"{len(want['changed'])} of 48 candidates changed reward; {len(want['flipped_groups'])} groups "
        "where an "
        f"advantage changed sign; paid by A only: 0; paid by B only: {len(want['only_b_pays'])}"
    ) in done.stdout
    for trajectory in want["only_b_pays"]:
        assert trajectory in done.stdout
    assert (tmp_path / "comparison.html").read_text().count("rewardkit compare") >= 1


def test_two_results_files_compare_as_their_configurations_do(tmp_path: Path) -> None:
    rows = plant_hedges(readme_rollouts())
    rollouts = write_rollouts(tmp_path / "rollouts.jsonl", rows)
    strict = score(README_CONFIG, rollouts, tmp_path / "strict.jsonl")
    lenient = score(README_CONFIG, rollouts, tmp_path / "lenient.jsonl", LENIENT)
    done = rewardkit("compare", str(strict), str(lenient), "--json", "comparison.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert reported(json.loads((tmp_path / "comparison.json").read_text())) == expected(rows)


def test_different_rollouts_are_refused_by_name(tmp_path: Path) -> None:
    rows = readme_rollouts()
    full = score(README_CONFIG, write_rollouts(tmp_path / "all.jsonl", rows), tmp_path / "all-results.jsonl")
    fewer = score(
        README_CONFIG, write_rollouts(tmp_path / "less.jsonl", rows[:44]), tmp_path / "less-results.jsonl"
    )
    done = rewardkit("compare", str(full), str(fewer), cwd=tmp_path)
    assert done.returncode == 2
    assert "A and B did not score the same rollouts: 0 candidates only in B" in done.stderr
    assert "4 only in A (first ['gsm8k-test-0011/6b_finetuning'" in done.stderr
