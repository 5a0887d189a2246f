"""Atomic file writes: a reader (or a crash) never sees a half-written output file."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pandas as pd


def _umask() -> int:
    # os.umask can only be read by setting it; set it back at once.
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _atomic(path: Path, write) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        # mkstemp creates the file 0600; give it the mode a plain open() would, so colleagues can read
        # a shared results folder when the user's umask allows it.
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_parquet(df: pd.DataFrame, path: str | Path, metadata: dict[bytes, bytes] | None = None) -> None:
    """``df`` as Parquet; ``metadata`` is added to the file's schema metadata (e.g. the run's generation)."""
    if not metadata:
        return _atomic(Path(path), lambda tmp: df.to_parquet(tmp, index=False))
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(df, preserve_index=False)
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), **metadata})
    _atomic(Path(path), lambda tmp: pq.write_table(table, tmp))


class ParquetStream:
    """A Parquet file written as it is produced, one row group per ``write`` (issue 49: a run of
    millions of agents never holds its table whole), and made visible at once by ``commit`` (atomic, as
    every file here: a reader or a crash never sees it half written; ``abort`` or an error drops it).
    ``schema``: the arrow schema of the file, its metadata included (pandas' and the run's generation);
    ``statistics``: the columns whose min/max the row groups record (all when None)."""

    def __init__(self, path: str | Path, schema, statistics: list[str] | None = None):
        import pyarrow.parquet as pq

        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, self.tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")
        os.close(fd)
        self.schema, self.rows = schema, 0
        # statistics (min/max per row group) of the columns a reader filters on only: computing them for
        # every string column is a third of the writing time
        self._writer = pq.ParquetWriter(self.tmp, schema, write_statistics=True if statistics is None else [
            c for c in statistics if c in schema.names])

    def write(self, batch) -> None:
        """One row group: a ``pyarrow.RecordBatch`` or ``Table`` of the file's schema."""
        if batch.num_rows:
            self._writer.write(batch, row_group_size=batch.num_rows)
            self.rows += batch.num_rows

    def commit(self) -> None:
        self._writer.close()
        try:
            with open(self.tmp, "rb") as f:
                os.fsync(f.fileno())
            os.chmod(self.tmp, 0o666 & ~_umask())
            os.replace(self.tmp, self.path)
        except BaseException:
            Path(self.tmp).unlink(missing_ok=True)
            raise

    def abort(self) -> None:
        try:
            self._writer.close()
        finally:
            Path(self.tmp).unlink(missing_ok=True)


def write_json(obj, path: str | Path) -> None:
    def w(tmp):
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(obj, f, indent=2, ensure_ascii=False, default=str)

    _atomic(Path(path), w)


def write_text(text: str, path: str | Path) -> None:
    def w(tmp):
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)

    _atomic(Path(path), w)


def write_csv(df: pd.DataFrame, path: str | Path) -> None:
    _atomic(Path(path), lambda tmp: df.to_csv(tmp, index=False))
