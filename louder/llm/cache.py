"""SQLite response cache: the record of every finished model call, and so the basis of resume.

Key = sha256 over backend identity, request parameters, full messages/prompt and replicate index.
Each answer is committed as it arrives (WAL mode), so a run killed at any point loses at most the
calls in flight; re-running serves everything finished from here and calls the model for the rest.
Failed calls (``error``) are stored too, so a plain re-run reproduces them; ``retry_errors`` asks
the model again for exactly those.

The first answer stored under a key is the one kept: ``put`` never overwrites an answer (only an
``error`` the caller asked again for), and returns what the cache holds, so a caller that lost a
race to another writer goes on with the stored answer — what is on disk and what a run builds its
files from are always the same answer.

Opening checks the file (``PRAGMA quick_check``, the table's columns, every row's JSON shape) and
any damage is one ``CacheDamaged`` error naming the file, never a traceback; ``louder.llm.salvage``
keeps every readable answer of a damaged file.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path

from louder.errors import LouderError
from louder.llm.base import Reply, Request, canonical_json, hash_json

COLUMNS = ("key", "reply", "is_error")
# The JSON shape of a stored reply, field → the JSON types it may have (None: the field may be absent).
SHAPE: dict[str, tuple] = {
    "text": ("text",), "error": ("null", "text"), "refusal": ("null", "text", None),
    "input_tokens": ("null", "integer", None), "output_tokens": ("null", "integer", None),
    "latency_s": ("real", "integer", None), "attempts": ("integer", None),
    "error_cause": ("null", "text", None), "finish_reason": ("null", "text", None),
}


def _sql_shape() -> str:
    """A SQL condition true for a readable row (CASE, because json_type raises on malformed JSON)."""
    parts = ["typeof(key) = 'text'", "json_type(reply) = 'object'"]
    for name, types in SHAPE.items():
        allowed = ", ".join(f"'{t}'" for t in types if t)
        test = f"json_type(reply, '$.{name}') IN ({allowed})"
        parts.append(f"({test} OR json_type(reply, '$.{name}') IS NULL)" if None in types else test)
    return f"CASE WHEN typeof(reply) = 'text' AND json_valid(reply) THEN ({' AND '.join(parts)}) ELSE 0 END"


READABLE = _sql_shape()
_JSON_TYPES = {str: "text", int: "integer", float: "real", type(None): "null"}


def readable_reply(text) -> Reply | None:
    """The ``Reply`` a stored row holds, or None when it is not one (bad JSON, the wrong shape):
    the same rule as ``READABLE``, in Python."""
    if not isinstance(text, str):
        return None
    try:
        d = json.loads(text)
    except ValueError:
        return None
    if not isinstance(d, dict):
        return None
    for name, types in SHAPE.items():
        if name not in d:
            if None not in types:
                return None
            continue
        if _JSON_TYPES.get(type(d[name])) not in types:  # bool is not int here: JSON true is not an integer
            return None
    return Reply.from_json(text)


def cache_key(identity: dict | str, request: Request, score: dict | None = None) -> str:
    """``stable_hash({"model": identity, "request": request.key_material()})``, and ``"score": score`` too
    for a scored call (its prefix and choices), with the request's rendering made once
    (``Request.key_json``) and the keys in stable_hash's (sorted) order. ``identity`` may be given as its
    ``canonical_json`` already (a client renders its own once, not at every call)."""
    model = identity if isinstance(identity, str) else canonical_json(identity)
    text = f'{{"model": {model}, "request": {request.key_json}'
    if score is not None:
        text += f', "score": {canonical_json(score)}'
    return hash_json(text + "}")


class CacheDamaged(LouderError):
    """The cache file cannot be used as it is: ``what`` says why. The run layer adds the way out
    (``louder repair``)."""

    def __init__(self, path: Path, what: str):
        self.path, self.what = Path(path), what
        super().__init__(f"cache {path} is damaged: {what}")


class CacheBusy(LouderError):
    """Another process holds the cache's write lock for longer than the busy timeout."""


def _damage(path: Path, e: sqlite3.Error) -> LouderError:
    msg = str(e)
    if isinstance(e, sqlite3.OperationalError) and ("locked" in msg or "busy" in msg):
        return CacheBusy(f"cache {path}: {msg} — another process is writing it (two runs sharing one `cache:`); "
                         "run this one again when the other has finished")
    return CacheDamaged(path, f"SQLite says {msg!r}")


