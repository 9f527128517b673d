"""PostgreSQL's binary transfer (``COPY ... (FORMAT binary)`` both ways) and the QIs it codes in
this process: values arrive and leave exactly, and a run that codes its QIs from fetched values
publishes the rules DuckDB and PostgreSQL's SQL code tables publish."""

from __future__ import annotations

import math

import duckdb
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlanon.engine import engine_for
from sqlanon.mondrian import encode
from tests.support import quote

pytestmark = pytest.mark.engines("postgres")

#: (PostgreSQL type, DuckDB type, values) of every fixed-width type the binary path reads.
COLUMNS = {
    "s": ("smallint", "SMALLINT", st.integers(-2**15, 2**15 - 1)),
    "i": ("integer", "INTEGER", st.integers(-2**31, 2**31 - 1)),
    "b": ("bigint", "BIGINT", st.integers(-2**63, 2**63 - 1)),
    "r": ("real", "REAL", st.floats(width=32, allow_nan=True, allow_infinity=True)),
    "d": ("double precision", "DOUBLE", st.floats(allow_nan=True, allow_infinity=True)),
    "f": ("boolean", "BOOLEAN", st.booleans()),
}
ROWS = st.integers(0, 40).flatmap(lambda n: st.fixed_dictionaries(
    {c: st.lists(st.one_of(st.none(), values), min_size=n, max_size=n) for c, (_, _, values) in COLUMNS.items()}))


def _same(got, want) -> bool:
    """One fetched value against the driver's: NULL is None (NaN in a float column), floats bit for bit."""
    if want is None:
        return got is None or (isinstance(got, float) and math.isnan(got))
    if isinstance(want, float):
        return isinstance(got, float) and (math.isnan(got) and math.isnan(want) or
                                           (got == want and math.copysign(1, got) == math.copysign(1, want)))
    return got == want and type(got) is type(want)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=ROWS)
def test_binary_fetch_gives_every_value_and_null(pg_con, data):
    """Integers, floats (NaN, infinities, -0.0, REAL) and booleans with NULLs anywhere: the fetched
    arrays hold what the driver reads row by row in binary (NULL: NaN in floats, None elsewhere;
    a REAL as stored, as DuckDB gives it). The CSV path this replaced raised on a DOUBLE holding
    NaN, and read a REAL through its rounded text."""
    pg_con.execute("DROP TABLE IF EXISTS bin")
    pg_con.execute("CREATE TABLE bin (" + ", ".join(f"{c} {pg}" for c, (pg, _, _) in COLUMNS.items()) + ")")
    n = len(data["s"])
    with pg_con.cursor() as cur:
        cur.executemany("INSERT INTO bin VALUES (" + ", ".join(["%s"] * len(COLUMNS)) + ")",
                        [tuple(data[c][r] for c in COLUMNS) for r in range(n)])
    with pg_con.cursor(binary=True) as cur:  # binary: a REAL as stored (its text is rounded to 6-9 digits)
        want = cur.execute("SELECT * FROM bin").fetchall()
    got = engine_for(pg_con).fetch("SELECT * FROM bin")
    assert list(got) == list(COLUMNS)
    for j, c in enumerate(COLUMNS):
        assert len(got[c]) == n
        values = [None if v is None else v.item() if isinstance(v, np.generic) else v for v in got[c].tolist()]
        assert all(_same(g, w[j]) for g, w in zip(values, want)), c
    pg_con.rollback()


UPLOADS = st.integers(1, 40).flatmap(lambda n: st.fixed_dictionaries({
    "i16": st.lists(st.integers(-2**15, 2**15 - 1), min_size=n, max_size=n).map(lambda v: np.array(v, np.int16)),
    "i64": st.lists(st.integers(-2**63, 2**63 - 1), min_size=n, max_size=n).map(lambda v: np.array(v, np.int64)),
    "f32": st.lists(st.floats(width=32, allow_nan=False), min_size=n, max_size=n).map(lambda v: np.array(v, np.float32)),
    "f64": st.lists(st.floats(allow_nan=False), min_size=n, max_size=n).map(lambda v: np.array(v, np.float64)),
    "ok": st.lists(st.booleans(), min_size=n, max_size=n).map(lambda v: np.array(v, bool)),
}))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(columns=UPLOADS)
def test_binary_upload_stores_every_value_exactly(pg_con, columns):
    """Numeric and boolean arrays (extremes, -0.0, infinities) upload bit for bit, in the arrays'
    types or in the types asked for (a float32 array into REAL, an int16 array into INTEGER)."""
    engine = engine_for(pg_con)
    name = engine.upload("bin", columns, types={"f32": "FLOAT", "i16": "INTEGER"})
    types = dict(pg_con.execute(
        "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute "
        "WHERE attrelid = %s::regclass AND attnum > 0", [quote(name)]).fetchall())
    assert types == {"i16": "integer", "i64": "bigint", "f32": "real", "f64": "double precision", "ok": "boolean"}
    with pg_con.cursor(binary=True) as cur:
        stored = cur.execute(f"SELECT * FROM {quote(name)}").fetchall()
    for j, (c, values) in enumerate(columns.items()):
        assert all(_same(row[j], v.item()) for row, v in zip(stored, values)), c
    pg_con.rollback()


