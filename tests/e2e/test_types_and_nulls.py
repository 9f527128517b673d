"""QI types and NULLs.

Each supported type is anonymized on its own with data whose exact Median Mondrian partition is
known by hand, so the tests check the partition itself (class sizes in value order), that the
published ``<qi>_min``/``<qi>_max`` keep the source type and are exactly the smallest and
largest value of each class, and that every row lies within its class's bounds. NULLs sort
first: a class holding NULLs publishes ``<qi>_min`` NULL; for a hierarchy NULL is an implicit
first leaf labelled NULL.
"""

from __future__ import annotations

import datetime as dt
import itertools
from decimal import Decimal

import pytest

import sqlanon
from tests.support import db, is_postgres, quote, temp_objects

pytestmark = pytest.mark.engines("duckdb", "postgres")

N = 240  # distinct values per ordered type below
# 240 distinct values, k=7: 240 -> 120 -> 60 -> 30 -> 15 -> 7 | 8 (ties go to the smaller cut).
SIZES_240_K7 = [7, 8] * 16

# (type, SQL expression of row i in 0..N-1 giving N distinct values): DuckDB's types, then
# PostgreSQL's (named as format_type spells them), then DuckDB's that PostgreSQL lacks.
TYPES = {
    "SMALLINT": "(i * 100 - 12000)::SMALLINT",
    "INTEGER": "(i * 7919)::INTEGER",
    "BIGINT": "(i * 1000000007 - 5)::BIGINT",
    "HUGEINT": "i::HUGEINT * 100000000000000000000::HUGEINT",
    "FLOAT": "(i / 4.0)::FLOAT",
    "DOUBLE": "(i / 7.0 - 3)::DOUBLE",
    "DECIMAL(18,3)": "(i * 1.234 - 100)::DECIMAL(18,3)",
    "DATE": "DATE '1999-12-20' + i::INTEGER",
    "TIMESTAMP": "TIMESTAMP '2020-02-28 23:00:00' + INTERVAL (i * 37) MINUTE",
    "TIMESTAMP WITH TIME ZONE": "TIMESTAMPTZ '2020-03-29 00:30:00+00' + INTERVAL (i * 13) MINUTE",
    "VARCHAR": "'v' || i",  # lexicographic: 'v0' < 'v1' < 'v10' < 'v100' < ... < 'v2'
}
PG_TYPES = {
    "smallint": "(i * 100 - 12000)::smallint",
    "integer": "(i * 7919)::integer",
    "bigint": "(i::bigint * 1000000007 - 5)::bigint",
    "numeric": "i::numeric * 100000000000000000000",  # beyond bigint, as HUGEINT above
    "real": "(i / 4.0)::real",
    "double precision": "(i / 7.0 - 3)::double precision",
    "numeric(18,3)": "(i * 1.234 - 100)::numeric(18,3)",
    "date": "DATE '1999-12-20' + i::integer",
    "timestamp without time zone": "TIMESTAMP '2020-02-28 23:00:00' + i * 37 * INTERVAL '1 minute'",
    "timestamp with time zone": "TIMESTAMPTZ '2020-03-29 00:30:00+00' + i * 13 * INTERVAL '1 minute'",
    "text": "'v' || i",
    "character varying(10)": "('v' || i)::varchar(10)",
}
DUCKDB_ONLY_TYPES = {  # PostgreSQL has no 1-byte and no unsigned integer type: no PG_TYPES entry
    "TINYINT": "(i - 120)::TINYINT",
    "UBIGINT": "(i * 3)::UBIGINT",
}


def run(con, sql: str, params=()) -> None:
    """:mod:`tests.support.db`'s ``run``, always with a parameter list: its ``?`` -> ``%s`` translation doubles
    ``%`` (SQL's modulo here), which psycopg turns back only when it is given parameters."""
    db.run(con, sql, list(params))


def rows(con, sql: str, params=()) -> list[tuple]:
    """:mod:`tests.support.db`'s ``rows``, always with a parameter list (see :func:`run`)."""
    return db.rows(con, sql, list(params))


def engine_types(con) -> dict[str, str]:
    return PG_TYPES if is_postgres(con) else TYPES | DUCKDB_ONLY_TYPES


