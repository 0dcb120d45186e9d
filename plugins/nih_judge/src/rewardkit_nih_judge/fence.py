"""The key the fence markers are derived from; a candidate can predict neither.

A fence marker is ``HMAC-SHA256(key, [slot name, slot content])``, its first 20 hex digits
(80 bits): identical requests get identical markers (so the verdict cache hits), and a candidate
cannot write a line that closes its own fence, since the marker depends on its whole text and on
a key it never sees.

The key is ``HMAC-SHA256(secret, provider name + the provider's normalised params)`` (its
identity material: two providers never share a key), where the secret is, in this order:

1. the value of the environment variable ``fence_secret_env`` names (at least 16 characters),
   when the operator sets that param; the value is never a param, never hashed into an
   identity, never logged;
2. with ``cache_path`` set: 32 random bytes kept in ``<cache_path>.fence-key`` (hex, mode 0600),
   made on first use and read by every later run and process sharing the cache, so cached
   verdicts keep hitting across runs; deleting the file only makes the cache miss;
3. otherwise 32 random bytes made once per process.

The secret is read on the provider's first ``evaluate`` (a factory reads and writes nothing). A
key file that cannot be read or written, or does not hold a key, is an infrastructure error.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import threading
from pathlib import Path

from rewardkit.plugin import ProviderError
from rewardkit_nih_judge.params import MIN_FENCE_SECRET, JudgeParams

KEY_SUFFIX = ".fence-key"
MARKER_HEX = 20
_PROCESS_SECRET = secrets.token_bytes(32)


class FenceKey:
    """``marker(name, text)`` for one provider; the key is made on first use."""

    def __init__(self, settings: JudgeParams, provider: str) -> None:
        self.settings = settings
        self.provider = provider
        self._key: bytes | None = None
        self._source: str | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:  # never the key
        return f"FenceKey({self.provider!r}, source={self._source!r})"

    @property
    def source(self) -> str | None:
        """Where the secret came from (``env``, ``file``, ``process``), once it was read."""
        return self._source

    def key(self) -> bytes:
        with self._lock:
            if self._key is None:
                secret, self._source = self._secret()
                material = json.dumps(
                    {
                        "provider": self.provider,
                        "params": self.settings.model_dump(mode="json", exclude={"cache_path"}),
                    },
                    sort_keys=True,
                    separators=(",", ":"),
                    ensure_ascii=False,
                )
                self._key = hmac.new(secret, material.encode("utf-8"), hashlib.sha256).digest()
            return self._key

    def marker(self, name: str, text: str) -> str:
        message = json.dumps([name, text]).encode("ascii")
        return hmac.new(self.key(), message, hashlib.sha256).hexdigest()[:MARKER_HEX]

    def _secret(self) -> tuple[bytes, str]:
        settings = self.settings
        if settings.fence_secret_env is not None:
            value = os.environ.get(settings.fence_secret_env, "")
            if len(value) < MIN_FENCE_SECRET:
                raise ProviderError(
                    f"the variable {settings.fence_secret_env} (param fence_secret_env) no longer holds a "
                    f"secret of at least {MIN_FENCE_SECRET} characters; its value is not shown"
                )
            return value.encode("utf-8"), "env"
        if settings.cache_path is not None:
            return _file_secret(Path(settings.cache_path + KEY_SUFFIX)), "file"
        return _PROCESS_SECRET, "process"


def _file_secret(path: Path) -> bytes:
    """The secret in ``path``, made there first if it is not (atomically: the first writer wins)."""
    if not path.exists():
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
            descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                with os.fdopen(descriptor, "w") as file:
                    file.write(secrets.token_hex(32) + "\n")
                    file.flush()
                    os.fsync(file.fileno())
                try:
                    os.link(temporary, path)  # fails if another process made it first
                except FileExistsError:
                    pass
                except OSError:
                    if not path.exists():  # a file system without hard links
                        os.replace(temporary, path)
            finally:
                if temporary.exists():
                    temporary.unlink()
        except OSError as error:
            raise ProviderError(f"cannot make the fence key file {path}: {error.strerror}") from None
    try:
        text = path.read_text(encoding="ascii").strip()
        secret = bytes.fromhex(text)
    except OSError as error:
        raise ProviderError(f"cannot read the fence key file {path}: {error.strerror}") from None
    except ValueError:
        secret = b""
    if len(secret) < 16:
        raise ProviderError(
            f"the fence key file {path} does not hold a key (hex, at least 16 bytes); delete it to make a "
            "new one (cached verdicts then miss once)"
        )
    return secret