def test_a_float_column_with_nan_uploads_nan_as_null_as_before(pg_con):
    """NaN in a float array is stored as NULL (the CSV upload's meaning, which callers rely on)."""
    engine = engine_for(pg_con)
    name = engine.upload("nan", {"x": np.array([1.5, np.nan]), "n": np.array([1, 2])})
    assert pg_con.execute(f"SELECT x FROM {quote(name)} ORDER BY n").fetchall() == [(1.5,), (None,)]
    pg_con.rollback()


NASTY = st.lists(st.sampled_from(["a", "b", "\\", "\\N", "N", ",", '"', "'", "\n", "\t", " ", "é", "|"]),
                 max_size=3).map("".join)
TABLES = st.integers(30, 120).flatmap(lambda n: st.fixed_dictionaries({
    "s": st.lists(st.one_of(st.none(), st.integers(-3, 3)), min_size=n, max_size=n),
    "i": st.lists(st.one_of(st.none(), st.integers(-2**31, 2**31 - 1), st.integers(0, 9)), min_size=n, max_size=n),
    "r": st.lists(st.one_of(st.none(), st.sampled_from([-0.0, 0.0, 0.1, -1.5, 3.25, 1e30])), min_size=n, max_size=n),
    "d": st.lists(st.one_of(st.none(), st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False), st.just(-0.0)),
                  min_size=n, max_size=n),
    "name": st.lists(st.one_of(st.none(), NASTY), min_size=n, max_size=n),
    "label": st.lists(st.sampled_from(["x", "y"]), min_size=n, max_size=n),
}))
QID = ["s", "i", "r", "d", "name"]
DDL = {"duckdb": "id INTEGER, s SMALLINT, i INTEGER, r REAL, d DOUBLE, name VARCHAR, label VARCHAR",
       "postgres": "id integer, s smallint, i integer, r real, d double precision, name text, label text"}


def _rules(con, release) -> list[tuple]:
    """The rules, ordered, as the driver reads them (PostgreSQL in binary: a REAL as stored, and
    a text ``\\N`` apart from NULL, which the engine's CSV fetch cannot tell apart)."""
    sql = f'SELECT * FROM "{release.rules}" ORDER BY 1'
    if con.__class__.__module__.startswith("psycopg"):
        with con.cursor(binary=True) as cur:
            return cur.execute(sql).fetchall()
    return [tuple(r) for r in con.execute(sql).fetchall()]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(table=TABLES, k=st.integers(2, 9), keyed=st.booleans(), target=st.booleans())
def test_qis_coded_here_publish_the_rules_of_sql_code_tables(pg_con, monkeypatch, table, k, keyed, target):
    """SMALLINT, INTEGER, REAL and DOUBLE QIs with NULLs, -0.0 and extremes, beside a text QI of
    backslashes, ``\\N``, quotes and newlines (coded by its SQL code table): PostgreSQL coding the
    numbers from fetched values (memory_rows above the rows), PostgreSQL with SQL code tables
    (every level in SQL) and DuckDB (coding its integer QIs from fetched values too) publish
    identical rules, keyed or keyless, Median or InfoGain."""
    coded = []
    real = encode.code_fetched
    monkeypatch.setattr(encode, "code_fetched", lambda *a, **kw: coded.append(1) or real(*a, **kw))
    import sqlanon.pipeline
    monkeypatch.setattr(sqlanon.pipeline, "code_fetched", encode.code_fetched)
    n = len(table["s"])
    rows = [(r, *(table[c][r] for c in ("s", "i", "r", "d", "name", "label"))) for r in range(n)]
    extra = {"target": "label"} if target else {}
    duck = duckdb.connect()
    runs = [(duck, 10**6), (pg_con, 10**6), (pg_con, 0)]
    out = []
    try:
        for con, memory_rows in runs:
            con.execute("DROP VIEW IF EXISTS t_anon CASCADE")
            con.execute("DROP TABLE IF EXISTS t CASCADE")
            con.execute(f"CREATE TABLE t ({DDL['duckdb' if con is duck else 'postgres']}"
                        + (", PRIMARY KEY (id))" if keyed else ")"))
            if con is duck:
                con.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
            else:
                with con.cursor() as cur:
                    cur.executemany("INSERT INTO t VALUES (%s, %s, %s, %s, %s, %s, %s)", rows)
                con.commit()
            before = len(coded)
            try:
                release = sqlanon.anonymize(con, "t", qid=QID, k=k, output=sqlanon.Output("t_anon", replace=True),
                                            algorithm=sqlanon.Mondrian(strategy=sqlanon.Levels(memory_rows)), **extra)
            except sqlanon.InputError as e:
                out.append(type(e).__name__)
                continue
            assert len(coded) - before == int(memory_rows > 0)  # DuckDB codes its integer QIs here too
            out.append(_rules(con, release))
            assert sqlanon.verify(con, release.view, qid=QID, k=k).ok
        assert out[1] == out[0]
        assert out[2] == out[0]
    finally:
        duck.close()
        pg_con.rollback()
        pg_con.execute("DROP VIEW IF EXISTS t_anon CASCADE")
        pg_con.execute("DROP TABLE IF EXISTS t CASCADE")
        pg_con.commit()
