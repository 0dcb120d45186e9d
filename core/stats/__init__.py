"""Statistics for checkpoint evaluation: intervals, paired differences, the regression gate."""

from rewardkit.stats.gate import GateDecision, RegressionGate
from rewardkit.stats.intervals import Interval, interval, paired_interval

__all__ = ["GateDecision", "Interval", "RegressionGate", "interval", "paired_interval"]
