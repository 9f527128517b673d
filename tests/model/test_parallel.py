"""The in-memory finish on several threads gives the partition it gives on one.

The thread count is the connection's DuckDB ``threads`` setting; the pieces that run in
parallel (each layer's frequency groups, the search over runs of pairs, the running sums of each
column, the gathers of each column) must each compute what they compute alone.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sqlanon
from sqlanon.model.parallel import run_all
from sqlanon.mondrian.split import _split_runs

ROWS = 120_000  # enough candidate cuts for the search to be cut into runs (65,536 each)


@pytest.fixture(scope="module")
def wide(tmp_path_factory):
    """A table with wide and narrow integer QIs, a hierarchy-free mix, a float and an integer
    target and a label."""
    import duckdb

    rng = np.random.default_rng(7)
    path = tmp_path_factory.mktemp("parallel") / "wide.duckdb"
    con = duckdb.connect(str(path))
    salary = rng.integers(20_000, 150_000, ROWS)
    loan = rng.integers(0, 500_000, ROWS)
    frame = {
        "salary": salary, "loan": loan, "age": rng.integers(20, 81, ROWS), "car": rng.integers(1, 21, ROWS),
        "target": 0.67 * salary - 0.2 * loan + rng.normal(0, 100, ROWS),
        "whole": salary // 7 - loan // 11,
        "label": np.where(salary + rng.normal(0, 2e4, ROWS) > 80_000, "hi", "lo"),
    }
    import pandas as pd

    con.register("frame", pd.DataFrame(frame))
    con.execute("CREATE TABLE wide AS SELECT * FROM frame")
    con.unregister("frame")
    con.close()
    return path


def _rules(path, threads: int, **kw) -> list[tuple]:
    import duckdb

    con = duckdb.connect(str(path))
    try:
        con.execute(f"SET threads = {threads}")
        release = sqlanon.anonymize(con, "wide", qid=["salary", "loan", "age", "car"], k=25,
                                    output=sqlanon.Output(view="out", replace=True), **kw)
        return con.execute(f'SELECT * FROM "{release.rules}" ORDER BY ALL').fetchall()
    finally:
        con.close()


@pytest.mark.parametrize("kw", [
    {},
    {"target": "target"},
    {"target": "whole"},
    {"target": "label"},
    {"target": "target", "privacy": [sqlanon.VarianceDiversity("whole", 1e6)]},
], ids=["median", "regression-float", "regression-int", "infogain", "regression+variance"])
def test_threads_do_not_change_the_partition(wide, kw):
    one = _rules(wide, 1, **kw)
    assert len(one) > 1000
    assert _rules(wide, 4, **kw) == one


@given(st.lists(st.integers(1, 40), min_size=1, max_size=60), st.integers(1, 8), st.integers(1, 50))
@settings(max_examples=200, deadline=None)
def test_split_runs_never_cuts_a_run(lengths, pieces, least):
    part = np.repeat(np.arange(len(lengths)), lengths)
    cand = np.arange(len(part))[::2]  # some groups are not candidates
    runs = _split_runs(cand, part, pieces, least=least)
    assert np.array_equal(np.concatenate(runs), cand)
    assert len(runs) <= max(1, pieces)
    for a, b in zip(runs, runs[1:]):
        assert part[a[-1]] != part[b[0]]


def test_run_all_keeps_order():
    assert run_all(lambda x: x * x, range(50), 4) == [x * x for x in range(50)]
    assert run_all(lambda x: x, [], 4) == []


def test_run_all_starts_the_costliest_first_and_keeps_order():
    """With ``cost`` the items start largest first (ties in their order), and the results are
    still in the items' order."""
    items = [3, 9, 1, 7, 7, 2]
    for threads in (1, 2):
        started: list[int] = []
        lock = threading.Lock()
        both = threading.Barrier(threads)

        def fn(x: int) -> int:
            with lock:
                started.append(x)
                first = len(started) <= threads
            if first:  # the first ones wait for each other: none takes another item before
                both.wait(timeout=30)
            return x * x

        assert run_all(fn, items, threads, cost=lambda x: x) == [x * x for x in items]
        assert sorted(started) == sorted(items)
        if threads == 2:
            assert sorted(started[:2]) == [7, 9]  # the two costliest first



def test_small_pages_switches_numpy_off_and_back_once():
    """Inside small_pages numpy asks for no huge pages; the first setting is back after the last
    of nested or overlapping blocks, whatever it was."""
    from numpy._core import multiarray

    from sqlanon.model.parallel import small_pages

    before = multiarray._get_madvise_hugepage()
    try:
        for start in (True, False):
            multiarray._set_madvise_hugepage(start)
            outer = small_pages()
            outer.__enter__()
            assert multiarray._get_madvise_hugepage() is False
            with small_pages():  # a second run in another thread, say
                assert multiarray._get_madvise_hugepage() is False
            assert multiarray._get_madvise_hugepage() is False  # the first block still runs
            outer.__exit__(None, None, None)
            assert multiarray._get_madvise_hugepage() is start
            with pytest.raises(ValueError):
                with small_pages():
                    raise ValueError("restored after an error too")
            assert multiarray._get_madvise_hugepage() is start
    finally:
        multiarray._set_madvise_hugepage(before)
