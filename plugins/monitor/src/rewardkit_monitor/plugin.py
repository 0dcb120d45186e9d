"""rewardkit-monitor's plugin (entry point ``monitor``): the ``rewardkit monitor`` verb and the ``rl.monitor``
section, whose observer is the reward monitor. Light to import: the monitor and the report load when a
binding builds the observer or the verb runs."""

from __future__ import annotations

from rewardkit.plugin import CommandRegistrar, ConfigSectionRegistrar, ConfigSectionSpec, hookimpl
from rewardkit_monitor.settings import MonitorSettings


@hookimpl
def register_commands(cli: CommandRegistrar) -> None:
    monitor = cli.add(
        "monitor",
        "rewardkit_monitor.cli:run_monitor",
        about="report the reward monitor's signals and alarms of a training run (docs/monitor.md)",
        description="Report what the reward monitor (rl.monitor) logged: its signals, and each alarm "
        "with the step its change began.",
    )
    monitor.add_argument("logdir", help="the run's rl.monitor.logdir (holds monitor.jsonl)")
    monitor.add_argument("--plot", metavar="FILE", help="draw the signals over steps, alarms marked (PNG)")
    monitor.add_argument("--gate", action="store_true", help="exit non-zero when an alarm was raised")


@hookimpl
def register_config_sections(register: ConfigSectionRegistrar) -> None:
    # Paths in it (logdir, stop_file) stay relative to the working directory, as they always were.
    register(
        ConfigSectionSpec(
            "rl.monitor",
            MonitorSettings,
            "the reward monitor: a batch observer of the bindings and the Reward Service",
            observer="rewardkit_monitor.monitor:build_monitor",
        )
    )
