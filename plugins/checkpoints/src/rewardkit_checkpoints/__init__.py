"""Checkpoint evaluation: discover, serve, generate, score, compare with the base, gate."""