def series(con, n: int) -> str:
    """A FROM item of ``n`` rows ``i`` = 0..n-1, aliased ``t``."""
    return f"generate_series(0, {n - 1}) t(i)" if is_postgres(con) else f"range({n}) t(i)"


def column_types(con, relation: str) -> dict[str, str]:
    """Column -> type as the engine spells it (DuckDB's DESCRIBE, PostgreSQL's format_type)."""
    if is_postgres(con):
        return dict(rows(con, "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute "
                              "WHERE attrelid = ?::regclass AND attnum > 0 AND NOT attisdropped "
                              "ORDER BY attnum", [quote(relation)]))
    return {r[0]: r[1] for r in rows(con, f"DESCRIBE {quote(relation)}")}


def published_types(con, view: str, q: str) -> dict[str, str]:
    return {name: t for name, t in column_types(con, view).items() if name in (f"{q}_min", f"{q}_max")}


def scalar(con, sql: str):
    return rows(con, sql)[0][0]


def runs(labels: list) -> list[int]:
    """Lengths of the runs of equal consecutive labels."""
    return [len(list(g)) for _, g in itertools.groupby(labels)]


def check_bounds(con, table: str, view: str, q: str) -> None:
    """Per class: q_min/q_max are exactly the smallest/largest value (NULL first), every row
    lies within them, and every row of the table is published once."""
    qq, lo, hi = quote(q), quote(q + "_min"), quote(q + "_max")
    assert rows(con, f"SELECT count(*), count(DISTINCT id) FROM {quote(view)}") == \
        rows(con, f"SELECT count(*), count(DISTINCT id) FROM {quote(table)}")
    # min/max (DuckDB's any_value skips NULLs as min does); PostgreSQL's boolean has no min/max
    boolean = column_types(con, table)[q] in ("BOOLEAN", "boolean")
    smallest, largest = ("bool_and", "bool_or") if boolean and is_postgres(con) else ("min", "max")
    wrong = scalar(con, f"""
        SELECT count(*) FROM (
          SELECT v.eq_class, {smallest}(v.{lo}) AS lo, {smallest}(v.{hi}) AS hi,
                 count(DISTINCT v.{lo}) + count(DISTINCT v.{hi}) AS distinct_bounds,
                 bool_or(t.{qq} IS NULL) AS has_null, {smallest}(t.{qq}) AS mn, {largest}(t.{qq}) AS mx
          FROM {quote(table)} t JOIN {quote(view)} v USING (id)
          GROUP BY v.eq_class) per_class
        WHERE eq_class IS NULL
           OR distinct_bounds > 2
           OR lo IS DISTINCT FROM (CASE WHEN has_null THEN NULL ELSE mn END)
           OR hi IS DISTINCT FROM mx
    """)
    assert wrong == 0
    outside = scalar(con, f"""
        SELECT count(*) FROM {quote(table)} t JOIN {quote(view)} v USING (id)
        WHERE NOT CASE WHEN t.{qq} IS NULL THEN v.{lo} IS NULL  -- NULL only where NULL sorts
                       ELSE coalesce((v.{lo} IS NULL OR v.{lo} <= t.{qq}) AND t.{qq} <= v.{hi}, false) END
    """)
    assert outside == 0


def ordered_type(con, type_name, expr):
    run(con, f"CREATE TABLE t AS SELECT i AS id, {expr} AS q, i % 3 AS other FROM {series(con, N)}")
    assert column_types(con, "t")["q"] == type_name
    release = sqlanon.anonymize(con, "t", qid=["q"], k=7)
    assert (release.partitions, release.k_achieved, release.rows) == (32, 7, N)
    assert published_types(con, release.view, "q") == {"q_min": type_name, "q_max": type_name}
    rules = column_types(con, release.rules)
    assert rules["q_min"] == rules["q_max"] == rules["q_lo"] == rules["q_hi"] == type_name
    check_bounds(con, "t", release.view, "q")
    # the classes are consecutive runs of values in the type's order, with the known sizes
    classes = [r[0] for r in rows(con, f"SELECT v.eq_class FROM t JOIN {release.view} v USING (id) ORDER BY t.q")]
    assert runs(classes) == SIZES_240_K7
    assert sorted(set(classes)) == list(range(32))  # regions are numbered in value order
    assert sqlanon.verify(con, release.view, ["q"], 7, class_column="eq_class").ok


