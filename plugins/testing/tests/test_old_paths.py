"""The kit's paths in the core before 0.2 (``rewardkit.testing``, ``rewardkit.composition_vectors``) are
this distribution's modules until 0.3, and a name that moved out of the old kit module is still found
through it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import rewardkit_testing
from rewardkit.seam import moved
from rewardkit_testing import composition_vectors

ROOT = Path(__file__).resolve().parents[3]


def test_the_old_paths_are_the_modules_of_this_distribution_with_a_warning(monkeypatch: pytest.MonkeyPatch):
    for old, new in (
        ("rewardkit.testing", rewardkit_testing),
        ("rewardkit.composition_vectors", composition_vectors),
    ):
        monkeypatch.delitem(sys.modules, old, raising=False)
        with pytest.warns(
            DeprecationWarning, match=rf"^{old} moved to {new.__name__}; .* removed in rewardkit 0\.3$"
        ):
            module = __import__(old, fromlist=["_"])
        assert module is new


def test_a_name_moved_out_of_the_old_kit_module_is_found_through_the_core_table(
    monkeypatch: pytest.MonkeyPatch,
):
    # ``assert_attacks_hold`` went to rewardkit-audit, which this env lacks: a stand-in entry exercises
    # the same look-up, from the kit's ``__getattr__`` through the plugin API to the core's table.
    monkeypatch.setitem(
        moved.MOVED_ATTRIBUTES,
        "rewardkit.testing.old_checker",
        ("rewardkit-testing", "composition_vectors:check_vector"),
    )
    with pytest.warns(DeprecationWarning) as caught:
        found = rewardkit_testing.old_checker  # type: ignore[attr-defined]
    assert found is composition_vectors.check_vector
    assert [str(warning.message) for warning in caught] == [
        "rewardkit.testing.old_checker moved to rewardkit_testing.composition_vectors.check_vector; "
        "the old path is removed in rewardkit 0.3"
    ]
    assert caught[0].filename == __file__  # the warning points at the line that used the old name
    with pytest.raises(AttributeError, match=r"^module 'rewardkit_testing' has no attribute 'old_checkers'$"):
        rewardkit_testing.old_checkers  # type: ignore[attr-defined]  # noqa: B018 - the access is the test


def test_assert_attacks_hold_at_its_old_path_names_the_audit_install_line_when_missing():
    program = (
        "import sys; sys.modules['rewardkit_audit'] = None\n"
        "import warnings; warnings.simplefilter('ignore', DeprecationWarning)\n"
        "try:\n"
        "    from rewardkit.testing import assert_attacks_hold\n"
        "except ImportError as error:\n"
        "    print(type(error).__name__, error)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(
        "MissingExtraError rewardkit.testing.assert_attacks_hold needs rewardkit_audit"
    ), done.stdout
    assert "plugins/audit" in done.stdout or "rewardkit-audit" in done.stdout, done.stdout


def test_the_default_vector_file_is_the_checkouts(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv(composition_vectors.VECTORS_ENV, raising=False)
    assert composition_vectors.default_vectors_path() == ROOT / "testdata" / "reward_vectors.json"
