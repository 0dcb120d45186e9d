"""``rewardkit-checkpoints``: evaluate checkpoints as a model trains (``rewardkit checkpoints``).

Discover ready checkpoints, serve each with a registered serving strategy, generate, score with
the configured reward, compare with the base and gate (the statistics are the shared library
``rewardkit_stats``, distribution ``rewardkit-stats``).
"""
