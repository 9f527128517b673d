"""The depth-first compiled finish of Median under k-anonymity (sqlanon/mondrian/compiled/median_finish.py)
gives exactly what the level-by-level finish gives: the same leaves (boxes, extents, sizes), the
same partition ids in the same order, the same leaf for every row, the same progress counters —
and through the whole release the same rules; and it agrees with the numpy oracle."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlanon
from sqlanon.model.criteria import InfoGain, Median
from sqlanon.model.domain import Domain
from sqlanon.model.privacy import KAnonymity
from sqlanon.model.qi import QI
from sqlanon.mondrian import builder
from sqlanon.mondrian.compiled import median_finish
from tests.support.finish import assert_same, batches, finish, release_rows
from tests.support.reference_mondrian import reference_mondrian_fast


@given(batches(), st.integers(1, 2))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_same_leaves_ids_and_rows_as_the_level_by_level_finish(case, threads):
    codes, seg_n, domains, k = case
    assert_same(finish(codes, seg_n, domains, k, True, threads), finish(codes, seg_n, domains, k, False))


def test_boxes_are_narrowed_from_each_partitions_own_box():
    """Open partitions arrive with boxes narrower than the domain (cut in SQL): the leaves keep them."""
    rng = np.random.default_rng(3)
    domains = [Domain(QI(f"q{j}", "numeric", "INTEGER"), 100, "", np.arange(100.0)) for j in range(2)]
    codes = np.vstack([np.concatenate((rng.integers(0, 40, 300), rng.integers(40, 100, 200))),
                       rng.integers(10, 90, 500)])
    lo, hi = np.array([[0, 0], [40, 0]]), np.array([[39, 99], [99, 99]])
    fast = finish(codes, np.array([300, 200]), domains, 7, True, lo=lo, hi=hi)
    assert_same(fast, finish(codes, np.array([300, 200]), domains, 7, False, lo=lo, hi=hi))
    leaves = fast["leaves"]
    assert (leaves["lo0"] >= np.where(leaves["cmin0"] >= 40, 40, 0)).all() and leaves["hi1"].max() == 99


def test_many_rows_on_two_threads():
    """A batch big enough for the first phase and two threads (heavy duplicates in one QI)."""
    rng = np.random.default_rng(11)
    M = 2 * median_finish.PARALLEL_ROWS + 12345
    sizes = [5000, 40, 3, 100000]
    domains = [Domain(QI(f"q{j}", "numeric", "INTEGER"), s, "", np.arange(s, dtype=np.float64))
               for j, s in enumerate(sizes)]
    codes = np.vstack([rng.integers(0, 5000, M), np.minimum(rng.geometric(0.05, M), 39),
                       rng.integers(0, 3, M), rng.integers(0, 100000, M)])
    seg_n = np.array([M - 20000, 15000, 5000])
    assert_same(finish(codes, seg_n, domains, 25, True, threads=2), finish(codes, seg_n, domains, 25, False))


def test_median_cut_against_brute_force():
    """The kernel's cut of one QI is the smallest (|2L - n|, cut) over all cuts."""
    rng = np.random.default_rng(5)
    hist = np.zeros(40, dtype=np.int32)
    for _trial in range(400):
        m = int(rng.integers(2, 60))
        width = int(rng.choice([2, 5, 30, 1000]))
        column = rng.integers(0, width, m).astype(np.int32)
        if len(np.unique(column)) < 2:
            continue
        lo, hi = int(column.min()), int(column.max())
        X = column[:, None].copy()
        values = np.unique(column)[:-1]
        L = np.array([(column <= c).sum() for c in values])
        best = min(zip(np.abs(2 * L - m), values, L))
        got = median_finish._median_cut(X, 0, m, 0, lo, hi, hist[: int(rng.choice([1, 40]))],
                                        np.empty(m, np.int32))
        assert (int(got[0]), int(got[1])) == (int(best[1]), int(best[2])), (column, got, best)
        assert not hist.any()  # the histogram is left zeroed for the next call


# -- through the whole release ----------------------------------------------------------------
@st.composite
def tables(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n = draw(st.integers(20, 600))
    columns = {}
    for j in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["int", "float", "date", "text"]))
        width = int(rng.choice([2, 9, 400]))
        values = rng.integers(0, width, n)
        if kind == "float":
            column = pd.Series(values * 0.5 - 3, dtype="Float64")
        elif kind == "date":
            column = pd.Series(pd.Timestamp("2020-01-01") + pd.to_timedelta(values * 3, unit="D"))
        elif kind == "text":
            column = pd.Series([f"v{v:04d}" for v in values], dtype=object)
        else:
            column = pd.Series(values, dtype="Int64")
        if draw(st.booleans()):
            column = column.mask(rng.random(n) < 0.15)
        columns[f"q{j}"] = column
    return pd.DataFrame(columns), draw(st.sampled_from([2, 5, 17])), draw(st.sampled_from([0, 50, 10**9]))


@given(tables())
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_same_rules_and_view_through_the_release(case):
    """Numbers, dates, text, NULLs; SQL levels first (small ``memory_rows``) or not at all."""
    frame, k, memory_rows = case
    assert release_rows(frame, "_MEDIAN_FINISH", True, memory_rows, qid=list(frame.columns), k=k) == \
        release_rows(frame, "_MEDIAN_FINISH", False, memory_rows, qid=list(frame.columns), k=k)


