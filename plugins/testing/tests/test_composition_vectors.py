"""The shared composition vectors and their checker: the vector file pins every rule, and the checker
catches each way an implementation can disagree with a vector (``in_process_compose`` is the reference)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from rewardkit import compose
from rewardkit_testing.composition_vectors import (
    VECTORS_ENV,
    VectorMismatch,
    check_vector,
    default_vectors_path,
    load_reward_vectors,
)

CASES = load_reward_vectors()

# Each composition rule and each validation family must be pinned by at least one vector.
REQUIRED_RULES = {
    "weighted-sum",
    "negative-weight",
    "breakdown",
    "skip",
    "error-raise",
    "error-zero",
    "error-none",
    "gate-pass",
    "gate-below-threshold",
    "gate-skipped",
    "gate-errored",
    "multiple-gates",
    "threshold",
    "floor",
    "clip",
    "spec-validation",
    "outcome-validation",
}


def test_vectors_are_enough_and_cover_every_rule():
    assert len(CASES) >= 25
    covered = {rule for case in CASES for rule in case.get("rules", [])}
    assert covered >= REQUIRED_RULES, sorted(REQUIRED_RULES - covered)
    kinds = {next(k for k in ("expect", "expect_error", "expect_spec_error") if k in case) for case in CASES}
    assert kinds == {"expect", "expect_error", "expect_spec_error"}


def test_vector_file_is_strict_json_apart_from_overflowing_literals():
    # Other implementations (Go) must read it: no NaN/Infinity tokens, only numbers that overflow.
    text = default_vectors_path().read_text(encoding="utf-8")
    assert "NaN" not in text and "Infinity" not in text


def _wrong(total_shift: float = 0.0, gated: bool | None = None, drop: str | None = None) -> Any:
    def compose_fn(spec: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
        result = compose(spec, components).to_json()
        if result["total"] is not None:
            result["total"] += total_shift
        if gated is not None:
            result["gated"] = gated
        if drop is not None:
            result["breakdown"].pop(drop, None)
        return result

    return compose_fn


def _case(name: str) -> dict[str, Any]:
    return next(case for case in CASES if case["name"] == name)


def test_checker_catches_a_wrong_total_beyond_tolerance_only():
    case = _case("weighted-sum")
    check_vector(case, _wrong(total_shift=5e-13))
    with pytest.raises(VectorMismatch, match=r"'weighted-sum'.*total: expected 0.65"):
        check_vector(case, _wrong(total_shift=1e-9))


def test_checker_catches_wrong_gated_and_missing_breakdown():
    with pytest.raises(VectorMismatch, match="gated: expected True, got False"):
        check_vector(_case("gate-below-threshold"), _wrong(gated=False))
    with pytest.raises(VectorMismatch, match="exactly the components"):
        check_vector(_case("gate-below-threshold"), _wrong(drop="math"))


def test_checker_distinguishes_null_from_zero():
    case = _case("error-none")
    with pytest.raises(VectorMismatch, match=r"total: expected None, got 0\.0"):
        check_vector(case, lambda spec, components: {**compose(spec, components).to_json(), "total": 0.0})


def test_checker_requires_the_error_and_its_message():
    case = _case("error-raise-default")
    with pytest.raises(VectorMismatch, match="expected an error containing 'sandbox-exec'"):
        check_vector(case, lambda spec, components: {"total": 0.0, "gated": False, "breakdown": {}})

    def wrong_message(spec: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("something else")

    with pytest.raises(VectorMismatch, match="does not contain 'sandbox-exec'"):
        check_vector(case, wrong_message)


def test_checker_gives_implementations_a_private_copy():
    case = _case("weighted-sum")
    before = copy.deepcopy(case)

    def mutating(spec: dict[str, Any], components: dict[str, Any]) -> dict[str, Any]:
        spec["components"].clear()
        components.clear()
        return {"total": 0.65, "gated": False, "breakdown": {"math": {}, "format": {}}}

    with pytest.raises(VectorMismatch):
        check_vector(case, mutating)
    assert case == before


def _write(tmp_path: Path, document: Any) -> Path:
    path = tmp_path / "vectors.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


GOOD = {
    "name": "ok",
    "description": "fine",
    "spec": {"components": [{"provider": "a"}]},
    "components": {"a": {"status": "scored", "value": 1}},
    "expect": {"total": 1, "gated": False},
}


@pytest.mark.parametrize(
    ("document", "needle"),
    [
        ({"version": 2, "cases": [GOOD]}, "version"),
        ({"version": 1, "cases": []}, "non-empty"),
        ({"version": 1, "cases": [GOOD, GOOD]}, "duplicate case name 'ok'"),
        ({"version": 1, "cases": [{**GOOD, "expct": {}}]}, "unknown keys ['expct']"),
        ({"version": 1, "cases": [{**GOOD, "expect_error": "x"}]}, "exactly one of"),
        ({"version": 1, "cases": [{k: v for k, v in GOOD.items() if k != "description"}]}, "'description'"),
        ({"version": 1, "cases": [{**GOOD, "expect": {"total": 1}}]}, '"gated"'),
        ({"version": 1, "cases": [{**GOOD, "name": ""}]}, '"name"'),
    ],
)
def test_loader_refuses_malformed_files(tmp_path, document, needle):
    with pytest.raises(ValueError) as caught:
        load_reward_vectors(_write(tmp_path, document))
    assert needle in str(caught.value)


def test_loader_reports_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.setenv(VECTORS_ENV, str(tmp_path / "absent.json"))
    with pytest.raises(FileNotFoundError, match=r"absent\.json.*REWARDKIT_REWARD_VECTORS"):
        load_reward_vectors()
    monkeypatch.setenv(VECTORS_ENV, str(_write(tmp_path, {"version": 1, "cases": [GOOD]})))
    assert [case["name"] for case in load_reward_vectors()] == ["ok"]
