"""rewardkit-monitor: early warning during training that the policy is gaming its reward.

``build_monitor(config)`` gives the ``RewardMonitor`` that ``rl.monitor`` configures (the trainer
bindings call it through ``rewardkit.scoring.observers.observer_for``); ``RunMonitors`` keeps one per
client run for the Reward Service. Signals and detectors are in ``signals`` and ``detectors``.
"""

from __future__ import annotations

from rewardkit_monitor.detectors import Alarm, Cusum
from rewardkit_monitor.monitor import LOG_NAME, RewardMonitor, build_monitor, build_reference
from rewardkit_monitor.runs import RunMonitors, RunOwnedElsewhere, TooManyRuns
from rewardkit_monitor.settings import MonitorSettings, parse_settings

__all__ = [
    "LOG_NAME",
    "Alarm",
    "Cusum",
    "MonitorSettings",
    "RewardMonitor",
    "RunMonitors",
    "RunOwnedElsewhere",
    "TooManyRuns",
    "build_monitor",
    "build_reference",
    "parse_settings",
]
