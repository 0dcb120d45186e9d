"""The rl pack's providers fingerprint every file of their packages, sandbox scripts included."""

from __future__ import annotations

from pathlib import Path

from rewardkit import resolve_catalog
from rewardkit.identity import _callables_behind, _code_root


def _fingerprinted_files(spec) -> set[str]:
    files = set()
    for target in _callables_behind(spec.factory):
        root, _ = _code_root(target)
        path = Path(root)
        files |= {str(p.relative_to(path)) for p in path.rglob("*.py")} if path.is_dir() else {path.name}
    return files


def test_math_and_code_tests_fingerprint_helpers_and_sandbox_scripts():
    catalog = resolve_catalog()
    math_files = _fingerprinted_files(catalog.entry("math").spec)
    assert {
        "math_answers.py",
        "math_check.py",
        "math_forms/compare.py",
        "math_forms/constants.py",
    } <= math_files
    code_files = _fingerprinted_files(catalog.entry("code-tests").spec)
    assert {"compare.py", "sandbox.py", "inside/rk_runner.py", "inside/rk_judge.py"} <= code_files
    assert "math-verify" in catalog.entry("math").spec.scoring_packages


def test_the_math_provider_is_registered_at_the_verifiers_revision():
    # Verdicts changed with the compound references (revision 4), then with the reading of every
    # box, of every inline maths of a final-answer phrase and of visible text only (revision 5): a
    # run recorded under an older revision must not be resumed or compared as if it were this code.
    from rewardkit.catalog import resolve_catalog
    from rewardkit_rl.verifiers import math_verifier

    assert resolve_catalog().entry("math").spec.revision == math_verifier.REVISION == "5"
