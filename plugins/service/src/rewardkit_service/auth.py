"""Bearer-token authentication for the Reward Service.

Tokens come from ``REWARDKIT_TOKENS`` (comma-separated) and/or a tokens file (one per line, ``#``
comments). With no token configured the service is open, which ``rewardkit serve`` allows only
on a loopback address unless ``--insecure-no-auth`` is given. Every presented token is compared with
every configured one in constant time, and a failure says nothing about why: no token value ever
reaches a log, a metric or a response.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
import socket
from collections.abc import Iterable
from pathlib import Path

from rewardkit.plugin import ConfigError

TOKENS_ENV = "REWARDKIT_TOKENS"
TOKENS_FILE_ENV = "REWARDKIT_TOKENS_FILE"


def read_tokens_file(path: str | os.PathLike[str]) -> list[str]:
    """The tokens in a file: one per line; blank lines and ``#`` comments are ignored."""
    where = Path(path)
    try:
        text = where.read_text(encoding="utf-8")
    except OSError as error:
        reason = error.strerror or error
        raise ConfigError(f"cannot read the tokens file: {reason}", source=str(where)) from None
    tokens = []
    for number, line in enumerate(text.splitlines(), start=1):
        token = line.strip()
        if not token or token.startswith("#"):
            continue
        if any(char.isspace() for char in token):
            raise ConfigError(f"line {number}: a token must not contain whitespace", source=str(where))
        tokens.append(token)
    return tokens


def load_tokens(tokens_file: str | os.PathLike[str] | None = None) -> tuple[str, ...]:
    """Tokens from ``REWARDKIT_TOKENS``, the given file and ``REWARDKIT_TOKENS_FILE``, deduplicated."""
    found: list[str] = [part.strip() for part in os.environ.get(TOKENS_ENV, "").split(",") if part.strip()]
    for path in (tokens_file, os.environ.get(TOKENS_FILE_ENV) or None):
        if path is not None:
            found.extend(read_tokens_file(path))
    return tuple(dict.fromkeys(found))


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or a name) reaches only this machine's loopback interface."""
    try:
        return ipaddress.ip_address(host.strip("[]").split("%", 1)[0]).is_loopback
    except ValueError:
        pass
    try:
        found = socket.getaddrinfo(host, None)
    except OSError:
        return False
    addresses = {str(info[4][0]).split("%", 1)[0] for info in found}
    return bool(addresses) and all(ipaddress.ip_address(address).is_loopback for address in addresses)


class TokenChecker:
    """Answers whether an ``Authorization`` header carries one of the configured tokens."""

    def __init__(self, tokens: Iterable[str]) -> None:
        self._tokens = tuple(token.encode("utf-8") for token in tokens)

    @property
    def enabled(self) -> bool:
        return bool(self._tokens)

    def __repr__(self) -> str:  # never show the tokens themselves
        return f"TokenChecker({len(self._tokens)} tokens)"

    def allows(self, authorization: bytes | None) -> bool:
        return not self._tokens or self._match(authorization) is not None

    def client_of(self, authorization: bytes | None) -> str | None:
        """The client a request's token names, for what belongs to a client (a monitored run): a
        digest of the token, the same across restarts, never the token itself. None for every
        request of a service without tokens (one client for all), and for a refused token."""
        matched = self._match(authorization) if self._tokens else None
        if matched is None:
            return None
        return hashlib.sha256(b"rewardkit client\0" + self._tokens[matched]).hexdigest()

    def _match(self, authorization: bytes | None) -> int | None:
        """The index of the configured token the header carries, or None."""
        if authorization is None:
            return None
        scheme, _, presented = authorization.partition(b" ")
        if scheme.lower() != b"bearer":
            return None
        presented = presented.strip()
        # Compare against every token, without stopping early, so timing does not tell which matched.
        matched: int | None = None
        for index, token in enumerate(self._tokens):
            if hmac.compare_digest(presented, token):
                matched = index
        return matched
