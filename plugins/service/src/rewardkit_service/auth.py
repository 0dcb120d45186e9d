"""Bearer-token authentication for the Reward Service.

Tokens come from ``REWARDKIT_TOKENS`` (comma-separated) and/or a tokens file (one per line, ``#``
comments). With no token configured the service is open, which ``rewardkit serve`` allows only
on a loopback address unless ``--insecure-no-auth`` is given. Every presented token is compared with
every configured one in constant time, and a failure says nothing about why: no token value ever
reaches a log, a metric or a response.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import socket
from collections.abc import Iterable
from pathlib import Path

from rewardkit.errors import ConfigError

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
        if not self._tokens:
            return True
        if authorization is None:
            return False
        scheme, _, presented = authorization.partition(b" ")
        if scheme.lower() != b"bearer":
            return False
        presented = presented.strip()
        # Compare against every token, without stopping early, so timing does not tell which matched.
        matched = False
        for token in self._tokens:
            matched |= hmac.compare_digest(presented, token)
        return matched
