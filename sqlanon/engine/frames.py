"""pandas DataFrames for engines other than DuckDB: the house SQL type of a frame's columns (for
engines that create a table from a frame themselves; DuckDB reads the frame directly), and
files written from a frame by an in-memory DuckDB."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from sqlglot import exp

from . import sqlgen as g


def write_file(frame: pd.DataFrame, path: str, params: Sequence[exp.CopyParameter]) -> None:
    """Write ``frame`` to ``path`` as DuckDB's ``COPY ... TO`` with ``params`` would: an in-memory
    DuckDB, whose writer makes every format ``--out`` names, writes it. For engines whose server
    cannot write the caller's files (PostgreSQL) or whose results are fetched anyway (Spark)."""
    from .duckdb import DuckDBEngine
    from .duckdb import connect as duckdb_connect

    con = duckdb_connect(None)
    try:
        local = DuckDBEngine(con)
        local.create_from_frame("export", frame)
        local.export(exp.select("*").from_(g.table("export")), path, params)
    finally:
        con.close()


def sql_type(column: pd.Series) -> str:
    """The house SQL type of a DataFrame column (the types DuckDB would give it)."""
    dtype = column.dtype
    kind = getattr(dtype, "kind", "O")
    if kind == "b" or str(dtype) == "boolean":
        return "BOOLEAN"
    if kind in "iu" or str(dtype) in ("Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32"):
        size = getattr(dtype, "itemsize", 8)
        return {1: "SMALLINT", 2: "SMALLINT", 4: "INTEGER"}.get(size, "BIGINT") if kind != "u" or size < 8 else "DECIMAL(20,0)"
    if kind == "f" or str(dtype) in ("Float32", "Float64"):
        return "DOUBLE"
    if kind == "M":
        return "TIMESTAMP WITH TIME ZONE" if getattr(dtype, "tz", None) is not None else "TIMESTAMP"
    present = column.dropna()
    if len(present) and all(isinstance(v, (bool, np.bool_)) for v in present):
        return "BOOLEAN"
    if len(present) and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in present):
        return "BIGINT"
    if len(present) and all(isinstance(v, (float, np.floating, int, np.integer)) for v in present):
        return "DOUBLE"
    if len(present) and all(type(v).__name__ == "date" for v in present):
        return "DATE"
    return "VARCHAR"
