"""``rewardkit-ray``: scoring on reward actors (``rewards.backend: ray``).

``rewardkit_ray.backend.RayReward`` is what the core's ``rewardkit.load`` and the trainer bindings
build for ``rewards.backend: ray``; ``actor`` is the unit of work (it does not import Ray) and
``wire`` the plain data that crosses to and from the actors.
"""
