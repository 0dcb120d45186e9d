"""rewardkit's built-in plugins. They use the same hooks as any installed plugin."""
