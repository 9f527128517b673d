"""The ways the in-memory finish computes frequency groups — counting into one bin per
(pair, code), sorting by (partition, code), or reading the rows in the order of attribute lists
kept through the splits — give the same groups and the same partition."""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sqlanon
from sqlanon.mondrian import builder as partition
from tests.support import request_options


@st.composite
def tables(draw):
    n = draw(st.integers(30, 200))  # k=3: 4-6 levels of splits; the paths are forced, not chosen by size
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    width = draw(st.sampled_from([3, 20, 1000]))
    return pd.DataFrame({
        "a": rng.integers(0, width, n), "b": rng.integers(0, 7, n), "c": rng.integers(-50, 50, n),
        "whole": rng.integers(-10**6, 10**6, n),
        "label": rng.choice(["x", "y", "z"], n),
        "frac": np.where(rng.random(n) < 0.1, np.nan, rng.normal(0, 1e3, n)),
    })


def _rules(frame: pd.DataFrame, bins_per_row: float, lists: bool = True, **kw) -> list[tuple]:
    saved = partition._BINS_PER_ROW, partition._LISTS
    partition._BINS_PER_ROW, partition._LISTS = bins_per_row, lists
    con = duckdb.connect()
    try:
        con.register("frame", frame)
        con.execute("CREATE TABLE t AS SELECT * FROM frame")
        release = sqlanon.anonymize(con, "t", qid=["a", "b", "c"], k=3, **request_options(memory_rows=10**9, **kw))
        return con.execute(f'SELECT * FROM "{release.rules}" ORDER BY ALL').fetchall()
    finally:
        partition._BINS_PER_ROW, partition._LISTS = saved
        con.close()


@pytest.mark.parametrize("kw", [
    {"target": "whole"},
    {"target": "label"},
    {"target": ["label", "whole"]},
    {"target": "whole", "constraints": [sqlanon.EntropyLDiversity("label", 1.5)]},
    {"target": "label", "constraints": [sqlanon.VarianceDiversity("whole", 1e9)]},
], ids=["regression", "infogain", "targets", "regression+ldiv", "infogain+var"])
@given(frame=tables())
@settings(max_examples=8, deadline=None)
def test_counting_and_sorting_give_the_same_partition(kw, frame):
    """Integer targets and labels: the groups are exactly equal, so the partitions are."""
    assert _rules(frame, 1e9, **kw) == _rules(frame, 0, **kw)


@pytest.mark.parametrize("kw", [
    {"target": "whole"},
    {"target": "label"},
    {"target": ["label", "frac"], "hierarchies": {"b": {"lo": [0, 1, 2], "hi": [3, 4, 5, 6]}}},
    {"target": "label", "constraints": [sqlanon.RecursiveCLDiversity("whole", 3, 2)]},
], ids=["regression", "infogain", "targets+hierarchy", "infogain+recursive"])
@given(frame=tables())
@settings(max_examples=4, deadline=None)
def test_attribute_lists_give_the_same_partition(kw, frame):
    """Sorting the rows of each pair at every level, or carrying one sorted list per QI through
    the splits: the same groups, so the same rules (the sorting path alone, and with counting)."""
    assert _rules(frame, 0, lists=True, **kw) == _rules(frame, 0, lists=False, **kw)
    assert _rules(frame, 2, lists=True, **kw) == _rules(frame, 2, lists=False, **kw)


@given(frame=tables(), seed=st.integers(0, 1000))
@settings(max_examples=40, deadline=None)
def test_counted_groups_equal_sorted_groups(frame, seed):
    """The groups of one layer both ways: same pairs, codes, counts and integer sums; float
    sums equal up to the order of addition."""
    from sqlanon.model.stats import StatColumn

    rng = np.random.default_rng(seed)
    M = len(frame)
    codes = np.vstack([frame[c].to_numpy() - frame[c].min() for c in ("a", "b", "c")]).astype(np.int32)
    S = int(rng.integers(1, 6))
    seg_of_row = np.sort(rng.integers(0, S, M))
    S = int(seg_of_row.max()) + 1
    label = pd.Categorical(frame["label"]).codes.astype(np.int64)
    frac = frame["frac"].to_numpy()
    whole = frame["whole"].to_numpy().astype(np.int64)
    columns = [StatColumn("label", "class", size=3), StatColumn("whole", "numeric", exact=True),
               StatColumn("frac", "numeric", nulls=True)]
    p = partition.Partitioner((), [], sqlanon.InfoGain("label"), stat_columns=columns)
    batch = partition.Batch(codes, [label], [whole, frac])
    idx = np.sort(rng.choice(S, size=int(rng.integers(1, S + 1)), replace=False))
    attr = rng.integers(0, 3, len(idx))
    starts = np.searchsorted(seg_of_row, np.arange(S))
    cmin = np.minimum.reduceat(codes, starts, axis=1).T.astype(np.int64)
    cmax = np.maximum.reduceat(codes, starts, axis=1).T.astype(np.int64)
    lo, hi = cmin[idx, attr], cmax[idx, attr]
    saved = partition._BINS_PER_ROW
    try:
        partition._BINS_PER_ROW = 0  # never count
        sorted_ = p._layer(batch, seg_of_row, S, idx, attr, M, lo, hi)
        partition._BINS_PER_ROW = 10**12  # always count
        counted = p._layer(batch, seg_of_row, S, idx, attr, M, lo, hi)
    finally:
        partition._BINS_PER_ROW = saved
    assert sorted_[1] is not None and counted[1] is None
    assert np.array_equal(sorted_[0], counted[0])
    a, b = sorted_[2], counted[2]
    assert np.array_equal(a.part, b.part) and np.array_equal(a.code, b.code)
    assert np.array_equal(a.stats.n, b.stats.n)
    assert np.array_equal(a.stats.counts[0], b.stats.counts[0])
    assert np.array_equal(a.stats.moments[0], b.stats.moments[0])
    assert np.allclose(a.stats.moments[1], b.stats.moments[1], rtol=1e-9, atol=1e-6)
