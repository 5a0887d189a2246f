"""Shared by the SIGKILL tests: how many answers a run's SQLite cache holds (0 while it cannot be read)."""

import sqlite3


def cached_replies(path) -> int:
    try:
        with sqlite3.connect(path) as db:
            return db.execute("SELECT COUNT(*) FROM replies").fetchone()[0]
    except sqlite3.Error:
        return 0
