"""rewardkit-checkpoints' plugin (entry point ``checkpoints``): the ``rewardkit checkpoints`` verb and
the ``checkpoints`` section. Light to import: evaluation loads when the verb runs."""

from __future__ import annotations

from rewardkit.plugin import CommandRegistrar, ConfigSectionRegistrar, ConfigSectionSpec, hookimpl
from rewardkit_checkpoints.section import PATH_KEYS, CheckpointsConfig


@hookimpl
def register_commands(cli: CommandRegistrar) -> None:
    checkpoints = cli.add(
        "checkpoints",
        "rewardkit_checkpoints.cli:run_checkpoints",
        about="evaluate checkpoints as a model trains",
    )
    checkpoints.add_argument("action", choices=("watch", "curve"))
    checkpoints.add_argument(
        "target", help="watch: a configuration with a checkpoints section; curve: its log_dir"
    )
    checkpoints.add_argument(
        "overrides", nargs="*", metavar="key=value", help="configuration overrides (watch)"
    )
    checkpoints.add_argument("--once", action="store_true", help="watch: one scan, then exit")
    checkpoints.add_argument("--timeout", type=float, help="watch: stop scanning after this many seconds")
    checkpoints.add_argument("--plot", help="curve: write a PNG plot here (needs matplotlib)")
    checkpoints.add_argument("--json", action="store_true", help="curve: print JSON rows")


@hookimpl
def register_config_sections(register: ConfigSectionRegistrar) -> None:
    register(
        ConfigSectionSpec(
            "checkpoints", CheckpointsConfig, "the run spec of checkpoint evaluation", path_keys=PATH_KEYS
        )
    )
