"""Serving a checkpoint so an evaluation can reach it: the contract and the ``endpoint`` strategy."""

from rewardkit.checkpoint_serving.contract import CheckpointRef, ServedModel, ServingStrategy, wait_for_model

__all__ = ["CheckpointRef", "ServedModel", "ServingStrategy", "wait_for_model"]
