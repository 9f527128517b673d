"""The two-engine fixtures themselves (``con`` on both engines, ``pg_con``, ``load_frame``); no sqlanon here."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd
import pytest

from tests.support import load_frame

pytestmark = pytest.mark.engines("duckdb", "postgres")

# Rows deliberately not in id order: an unordered SELECT must still return them as given.
FRAME = pd.DataFrame({
    "id": pd.Series([3, 1, 2, 0], dtype="int64"),
    "age": pd.Series([41, None, 7, 90], dtype="Int64"),
    "score": [1.5, np.nan, -0.25, 1e300],
    "name": pd.Series(["Zoë", None, "O'Brien \"x\"", ""], dtype="str"),
    "flag": [True, None, False, True],
    "born": [dt.date(1980, 2, 29), None, dt.date(2024, 1, 1), dt.date(1, 1, 1)],
    "seen": pd.to_datetime(["2024-05-01 12:30:00", None, "1999-12-31 23:59:59.5", "2000-01-01 00:00:00"],
                           format="ISO8601"),
})
EXPECTED = [  # ORDER BY id
    (0, 90, 1e300, "", True, dt.date(1, 1, 1), dt.datetime(2000, 1, 1)),
    (1, None, None, None, None, None, None),
    (2, 7, -0.25, "O'Brien \"x\"", False, dt.date(2024, 1, 1), dt.datetime(1999, 12, 31, 23, 59, 59, 500000)),
    (3, 41, 1.5, "Zoë", True, dt.date(1980, 2, 29), dt.datetime(2024, 5, 1, 12, 30)),
]
# information_schema.columns.data_type, DuckDB's spelling -> PostgreSQL's
PG_SPELLING = {"BIGINT": "bigint", "DOUBLE": "double precision", "VARCHAR": "text", "BOOLEAN": "boolean",
               "DATE": "date", "TIMESTAMP": "timestamp without time zone"}
TYPES = ["BIGINT", "BIGINT", "DOUBLE", "VARCHAR", "BOOLEAN", "DATE", "TIMESTAMP"]


def test_load_frame_round_trip(con, engine_name):
    load_frame(con, "people", FRAME, primary_key="id")
    columns = ", ".join(FRAME.columns)
    assert con.execute(f"SELECT {columns} FROM people ORDER BY id").fetchall() == EXPECTED
    assert [r[0] for r in con.execute("SELECT id FROM people").fetchall()] == [3, 1, 2, 0]
    types = con.execute(
        "SELECT data_type FROM information_schema.columns WHERE table_name = 'people' "
        "AND table_schema = current_schema() ORDER BY ordinal_position").fetchall()
    want = TYPES if engine_name == "duckdb" else [PG_SPELLING[t] for t in TYPES]
    assert [r[0] for r in types] == want


def test_primary_key_declared(con, engine_name):
    frame = pd.DataFrame({"a": [1, 1], "b": ["x", "y"], "v": [0.5, 0.5]})
    load_frame(con, "t", frame, primary_key=["a", "b"])
    with pytest.raises(Exception, match="(?i)duplicate|constraint|unique"):
        con.execute("INSERT INTO t VALUES (1, 'x', 2.0)")
    if engine_name == "postgres":
        con.rollback()
    assert con.execute("SELECT count(*) FROM t").fetchall() == [(2,)]


_SCHEMAS: list[str] = []  # the schemas of earlier rounds of the test below


# One worker runs both rounds (pytest-xdist, --dist loadgroup): the list is this process's.
@pytest.mark.xdist_group("pg_schema_rounds")
@pytest.mark.parametrize("round_", [1, 2])
def test_postgres_schema_per_test(pg_con, round_):
    """Each round (any order) sees no table of the other and finds the other's schema dropped."""
    schema, exists = pg_con.execute("SELECT current_schema(), to_regclass('probe') IS NOT NULL").fetchone()
    assert schema.startswith("t_") and not exists
    gone = pg_con.execute("SELECT count(*) FROM pg_namespace WHERE nspname = ANY(%s)", [_SCHEMAS]).fetchone()
    assert gone == (0,)
    _SCHEMAS.append(schema)
    load_frame(pg_con, "probe", pd.DataFrame({"x": [round_]}))  # committed: visible outside this test
