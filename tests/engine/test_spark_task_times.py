"""Each task of Spark's executor finish reports where its time went
(:class:`sqlanon.engine.spark_tasks.TaskTime`): the group's packed cell carries it back with the
group's small results, and the engine keeps the tasks of its last ``map_groups``
(``task_times``), so a benchmark sees whether the groups ran at once and what the finish
itself cost beside Spark's reads, shuffle and writes (issue 51: ``local[1]`` / ``local[2]``)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from sqlanon.engine.spark_tasks import PACKED, TaskTime, group_task, hash_labels, pack, unpack


def test_pack_carries_the_task_time_and_unpack_gives_it_back():
    spent = TaskTime(3, 4242, 1000, 1.7e9, 0.25, 1.5, 0.125)
    group, columns, back = unpack(pack(3, {"a": np.arange(4)}, ["a"], spent), ["a"])
    assert (group, columns["a"].tolist(), back) == (3, [0, 1, 2, 3], spent)
    assert unpack(pack(3, {"a": np.arange(2)}, ["a"]), ["a"])[2] is None


def test_a_group_task_times_its_finish():
    labels = hash_labels(4)

    def finish(b, columns):
        return {"rid": columns["rid"]}, {"n": np.array([len(columns["rid"])])}

    task = group_task(finish, ["rid"], ["n"], labels)
    out = task(pa.table({"rid": np.arange(5, dtype=np.int64), "b": np.full(5, labels[2], dtype=np.int64)}))
    cell = out.column(PACKED).to_pylist()[-1]
    group, small, spent = unpack(cell, ["n"])
    assert (group, small["n"].tolist()) == (2, [5])
    assert spent.group == 2 and spent.rows == 5 and spent.worker > 0
    assert min(spent.convert_s, spent.finish_s, spent.out_s) >= 0