class ResponseCache:
    BUSY_TIMEOUT_S = 60.0

    def __init__(self, path: str | Path, check: bool = True):
        self.path = Path(path)
        if self.path.is_dir():
            raise CacheDamaged(self.path, "the path is a folder, not a file")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self.unreadable = 0  # rows found unreadable on opening (``check``); 0 when it raised
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None,
                                       timeout=self.BUSY_TIMEOUT_S)
        except sqlite3.Error as e:
            raise _damage(self.path, e) from None
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            if check:
                self._check()
            self._db.execute(f"CREATE TABLE IF NOT EXISTS replies ({COLUMNS[0]} TEXT PRIMARY KEY, "
                             f"{COLUMNS[1]} TEXT NOT NULL, {COLUMNS[2]} INTEGER NOT NULL)")
        except sqlite3.Error as e:
            self._db.close()
            raise _damage(self.path, e) from None
        except CacheDamaged:
            self._db.close()
            raise

    def _check(self) -> None:
        """Damage of any kind raises ``CacheDamaged``: what ``PRAGMA quick_check`` finds, a file without
        the replies table (but with others), a table of other columns, rows that are not replies."""
        problems = [line for r in self._db.execute("PRAGMA quick_check").fetchall() for line in str(r[0]).splitlines()
                    if not line.startswith("***")]  # "*** in database main ***" heads the list
        if problems != ["ok"]:
            more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
            raise CacheDamaged(self.path, f"SQLite's quick_check finds {problems[0][:200]!r}{more}")
        tables = [r[0] for r in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        if "replies" not in tables:
            if tables:
                raise CacheDamaged(self.path, f"it has no table 'replies' (tables: {', '.join(tables)})")
            return  # a new (or 0-byte) file: an empty cache
        columns = tuple(r[1] for r in self._db.execute("PRAGMA table_info(replies)"))
        if columns != COLUMNS:
            raise CacheDamaged(self.path, f"its table 'replies' has the columns {', '.join(columns)}, "
                               f"not {', '.join(COLUMNS)}")
        total, bad = self._db.execute(f"SELECT COUNT(*), COALESCE(SUM(NOT ({READABLE})), 0) FROM replies").fetchone()
        if bad:
            self.unreadable = bad
            raise CacheDamaged(self.path, f"{bad} of its {total} rows cannot be read as answers (bad JSON or the "
                               "wrong shape)")

    def _run(self, fn):
        """``fn()`` under the lock; an SQLite error becomes one line (damage, or a busy file)."""
        with self._lock:
            try:
                return fn()
            except sqlite3.Error as e:
                raise _damage(self.path, e) from None

    def _reply(self, text: str) -> Reply:
        reply = readable_reply(text)
        if reply is None:
            raise CacheDamaged(self.path, "a row cannot be read as an answer (bad JSON or the wrong shape)")
        return reply

    def get(self, key: str, retry_errors: bool = False) -> Reply | None:
        row = self._run(lambda: self._db.execute("SELECT reply, is_error FROM replies WHERE key = ?",
                                                 (key,)).fetchone())
        if row is None or (retry_errors and row[1]):
            return None
        return self._reply(row[0])

    def put(self, key: str, reply: Reply, replace_error: bool = False) -> Reply:
        """Store ``reply`` unless an answer is stored under ``key`` already, and return the stored
        answer: the first answer is kept. ``replace_error``: a stored ``error`` is replaced (the caller
        asked the model again for it, ``--retry-errors``)."""
        row = (reply.to_json(), int(reply.error is not None))

        def write():
            if self._db.execute("INSERT OR IGNORE INTO replies (key, reply, is_error) VALUES (?, ?, ?)",
                                (key, *row)).rowcount:
                return None
            if replace_error and self._db.execute("UPDATE replies SET reply = ?, is_error = ? "
                                                  "WHERE key = ? AND is_error = 1", (*row, key)).rowcount:
                return None
            return self._db.execute("SELECT reply FROM replies WHERE key = ?", (key,)).fetchone()

        stored = self._run(write)
        return reply if stored is None else self._reply(stored[0])

    def error_flags(self, keys: list[str]) -> dict[str, bool]:
        """key → whether its cached answer is an ``error``, for the keys that are cached."""
        out: dict[str, bool] = {}
        keys = list(keys)

        def read():
            for i in range(0, len(keys), 500):  # SQLite caps the parameters of one statement
                chunk = keys[i : i + 500]
                rows = self._db.execute(f"SELECT key, is_error FROM replies WHERE key IN ({','.join('?' * len(chunk))})",
                                        chunk).fetchall()
                out.update((k, bool(e)) for k, e in rows)

        self._run(read)
        return out

    def delete(self, keys: list[str]) -> None:
        self._run(lambda: self._db.executemany("DELETE FROM replies WHERE key = ?", [(k,) for k in keys]))

    def __len__(self) -> int:
        return self._run(lambda: self._db.execute("SELECT COUNT(*) FROM replies").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()
