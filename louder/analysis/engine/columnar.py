"""Parquet inputs read without materialising their rows (issue 49): a run of 10^6 archetype agents × 6
rounds is 6·10^6 decision rows, which pandas would hold as ~4 GB of string columns; what the network
statistics read of them is a few thousand counts.

``tally(path, by)`` counts the rows of every combination of the ``by`` columns, in the order each
combination first appears in the file, reading those columns only, one batch (row group) at a time,
strings as dictionary codes. It uses pyarrow's compute (``Table.group_by``): measured against DuckDB
and Polars on the README's 10^6-agent example (docs/benchmarks.md, "The columnar engine") it is as
fast as Polars, faster than DuckDB, and already a dependency of louder; pandas materialises every row.

``tally_by_node`` does the same for a file whose rows carry a ``node`` only (the control's), adding
columns looked up per node (an archetype run's cell and replicate). ``read`` is a projected read with a
row filter pushed into the Parquet scan (``round == 0``: the independent decisions only).
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

BATCH = 1 << 20


def _dictionary_columns(path: Path, columns: Sequence[str]) -> list[str]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pq.read_schema(path)
    return [c for c in columns if c in schema.names and (pa.types.is_string(schema.field(c).type) or
                                                         pa.types.is_large_string(schema.field(c).type))]


def _pandas(table) -> pd.DataFrame:
    """A small arrow table as pandas: nullable booleans for flags with nulls (target, changed)."""
    import pyarrow as pa

    return table.to_pandas(types_mapper={pa.bool_(): pd.BooleanDtype()}.get)


def _count(tables: list, by: list[str]):
    """Sum the partial counts ``n`` of ``tables`` per ``by``, first appearance first."""
    import pyarrow as pa

    plain = []
    for t in tables:
        for i, f in enumerate(t.schema):
            if pa.types.is_dictionary(f.type):
                t = t.set_column(i, f.name, t.column(i).cast(f.type.value_type))
        plain.append(t)
    whole = pa.concat_tables(plain)
    # use_threads=False: the groups come out in the order they first appear (the file's order)
    return whole.group_by(by, use_threads=False).aggregate([("n", "sum")]).rename_columns(by + ["n"])


def tally(path: str | Path, by: Sequence[str], extra=None) -> pd.DataFrame:
    """One row per combination of ``by`` found in the Parquet file ``path`` (nulls are values), with
    ``n`` its number of rows; combinations in the order they first appear. ``extra(batch) → {name:
    array}`` adds columns computed from each batch from its columns ``extra.reads`` (they join ``by``
    under ``extra.names``)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    by = list(by)
    read = [c for c in by if c not in (extra.names if extra else ())] + [
        c for c in (extra.reads if extra else ()) if c not in by]
    f = pq.ParquetFile(path, read_dictionary=_dictionary_columns(path, read))
    partial = []
    for batch in f.iter_batches(batch_size=BATCH, columns=read):
        t = pa.Table.from_batches([batch])
        if extra is not None:
            for name, values in extra(t).items():
                t = t.append_column(name, pa.array(values))
        t = t.select(by)
        partial.append(t.group_by(by, use_threads=False).aggregate([([], "count_all")]).rename_columns(by + ["n"]))
    if not partial:
        return pd.DataFrame(columns=by + ["n"])
    return _pandas(_count(partial, by))


class ByNode:
    """Columns looked up per node for ``tally(extra=...)``: ``values[name][node]``."""

    reads = ("node",)

    def __init__(self, values: dict[str, np.ndarray]):
        self.values = values
        self.names = tuple(values)

    def __call__(self, table) -> dict[str, np.ndarray]:
        node = table.column("node").to_numpy()
        return {k: v[node] for k, v in self.values.items()}


def read(path: str | Path, columns: Sequence[str] | None = None, round0: bool = False) -> pd.DataFrame:
    """The Parquet file's ``columns`` (all when None) as pandas, only the rows of round 0 with
    ``round0`` — the same frame as reading it whole and keeping ``round == 0`` (reset index), without
    reading the other rounds."""
    return pd.read_parquet(path, columns=None if columns is None else list(columns),
                           filters=[("round", "==", 0)] if round0 else None)


def columns_of(path: str | Path) -> list[str]:
    """The column names of a Parquet or CSV file, without reading its rows."""
    path = Path(path)
    if path.suffix == ".csv":
        return list(pd.read_csv(path, nrows=0).columns)
    import pyarrow.parquet as pq

    return list(pq.read_schema(path).names)
