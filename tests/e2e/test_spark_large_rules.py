"""The rules of a Spark release on the large-table path are written from the uploaded leaves
alone when its QIs are integers (issue 51: a release in a few passes): the values of every code
came back with the domains' positions (:func:`sqlanon.mondrian.encode.held_integers`), so the
rules' statement joins no code table -- on Spark each such lookup was a broadcast job of its own
(16 jobs at 1M Agrawal rows) -- and still prints DuckDB's rules."""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest
from sqlglot import exp

import sqlanon
from sqlanon.engine import engine_for
from sqlanon.engine import sqlgen as g
from tests.support.db import rendered_statements

pytestmark = pytest.mark.spark

QID = ["age", "zip", "income"]


def table(n: int, seed: int = 5) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"id": np.arange(n, dtype=np.int64), "age": rng.integers(18, 90, n).astype(np.int32),
                         "zip": rng.integers(0, 1000, n).astype(np.int64),
                         "income": rng.integers(-50_000, 100_000, n).astype(np.int64)})


def rules(con, name: str) -> list[tuple]:
    frame = engine_for(con).fetch_frame(exp.select("*").from_(g.table(name)).order_by(g.col("region")))
    frame = frame.astype(object).where(frame.notna(), None)
    return [tuple(float(v) if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
                  else v for v in row) for row in frame.values.tolist()]


def test_large_path_rules_look_no_code_up_and_equal_duckdbs(spark, monkeypatch):
    frame = table(2400)
    engine_for(spark).create_from_frame("t", frame, replace=True)
    algorithm = sqlanon.Mondrian(strategy=sqlanon.Sample(rows=300, memory_rows=300))
    statements = rendered_statements(monkeypatch)
    made = sqlanon.anonymize(spark, "t", qid=QID, k=10, output=sqlanon.Output(view="t_anon", key="id"),
                             algorithm=algorithm)
    assert made.outcome.strategy == "sample" and made.verification.ok
    created = [s for s in statements if s.startswith("CREATE TABLE") and "t_anon_rules" in s.split(" AS ")[0]]
    assert len(created) == 1
    assert "_dom" not in created[0] and " JOIN " not in created[0].upper()

    con = duckdb.connect()
    con.register("frame", frame)
    con.execute("CREATE TABLE t AS SELECT * FROM frame")
    sqlanon.anonymize(con, "t", qid=QID, k=10, output=sqlanon.Output(view="t_anon", key="id"), algorithm=algorithm)
    assert rules(spark, "t_anon_rules") == rules(con, "t_anon_rules")
