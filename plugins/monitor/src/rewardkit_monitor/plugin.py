"""rewardkit-monitor's plugin (entry point ``monitor``): the ``rewardkit monitor`` verb. Light to import:
the report loads when the verb runs. (``rl.monitor`` is still a section of the core, an open mapping
this distribution validates when a binding builds the monitor.)"""

from __future__ import annotations

from rewardkit.plugin import CommandRegistrar, hookimpl


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