# Each engine with its own types.
@pytest.mark.engines("duckdb")
@pytest.mark.parametrize("type_name", sorted(TYPES | DUCKDB_ONLY_TYPES))
def test_ordered_type(con, type_name):
    ordered_type(con, type_name, (TYPES | DUCKDB_ONLY_TYPES)[type_name])


@pytest.mark.engines("postgres")
@pytest.mark.parametrize("type_name", sorted(PG_TYPES))
def test_ordered_postgres_type(con, type_name):
    ordered_type(con, type_name, PG_TYPES[type_name])


def test_varchar_is_lexicographic(con):
    run(con, f"CREATE TABLE t AS SELECT i AS id, 'v' || i AS q FROM {series(con, N)}")
    release = sqlanon.anonymize(con, "t", qid=["q"], k=7)
    bounds = rows(con, f"SELECT q_min, q_max FROM {release.rules} ORDER BY region")
    # Python's str order = DuckDB's for ASCII, and PostgreSQL's under the C collation the test
    # databases use (CI's and the local server's)
    ordered = sorted(f"v{i}" for i in range(N))
    cuts = list(itertools.accumulate(SIZES_240_K7))
    expected = [(ordered[a], ordered[b - 1]) for a, b in zip([0] + cuts[:-1], cuts)]
    assert bounds == expected
    assert bounds[0] == ("v0", "v103")  # not numeric order


def test_exact_published_values_keep_their_type(con):
    run(con, """CREATE TABLE t AS SELECT * FROM (VALUES
        (1, 1.5::DECIMAL(18,3), TIMESTAMPTZ '2021-06-01 12:00:00+02', DATE '2020-02-29'),
        (2, 2.25::DECIMAL(18,3), TIMESTAMPTZ '2021-06-01 13:30:00+02', DATE '2020-03-01'),
        (3, 1000000000000.125::DECIMAL(18,3), TIMESTAMPTZ '2021-06-02 00:00:00+00', DATE '2024-02-29')
        ) t(id, d, tz, dd)""")
    release = sqlanon.anonymize(con, "t", qid=["d", "tz", "dd"], k=3)
    # (TIMESTAMPTZ is compared in SQL: fetching it into Python needs pytz)
    row = rows(con, f"""SELECT d_min, d_max, tz_min = TIMESTAMPTZ '2021-06-01 10:00:00+00',
        tz_max = TIMESTAMPTZ '2021-06-02 00:00:00+00', dd_min, dd_max FROM {release.view} LIMIT 1""")[0]
    assert row[0] == Decimal("1.500") and row[1] == Decimal("1000000000000.125")
    assert row[2] is True and row[3] is True
    assert (row[4], row[5]) == (dt.date(2020, 2, 29), dt.date(2024, 2, 29))


def test_boolean(con):
    # 100 false, 140 true; k=7: one class per value
    run(con, f"CREATE TABLE t AS SELECT i AS id, i >= 100 AS b FROM {series(con, 240)}")
    release = sqlanon.anonymize(con, "t", qid=["b"], k=7)
    boolean = "boolean" if is_postgres(con) else "BOOLEAN"
    assert published_types(con, release.view, "b") == {"b_min": boolean, "b_max": boolean}
    assert rows(con, f"SELECT b_min, b_max, size FROM {release.rules} ORDER BY region") == [
        (False, False, 100), (True, True, 140)]
    check_bounds(con, "t", release.view, "b")


@pytest.mark.parametrize(("k", "expected"), [
    (20, [(None, None, 20), (False, False, 100), (True, True, 120)]),
    (30, [(None, False, 120), (True, True, 120)]),  # NULL cannot stand alone: it joins false
])
def test_boolean_with_nulls_sorts_null_first(con, k, expected):
    run(con, "CREATE TABLE t AS SELECT i AS id, CASE WHEN i < 20 THEN NULL ELSE i >= 120 END AS b "
             f"FROM {series(con, 240)}")
    release = sqlanon.anonymize(con, "t", qid=["b"], k=k)
    assert rows(con, f"SELECT b_min, b_max, size FROM {release.rules} ORDER BY region") == expected
    check_bounds(con, "t", release.view, "b")


