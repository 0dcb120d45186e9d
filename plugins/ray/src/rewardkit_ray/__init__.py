"""Scoring beyond one process: ``rewardkit_ray.backend.RayReward`` (reward actors on Ray).

Importing this package needs nothing beyond the core; ``rewardkit_ray.backend`` needs
``pip install rewardkit[ray]``.
"""