def test_equals_the_numpy_oracle():
    """The regions (as sets of rows) of ``reference_mondrian_fast`` on an integer table."""
    rng = np.random.default_rng(2)
    n = 20000
    frame = pd.DataFrame({"a": rng.integers(0, 5000, n), "b": rng.integers(0, 30, n),
                          "c": np.minimum(rng.geometric(0.01, n), 900), "d": rng.integers(0, 2, n)})
    con = duckdb.connect()
    con.register("frame", frame)
    con.execute("CREATE TABLE t AS SELECT row_number() OVER () - 1 AS id, * FROM frame")
    release = sqlanon.anonymize(con, "t", qid=["a", "b", "c", "d"], k=20, output=sqlanon.Output(key="id"))
    got = con.execute(f'SELECT id, "{release.class_column}" FROM "{release.view}" ORDER BY id').fetchnumpy()
    labels = reference_mondrian_fast(frame.to_numpy(), 20)
    ours = {frozenset(np.flatnonzero(got[release.class_column] == c).tolist()) for c in np.unique(got[release.class_column])}
    theirs = {frozenset(np.flatnonzero(labels == c).tolist()) for c in np.unique(labels)}
    assert ours == theirs


def test_taken_for_median_only(monkeypatch):
    """The fast path runs for Median under k-anonymity, and with privacy models that have a
    compiled face (tests/mondrian/test_model_finish.py), and stays out of other requests."""
    calls = []
    real = median_finish.finish
    monkeypatch.setattr(median_finish, "finish", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.integers(0, 50, 300), "b": rng.integers(0, 9, 300),
                          "s": rng.choice(["x", "y", "z"], 300)})
    con = duckdb.connect()
    con.register("frame", frame)
    con.execute("CREATE TABLE t AS SELECT * FROM frame")
    sqlanon.anonymize(con, "t", qid=["a", "b"], k=5)
    assert len(calls) == 1
    sqlanon.anonymize(con, "t", qid=["a", "b"], k=5, privacy=[sqlanon.DistinctLDiversity("s", 2)],
                      output=sqlanon.Output(replace=True))
    assert len(calls) == 2
    sqlanon.anonymize(con, "t", qid=["a", "b"], k=5, hierarchies={"b": {"lo": list(range(5)), "hi": [5, 6, 7, 8]}},
                      output=sqlanon.Output(replace=True))
    sqlanon.anonymize(con, "t", qid=["a", "b"], k=5, target="s", output=sqlanon.Output(replace=True))
    assert len(calls) == 2


def test_warming_loads_the_signatures_a_real_finish_uses():
    """warm() loads the compiled loops with the argument types of a real batch: a finish after
    it loads or compiles nothing more (checked in a fresh interpreter, where nothing else ran)."""
    script = """
import numpy as np
from sqlanon.mondrian.compiled import median_finish as m
from sqlanon.model.domain import Domain
from sqlanon.model.qi import QI
from tests.support.finish import finish
m.warm()
warmed = {f.py_func.__name__: list(f.signatures) for f in (m._grow, m._extents)}
rng = np.random.default_rng(1)
codes = rng.integers(0, 40, (2, 120_000))  # enough rows for the two-thread path
domains = [Domain(QI(f"q{j}", "numeric", "INTEGER"), 40, "", np.arange(40.0) * (j + 1)) for j in range(2)]
for threads in (1, 2):
    finish(codes, np.array([20_000, 100_000]), domains, 5, True, threads)
after = {f.py_func.__name__: list(f.signatures) for f in (m._grow, m._extents)}
assert all(len(s) == 1 for s in warmed.values()), warmed
assert after == warmed, (warmed, after)
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=Path(__file__).resolve().parents[2],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr


def test_warming_starts_once_and_only_for_median_under_k_and_compiled_models(monkeypatch):
    monkeypatch.setattr(median_finish, "_warmed", False)
    assert median_finish.warm_in_background(InfoGain("s"), [KAnonymity(5)], True) is None
    tree = sqlanon.Hierarchy.from_dict({"*": {"low": ["0", "1"], "high": ["2"]}})
    no_face = sqlanon.TCloseness("s", 0.2, "hierarchical", tree)  # no compiled face: level by level
    assert median_finish.warm_in_background(Median(), [KAnonymity(5), no_face], True) is None
    assert median_finish.warm_in_background(Median(), [KAnonymity(5)], False) is None  # a hierarchy
    thread = median_finish.warm_in_background(Median(), [KAnonymity(5)], True)
    assert thread is not None
    thread.join(600)
    assert median_finish._warmed  # loaded without error
    assert median_finish.warm_in_background(Median(), [KAnonymity(5)], True) is None  # once per process


@given(st.integers(0, 40), st.integers(1, 6), st.integers(1, 9), st.integers(0, 2**32 - 1))
@settings(max_examples=60, deadline=None)
def test_interleaved_equals_stacking_the_columns(rows, d, block, seed):
    """The batch's codes filled block by block equal the columns stacked side by side."""
    rng = np.random.default_rng(seed)
    dtypes = [np.uint8, np.uint16, np.int32, np.int64]
    columns = [rng.integers(0, 200, rows).astype(dtypes[j % 4]) for j in range(d)]
    saved = builder._FILL_ROWS
    builder._FILL_ROWS = block  # blocks that end mid-array and past its end
    try:
        got = builder.interleaved(columns)
    finally:
        builder._FILL_ROWS = saved
    assert got.dtype == np.int32 and got.flags["C_CONTIGUOUS"]
    np.testing.assert_array_equal(got, np.stack(columns, axis=1).astype(np.int32).reshape(rows, d))
