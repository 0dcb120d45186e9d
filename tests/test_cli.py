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
from rewardkit.extras import EXTRAS

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


def test_providers_table(capsys: pytest.CaptureFixture):
    assert main(["providers"]) == 0
    out = capsys.readouterr().out
    header, _rule, *rows = out.splitlines()
    assert header.split() == ["name", "distribution", "revision", "identity", "needs", "terms"]
    assert any(row.startswith("exact-match") and "reference" in row for row in rows)


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


def test_serve_help_shows_the_defaults(capsys: pytest.CaptureFixture):
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    out = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    for shown in (
        "(default: 127.0.0.1)",
        "(default: 8000)",
        "(default: rewards.max_inflight)",
        "(default: 67108864, 64 MiB)",
        "(default: no limit, all of them)",
        "pip install 'rewardkit[service]'",
    ):
        assert shown in out, shown
    app = pytest.importorskip("rewardkit_service.app")
    assert app.DEFAULT_MAX_BODY_BYTES == 67108864


def test_every_extra_named_exists_in_pyproject_and_lists_its_distribution():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for module, (distribution, extra) in EXTRAS.items():
        assert extra in extras, (module, extra)
        listed = [
            requirement.split("[")[0].split(">")[0].split("=")[0].strip() for requirement in extras[extra]
        ]
        assert distribution in listed, (module, extra, listed)


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
    ("module", "argv", "extra"),
    [
        ("orjson", ["serve", "c.yaml"], "service"),
        (
            "orjson",
            ["score", "c.yaml", "rl.reward.service=http://127.0.0.1:9", "--out", "o.jsonl"],
            "service",
        ),
        ("ray", ["score", "c.yaml", "rewards.backend=ray", "--out", "o.jsonl"], "ray"),
    ],
    ids=["serve", "score-through-a-service", "score-on-ray"],
)
def test_a_missing_extra_is_one_line_naming_the_install(
    tmp_path: Path, module: str, argv: list[str], extra: str
):
    (tmp_path / "c.yaml").write_text("rl: {data: {rollouts_path: r.jsonl}, reward: {provider: constant}}\n")
    (tmp_path / "r.jsonl").write_text('{"group_id": "g", "completion": "x"}\n')
    completed = run_without(module, *argv, cwd=tmp_path)
    assert completed.returncode == 2, completed.stderr
    assert "Traceback" not in completed.stderr
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1 and f"pip install 'rewardkit[{extra}]'" in lines[0], completed.stderr


def test_plotting_without_matplotlib_names_the_plot_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    from rewardkit.errors import RewardkitError
    from rewardkit_checkpoints.curve import plot_curve

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(RewardkitError, match=r"pip install 'rewardkit\[plot\]'"):
        plot_curve([{"step": "base", "value": 0.5}], tmp_path / "p.png")
