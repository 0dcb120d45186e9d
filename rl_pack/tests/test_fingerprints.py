"""The rl pack's providers fingerprint the code they reach: helpers, and code run by name or by path."""

from __future__ import annotations

from rewardkit import resolve_catalog
from rewardkit.contracts.identity import fingerprinted_code


def test_math_and_code_tests_fingerprint_helpers_and_sandbox_scripts():
    catalog = resolve_catalog()
    math_code = set(fingerprinted_code(catalog.entry("math").spec))
    assert {
        "rewardkit_rl.verifiers.math_answers",
        "rewardkit_rl.verifiers.math_check",  # run in a worker, named "module:function"
        "rewardkit_rl.verifiers.math_forms.compare",
        "rewardkit_rl.verifiers.math_forms.constants",
    } <= math_code
    assert "rewardkit_rl.verifiers.multiple_choice" not in math_code, "a sibling it does not reach"
    code = set(fingerprinted_code(catalog.entry("code-tests").spec))
    assert {
        "rewardkit_rl.code.compare",
        "rewardkit_rl.code.sandbox",
        "rewardkit_rl.code/inside/rk_runner.py",  # loaded by path inside the sandbox
        "rewardkit_rl.code/inside/rk_judge.py",
    } <= code
    assert "math-verify" in catalog.entry("math").spec.scoring_packages


def test_the_math_provider_is_registered_at_the_verifiers_revision():
    # Verdicts changed with the compound references (revision 4), then with the reading of every
    # box, of every inline maths of a final-answer phrase and of visible text only (revision 5),
    # then with infinities refused against approximations (revision 6), then with faults decided
    # by reproduction and unpriceable answers refused (revision 7): a run recorded under an older
    # revision must not be resumed or compared as if it were this code.
    from rewardkit.seam.catalog import resolve_catalog
    from rewardkit_rl.verifiers import math_verifier

    assert resolve_catalog().entry("math").spec.revision == math_verifier.REVISION == "7"
