"""A single-dimensional release on Spark SQL equals DuckDB's (the compression's FILTER counts,
the placing join and the per-QID checks run there too)."""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest

import sqlanon
from sqlanon.engine import engine_for

pytestmark = pytest.mark.spark

TREE = {"*": {"a": ["a1", "a2", "a3"], "b": ["b1", "b2"]}}


def _rows(con, name: str) -> list[tuple]:
    frame = engine_for(con).fetch_frame(_select(name))
    frame = frame.astype(object).where(frame.notna(), None)
    return sorted((tuple(float(v) if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
                         else v for v in row) for row in frame.values.tolist()), key=repr)


def _select(name: str):
    from sqlglot import exp

    from sqlanon.engine import sqlgen as g
    return exp.select("*").from_(g.table(name))


def test_spark_equals_duckdb(spark):
    rng = np.random.default_rng(3)
    n = 300
    frame = pd.DataFrame({"id": np.arange(n, dtype=np.int64), "num": rng.integers(0, 30, n).astype(np.int64),
                          "cat": rng.choice(["a1", "a2", "a3", "b1", "b2"], n), "txt": rng.choice(["p", "q", "r"], n),
                          "y": rng.choice(["no", "yes"], n)})
    out = []
    for con in (duckdb.connect(), spark):
        engine_for(con).create_from_frame("t", frame, replace=True)
        release = sqlanon.anonymize(con, "t", target="y", hierarchies={"cat": TREE},
                                    privacy=[sqlanon.KAnonymity(8, qid=["num", "cat"]),
                                             sqlanon.KAnonymity(15, qid=["cat", "txt"])],
                                    algorithm=sqlanon.TopDown(), output=sqlanon.Output(view="t_tdr", replace=True))
        assert release.verification.ok and all(q.ok for q in release.verification.qids)
        out.append((release.outcome.refinements, _rows(con, release.rules), _rows(con, release.view)))
    assert out[0] == out[1]
