"""What the Spark executors run: one group's finish, an Arrow table in and one out
(``groupBy(b).applyInArrow``, :meth:`SparkEngine.map_groups
<sqlanon.engine.spark.SparkEngine.map_groups>`), with the codec of its small results; and
Arrow columns as the numpy arrays DuckDB's ``fetchnumpy`` gives, which the driver reads too.

The executors import this module (numpy and pyarrow with it): the check of their Python
(:func:`sqlanon.engine.spark_env.check_executors`) imports it there first.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pyarrow as pa

from .base import GroupFunction

#: The column of a group's packed small results (:func:`group_task`).
PACKED = "__sqlanon_packed"


def group_task(function: GroupFunction, kept: Sequence[str], small: Sequence[str]) -> Callable[[pa.Table], pa.Table]:
    """The task that finishes one group on an executor: ``function(b, columns)`` gives the
    kept rows' columns ``kept`` and the small results ``small``; both travel back as one Arrow
    table, the kept rows as rows and the small results as one more row holding them packed in
    its :data:`PACKED` cell (:func:`pack`; a row of 48 columns per kept row would be most of the
    write)."""

    def apply(table: pa.Table) -> pa.Table:
        columns = {c: arrow_column(table.column(i)) for i, c in enumerate(table.column_names)}
        b = int(columns["b"][0])
        out, little = function(b, columns)
        n = len(out[kept[0]])
        arrays = [pa.array(np.append(np.asarray(out[c], dtype=np.int64), 0), mask=np.arange(n + 1) == n)
                  for c in kept]
        packed = pa.array([None] * n + [pack(b, little, small)], type=pa.binary())
        return pa.Table.from_arrays([*arrays, packed], names=[*kept, PACKED])

    return apply


def arrow_column(values: pa.ChunkedArray) -> np.ndarray:
    """One Arrow column as the numpy array DuckDB's ``fetchnumpy`` would give (NULL: NaN in
    floats, None elsewhere; decimals as floats)."""
    kind = values.type
    nulls = values.null_count
    if pa.types.is_decimal(kind):
        values = values.cast(pa.float64())
        kind = values.type
    if pa.types.is_floating(kind):
        return values.to_numpy().astype(np.float64)
    if pa.types.is_integer(kind) or pa.types.is_boolean(kind):
        if not nulls:
            return values.to_numpy()
        return np.asarray(values.to_pylist(), dtype=object)
    if pa.types.is_date(kind) or pa.types.is_timestamp(kind):
        return values.to_numpy()
    return np.asarray(values.to_pylist(), dtype=object)


def pack(group: int, columns: Mapping[str, np.ndarray], names: Sequence[str]) -> bytes:
    """Group ``group``'s integer columns ``names`` of ``columns`` as one ``.npz`` blob."""
    buffer = io.BytesIO()
    np.savez(buffer, group=np.int64(group), **{f"c{i}": np.asarray(columns[c], dtype=np.int64) for i, c in enumerate(names)})
    return buffer.getvalue()


def unpack(blob: bytes, names: Sequence[str]) -> tuple[int, dict[str, np.ndarray]]:
    """The group and the columns ``names`` that :func:`pack` packed."""
    with np.load(io.BytesIO(blob)) as data:
        return int(data["group"]), {c: data[f"c{i}"] for i, c in enumerate(names)}
