"""A streamed SHA-256 of a folder of model files, cached by path, size and modification time.

Every regular file counts (symlinks followed, as in a Hugging Face cache) by relative path, size and
content, read in 1 MiB blocks: renaming, adding, removing or changing a file changes the hash; where
the folder lives does not. Each file's digest is cached in ``$REWARDKIT_CACHE_DIR/file-hashes.json``
(default ``~/.cache/rewardkit``) by absolute path, size and mtime, so hashing again reads nothing."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from rewardkit.contracts.errors import RewardkitError

_BLOCK = 1 << 20
_lock = threading.Lock()


@dataclass(frozen=True)
class FolderIdentity:
    """``sha256`` identifies the content; ``path`` is where it was read (recorded, not hashed)."""

    path: str
    sha256: str
    files: int
    bytes: int


def cache_file() -> Path:
    root = os.environ.get("REWARDKIT_CACHE_DIR") or os.path.join(Path.home(), ".cache", "rewardkit")
    return Path(root) / "file-hashes.json"


def _load_cache(path: Path) -> dict[str, list]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _save_cache(path: Path, cache: dict[str, list]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".file-hashes.")
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(cache, out)
        os.replace(temporary, path)
    except OSError:
        pass  # a cache that cannot be written only costs time


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def folder_identity(folder: str | os.PathLike[str]) -> FolderIdentity:
    """Hash ``folder`` (see the module doc); raises ``RewardkitError`` when it is not a folder of files."""
    root = Path(folder).expanduser().resolve()
    if not root.is_dir():
        raise RewardkitError(f"checkpoint folder {str(folder)!r} does not exist or is not a folder")
    entries: list[tuple[str, Path]] = []
    for directory, _, names in os.walk(root, followlinks=False):
        for name in names:
            path = Path(directory) / name
            if path.is_file():
                entries.append((path.relative_to(root).as_posix(), path))
    if not entries:
        raise RewardkitError(f"checkpoint folder {str(root)!r} holds no files")
    entries.sort()
    with _lock:
        store = cache_file()
        cache = _load_cache(store)
        changed = False
        total = hashlib.sha256()
        size_sum = 0
        for relative, path in entries:
            stat = path.stat()
            key = str(path.resolve())
            cached = cache.get(key)
            if isinstance(cached, list) and cached[:2] == [stat.st_size, stat.st_mtime_ns]:
                digest = cached[2]
            else:
                digest = _file_sha256(path)
                cache[key] = [stat.st_size, stat.st_mtime_ns, digest]
                changed = True
            size_sum += stat.st_size
            total.update(f"{relative}\t{stat.st_size}\t{digest}\n".encode())
        if changed:
            _save_cache(store, cache)
    return FolderIdentity(str(root), total.hexdigest(), len(entries), size_sum)
