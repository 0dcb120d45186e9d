"""An opt-in verdict cache on disk (SQLite, stdlib) for temperature-0 judges.

A key is the SHA-256 of the judge's configuration (its normalised params, judge-content hash
included) and the exact messages sent (task, candidate or candidates, and their order), so a
rerun of a scoring job reads each verdict back instead of paying the judge twice. Only replies
that were read successfully are stored; failures are asked again next time. The file is opened on
first use (a factory opens nothing) and in WAL mode, so several processes may share it.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS verdicts (key TEXT PRIMARY KEY, reply TEXT NOT NULL, created REAL NOT NULL)"
)


class CacheError(RuntimeError):
    """The cache file could not be opened, read or written."""


class VerdictCache:
    """``get(key)`` / ``put(key, reply)`` on one SQLite file."""

    def __init__(self, path: str) -> None:
        self.path = Path(path)
        self._connection: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def _db(self) -> sqlite3.Connection:
        if self._connection is None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                connection = sqlite3.connect(self.path, timeout=30.0, check_same_thread=False)
                connection.execute("PRAGMA journal_mode=WAL")
                connection.execute(_SCHEMA)
                connection.commit()
            except (OSError, sqlite3.Error) as error:
                raise CacheError(f"verdict cache {self.path}: {error}") from None
            self._connection = connection
        return self._connection

    def get(self, key: str) -> str | None:
        with self._lock:
            try:
                row = self._db().execute("SELECT reply FROM verdicts WHERE key = ?", (key,)).fetchone()
            except sqlite3.Error as error:
                raise CacheError(f"verdict cache {self.path}: {error}") from None
        return None if row is None else str(row[0])

    def put(self, key: str, reply: str) -> None:
        with self._lock:
            try:
                db = self._db()
                db.execute(
                    "INSERT OR REPLACE INTO verdicts (key, reply, created) VALUES (?, ?, ?)",
                    (key, reply, time.time()),
                )
                db.commit()
            except sqlite3.Error as error:
                raise CacheError(f"verdict cache {self.path}: {error}") from None

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None
