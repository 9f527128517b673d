"""On DuckDB ``explain`` reads each upload of the run it records as rows the connection holds
(:meth:`sqlanon.engine.base.Engine.hold`, a registered frame), not as its values inlined into
every later read: inlined, each level's statistics carried the splits of all the levels above
it, and a deep tree's explain took minutes (Adult, k=5, SQL levels only: 248 s; now 39 s)."""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest
import sqlglot
from sqlglot import exp

import sqlanon
from tests.support import load_frame
from tests.support.db import rendered_statements


@pytest.fixture
def con():
    rng = np.random.default_rng(11)
    n = 4000
    frame = pd.DataFrame({"age": rng.integers(0, 90, n), "zip": rng.integers(0, 400, n), "y": rng.choice(["a", "b"], n)})
    con = duckdb.connect()
    load_frame(con, "people", frame)
    yield con
    con.close()


def widest_values(statements: list[str]) -> int:
    """The most rows of a ``VALUES`` list in any of ``statements``."""
    return max((len(v.expressions) for s in statements if "VALUES" in s.upper()
                for v in sqlglot.parse_one(s, read="duckdb").find_all(exp.Values)), default=0)


def test_deep_explain_reads_uploads_held_not_inlined(con, monkeypatch):
    request = sqlanon.Request("people", ["age", "zip"], 5,
                              algorithm=sqlanon.Mondrian(strategy=sqlanon.Levels(memory_rows=0)))
    statements = rendered_statements(monkeypatch)
    listing = request.explain(con)
    ran = [s for s in statements if "__held" in s]
    explained = widest_values(statements)
    # the registered frames are gone, and nothing was written
    assert con.execute("SELECT count(*) FROM duckdb_views() WHERE NOT internal").fetchone()[0] == 0
    assert [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()] == ["people"]
    statements.clear()
    release = request.run(con)
    assert "Stopped" not in listing and release.outcome.writes > 5  # a deep tree, listed to its end
    # no read of explain lists more values than the run's own statements: before, every level's
    # splits were inlined (hundreds of rows)
    assert explained <= widest_values(statements)
    assert ran, "no read of a held upload"


def test_an_engine_that_cannot_hold_stops_where_it_needs_data(monkeypatch):
    """An engine that cannot hold an upload (PostgreSQL, Spark: :meth:`Engine.hold` is False)
    reads an upload of more than ``INLINE_ROWS`` rows nowhere: explain stops there and says so.
    Before, the catalog lookup of the view's columns ran the read anyway and failed with the
    engine's "table does not exist" (Adult, default settings)."""
    from sqlanon.datasets import load_adult
    from sqlanon.engine.duckdb import DuckDBEngine

    monkeypatch.setattr(DuckDBEngine, "hold", lambda self, name, columns: False)
    con = duckdb.connect()
    hierarchies = load_adult(con, "adult")  # 30,162 rows: the run's leaves are more than INLINE_ROWS
    listing = sqlanon.Request("adult", ["age", "education", "sex"], 40,
                              hierarchies={"education": hierarchies["education"]}).explain(con)
    assert "Stopped: the statements from here on need an upload of more than 20,000 rows" in listing
    assert [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()] == ["adult"]
