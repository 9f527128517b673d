"""Integer QIs coded in this process on DuckDB (issue 52, the core): where the run's rows are
fetched for the in-memory finish anyway, DuckDB's integer QIs are fetched as values and ranked by
counting (:func:`sqlanon.mondrian.encode.ranked`), not by a ``DISTINCT`` code table per QI built
from the source and joined in the working view -- with the same codes, so the same release."""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlanon
from sqlanon.engine.duckdb import DuckDBEngine
from sqlanon.mondrian import encode
from tests.support.db import rendered_statements

DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


@settings(max_examples=200, deadline=None)
@given(dtype=st.sampled_from(DTYPES), data=st.data(), counted=st.sampled_from([1, 1 << 22]), first=st.integers(0, 1))
def test_ranked_is_numpys_unique(dtype, data, counted, first):
    info = np.iinfo(dtype)
    values = np.array(data.draw(st.lists(st.integers(int(info.min), int(info.max)), max_size=60)), dtype=dtype)
    narrow = np.array(data.draw(st.lists(st.integers(-40, 40).map(lambda v: max(int(info.min), v)), max_size=60)),
                      dtype=dtype)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(encode, "COUNTED_SPAN", counted)  # 1: only spans below twice the rows are counted
        for x in (values, narrow):
            distinct, inverse = encode.ranked(x, first)
            expected, where = np.unique(x, return_inverse=True)
            assert distinct.dtype == expected.dtype
            assert distinct.tolist() == expected.tolist() and inverse.tolist() == (where.reshape(-1) + first).tolist()


def test_ranked_counts_a_narrow_span_and_sorts_a_wide_one(monkeypatch):
    sorted_ = []
    real = np.unique
    monkeypatch.setattr(encode.np, "unique", lambda *a, **kw: sorted_.append(1) or real(*a, **kw))
    encode.ranked(np.array([5, 3, 5, 1_000_000], dtype=np.int32))  # a span of 1M: counted
    assert not sorted_
    encode.ranked(np.array([0, 2**40], dtype=np.int64))  # a span of 2^40 over two values: sorted
    assert sorted_


def _table(con, n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "dense": rng.integers(0, 30, n),
        "gappy": rng.integers(0, 40, n) * 7 - 100,
        "nulls": pd.array([None if v % 5 == 0 else int(v) for v in rng.integers(0, 60, n)], dtype="Int64"),
        "big": (2**60 + rng.integers(0, 50, n)).astype(np.int64),
        "tiny": rng.integers(0, 4, n).astype(np.int8),
        "money": rng.integers(0, 1000, n) / 8.0,  # a float: still a code table
        "payload": np.arange(n),
    })
    con.register("frame", frame)
    con.execute("CREATE TABLE t AS SELECT * FROM frame")
    con.unregister("frame")


QID = ["dense", "gappy", "nulls", "big", "tiny", "money"]


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(30, 400), seed=st.integers(0, 10**6), k=st.integers(2, 9))
def test_counted_codes_give_the_release_the_code_tables_give(n, seed, k):
    con = duckdb.connect()
    _table(con, n, seed)

    def release(view: str) -> list[tuple]:
        r = sqlanon.anonymize(con, "t", qid=QID, k=k, output=sqlanon.Output(view=view))
        assert r.verification.ok
        return con.execute(f'SELECT * EXCLUDE ("region") FROM "{r.rules}" ORDER BY ALL').fetchall()

    counted = release("a")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(DuckDBEngine, "codes_here", lambda self, data_type: False)
        tables = release("b")
    assert counted == tables


def test_integer_qis_build_no_code_table_from_the_source(monkeypatch):
    con = duckdb.connect()
    _table(con, 500, 1)
    statements = rendered_statements(monkeypatch)
    release = sqlanon.anonymize(con, "t", qid=QID, k=10, output=sqlanon.Output(view="v"))
    assert release.verification.ok
    distinct = [s for s in statements if "SELECT DISTINCT" in s]
    # one code table from the source: the float's; the five integer QIs are ranked here
    assert len(distinct) == 1 and '"money"' in distinct[0], distinct
    # the working view is fetched once (no batch table joined to it for a second read)
    assert not [s for s in statements if "_batches" in s], statements
