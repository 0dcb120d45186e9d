"""Running other programs (model servers, reward services) so that none outlives its owner."""

from rewardkit_supervise.process_tree import ProcessTree, StartError
from rewardkit_supervise.sessions import session_pids

__all__ = ["ProcessTree", "StartError", "session_pids"]