def test_enum_uses_declaration_order(con):
    # sad 50, ok 100, happy 150; k=100. In declaration order the only allowed cut is
    # {sad, ok} | {happy}; alphabetically it would be {happy} | {ok, sad}.
    run(con, "CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')")
    run(con, "CREATE TABLE t AS SELECT i AS id, (CASE WHEN i < 50 THEN 'sad' WHEN i < 150 THEN 'ok' "
             f"ELSE 'happy' END)::mood AS e FROM {series(con, 300)}")
    release = sqlanon.anonymize(con, "t", qid=["e"], k=100)
    enum = "mood" if is_postgres(con) else "ENUM('sad', 'ok', 'happy')"
    assert published_types(con, release.view, "e") == {"e_min": enum, "e_max": enum}
    assert rows(con, f"SELECT e_min::VARCHAR, e_max::VARCHAR, size FROM {release.rules} ORDER BY region"
                ) == [("sad", "ok", 150), ("happy", "happy", 150)]
    check_bounds(con, "t", release.view, "e")


# DuckDB only for now: on PostgreSQL this release takes 30-55 s, nearly all of it planning the
# rules' CREATE TABLE AS (publish/rules.py: four LEFT JOINs to the domain per ordered QI, 52 here);
# each type is covered on PostgreSQL by test_ordered_postgres_type. Reported to the lead.
@pytest.mark.engines("duckdb")
def test_all_types_together(con):
    columns = {f"q{i}": expr for i, expr in enumerate(engine_types(con).values())}
    run(con, "CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')")
    select = ", ".join(f"{expr} AS {name}" for name, expr in columns.items())
    run(con, f"CREATE TABLE t AS SELECT i AS id, {select}, i % 2 = 0 AS b, "
             f"(ARRAY['sad', 'ok', 'happy'])[i % 3 + 1]::mood AS e FROM {series(con, N)}")
    qid = [*columns, "b", "e"]
    release = sqlanon.anonymize(con, "t", qid=qid, k=6)
    source_types = column_types(con, "t")
    view_types = column_types(con, release.view)
    for q in qid:
        assert view_types[f"{q}_min"] == view_types[f"{q}_max"] == source_types[q]
    for q in qid:
        check_bounds(con, "t", release.view, q)
    check = sqlanon.verify(con, release.view, qid, 6, class_column="eq_class")
    assert check.ok and check.rows == N and check.k_achieved >= 6
    assert release.verification == check


# -- NULLs -----------------------------------------------------------------------------------
HIER = {"*": {"xy": ["x", "y"], "z": None}}


@pytest.fixture
def nulls(con) -> str:
    if is_postgres(con):
        hours, double = "(i % 13) * INTERVAL '1 hour'", "(i % 17) / 4.0::double precision"
    else:
        hours, double = "INTERVAL (i % 13) HOUR", "(i % 17) / 4.0"
    run(con, f"""CREATE TABLE nulls AS SELECT i AS id,
        CASE WHEN i % 5 = 0 THEN NULL ELSE i % 50 END AS a,
        CASE WHEN i % 7 = 0 THEN NULL ELSE DATE '2000-01-01' + (i % 40)::INTEGER END AS d,
        CASE WHEN i % 4 = 0 THEN NULL ELSE 'v' || (i % 9) END AS s,
        CASE WHEN i % 6 = 0 THEN NULL ELSE (i % 2 = 0) END AS b,
        CASE WHEN i % 11 = 0 THEN NULL ELSE TIMESTAMPTZ '2020-01-01 00:00:00+00' + {hours} END AS tz,
        CASE WHEN i % 8 = 0 THEN NULL ELSE {double} END AS f,
        CASE WHEN i % 3 = 0 THEN NULL ELSE (ARRAY['x', 'y', 'z'])[i % 3 + 1] END AS h,
        'payload ' || i AS p
        FROM {series(con, 400)}""")
    return "nulls"


