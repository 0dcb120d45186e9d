"""The command line: providers, show, plugins, version, help, and missing extras."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rewardkit.cli import main
from rewardkit.seam import extras
from rewardkit.seam.extras import DISTRIBUTIONS, MODULES, install_line

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]


def test_providers_table(capsys: pytest.CaptureFixture):
    assert main(["providers"]) == 0
    out = capsys.readouterr().out
    header, _rule, *rows = out.splitlines()
    assert header.split() == ["name", "distribution", "revision", "identity", "needs", "terms", "description"]
    assert any(row.startswith("exact-match") and "reference" in row for row in rows)
    nonempty = next(row for row in rows if row.startswith("nonempty"))
    assert nonempty.endswith("1 for a completion with any visible text, else 0."), "described"


def test_providers_json(capsys: pytest.CaptureFixture):
    assert main(["providers", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    names = [row["name"] for row in rows]
    assert names == sorted(names) and "constant" in names
    for row in rows:
        assert len(row["identity"]) == 64
        assert isinstance(row["needs"], list) and isinstance(row["terms"], list)


def test_show_and_unknown_name(capsys: pytest.CaptureFixture):
    assert main(["show", "nonempty", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["name"] == "nonempty"
    assert main(["show", "nope"]) == 2
    err = capsys.readouterr().err
    assert "unknown provider 'nope'" in err and "installed" in err


def test_plugins_lists_builtins_with_hooks(capsys: pytest.CaptureFixture):
    assert main(["plugins", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    rules = next(row for row in rows if row["name"] == "rewardkit.builtin.rules")
    assert rules["status"] == "loaded" and "register_reward_providers" in rules["hooks"]


# -- version, did-you-mean, help defaults, missing extras ---------------------------------------

ROOT = Path(__file__).resolve().parents[1]


def test_version(capsys: pytest.CaptureFixture):
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == f"rewardkit {importlib.metadata.version('rewardkit-core')}"


def test_a_misspelt_provider_name_gets_a_suggestion(capsys: pytest.CaptureFixture, tmp_path: Path):
    assert main(["show", "gsm8kk"]) == 2
    assert "unknown provider 'gsm8kk'; did you mean 'gsm8k'?" in capsys.readouterr().err
    config = tmp_path / "c.yaml"
    config.write_text("rl: {data: {rollouts_path: r.jsonl}, reward: {provider: exact-mach}}\n")
    (tmp_path / "r.jsonl").write_text('{"group_id": "g", "completion": "x"}\n')
    assert main(["score", str(config), "--out", str(tmp_path / "o.jsonl")]) == 2
    assert "did you mean 'exact-match'?" in capsys.readouterr().err


def test_no_suggestion_for_a_name_like_none(capsys: pytest.CaptureFixture):
    assert main(["show", "qqqqqqqq"]) == 2
    assert "did you mean" not in capsys.readouterr().err


def test_serve_help_without_the_service_says_what_to_install(capsys: pytest.CaptureFixture):
    # `rewardkit serve` lives in rewardkit-service, which declares its options (its help is checked in
    # plugins/service/tests/test_serve_verb.py); without it, the verb is listed with its install line.
    with pytest.raises(SystemExit):
        main(["--help"])
    listed = "".join(capsys.readouterr().out.split())  # argparse wraps lines, at spaces and hyphens
    assert "runtheRewardService(HTTP/JSON)(needsrewardkit-service:" in listed
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert install_line("rewardkit-service", "server") in out


def _pip_names(requirements: list[str]) -> list[str]:
    return [requirement.split("[")[0].split(">")[0].split("=")[0].strip() for requirement in requirements]


def test_every_module_named_is_brought_by_the_distribution_and_extra_named():
    pip_name = {"prometheus_client": "prometheus-client"}
    for module, (distribution, extra) in MODULES.items():
        project = tomllib.loads((ROOT / DISTRIBUTIONS[distribution].folder / "pyproject.toml").read_text())
        project = project["project"]
        assert project["name"] == distribution, (module, distribution)
        if module.startswith("rewardkit_"):
            # the distribution's own package
            assert (ROOT / DISTRIBUTIONS[distribution].folder / "src" / module / "__init__.py").is_file()
            continue
        listed = project["optional-dependencies"][extra] if extra else project["dependencies"]
        assert pip_name.get(module, module) in _pip_names(listed), (module, distribution, extra)


def test_each_distribution_needs_exactly_the_ones_of_ours_its_pyproject_depends_on():
    for dist in DISTRIBUTIONS.values():
        project = tomllib.loads((ROOT / dist.folder / "pyproject.toml").read_text())["project"]
        ours = [name for name in _pip_names(project.get("dependencies", [])) if name in DISTRIBUTIONS]
        assert sorted(dist.needs) == sorted(set(ours) - {"rewardkit-core"}), dist.name


def test_the_cores_extras_name_the_distributions_for_an_index_install():
    core = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert core["name"] == "rewardkit-core"
    for name in ("service", "ray", "checkpoints", "media"):
        assert _pip_names(core["optional-dependencies"][name]) == [f"rewardkit-{name}"]


def test_the_bindings_verb_without_rewardkit_bindings_names_its_install(capsys: pytest.CaptureFixture):
    # this env does not install rewardkit-bindings: no trainer binding is registered
    assert main(["bindings", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out) == []
    said = f"bindings trl, verl, verl-batch, openrlhf are not installed: {install_line('rewardkit-bindings')}"
    assert captured.err.strip() == said


def test_install_lines_follow_the_install_mode(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.chdir(ROOT)
    assert install_line("rewardkit-service", "server") == "pip install './plugins/service[server]'"
    assert install_line("rewardkit-core", "testing") == "pip install '.[testing]'"
    # a distribution that needs another of ours (on no index) names that one's folder first
    assert install_line("rewardkit-checkpoints", "plot") == (
        "pip install './plugins/stats' './plugins/checkpoints[plot]'"
    )
    monkeypatch.chdir(tmp_path)
    assert install_line("rewardkit-ray") == f"pip install '{ROOT / 'plugins' / 'ray'}'"
    monkeypatch.setattr(extras, "_checkout", lambda: None)  # installed from an index
    assert install_line("rewardkit-service", "server") == "pip install 'rewardkit-service[server]'"
    assert install_line("rewardkit-ray") == "pip install 'rewardkit-ray'"


def run_without(module: str, *argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``rewardkit ARGV`` in a child where importing ``module`` fails as if it were not installed."""
    program = (
        f"import sys; sys.modules[{module!r}] = None; "
        "from rewardkit.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    env = {**os.environ, "REWARDKIT_LOAD_PLUGINS": ""}  # built-ins only: no plugin needs the module
    return subprocess.run(
        [sys.executable, "-c", program, *argv], capture_output=True, text=True, timeout=120, cwd=cwd, env=env
    )


@pytest.mark.parametrize(
    ("module", "argv", "install"),
    [
        ("rewardkit_service", ["serve", "c.yaml"], "plugins/service[server]"),
        ("uvicorn", ["serve", "c.yaml"], "plugins/service[server]"),
        (
            "rewardkit_service",
            ["score", "c.yaml", "rl.reward.service=http://127.0.0.1:9", "--out", "o.jsonl"],
            "plugins/service",
        ),
        ("rewardkit_ray", ["score", "c.yaml", "rewards.backend=ray", "--out", "o.jsonl"], "plugins/ray"),
        ("rewardkit_checkpoints", ["checkpoints", "curve", "logs"], "plugins/checkpoints"),
    ],
    ids=["serve", "serve-without-uvicorn", "score-through-a-service", "score-on-ray", "checkpoints"],
)
def test_a_missing_distribution_is_one_line_naming_the_install(
    tmp_path: Path, module: str, argv: list[str], install: str
):
    (tmp_path / "c.yaml").write_text("rl: {data: {rollouts_path: r.jsonl}, reward: {provider: constant}}\n")
    (tmp_path / "r.jsonl").write_text('{"group_id": "g", "completion": "x"}\n')
    completed = run_without(module, *argv, cwd=tmp_path)
    assert completed.returncode == 2, completed.stderr
    assert "Traceback" not in completed.stderr
    lines = completed.stderr.strip().splitlines()
    # run from outside the checkout, the line names the folder by its absolute path (after the
    # folders of the distributions it needs, when it needs any)
    assert len(lines) == 1 and "pip install '" in lines[0], completed.stderr
    assert lines[0].endswith(f" '{ROOT}/{install}'"), completed.stderr
