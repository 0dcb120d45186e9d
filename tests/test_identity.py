"""Identity hashes follow the provider's declared param types: equal configurations, equal hashes."""

from __future__ import annotations

import importlib
import importlib.metadata
import sys
from pathlib import Path

import pytest

from rewardkit import PreflightError, RegistrationError, RewardProviderSpec, resolve_catalog
from rewardkit.contracts.identity import code_fingerprint, fingerprinted_code
from rewardkit.scoring.composition import RewardSpec
from rewardkit.scoring.worker import RewardWorker


def identity(name: str, params: dict | None = None) -> str:
    return resolve_catalog().bind(name, params).identity


def test_a_float_param_written_as_an_integer_has_the_same_identity():
    assert identity("constant", {"value": 1}) == identity("constant", {"value": 1.0})
    assert identity("constant", {"value": 6}) == identity("constant", {"value": 6.0})


def test_an_explicit_default_and_an_omitted_one_have_the_same_identity():
    catalog = resolve_catalog()
    omitted = identity("exact-match")
    assert identity("exact-match", {"case_sensitive": False}) == omitted
    assert identity("constant", {"value": 1.0}) == identity("constant") == identity("constant", {})
    # what `rewardkit providers` lists is the identity of the default configuration
    assert catalog.entry("exact-match").identity == omitted
    assert catalog.entry("constant").identity == identity("constant")


def test_different_configurations_never_share_an_identity():
    hashes = {
        identity("constant", {"value": 1}),
        identity("constant", {"value": 2}),
        identity("constant", {"value": 1.5}),
        identity("exact-match", {"case_sensitive": True}),
        identity("exact-match"),
    }
    assert len(hashes) == 5


def test_a_wrongly_typed_param_is_still_refused_before_hashing():
    with pytest.raises(PreflightError, match="param value must be a number"):
        identity("constant", {"value": "1"})


def test_components_equal_once_normalised_are_one_configuration():
    spec = RewardSpec.parse(
        {
            "components": [
                {"name": "a", "provider": "constant", "params": {"value": 6}},
                {"name": "b", "provider": "constant", "params": {"value": 6.0}},
            ]
        }
    )
    # the same configuration read twice is a double count, not two configurations of one name
    with pytest.raises(PreflightError, match="optimized-term collision"):
        RewardWorker(spec, resolve_catalog(), group_size=None)
    single = RewardWorker(RewardSpec.single("constant", {"value": 6}), resolve_catalog(), group_size=None)
    other = RewardWorker(RewardSpec.single("constant", {"value": 6.0}), resolve_catalog(), group_size=None)
    assert single.records == other.records
    assert single.spec_identity == other.spec_identity


def test_gsm8k_refuses_a_string_for_a_boolean_param():
    with pytest.raises(PreflightError) as caught:
        resolve_catalog().bind("gsm8k", {"fallback_last_number": "false"})
    assert "param fallback_last_number must be true or false; got 'false'" in str(caught.value)


# -- the code fingerprint ----------------------------------------------------------------------

PROVIDER_MODULE = """
from functools import partial
from pathlib import Path
from rewardkit import RewardProviderResult, RewardProviderSpec, map_candidates
from {package}.helpers import bonus

# code a sandbox loads by path, never imported
RUNNER = Path(__file__).with_name("inside")

def score(candidate, context):
    'The bonus.'
    return RewardProviderResult({{"task": bonus()}})  # a comment

SPEC = RewardProviderSpec(
    "fp-{package}", partial(map_candidates, score), (), "1", ("task",), scoring_packages={packages!r}
)
"""


def make_package(root: Path, package: str, packages: tuple[str, ...] = ()) -> Path:
    folder = root / package
    (folder / "inside").mkdir(parents=True)
    (folder / "__init__.py").write_text("")
    (folder / "helpers.py").write_text("def bonus():\n    return 1.0\n")
    (folder / "inside" / "runner.py").write_text("print('runs in a sandbox, never imported')\n")
    (folder / "unrelated.py").write_text("def other_provider():\n    return 0.0\n")
    (folder / "provider.py").write_text(PROVIDER_MODULE.format(package=package, packages=packages))
    return folder


