"""The working table's codes: an integer QI whose values fill their range is coded by arithmetic
(:func:`sqlanon.mondrian.encode.dense_start`), every other QI through its code table, and both
give the same codes -- the rank of the value among the column's distinct values, NULL first."""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlanon
from sqlanon.model.domain import Domain, ordered_positions
from sqlanon.model.qi import QI
from sqlanon.mondrian import encode
from tests.support.db import rendered_statements


def _domain(values: list[int], data_type: str = "INTEGER", has_null: bool = False) -> Domain:
    qi = QI("x", "numeric", data_type, has_null=has_null)
    num = ordered_positions(np.array(sorted(values), dtype=np.float64), qi)
    return Domain(qi, len(values) + int(has_null), "t", num)


def test_dense_start_by_hand():
    assert encode.dense_start(_domain([3, 4, 5, 6])) == 3
    assert encode.dense_start(_domain([-2, -1, 0], has_null=True)) == -2  # NULL's position is not a value
    assert encode.dense_start(_domain([7])) == 7
    assert encode.dense_start(_domain([0, 1, 3])) is None  # a gap
    assert encode.dense_start(_domain([0, 10_000, 10_001])) is None
    assert encode.dense_start(_domain([2**60, 2**60 + 1], "BIGINT")) is None  # floats are not exact there
    assert encode.dense_start(_domain([], has_null=True)) is None  # only NULL
    dense_float = Domain(QI("x", "numeric", "DOUBLE"), 3, "t", np.array([1.0, 2.0, 3.0]))
    assert encode.dense_start(dense_float) is None  # 1.5 could come later: only integer types


def _column(kind: str, values: list[int], nulls: list[bool]) -> list[object]:
    base = {"dense": 0, "negative": -50, "gappy": 0}[kind]
    out = [base + (v * 3 if kind == "gappy" else v) for v in values]
    return [None if null else v for v, null in zip(out, nulls)]


FRAMES = st.integers(20, 120).flatmap(lambda n: st.tuples(
    st.just(n),
    st.lists(st.sampled_from(["dense", "negative", "gappy"]), min_size=3, max_size=3),
    st.lists(st.lists(st.integers(0, 12), min_size=n, max_size=n), min_size=3, max_size=3),
    st.lists(st.lists(st.booleans(), min_size=n, max_size=n), min_size=3, max_size=3),
))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frame=FRAMES, k=st.integers(2, 6), memory_rows=st.sampled_from([0, 10**6]))
def test_arithmetic_codes_give_the_release_the_lookups_give(frame, k, memory_rows):
    n, kinds, values, nulls = frame
    data = {f"c{j}": pd.array(_column(kinds[j], values[j], [x and j != 1 for x in nulls[j]]), dtype="Int64")
            for j in range(3)}
    data["big"] = pd.array([2**60 + v for v in values[0]], dtype="Int64")  # dense, but past 2^53: looked up
    data["id"] = np.arange(n)
    con = duckdb.connect()
    con.register("src", pd.DataFrame(data))
    con.execute("CREATE TABLE t AS SELECT * FROM src")
    qid = ["c0", "c1", "c2", "big"]

    def release(view: str) -> list[tuple]:
        r = sqlanon.anonymize(con, "t", qid=qid, k=k,
                              algorithm=sqlanon.Mondrian(strategy=sqlanon.Levels(memory_rows=memory_rows)),
                              output=sqlanon.Output(view=view))
        return con.execute(f'SELECT * EXCLUDE ("region") FROM "{r.rules}" ORDER BY ALL').fetchall()

    arithmetic = release("a")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(encode, "dense_start", lambda d: None)
        looked_up = release("b")
    assert arithmetic == looked_up


def test_dense_columns_skip_their_code_tables_in_the_encoding(monkeypatch):
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT i % 50 AS age, (i % 7) * 10 AS zip, i AS id FROM range(500) r(i)")
    statements = rendered_statements(monkeypatch)
    sqlanon.anonymize(con, "t", qid=["age", "zip"], k=5,
                      algorithm=sqlanon.Mondrian(strategy=sqlanon.Levels(memory_rows=0)),
                      output=sqlanon.Output(view="v"))
    work = [s for s in statements if "_work" in s.split(" AS ")[0]]
    assert work, statements[:5]
    assert "dom0" not in work[0] and "dom1" in work[0]  # age is 0..49 in full, zip has gaps
