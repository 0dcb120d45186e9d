"""``rewardkit checkpoints`` and the ``checkpoints`` section come from this distribution's plugin
(``register_commands``, ``register_config_sections``); the core names neither."""

from __future__ import annotations

import pytest

from rewardkit.cli import build_parser
from rewardkit.config import load_config
from rewardkit.contracts.errors import ConfigError
from rewardkit_checkpoints.section import CheckpointsConfig

MINIMAL = {"rl.reward.provider": "exact-match"}


def test_overrides_may_follow_the_options_of_checkpoints_watch() -> None:
    argv = ["checkpoints", "watch", "c.yaml", "--once", "a=1", "--timeout", "5", "b=2"]
    assert build_parser().parse_args(argv).overrides == ["a=1", "b=2"]


def test_checkpoint_prompts_take_either_name_too() -> None:
    checkpoints = {"dir": "c", "log_dir": "l", "prompts": {"path": "p.jsonl", "reference_column": "answer"}}
    section = load_config({**MINIMAL, "checkpoints": checkpoints}).section("checkpoints", CheckpointsConfig)
    assert section is not None and section.prompts is not None
    assert section.prompts.response_column == "answer"


def test_the_section_is_validated_with_the_cores_did_you_mean() -> None:
    with pytest.raises(ConfigError, match=r"did you mean checkpoints\.log_dir\?") as caught:
        load_config({**MINIMAL, "checkpoints": {"dir": "c", "log_dir": "l"}, "checkpoints.logdir": "x"})
    assert caught.value.key == "checkpoints.logdir"
