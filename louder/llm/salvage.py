"""Keep every readable answer of a damaged cache file in a new one (``louder repair``).

Two readers, so that one kind of damage never hides what the other can still see:

1. **Through SQLite**, on a copy of the file (its ``-wal`` beside it): a header that SQLite no longer
   recognises is rebuilt from the pages, then the rows are read in rowid ranges, halving a range
   that fails until only the unreadable rows are left out.
2. **From the pages themselves**: every table-leaf page of the file is parsed as SQLite's file
   format lays it out (cells, varints, record serial types, overflow chains), and every record of
   the cache's shape — a text key, a reply, an ``is_error`` integer — is read. This finds the rows
   of a table whose root page, schema page or header is lost, or that was dropped (its pages are
   still in the file, unless SQLite has reused them).

A row counts only if its reply is a readable answer (``louder.llm.cache.readable_reply``); what the
first reader finds wins over the second (the pages may hold an older version of a row), and among
page records of one key an answer wins over an ``error``.
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from dataclasses import dataclass
from pathlib import Path

from louder.llm.cache import COLUMNS, ResponseCache, readable_reply

SQLITE_MAGIC = b"SQLite format 3\x00"
PAGE_SIZES = (512, 1024, 2048, 4096, 8192, 16384, 32768, 65536)
BTREE_TYPES = (2, 5, 10, 13)  # index interior, table interior, index leaf, table leaf


@dataclass(frozen=True)
class Salvage:
    kept: int  # answers written to the new cache
    unreadable: int  # rows found that are not answers (bad JSON, the wrong shape, cut records)
    known_keys: int | None  # keys the damaged file's key index lists (None: the index cannot be read)

    @property
    def lost(self) -> int | None:
        """Answers the damaged file held that the new cache lacks, where the key index can tell."""
        return None if self.known_keys is None else max(0, self.known_keys - self.kept)


def salvage(src: str | Path, dst: str | Path) -> Salvage:
    """Write every readable answer of the cache file ``src`` into a new cache at ``dst`` (which must
    not exist). ``src`` is only read (a folder or a missing file: nothing to keep)."""
    src, dst = Path(src), Path(dst)
    found: dict[str, tuple[str, int]] = {}
    unreadable, known = 0, None
    if src.is_file() and src.stat().st_size:
        data = src.read_bytes()
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / "copy.sqlite"
            shutil.copyfile(src, copy)
            if Path(f"{src}-wal").is_file():
                shutil.copyfile(f"{src}-wal", f"{copy}-wal")
            through = _through_sqlite(copy)
            if through is None:  # SQLite cannot open it: rebuild the header from the pages and try again
                copy.write_bytes(rebuilt_header(data) + data[100:])
                Path(f"{copy}-wal").unlink(missing_ok=True)
                through = _through_sqlite(copy)
        rows, bad, known = through or ({}, set(), None)
        found.update(rows)
        unreadable += len(bad)
        page_rows, page_bad = _from_pages(data)
        for key, (reply, is_error) in page_rows.items():
            if key not in bad:  # a row SQLite reads as damaged stays damaged (the page may hold an older version)
                found.setdefault(key, (reply, is_error))
        if not rows and not bad:  # the pages were the only reader: their unreadable records count
            unreadable += page_bad
    out = ResponseCache(dst, check=False)
    try:
        out._run(lambda: out._db.executemany("INSERT OR IGNORE INTO replies (key, reply, is_error) VALUES (?, ?, ?)",
                                             [(k, r, e) for k, (r, e) in found.items()]))
    finally:
        out.close()
    return Salvage(len(found), unreadable, known)


# --- 1. through SQLite ----------------------------------------------------------------------------

def _through_sqlite(path: Path) -> tuple[dict[str, tuple[str, int]], set, int | None] | None:
    """(key → (reply, is_error) of the readable rows, the keys of unreadable rows, keys in the key
    index); None when SQLite cannot open the file (its header)."""
    rows: dict[str, tuple[str, int]] = {}
    bad: set = set()
    try:
        db = sqlite3.connect(path)
        db.execute("SELECT name FROM sqlite_master").fetchall()
    except sqlite3.DatabaseError as e:
        return None if "not a database" in str(e) or "malformed" in str(e) else (rows, bad, None)
    try:
        try:
            columns = [r[1] for r in db.execute("PRAGMA table_info(replies)")]
        except sqlite3.Error:
            return rows, bad, None
        if not {"key", "reply"} <= set(columns):
            return rows, bad, None
        try:
            top = db.execute("SELECT max(rowid) FROM replies").fetchone()[0] or 0
        except sqlite3.Error:
            top = path.stat().st_size // 16  # a row takes more than 16 bytes: an upper bound
        for key, reply in _ranges(db, 1, top):
            r = readable_reply(reply)
            if r is None or not isinstance(key, str):
                bad.add(key if isinstance(key, str) else ("?", len(bad)))
            else:
                rows[key] = (reply, int(r.error is not None))
        return rows, bad, _index_keys(db)
    finally:
        db.close()


def _ranges(db: sqlite3.Connection, lo: int, hi: int):
    """Rows with rowid in [lo, hi]; a range SQLite cannot read is halved down to single rowids."""
    stack = [(lo, hi)]
    while stack:
        a, b = stack.pop()
        if a > b:
            continue
        try:
            yield from db.execute("SELECT key, reply FROM replies WHERE rowid BETWEEN ? AND ?", (a, b)).fetchall()
        except sqlite3.Error:
            if a < b:
                mid = (a + b) // 2
                stack += [(mid + 1, b), (a, mid)]


def _index_keys(db: sqlite3.Connection) -> int | None:
    try:
        return db.execute("SELECT COUNT(*) FROM replies INDEXED BY sqlite_autoindex_replies_1").fetchone()[0]
    except sqlite3.Error:
        return None


def rebuilt_header(data: bytes) -> bytes:
    """A 100-byte SQLite header for a file whose own is garbled: the page size read from the pages,
    the page count from the file size, UTF-8, schema format 4, no free-page list."""
    ps = guess_page_size(data)
    h = bytearray(100)
    h[0:16] = SQLITE_MAGIC
    h[16:18] = (1 if ps == 65536 else ps).to_bytes(2, "big")
    h[18], h[19] = 1, 1  # rollback journal: the copy is read as it is
    h[21], h[22], h[23] = 64, 32, 32
    h[24:28] = (1).to_bytes(4, "big")
    h[28:32] = (len(data) // ps).to_bytes(4, "big")
    h[40:44] = (1).to_bytes(4, "big")
    h[44:48] = (4).to_bytes(4, "big")
    h[56:60] = (1).to_bytes(4, "big")
    h[92:96] = (1).to_bytes(4, "big")
    h[96:100] = (3040001).to_bytes(4, "big")
    return bytes(h)


def guess_page_size(data: bytes) -> int:
    """The header's page size if it is readable; else the size at which the most pages look like
    B-tree pages (the smallest of equally good ones: twice the size looks as good on half the pages)."""
    scores = {}
    for ps in PAGE_SIZES:
        starts = range(ps, len(data) - 8, ps)
        good = sum(_looks_like_btree(data, s, ps) for s in starts)
        scores[ps] = (round(good / len(starts), 1), good) if good else (0.0, 0)
    said = int.from_bytes(data[16:18], "big") if data.startswith(SQLITE_MAGIC) else 0
    said = 65536 if said == 1 else said
    best = max(PAGE_SIZES, key=lambda ps: (scores[ps], -ps))
    if said in scores and scores[said] >= scores[best] or scores[best] == (0.0, 0):
        return said if said in scores else 4096
    return best


def _looks_like_btree(data: bytes, start: int, ps: int) -> bool:
    kind = data[start]
    if kind not in BTREE_TYPES:
        return False
    cells = int.from_bytes(data[start + 3 : start + 5], "big")
    content = int.from_bytes(data[start + 5 : start + 7], "big") or 65536
    header = 8 if kind in (10, 13) else 12
    return header + 2 * cells <= content <= ps


# --- 2. from the pages ----------------------------------------------------------------------------

def _varint(b: bytes, i: int) -> tuple[int, int]:
    v = 0
    for k in range(9):
        if i + k >= len(b):
            raise IndexError
        c = b[i + k]
        if k == 8:
            return (v << 8) | c, i + 9
        v = (v << 7) | (c & 0x7F)
        if c < 0x80:
            return v, i + k + 1
    raise IndexError  # unreachable


def _from_pages(data: bytes) -> tuple[dict[str, tuple[str, int]], int]:
    """Every record of the cache's shape on the file's table-leaf pages."""
    ps = guess_page_size(data)
    usable = ps - (data[20] if data.startswith(SQLITE_MAGIC) else 0)
    rows: dict[str, tuple[str, int]] = {}
    bad = 0
    for number in range(1, len(data) // ps + 1):
        start = (number - 1) * ps
        head = start + (100 if number == 1 else 0)
        if head >= len(data) or data[head] != 13:
            continue
        cells = int.from_bytes(data[head + 3 : head + 5], "big")
        for c in range(cells):
            try:
                ptr = int.from_bytes(data[head + 8 + 2 * c : head + 10 + 2 * c], "big")
                payload = _payload(data, start + ptr, ps, usable)
                record = _record(payload)
            except (IndexError, ValueError):
                bad += 1
                continue
            if record is None:
                continue  # a row of another table (the schema page)
            key, reply, is_error = record
            r = readable_reply(reply)
            if r is None:
                bad += 1
                continue
            is_error = int(r.error is not None)
            if key not in rows or (rows[key][1] and not is_error):  # an answer wins over an error
                rows[key] = (reply, is_error)
    return rows, bad


def _payload(data: bytes, at: int, ps: int, usable: int) -> bytes:
    """The payload of the table-leaf cell at ``at``, with its overflow pages."""
    size, i = _varint(data, at)
    _, i = _varint(data, i)  # the rowid
    local_max = usable - 35
    if size <= local_max:
        local = size
    else:
        m = ((usable - 12) * 32 // 255) - 23
        k = m + (size - m) % (usable - 4)
        local = k if k <= local_max else m
    out = bytearray(data[i : i + local])
    if len(out) < local:
        raise IndexError
    page = int.from_bytes(data[i + local : i + local + 4], "big") if size > local else 0
    seen = set()
    while len(out) < size:
        if page < 1 or page in seen or page * ps > len(data):
            raise IndexError
        seen.add(page)
        o = (page - 1) * ps
        page = int.from_bytes(data[o : o + 4], "big")
        out += data[o + 4 : o + usable][: size - len(out)]
    return bytes(out)


def _record(payload: bytes) -> tuple[str, str, int] | None:
    """(key, reply, is_error) of a record of three columns (text, text, integer); None for another shape."""
    header, i = _varint(payload, 0)
    types = []
    while i < header:
        t, i = _varint(payload, i)
        types.append(t)
    if len(types) != len(COLUMNS) or not all(t >= 13 and t % 2 for t in types[:2]) or types[2] not in (1, 8, 9):
        return None
    pos, values = header, []
    for t in types[:2]:
        n = (t - 13) // 2
        chunk = payload[pos : pos + n]
        if len(chunk) < n:
            raise IndexError
        values.append(chunk.decode("utf-8"))  # ValueError: not a readable text
        pos += n
    is_error = {8: 0, 9: 1}.get(types[2], payload[pos] if pos < len(payload) else 0)
    return values[0], values[1], is_error
