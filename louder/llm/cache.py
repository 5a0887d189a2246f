"""SQLite response cache: the record of every finished model call, and so the basis of resume.

Key = sha256 over backend identity, request parameters, full messages/prompt and replicate index.
Each answer is committed as it arrives (WAL mode), so a run killed at any point loses at most the
calls in flight; re-running serves everything finished from here and calls the model for the rest.
Failed calls (``error``) are stored too, so a plain re-run reproduces them; ``retry_errors`` asks
the model again for exactly those.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from louder.llm.base import Reply, Request, stable_hash


def cache_key(identity: dict, request: Request) -> str:
    return stable_hash({"model": identity, "request": request.key_material()})


class ResponseCache:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS replies (key TEXT PRIMARY KEY, reply TEXT NOT NULL, is_error INTEGER NOT NULL)")

    def get(self, key: str, retry_errors: bool = False) -> Reply | None:
        with self._lock:
            row = self._db.execute("SELECT reply, is_error FROM replies WHERE key = ?", (key,)).fetchone()
        if row is None or (retry_errors and row[1]):
            return None
        return Reply.from_json(row[0])

    def put(self, key: str, reply: Reply) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO replies (key, reply, is_error) VALUES (?, ?, ?)",
                (key, reply.to_json(), int(reply.error is not None)),
            )

    def error_flags(self, keys: list[str]) -> dict[str, bool]:
        """key → whether its cached answer is an ``error``, for the keys that are cached."""
        out: dict[str, bool] = {}
        keys = list(keys)
        with self._lock:
            for i in range(0, len(keys), 500):  # SQLite caps the parameters of one statement
                chunk = keys[i : i + 500]
                rows = self._db.execute(f"SELECT key, is_error FROM replies WHERE key IN ({','.join('?' * len(chunk))})",
                                        chunk).fetchall()
                out.update((k, bool(e)) for k, e in rows)
        return out

    def delete(self, keys: list[str]) -> None:
        with self._lock:
            self._db.executemany("DELETE FROM replies WHERE key = ?", [(k,) for k in keys])

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM replies").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()
