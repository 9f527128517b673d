"""Types of pandas DataFrame columns in the house SQL spelling, for engines that create a table
from a frame themselves (PostgreSQL, Spark; DuckDB reads the frame directly)."""

from __future__ import annotations

import numpy as np
import pandas as pd


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
