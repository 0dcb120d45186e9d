"""Credential references: the reference is identity, the secret value never is."""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class CredentialRef:
    """Names where a secret lives (an environment variable), never the secret itself: put
    ``ref.identity()`` in a provider's ``semantic_identity``; call ``ref.resolve()`` only when the
    provider makes a request, and never log, hash or return what it gives."""

    env: str

    def identity(self) -> dict[str, str]:
        return {"credential_env": self.env}

    def resolve(self) -> str:
        value = os.environ.get(self.env)
        if not value:
            raise LookupError(f"credential environment variable {self.env!r} is not set")
        return value
