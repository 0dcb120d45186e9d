"""``rewardkit serve`` comes from this distribution's plugin (``register_commands``): its options, each
with its default, and the backend and config section it registers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from rewardkit.cli import build_parser, main
from rewardkit.config import load_config
from rewardkit.contracts.errors import ConfigError
from rewardkit.seam.extras import install_line
from rewardkit_service.section import ServiceConfig


def test_serve_help_shows_the_defaults_and_what_to_install(
    capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
):
    # argparse wraps at the terminal's width, and may break the install line at its hyphen.
    monkeypatch.setenv("COLUMNS", "400")
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    out = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    for shown in (
        "(default: 127.0.0.1)",
        "(default: 8000)",
        "(default: rewards.max_inflight)",
        "(default: 67108864, 64 MiB)",
        "(default: no limit, all of them)",
        install_line("rewardkit-service", "server"),
    ):
        assert shown in out, shown


def test_rewardkit_plugins_lists_the_service_with_its_hooks(capsys: pytest.CaptureFixture):
    assert main(["plugins", "--json"]) == 0
    row = next(
        row for row in json.loads(capsys.readouterr().out) if row["distribution"] == "rewardkit-service"
    )
    assert row["status"] == "loaded"
    assert {"register_commands", "register_config_sections", "register_reward_backends"} <= set(row["hooks"])
    assert row["provides"] == {
        "providers": ["nemo-gym-verify"],
        "backends": ["service"],
        "sections": ["rewards.service"],
        "commands": ["serve"],
    }


def test_overrides_may_follow_the_options_of_serve() -> None:
    argv = ["serve", "c.yaml", "--port", "0", "a=1", "--host", "127.0.0.1", "b=2"]
    assert build_parser().parse_args(argv).overrides == ["a=1", "b=2"]


def test_a_list_index_in_a_file_key_and_in_the_sections_list(tmp_path: Path) -> None:
    # rewards.service is this distribution's section: validated with the core's dotted keys and indices.
    path = tmp_path / "run.yaml"
    composed = {"rl.reward.spec": {"components": [{"provider": "exact-match"}]}}
    path.write_text(yaml.safe_dump({**composed, "rewards.service.allow.spec_fields": ["weight", "clip"]}))
    config = load_config(path, ["rewards.service.allow.spec_fields.1=gate"])
    section = config.section("rewards.service", ServiceConfig)
    assert section is not None and section.allow.spec_fields == ["weight", "gate"]
    with pytest.raises(ConfigError, match=r"did you mean rewards\.service\.allow\?"):
        load_config({**composed, "rewards.service.alow": {}})
