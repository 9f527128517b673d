"""The in-memory finish on one batch, for the tests that compare the depth-first compiled finish
with the level-by-level one (``tests/mondrian/test_*_finish.py``).

* :func:`finish`: one batch of codes through ``Partitioner.run_memory`` under Median and k, the
  compiled finish on or off: the leaves, each row's leaf id and the counters.
* :func:`assert_same`: two such results are the same, leaf by leaf and row by row.
* :func:`batches`: random batches (hypothesis) of 1-4 partitions over 1-5 ordered QIs.
* :func:`release_rows`: a whole release with one compiled finish switched on or off.
"""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
from hypothesis import strategies as st

import sqlanon
from sqlanon.model.criteria import Median
from sqlanon.model.domain import Domain
from sqlanon.model.partition import Boxes
from sqlanon.model.privacy import KAnonymity
from sqlanon.model.qi import QI
from sqlanon.mondrian import builder
from sqlanon.mondrian.builder import Batch, Partitioner


def finish(codes: np.ndarray, seg_n: np.ndarray, domains: list[Domain], k: int, fast: bool, threads: int = 1,
           lo: np.ndarray | None = None, hi: np.ndarray | None = None, budget: np.ndarray | None = None) -> dict:
    """One batch through Partitioner.run_memory: leaves, each row's leaf id, counters. ``budget``:
    each root's suppression budget; the compiled finish must then take the batch when ``fast``
    (else an identity with the level-by-level finish would prove nothing)."""
    R, d = len(seg_n), len(domains)
    saved = builder._MEDIAN_FINISH
    builder._MEDIAN_FINISH = fast
    try:
        p = Partitioner(domains, [KAnonymity(k)], Median(), threads=threads)
        p.next_pid = 1000
        seg = Boxes(np.arange(7, 7 + R, dtype=np.int64), seg_n.astype(np.int64),
                    np.zeros((R, d), np.int64) if lo is None else lo,
                    np.tile([dom.size - 1 for dom in domains], (R, 1)).astype(np.int64) if hi is None else hi,
                    np.full((R, d), -1, np.int64), *(() if budget is None else (budget.astype(np.int64),)))
        assert budget is None or not fast or p.median_finish_applies(seg)
        seen = []
        p.progress = seen.append
        rows, pid = p.run_memory(Batch(codes.astype(np.int32), [], []), seg)
    finally:
        builder._MEDIAN_FINISH = saved
    order = np.argsort(rows)
    return {"leaves": p.leaf_table(), "rows": rows[order], "pid": pid[order], "next_pid": p.next_pid,
            "levels": p.levels, "finished": p.rows_finished,
            "progress": [(s.level, s.open_partitions, s.rows_finished) for s in seen]}


def assert_same(a: dict, b: dict) -> None:
    assert a["leaves"].keys() == b["leaves"].keys()
    for key in a["leaves"]:
        np.testing.assert_array_equal(a["leaves"][key], b["leaves"][key], err_msg=key)
    for key in ("rows", "pid"):
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)
    assert (a["next_pid"], a["levels"], a["finished"], a["progress"]) == \
        (b["next_pid"], b["levels"], b["finished"], b["progress"])


@st.composite
def batches(draw):
    """Codes of a batch of 1-4 partitions over 1-5 ordered QIs: tiny to wide domains, even or
    uneven positions (``num``), some QIs with equal ranges (ties), skewed and duplicated codes."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    d = draw(st.integers(1, 5))
    M = draw(st.integers(1, 1500))
    domains, columns = [], []
    for j in range(d):
        size = int(rng.choice([1, 2, 3, 7, 60, 3000]))
        shape = draw(st.sampled_from(["rank", "uneven", "twin"]))
        if shape == "twin" and j > 0 and domains[-1].size == size:
            num = domains[-1].num  # the same positions as the previous QI: equal ranges are common
        elif shape == "uneven":
            num = np.sort(rng.choice(size * 4, size, replace=False)).astype(np.float64) * 0.37 - 5
        else:
            num = np.arange(size, dtype=np.float64)
        domains.append(Domain(QI(f"q{j}", "numeric", "INTEGER"), size, "", num))
        skew = draw(st.sampled_from(["uniform", "geometric", "few"]))
        if skew == "geometric":
            column = np.minimum(rng.geometric(0.2, M) - 1, size - 1)
        elif skew == "few":
            column = rng.choice(rng.integers(0, size, 3), M)
        else:
            column = rng.integers(0, size, M)
        columns.append(column)
    R = draw(st.integers(1, 4))
    cuts = np.sort(rng.choice(np.arange(1, M), min(R - 1, M - 1), replace=False)) if M > 1 else np.zeros(0, int)
    seg_n = np.diff(np.concatenate(([0], cuts, [M])))
    k = draw(st.sampled_from([1, 2, 3, 5, 10, 40]))
    return np.vstack(columns), seg_n, domains, k


def release_rows(frame: pd.DataFrame, switch: str, fast: bool, memory_rows: int, **request) -> tuple[list, list]:
    """``frame`` (plus a row number ``id``, the key) released by Mondrian on a fresh DuckDB through
    SQL levels up to ``memory_rows``, with the compiled finish ``builder.<switch>``
    (``_MEDIAN_FINISH``, ``_WORKLOAD_FINISH``) on or off: the rules and the view, sorted.
    ``request``: the other :func:`sqlanon.anonymize` arguments (``qid``, ``k``, ...)."""
    con = duckdb.connect()
    saved = getattr(builder, switch)
    setattr(builder, switch, fast)
    try:
        con.register("frame", frame)
        con.execute("CREATE TABLE t AS SELECT row_number() OVER () AS id, * FROM frame")
        release = sqlanon.anonymize(con, "t", **request,
                                    algorithm=sqlanon.Mondrian(strategy=sqlanon.Levels(memory_rows=memory_rows)),
                                    output=sqlanon.Output(key="id"))
        assert release.verification.ok
        return (con.execute(f'SELECT * FROM "{release.rules}" ORDER BY ALL').fetchall(),
                con.execute(f'SELECT * FROM "{release.view}" ORDER BY id').fetchall())
    finally:
        setattr(builder, switch, saved)
        con.close()
