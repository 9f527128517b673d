"""The batches of a distributed engine's in-memory finish (issue 51): as many as a multiple of the
executor cores, each within ``memory_rows``, filled alike, so every core finishes the same share
of the rows (:func:`sqlanon.mondrian.builder.balanced_batches`); and the batching changes no
release.
"""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

import sqlanon
from sqlanon.mondrian import builder
from sqlanon.mondrian.builder import _batches, balanced_batches
from tests.support import load_frame
from tests.support.mondrian import rules_frame


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 5000), min_size=1, max_size=400), st.integers(5000, 40_000), st.integers(1, 8))
def test_balanced_batches_fit_the_budget_and_share_the_rows_alike(sizes, limit, workers):
    n = np.array(sizes, dtype=np.int64)
    b = balanced_batches(n, limit, workers)
    groups = int(b.max()) + 1
    assert sorted(set(b.tolist())) == list(range(groups))  # numbered without gaps
    rows = np.bincount(b, weights=n, minlength=groups)
    assert rows.max() <= limit or groups == len(n)  # within the budget (a batch per partition at worst)
    assert groups >= -(-int(n.sum()) // limit)
    if groups < len(n):
        assert groups % workers == 0  # every core gets as many batches
        assert rows.max() - rows.min() <= n.max()  # alike, within one partition


def test_balanced_batches_even_out_the_greedy_batches():
    """Many small partitions, two cores: the greedy batches leave one core most of the rows;
    the balanced ones give each core half, within one partition."""
    rng = np.random.default_rng(0)
    n = rng.integers(100, 260, 60_000).astype(np.int64)  # ~10.8M rows
    limit, workers = 2_000_000, 2

    def busiest_core(batch_of: np.ndarray) -> float:
        rows = np.bincount(batch_of, weights=n)
        load = np.zeros(workers)
        for r in rows:  # Spark runs tasks in order, each on the first free core
            load[load.argmin()] += r
        return float(load.max())

    greedy, balanced = busiest_core(_batches(n, limit)), busiest_core(balanced_batches(n, limit, workers))
    assert balanced <= n.sum() / workers + n.max()
    assert balanced < greedy


def test_the_batching_changes_no_release(monkeypatch):
    """A release finished in balanced batches (as on Spark's executors; here in this process,
    three batches at a time) has the rules of the greedy batches."""
    rng = np.random.default_rng(2)
    con = duckdb.connect()
    load_frame(con, "t", pd.DataFrame({"a": rng.integers(0, 300, 4000), "b": rng.integers(0, 50, 4000)}))
    request = dict(qid=["a", "b"], k=4, algorithm=sqlanon.Mondrian(strategy=sqlanon.Sample(rows=500, memory_rows=400)))
    greedy = sqlanon.anonymize(con, "t", **request)
    monkeypatch.setattr(builder, "_batches", lambda n, limit: balanced_batches(n, limit, 3))
    balanced = sqlanon.anonymize(con, "t", **request, output=sqlanon.Output(view="t_balanced"))
    assert balanced.verification.ok
    assert rules_frame(con, greedy).equals(rules_frame(con, balanced))
