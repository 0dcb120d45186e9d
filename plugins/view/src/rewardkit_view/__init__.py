"""rewardkit-view: `rewardkit view` (a self-contained results page) and `rewardkit compare`."""
