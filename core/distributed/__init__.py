"""Scoring beyond one process: ``rewardkit.distributed.ray.RayReward`` (reward actors on Ray).

Importing this package needs nothing beyond the core; ``rewardkit.distributed.ray`` needs
``pip install rewardkit[ray]``.
"""