@pytest.mark.parametrize("memory_rows", [None, 0])
def test_nulls_in_several_types(con, nulls, memory_rows):
    qid = ["a", "d", "s", "b", "tz", "f", "h"]
    release = sqlanon.anonymize(con, nulls, qid=qid, k=5, hierarchies={"h": HIER},
                                algorithm=sqlanon.Mondrian(strategy=sqlanon.Levels(memory_rows=memory_rows)))
    assert release.rows == 400
    assert rows(con, f"SELECT count(*), count(DISTINCT id), count(eq_class) FROM {release.view}") == [(400, 400, 400)]
    assert scalar(con, f"SELECT count(*) FROM nulls n JOIN {release.view} v USING (id) WHERE n.p = v.p") == 400
    check = sqlanon.verify(con, release.view, qid, 5, class_column="eq_class")
    assert check.ok and check.k_achieved >= 5 and check.unplaced == 0
    for q in qid[:-1]:
        check_bounds(con, nulls, release.view, q)
    # a class holding NULL values publishes q_min NULL
    assert scalar(con, f"""
        SELECT count(*) FROM nulls n JOIN {release.view} v USING (id)
        WHERE n.a IS NULL AND v.a_min IS NOT NULL""") == 0
    # hierarchy: a NULL label only for classes of NULL values; non-NULL values get a node covering them
    labels = rows(con, f"""
        SELECT v.h, array_agg(DISTINCT n.h) FROM nulls n JOIN {release.view} v USING (id) GROUP BY v.eq_class, v.h
    """)
    cover = {"*": {None, "x", "y", "z"}, "xy": {"x", "y"}, "x": {"x"}, "y": {"y"}, "z": {"z"}, None: {None}}
    for label, values in labels:
        assert set(values) <= cover[label], (label, values)
    assert temp_objects(con) == []


def test_ordered_nulls_exact_partition(con):
    # NULL x10 then 1..30 once each; NULL sorts first.
    run(con, f"CREATE TABLE t AS SELECT i AS id, CASE WHEN i < 10 THEN NULL ELSE i - 9 END AS a FROM {series(con, 40)}")
    k10 = sqlanon.anonymize(con, "t", qid=["a"], k=10, output=sqlanon.Output(view="k10"))
    assert rows(con, "SELECT a_min, a_max, size, a_null FROM k10_rules ORDER BY region") == [
        (None, None, 10, True), (1, 10, 10, False), (11, 20, 10, False), (21, 30, 10, False)]
    k15 = sqlanon.anonymize(con, "t", qid=["a"], k=15, output=sqlanon.Output(view="k15"))
    assert rows(con, "SELECT a_min, a_max, size, a_null FROM k15_rules ORDER BY region") == [
        (None, 10, 20, True), (11, 30, 20, False)]
    for view in ("k10", "k15"):
        check_bounds(con, "t", view, "a")
    # region 0 holds the NULLs: NULL is the first code
    assert rows(con, "SELECT DISTINCT eq_class FROM k15 JOIN t USING (id) WHERE t.a IS NULL") == [(0,)]
    assert (k10.partitions, k15.partitions) == (4, 2)


def test_hierarchy_null_is_the_first_leaf_labelled_null(con):
    # NULL 20, x 30, y 30, z 40; k=10: the root splits into [NULL, xy, z], xy into x, y.
    run(con, f"""CREATE TABLE t AS SELECT i AS id,
        CASE WHEN i < 20 THEN NULL WHEN i < 50 THEN 'x' WHEN i < 80 THEN 'y' ELSE 'z' END AS h FROM {series(con, 120)}""")
    release = sqlanon.anonymize(con, "t", qid=["h"], k=10, hierarchies={"h": HIER})
    assert rows(con, f"SELECT region, size, h FROM {release.rules} ORDER BY region") == [
        (0, 20, None), (1, 30, "x"), (2, 30, "y"), (3, 40, "z")]
    assert rows(con, f"SELECT h, count(*), min(eq_class), max(eq_class) FROM {release.view} GROUP BY h "
                     "ORDER BY h NULLS FIRST") == [(None, 20, 0, 0), ("x", 30, 1, 1), ("y", 30, 2, 2), ("z", 40, 3, 3)]
    assert (release.partitions, release.regions) == (4, 4)
    assert sqlanon.verify(con, release.view, ["h"], 10, class_column="eq_class").ok


