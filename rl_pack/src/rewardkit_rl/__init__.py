"""rewardkit-rl: verifiers shaped for rewards, registered with rewardkit through entry points."""

__version__ = "0.2.0"
