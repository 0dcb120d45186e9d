"""Trainer bindings: rewardkit rewards in the shapes TRL, verl and OpenRLHF call.

- ``rewardkit.bindings.trl``: ``reward_funcs(config) -> (funcs, weights)`` for ``GRPOTrainer``.
- ``rewardkit.bindings.verl``: ``compute_score`` / ``compute_score_batch`` for verl's
  ``custom_reward_function``.
- ``rewardkit.bindings.openrlhf``: ``reward_func`` for OpenRLHF's ``--remote_rm_url file.py``.

Each is registered as a built-in trainer binding (``rewardkit plugins``); none imports its trainer,
so they load without torch. Errors follow the reward spec's ``onError``: none of them turns an error
into a reward of 0.
"""