@pytest.mark.parametrize(("expr", "hierarchy", "expected"), [
    ("i % 4", {"*": {"low": ["0", "1"], "high": ["2", "3"]}}, [(None, 10), ("0", 20), ("1", 20), ("2", 20), ("3", 20)]),
    ("(i % 4)::DOUBLE PRECISION", {"*": {"low": ["0", "1"], "high": ["2", "3"]}},
     [(None, 10), ("0", 20), ("1", 20), ("2", 20), ("3", 20)]),
    ("(i % 4)::DECIMAL(6,2)", {"*": {"low": ["0", "1"], "high": ["2", "3"]}},
     [(None, 10), ("0", 20), ("1", 20), ("2", 20), ("3", 20)]),
    ("i % 2 = 0", {"*": ["true", "false"]}, [(None, 10), ("false", 40), ("true", 40)]),
    ("DATE '2020-01-01' + (i % 2)::INTEGER", {"*": ["2020-01-01", "2020-01-02"]},
     [(None, 10), ("2020-01-01", 40), ("2020-01-02", 40)]),
])
def test_hierarchy_on_non_text_types_with_nulls(con, expr, hierarchy, expected):
    run(con, f"CREATE TABLE t AS SELECT i AS id, CASE WHEN i < 10 THEN NULL ELSE {expr} END AS q FROM {series(con, 90)}")
    release = sqlanon.anonymize(con, "t", qid=["q"], k=10, hierarchies={"q": hierarchy})
    assert rows(con, f"SELECT q, count(*) FROM {release.view} GROUP BY q ORDER BY q NULLS FIRST") == expected
    assert rows(con, f"SELECT DISTINCT eq_class FROM {release.view} WHERE q IS NULL") == [(0,)]
    assert published_types(con, release.view, "q") == {}
    assert column_types(con, release.view)["q"] == ("character varying" if is_postgres(con) else "VARCHAR")


def test_hierarchy_null_leaf_too_small_generalizes_to_the_root(con):
    run(con, f"""CREATE TABLE t AS SELECT i AS id,
        CASE WHEN i < 20 THEN NULL WHEN i < 50 THEN 'x' WHEN i < 80 THEN 'y' ELSE 'z' END AS h FROM {series(con, 120)}""")
    release = sqlanon.anonymize(con, "t", qid=["h"], k=25, hierarchies={"h": HIER})
    assert rows(con, f"SELECT h, count(*) FROM {release.view} GROUP BY h") == [("*", 120)]
    assert release.partitions == 1


def test_hierarchy_without_nulls_has_no_null_leaf(con):
    run(con, f"CREATE TABLE t AS SELECT i AS id, (ARRAY['x', 'y', 'z'])[i % 3 + 1] AS h FROM {series(con, 90)}")
    release = sqlanon.anonymize(con, "t", qid=["h"], k=10, hierarchies={"h": HIER})
    assert rows(con, f"SELECT size, h FROM {release.rules} ORDER BY region") == [
        (30, "x"), (30, "y"), (30, "z")]


def test_all_null_qi(con):
    run(con, f"CREATE TABLE t AS SELECT i AS id, NULL::INTEGER AS n, NULL::VARCHAR AS s FROM {series(con, 50)}")
    release = sqlanon.anonymize(con, "t", qid=["n", "s"], k=5)
    assert (release.partitions, release.regions, release.k_achieved, release.rows) == (1, 1, 50, 50)
    assert rows(con, f"SELECT n_min, n_max, s_min, s_max, count(*) FROM {release.view} "
                     "GROUP BY n_min, n_max, s_min, s_max") == [(None, None, None, None, 50)]
    integer = "integer" if is_postgres(con) else "INTEGER"
    assert published_types(con, release.view, "n") == {"n_min": integer, "n_max": integer}
    assert rows(con, f"SELECT region, size, n_null, s_null FROM {release.rules}") == [(0, 50, True, True)]


def test_all_null_qi_next_to_a_splittable_one(con):
    run(con, f"CREATE TABLE t AS SELECT i AS id, NULL::DATE AS n, i + 1 AS a FROM {series(con, 40)}")
    release = sqlanon.anonymize(con, "t", qid=["n", "a"], k=10)
    assert rows(con, f"SELECT n_min, n_max, a_min, a_max, size FROM {release.rules} ORDER BY region") == [
        (None, None, 1, 10, 10), (None, None, 11, 20, 10), (None, None, 21, 30, 10), (None, None, 31, 40, 10)]


