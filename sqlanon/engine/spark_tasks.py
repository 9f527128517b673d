"""What the Spark executors run: one group's finish, an Arrow table in and one out
(``groupBy(b).applyInArrow``, :meth:`SparkEngine.map_groups
<sqlanon.engine.spark.SparkEngine.map_groups>`), with the codec of its small results; and
Arrow columns as the numpy arrays DuckDB's ``fetchnumpy`` gives, which the driver reads too.

The executors import this module (numpy and pyarrow with it): the check of their Python
(:func:`sqlanon.engine.spark_env.check_executors`) imports it there first.
"""

from __future__ import annotations

import io
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from .base import GroupFunction

#: The column of a group's packed small results (:func:`group_task`).
PACKED = "__sqlanon_packed"


def group_task(function: GroupFunction, kept: Sequence[str], small: Sequence[str],
               labels: Sequence[int]) -> Callable[[pa.Table], pa.Table]:
    """The task that finishes one group on an executor: ``function(b, columns)`` gives the
    kept rows' columns ``kept`` and the small results ``small``; both travel back as one Arrow
    table, the kept rows as rows and the small results as one more row holding them packed in
    its :data:`PACKED` cell (:func:`pack`; a row of 48 columns per kept row would be most of the
    write). The rows carry group ``b`` as its label ``labels[b]`` (:func:`hash_labels`). The
    packed cell also holds the task's :class:`TaskTime`."""
    group_of = {label: b for b, label in enumerate(labels)}

    def apply(table: pa.Table) -> pa.Table:
        start, started = time.time(), time.perf_counter()
        columns = {c: arrow_column(table.column(i)) for i, c in enumerate(table.column_names)}
        b = group_of[int(columns["b"][0])]
        rows = table.num_rows
        del table
        converted = time.perf_counter()
        out, little = function(b, columns)
        finished = time.perf_counter()
        n = len(out[kept[0]])
        arrays = [pa.array(np.append(np.asarray(out[c], dtype=np.int64), 0), mask=np.arange(n + 1) == n)
                  for c in kept]
        spent = TaskTime(b, os.getpid(), rows, start, converted - started, finished - converted,
                         time.perf_counter() - finished)
        packed = pa.array([None] * n + [pack(b, little, small, spent)], type=pa.binary())
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


@dataclass(frozen=True)
class TaskTime:
    """Where one group's task spent its time on an executor (:func:`group_task`): the group, the
    Python worker's process id, the group's rows, when the task's Python function started (epoch
    seconds) and the seconds it took to turn the Arrow table into arrays (``convert_s``), to
    finish the group (``finish_s``: :class:`~sqlanon.mondrian.builder.BatchFinish`) and to build
    the Arrow table it returns (``out_s``). What the finish costs on the executors and whether
    the groups ran at once (:meth:`SparkEngine.map_groups
    <sqlanon.engine.spark.SparkEngine.map_groups>` keeps them: ``task_times``)."""

    group: int
    worker: int
    rows: int
    start: float
    convert_s: float
    finish_s: float
    out_s: float


def pack(group: int, columns: Mapping[str, np.ndarray], names: Sequence[str], spent: TaskTime | None = None) -> bytes:
    """Group ``group``'s integer columns ``names`` of ``columns`` as one ``.npz`` blob, with the
    task's :class:`TaskTime` when given."""
    buffer = io.BytesIO()
    times = {} if spent is None else {"time": np.array([spent.worker, spent.rows], dtype=np.int64),
                                      "seconds": np.array([spent.start, spent.convert_s, spent.finish_s, spent.out_s])}
    np.savez(buffer, group=np.int64(group), **times,
             **{f"c{i}": np.asarray(columns[c], dtype=np.int64) for i, c in enumerate(names)})
    return buffer.getvalue()


def unpack(blob: bytes, names: Sequence[str]) -> tuple[int, dict[str, np.ndarray], TaskTime | None]:
    """The group, the columns ``names`` and the task's :class:`TaskTime` (None if it has none)
    that :func:`pack` packed."""
    with np.load(io.BytesIO(blob)) as data:
        group = int(data["group"])
        spent = None
        if "time" in data.files:
            (worker, rows), (start, convert_s, finish_s, out_s) = data["time"].tolist(), data["seconds"].tolist()
            spent = TaskTime(group, int(worker), int(rows), start, convert_s, finish_s, out_s)
        return group, {c: data[f"c{i}"] for i, c in enumerate(names)}, spent


#: Spark's ``hash`` (Murmur3, x86 32-bit) constants and seed.
_C1, _C2, _SEED, _MASK = 0xCC9E2D51, 0x1B873593, 42, 0xFFFFFFFF


def spark_hash_long(value: int) -> int:
    """Spark's ``hash(CAST(value AS BIGINT))`` (``Murmur3_x86_32.hashLong`` with seed 42), the
    function hash partitioning applies: ``pmod(hash(key), n)`` is a row's partition of ``n``."""

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & _MASK

    def mix(h: int, k: int) -> int:
        k = rotl((k * _C1) & _MASK, 15) * _C2 & _MASK
        return (rotl(h ^ k, 13) * 5 + 0xE6546B64) & _MASK

    h = mix(mix(_SEED, value & _MASK), (value >> 32) & _MASK) ^ 8
    h = (h ^ (h >> 16)) * 0x85EBCA6B & _MASK
    h = (h ^ (h >> 13)) * 0xC2B2AE35 & _MASK
    h ^= h >> 16
    return h - (1 << 32) if h >= 1 << 31 else h


def hash_labels(groups: int) -> list[int]:
    """For each group ``b < groups`` the smallest non-negative BIGINT label that Spark's hash
    partitioning into ``groups`` partitions sends to partition ``b``: rows hash-partitioned by
    label give each group a task of its own, with no range partitioner's sampling pass over
    the rows first (:meth:`SparkEngine.map_groups <sqlanon.engine.spark.SparkEngine.map_groups>`)."""
    labels: list[int | None] = [None] * groups
    left, label = groups, 0
    while left:
        b = spark_hash_long(label) % groups  # Python's % is pmod
        if labels[b] is None:
            labels[b] = label
            left -= 1
        label += 1
    return [int(x) for x in labels if x is not None]
