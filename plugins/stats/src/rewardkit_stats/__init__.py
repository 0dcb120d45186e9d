"""Statistics for checkpoint evaluation: intervals, paired differences, the regression gate.

A library the rewardkit distributions share (rewardkit-checkpoints, rewardkit-audit, rewardkit-monitor):
it registers no hooks. ``docs/stats.md`` says what it holds."""

from rewardkit_stats.gate import GateDecision, RegressionGate
from rewardkit_stats.intervals import Interval, interval, paired_interval

__all__ = ["GateDecision", "Interval", "RegressionGate", "interval", "paired_interval"]
