"""PostgreSQL's in-memory release prints the values it holds (issue 52, "PostgreSQL at its floor").

When a run's rows are fetched once and coded in this process (PostgreSQL, a table within
``memory_rows``: :func:`sqlanon.mondrian.encode.codes_here`), the QIs' distinct values are in
this process already (:attr:`sqlanon.model.domain.Domain.values`): the rules relation prints
its bounds from them (:func:`sqlanon.publish.rules.values_here`) instead of joining every bound
of every region with a code table, and no code table is uploaded at all unless a QI publishes
``"domain"`` bounds (whose check counts rows through it). At 1M Agrawal rows the rules
statement's 36 lookups into code tables of up to ~0.6M rows took 1.5-3.3 s.

Checked here: the rules are those DuckDB publishes (which codes in the database), value by value
and type by type, for integers past 2^53, 4- and 8-byte floats with -0.0, and NULLs; and the
statements of such a run upload no code table and join none.
"""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlglot import exp

import sqlanon
from sqlanon.engine import engine_for
from sqlanon.engine import sqlgen as g
from tests.e2e.test_postgres_fast_path import Logged
from tests.support import load_frame, request_options

TYPES = {"i32": "INTEGER", "i64": "BIGINT", "f32": "REAL", "f64": "DOUBLE"}
QID = list(TYPES)


def table(seed: int, n: int, nulls: bool) -> pd.DataFrame:
    """``n`` rows: an INTEGER, a BIGINT past 2^53 (neighbours a float cannot tell apart), a
    REAL and a DOUBLE holding -0.0 and 0.0, a class label, and a note; NULLs in some QIs."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "i32": rng.integers(-50, 50, n).astype(np.int64),
        "i64": (2**60 + rng.integers(0, 40, n)).astype(np.int64),
        "f32": rng.choice(np.array([-1.5, -0.0, 0.0, 0.1, 2.25, 3e7], dtype=np.float32), n).astype(np.float64),
        "f64": rng.choice(np.array([-0.0, 0.0, 1 / 3, 1e300, -7.0]), n) + rng.integers(0, 3, n),
        "label": rng.choice(["a", "b", "c"], n),
        "note": rng.choice(["x", "y"], n),
    })
    frame = frame.astype({"i32": object, "i64": object, "f32": object, "f64": object})
    if nulls:
        for column in ("i32", "i64", "f64"):
            frame.loc[rng.random(n) < 0.1, column] = None
    return frame


def rules(con, release) -> tuple[list[tuple[str, str]], list[list]]:
    """The rules relation's column types (house spelling) and its rows by region, values exact
    (integers as ints, so BIGINTs past 2^53 stay apart; NULL as None)."""
    engine = engine_for(con)
    query = exp.select("*").from_(g.table(release.rules))
    types = engine.describe(query)
    frame = engine.fetch_frame(query)
    frame = frame.astype(object).where(frame.notna(), None)
    rows = [[int(v) if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
             else float(v) if isinstance(v, (float, np.floating)) else v for v in row]
            for row in frame.values.tolist()]
    return types, sorted(rows, key=lambda r: r[0])  # by region


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**16), n=st.integers(20, 160), k=st.integers(2, 9), nulls=st.booleans(),
       target=st.sampled_from([None, "label"]), keyed=st.booleans())
def test_held_values_print_the_rules_duckdb_publishes(pg_con, seed, n, k, nulls, target, keyed):
    frame = table(seed, n, nulls)
    if keyed:
        frame.insert(0, "id", np.arange(n))
    pg_con.execute("DROP TABLE IF EXISTS t CASCADE")
    pg_con.commit()
    duck = duckdb.connect()
    try:
        out = []
        for con in (duck, pg_con):
            load_frame(con, "t", frame, types=TYPES, primary_key="id" if keyed else None)
            release = sqlanon.anonymize(con, "t", qid=QID, k=k, **request_options(view="t_anon", replace=True),
                                        **({"target": target} if target else {}))
            out.append(rules(con, release))
        assert out[0] == out[1]
        assert sqlanon.verify(pg_con, "t_anon", qid=QID, k=k).ok
    finally:
        duck.close()
        pg_con.rollback()
        pg_con.execute("DROP VIEW IF EXISTS t_anon CASCADE")
        pg_con.commit()


def code_tables(log: list[str]) -> list[str]:
    """The statements that create, fill or join a code table of an ordered QI (``..._dom<i>``)."""
    return [s for s in log if "_dom" in s]


def test_a_held_run_uploads_and_joins_no_code_table(pg_con):
    load_frame(pg_con, "t", table(3, 300, nulls=True), types=TYPES)
    engine = Logged(pg_con)
    release = sqlanon.anonymize(engine, "t", qid=QID, k=5, output=sqlanon.Output(view="t_anon"))
    assert release.verification.ok and release.materialized
    assert code_tables(engine.log) == []  # before issue 52: four uploads and 16 lookups in the rules


@pytest.mark.parametrize("published", ["data", "domain"])
def test_domain_bounds_keep_their_code_tables(pg_con, published):
    """A QI published ``"domain"``: its code table is still uploaded (the check of its smallest
    published value counts rows through it), the others' are not; rules as DuckDB's."""
    frame = table(4, 240, nulls=True)
    duck = duckdb.connect()
    try:
        out = []
        for con in (duck, pg_con):
            load_frame(con, "t", frame, types=TYPES)
            engine = Logged(con)
            release = sqlanon.anonymize(engine, "t", qid=QID, k=6, published={"i32": published},
                                        output=sqlanon.Output(view="t_anon"))
            assert release.verification.ok
            out.append(rules(con, release))
        assert out[0] == out[1]
        uploaded = {s.split("_dom")[1][0] for s in code_tables(engine.log) if s.lstrip().upper().startswith("CREATE")}
        assert uploaded == ({"0"} if published == "domain" else set())
    finally:
        duck.close()
