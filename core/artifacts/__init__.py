"""Identities of files on disk: model folders, adapters, checkpoints."""

from rewardkit.artifacts.folder_hash import FolderIdentity, folder_identity

__all__ = ["FolderIdentity", "folder_identity"]
