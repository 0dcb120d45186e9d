"""Shared by this distribution's tests: the token variable and a tiny torch decoder."""

from __future__ import annotations

import torch

TOKEN_ENV = "RK_T2I_TEST_TOKEN"


class ConditioningDecoder:
    """Decodes a latent that already is the decoded image, optionally transformed."""

    name = "identity-image-vae"
    revision = "test-1"
    output_range = "neg_one_to_one"

    def __init__(self, transform=None):
        self.transform = transform

    def decode(self, latent: torch.Tensor):
        return self.transform(latent) if self.transform else latent
