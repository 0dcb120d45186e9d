"""Old import paths of what left the core: aliases with a warning, or the line that installs it."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from rewardkit.seam import moved


def test_every_old_path_maps_to_a_module_of_its_distribution():
    assert moved.new_path("rewardkit.remote") == "rewardkit_service.client"
    assert moved.new_path("rewardkit.service.process") == "rewardkit_service.testing"
    assert moved.new_path("rewardkit.service.app") == "rewardkit_service.app"
    assert moved.new_path("rewardkit.distributed.ray") == "rewardkit_ray.backend"
    assert moved.new_path("rewardkit.distributed.wire") == "rewardkit_ray.wire"
    assert moved.new_path("rewardkit.checkpoints.watcher") == "rewardkit_checkpoints.watcher"
    assert moved.new_path("rewardkit.media.reference") == "rewardkit_media.testing"
    assert moved.new_path("rewardkit.media") == "rewardkit_media"
    assert moved.new_path("rewardkit.stats") == "rewardkit_stats"
    assert moved.new_path("rewardkit.stats.distributions") == "rewardkit_stats.distributions"
    assert moved.new_path("rewardkit.supervise") == "rewardkit_supervise"
    assert moved.new_path("rewardkit.supervise.process_tree") == "rewardkit_supervise.process_tree"
    assert moved.new_path("rewardkit.testing") == "rewardkit_testing"
    assert moved.new_path("rewardkit.composition_vectors") == "rewardkit_testing.composition_vectors"
    assert moved.new_path("rewardkit.binding") == "rewardkit.scoring.bound_provider"
    assert moved.new_path("rewardkit.serving.endpoint") == "rewardkit.checkpoint_serving.endpoint"
    assert moved.new_path("rewardkit.bindings.groups") == "rewardkit_bindings.sample_groups"
    assert moved.new_path("rewardkit.bindings.trl") == "rewardkit_bindings.trl"
    assert moved.new_path("rewardkit.bindings.verl_manager") == "rewardkit_bindings.verl_manager"
    # the package stays (get, describe), so do the pieces other distributions share
    assert moved.new_path("rewardkit.bindings") is None
    assert moved.new_path("rewardkit.bindings.ranks") is None
    # what stayed, and names that only share a prefix, are left alone
    assert moved.new_path("rewardkit.scoring.reward") is None
    assert moved.new_path("rewardkit.mediator") is None
    assert moved.new_path("rewardkit_media") is None


def test_an_old_path_is_the_new_module_with_a_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    package = tmp_path / "newhome"
    package.mkdir()
    (package / "__init__.py").write_text("VALUE = 1\n")
    (package / "part.py").write_text("PART = 2\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(moved.MOVED, "rewardkit.oldhome", "newhome")
    for name in ("rewardkit.oldhome", "rewardkit.oldhome.part", "newhome", "newhome.part"):
        monkeypatch.delitem(sys.modules, name, raising=False)

    with pytest.warns(DeprecationWarning) as caught:
        import rewardkit.oldhome.part as old_part  # type: ignore[import-not-found]
    assert [str(w.message) for w in caught] == [
        "rewardkit.oldhome moved to newhome; the old path is removed in rewardkit 0.3",
        "rewardkit.oldhome.part moved to newhome.part; the old path is removed in rewardkit 0.3",
    ]
    import newhome.part  # type: ignore[import-not-found]

    assert old_part is newhome.part and old_part.PART == 2
    assert sys.modules["rewardkit.oldhome"] is sys.modules["newhome"]
    # the shared module keeps its own spec: not the alias's
    assert newhome.part.__spec__.name == "newhome.part"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        import rewardkit.oldhome.part  # noqa: F401  (cached: no second warning)


def test_an_old_path_without_its_distribution_names_the_install():
    program = (
        "import sys; sys.modules['rewardkit_service'] = None\n"
        "try:\n"
        "    import rewardkit.remote\n"
        "except ModuleNotFoundError as error:\n"
        "    print(error)\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "rewardkit.remote moved to rewardkit_service.client in the distribution rewardkit-service" in (
        done.stdout
    )
    assert "pip install '" in done.stdout and "service'" in done.stdout, done.stdout


def test_an_old_binding_path_without_rewardkit_bindings_names_the_install():
    program = (
        "import sys; sys.modules['rewardkit_bindings'] = None\n"
        "try:\n"
        "    from rewardkit.bindings.trl import reward_funcs\n"
        "except ModuleNotFoundError as error:\n"
        "    print(error)\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    said = "rewardkit.bindings.trl moved to rewardkit_bindings.trl in the distribution rewardkit-bindings"
    assert said in done.stdout, done.stdout
    assert "pip install '" in done.stdout and "plugins/bindings'" in done.stdout, done.stdout


@pytest.mark.parametrize("name", ["trl", "verl", "verl-batch", "openrlhf"])
def test_a_builtin_binding_without_rewardkit_bindings_names_the_install(
    monkeypatch: pytest.MonkeyPatch, name: str
):
    """As where rewardkit-bindings is not installed (this env): no plugin registers the trainers'
    bindings, so ``get`` answers with the install line rather than an unknown name."""
    import rewardkit.bindings
    import rewardkit.seam.catalog
    from rewardkit.plugin import MissingExtraError
    from rewardkit.seam.extensions import TrainerBindingSpec
    from rewardkit.seam.registry import Registry

    nothing: Registry[TrainerBindingSpec] = Registry("trainer binding", TrainerBindingSpec)
    monkeypatch.setattr(rewardkit.seam.catalog, "trainer_bindings", lambda: nothing)
    install = r"pip install '\S*plugins/bindings'$"
    said = rf"^trainer binding '{name}' needs rewardkit_bindings, which is not installed: {install}"
    with pytest.raises(MissingExtraError, match=said):
        rewardkit.bindings.get(name)
    with pytest.raises(rewardkit.UnknownNameError, match="trainer binding 'acme'"):
        rewardkit.bindings.get("acme")


def test_a_renamed_core_module_is_the_new_one_with_a_warning(monkeypatch: pytest.MonkeyPatch):
    import rewardkit.scoring.bound_provider

    monkeypatch.delitem(sys.modules, "rewardkit.binding", raising=False)
    with pytest.warns(
        DeprecationWarning, match=r"rewardkit\.binding moved to rewardkit\.scoring\.bound_provider"
    ):
        import rewardkit.binding  # type: ignore[import-not-found]
    assert rewardkit.binding is rewardkit.scoring.bound_provider
    assert rewardkit.binding.BoundProvider is rewardkit.BoundProvider


def test_a_moved_function_without_its_distribution_names_the_install() -> None:
    """``rewardkit.audit`` and ``rewardkit.testing.assert_attacks_hold`` live in rewardkit-audit now (not
    installed in this env): each old name is the one install line, and an unknown name is still an
    ``AttributeError`` (``rewardkit-audit``'s own tests check the aliases with their warning)."""
    import rewardkit
    from rewardkit.plugin import MissingExtraError

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the module's own move: the test below
        import rewardkit.testing

    install = (
        r"needs rewardkit_audit, which is not installed: pip install '\S*plugins/stats' '\S*plugins/audit'$"
    )
    with pytest.raises(MissingExtraError, match=r"^rewardkit\.audit " + install):
        rewardkit.audit  # noqa: B018 - the attribute access is the test
    with pytest.raises(MissingExtraError, match=r"^rewardkit\.testing\.assert_attacks_hold " + install):
        from rewardkit.testing import assert_attacks_hold  # noqa: F401
    with pytest.raises(
        AttributeError, match=r"module 'rewardkit_testing' has no attribute 'assert_attack_holds'"
    ):
        rewardkit.testing.assert_attack_holds  # noqa: B018


@pytest.mark.parametrize(
    ("name", "package"),
    [
        ("ProcessTree", "rewardkit_supervise"),
        ("RegressionGate", "rewardkit_stats"),
        ("paired_interval", "rewardkit_stats"),
        ("incomplete_beta", "rewardkit_stats"),
    ],
)
def test_a_plugin_api_name_of_0_1_without_its_library_names_the_install(
    monkeypatch: pytest.MonkeyPatch, name: str, package: str
) -> None:
    """The plugin API's stats and process-tree names moved to the shared libraries (whose own tests
    check the aliases with their warning); without the library the old name is its install line."""
    import rewardkit.plugin
    from rewardkit.plugin import MissingExtraError

    monkeypatch.setitem(sys.modules, package, None)  # not installed, whatever this env has
    folder = package.removeprefix("rewardkit_")
    with pytest.raises(
        MissingExtraError, match=rf"^rewardkit\.plugin\.{name} needs {package}.*plugins/{folder}'$"
    ):
        getattr(rewardkit.plugin, name)
    with pytest.raises(AttributeError, match="the plugin API is __all__"):
        rewardkit.plugin.ProcessTrees  # noqa: B018 - a name that never was stays unknown


def test_the_conformance_kit_and_the_vectors_are_rewardkit_testing_with_a_warning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The core checks its composition with rewardkit-testing's vectors, so the core env installs it: the
    old paths are its modules, the very same objects, each with the warning naming its new path."""
    import rewardkit_testing
    import rewardkit_testing.composition_vectors

    for old, new in (
        ("rewardkit.testing", rewardkit_testing),
        ("rewardkit.composition_vectors", rewardkit_testing.composition_vectors),
    ):
        monkeypatch.delitem(sys.modules, old, raising=False)
        said = rf"^{old} moved to {new.__name__}; the old path is removed in rewardkit 0\.3$"
        with pytest.warns(DeprecationWarning, match=said):
            module = importlib.import_module(old)
        assert module is new
    from rewardkit.testing import RewardProviderTests

    assert RewardProviderTests is rewardkit_testing.RewardProviderTests


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (f"rewardkit.{name}", f"rewardkit.{group}.{name}")
        for group, names in moved.REGROUPED.items()
        for name in names
    ]
    + [("rewardkit.config_keys", "rewardkit.config.keys")],
)
def test_a_flat_module_of_0_1_is_its_folders_module_with_a_warning(
    old: str, new: str, monkeypatch: pytest.MonkeyPatch
):
    target = importlib.import_module(new)
    monkeypatch.delitem(sys.modules, old, raising=False)
    with pytest.warns(DeprecationWarning, match=rf"^{re.escape(old)} moved to {re.escape(new)};"):
        assert importlib.import_module(old) is target