def load_spec(package: str):
    return importlib.import_module(f"{package}.provider").SPEC


@pytest.fixture
def scratch_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    names = iter(f"fp_pkg_{index}" for index in range(1000))

    def build(packages: tuple[str, ...] = ()) -> tuple[Path, object]:
        package = next(name for name in names if name not in sys.modules)
        folder = make_package(tmp_path, package, packages)
        return folder, load_spec(package)

    return build


@pytest.mark.parametrize("changed", ["helpers.py", "inside/runner.py", "inside/new_script.py"])
def test_the_fingerprint_covers_the_code_the_provider_reaches(scratch_package, changed: str):
    folder, spec = scratch_package()
    before = code_fingerprint(spec)
    assert code_fingerprint(spec) == before, "deterministic"
    (folder / changed).write_text("SCALE = 2\n")
    assert code_fingerprint(spec) != before, f"an edit to {changed} must change the fingerprint"


@pytest.mark.parametrize(
    "file,edit",
    [
        ("unrelated.py", lambda text: text.replace("0.0", "1.0")),
        ("provider.py", lambda text: text.replace("The bonus.", "The bonus, documented again.")),
        ("provider.py", lambda text: text.replace("# a comment", "# another comment")),
        ("helpers.py", lambda text: "def bonus():\n    'Now documented.'\n\n\n    return 1.0\n"),
    ],
    ids=["a-sibling-module-nothing-imports", "a-docstring", "a-comment", "a-helpers-docstring-and-layout"],
)
def test_what_cannot_change_a_score_leaves_the_fingerprint(scratch_package, file: str, edit):
    folder, spec = scratch_package()
    before = code_fingerprint(spec)
    path = folder / file
    path.write_text(edit(path.read_text()))
    assert code_fingerprint(spec) == before, f"editing {file} that way cannot change a score"
    (folder / "helpers.py").write_text("def bonus():\n    return 0.5\n")
    assert code_fingerprint(spec) != before, "a code edit still changes it"


def test_the_fingerprint_does_not_depend_on_where_the_package_is_installed(tmp_path: Path, monkeypatch):
    fingerprints = []
    for place in ("a", "b"):
        make_package(tmp_path / place, "fp_moved")
        monkeypatch.syspath_prepend(str(tmp_path / place))
        fingerprints.append(code_fingerprint(load_spec("fp_moved")))
        for name in [name for name in sys.modules if name.startswith("fp_moved")]:
            del sys.modules[name]
    assert fingerprints[0] == fingerprints[1]


def test_declared_scoring_packages_enter_the_fingerprint_by_version(scratch_package, monkeypatch):
    _, plain = scratch_package()
    _, declared = scratch_package(("math-verify",))
    before = code_fingerprint(declared)
    real_version = importlib.metadata.version
    monkeypatch.setattr(
        importlib.metadata,
        "version",
        lambda name: "999.0" if name == "math-verify" else real_version(name),
    )
    assert code_fingerprint(declared) != before, "a new math-verify changes the fingerprint"
    monkeypatch.undo()
    assert code_fingerprint(declared) == before
    with pytest.raises(RegistrationError, match="scoring_packages"):
        RewardProviderSpec("x", plain.factory, (), "1", ("task",), scoring_packages="math-verify")


def test_real_providers_fingerprint_their_helpers():
    """The rl pack's providers are checked in rl_pack/tests/test_fingerprints.py (env rl)."""
    covered = set(fingerprinted_code(resolve_catalog().entry("gsm8k").spec))
    helpers = {f"rewardkit.builtin.{name}" for name in ("numbers", "expressions", "answers")}
    assert helpers <= covered and "rewardkit.builtin.countdown" not in covered
