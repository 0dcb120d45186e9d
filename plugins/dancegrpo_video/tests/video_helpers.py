"""Shared by this distribution's tests: the token variable and a tiny torch decoder."""

from __future__ import annotations

import time

import torch

TOKEN_ENV = "RK_DANCEGRPO_TEST_TOKEN"
TOKEN = "dancegrpo-test-token-4d1f"


class IdentityDecoder:
    """Decodes a latent that already is the decoded video; optionally slowly, or wrongly."""

    name = "identity-vae"
    revision = "test-1"
    output_range = "neg_one_to_one"

    def __init__(self, delay_s: float = 0.0, transform=None):
        self.delay_s = delay_s
        self.transform = transform
        self.calls = 0

    def decode(self, latent: torch.Tensor):
        self.calls += 1
        if self.delay_s:
            time.sleep(self.delay_s)
        return self.transform(latent) if self.transform else latent