def test_all_null_hierarchy_qi(con):
    run(con, f"CREATE TABLE t AS SELECT i AS id, NULL::VARCHAR AS h FROM {series(con, 30)}")
    release = sqlanon.anonymize(con, "t", qid=["h"], k=5, hierarchies={"h": HIER})
    assert rows(con, f"SELECT h, count(*), count(eq_class) FROM {release.view} GROUP BY h") == [(None, 30, 30)]
    assert release.partitions == 1


def test_exactly_k_rows_is_one_class(con):
    run(con, f"CREATE TABLE t AS SELECT i AS id, i * 3 AS a, 'c' || (i % 2) AS c FROM {series(con, 12)}")
    release = sqlanon.anonymize(con, "t", qid=["a", "c"], k=12)
    assert (release.partitions, release.k_achieved, release.rows) == (1, 12, 12)
    assert rows(con, f"SELECT DISTINCT a_min, a_max, c_min, c_max, eq_class FROM {release.view}") == [
        (0, 33, "c0", "c1", 0)]


def test_k_equals_one(con, nulls):
    # k=1: every distinct combination of QI values (NULL included) is its own class
    release = sqlanon.anonymize(con, nulls, qid=["a", "s"], k=1)
    distinct = scalar(con, "SELECT count(*) FROM (SELECT DISTINCT a, s FROM nulls) d")
    assert release.partitions == distinct
    assert scalar(con, f"SELECT count(*) FROM {release.view} WHERE a_min IS DISTINCT FROM a_max "
                       "OR s_min IS DISTINCT FROM s_max") == 0
    check_bounds(con, nulls, release.view, "a")
    check_bounds(con, nulls, release.view, "s")
    assert release.k_achieved == scalar(con, "SELECT min(n) FROM (SELECT count(*) AS n FROM nulls GROUP BY a, s) c")


def test_k_one_single_row(con):
    run(con, "CREATE TABLE t AS SELECT 1 AS id, 42 AS a")
    release = sqlanon.anonymize(con, "t", qid=["a"], k=1)
    assert rows(con, f"SELECT id, a_min, a_max, eq_class FROM {release.view}") == [(1, 42, 42, 0)]


def test_nan_and_infinities_in_double(con):
    """inf, -inf and NaN make a numeric QI's range infinite or undefined, which silently changes
    which QI each split takes (its normalized width ranks it last): refused, naming the counts.
    Filtered out, the rest anonymizes with exact bounds."""
    run(con, f"""CREATE TABLE t AS SELECT i AS id,
        CASE WHEN i < 10 THEN 'nan'::DOUBLE PRECISION WHEN i < 20 THEN 'inf'::DOUBLE PRECISION
             WHEN i < 30 THEN '-inf'::DOUBLE PRECISION WHEN i < 40 THEN NULL ELSE i END AS x FROM {series(con, 80)}""")
    # the type in sqlanon's own vocabulary (DuckDB's spelling) on both engines
    with pytest.raises(sqlanon.InputError, match=r"QI 'x' \(DOUBLE\) has 30 row\(s\) that are not finite "
                                                 r"numbers: 20 infinite \(inf or -inf\) and 10 NaN"):
        sqlanon.anonymize(con, "t", qid=["x"], k=10)
    # NaN equals NaN on both engines; neither holds a finite NaN
    run(con, "CREATE TABLE finite AS SELECT * FROM t WHERE x IS NULL "
             "OR x NOT IN ('nan'::DOUBLE PRECISION, 'inf'::DOUBLE PRECISION, '-inf'::DOUBLE PRECISION)")
    assert scalar(con, "SELECT count(*) FROM finite") == 50
    release = sqlanon.anonymize(con, "finite", qid=["x"], k=10)
    assert rows(con, f"SELECT count(*), count(eq_class) FROM {release.view}") == [(50, 50)]
    assert sqlanon.verify(con, release.view, ["x"], 10, class_column="eq_class").ok
    check_bounds(con, "finite", release.view, "x")
