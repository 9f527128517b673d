"""Input errors, odd identifiers, and failing closed.

* Every bad request raises the specific :class:`sqlanon.SqlanonError` subclass, with a message
  naming the culprit, *before* anything is written: the catalog is unchanged and no
  ``__sqlanon_`` temp object is left.
* Names with quotes, spaces, unicode or SQL fragments are identifiers, never SQL.
* A run that fails half-way (a crash in the partitioner, in publishing, a failed verification)
  propagates its error, leaves no temp object, publishes nothing and leaves an earlier release
  that it was about to replace intact; the source table is never modified.
"""

from __future__ import annotations

import re

import pandas as pd
import pytest

import sqlanon
import sqlanon.mondrian.builder
import sqlanon.pipeline
import sqlanon.publish.manifest
import sqlanon.publish.pipeline
from sqlanon import (
    EngineError,
    HierarchyError,
    InputError,
    ObjectExistsError,
    SqlanonError,
    UnknownColumnError,
    UnknownTableError,
    UnsupportedTypeError,
    Verification,
    VerificationError,
)
from tests.support import frame, here, is_postgres, make_people, objects, quote, rows, run, temp_objects

pytestmark = pytest.mark.engines("duckdb", "postgres")

CITY = {"*": {"x0-1": ["x0", "x1"], "x2-4": ["x2", "x3", "x4"]}}


def series(n: int) -> str:
    """A FROM item of ``n`` rows numbered ``i`` (BIGINT 0..n-1), the same on DuckDB and PostgreSQL."""
    return f"generate_series(CAST(0 AS BIGINT), CAST({n - 1} AS BIGINT)) AS t(i)"


def columns(con, name: str) -> list[str]:
    """The column names of a table or view, in order (either engine)."""
    return list(frame(con, f"SELECT * FROM {quote(name)} LIMIT 0").columns)


def usable(con) -> None:
    """On PostgreSQL, the caller's transaction is open and still usable: sqlanon rolled back to
    its savepoint, never leaving the transaction aborted (DuckDB: nothing to check)."""
    if is_postgres(con):
        from psycopg import pq

        assert con.info.transaction_status == pq.TransactionStatus.INTRANS
        assert rows(con, "SELECT 1") == [(1,)]


@pytest.fixture
def people(con) -> str:
    return make_people(con, 100)


def refused(con, exc: type[SqlanonError], table: str = "people", **kwargs) -> str:
    """Call anonymize, expecting exactly ``exc``; check nothing was written; return the message."""
    before = objects(con)
    args = {"table": table, "qid": ["age", "zip"], "k": 5}
    args.update(kwargs)
    output = {key: args.pop(key) for key in ("view", "replace", "key", "class_column") if key in args}
    with pytest.raises(SqlanonError) as info:  # (the objects check their own arguments: built inside)
        if output:
            args["output"] = sqlanon.Output(**output)
        if "memory_rows" in args:
            args["algorithm"] = sqlanon.Mondrian(strategy=sqlanon.Levels(memory_rows=args.pop("memory_rows")))
        sqlanon.anonymize(con, **args)
    assert type(info.value) is exc, f"{type(info.value).__name__}: {info.value}"
    usable(con)  # on PostgreSQL objects() above opened the caller's transaction: sqlanon ran in it
    assert objects(con) == before
    assert temp_objects(con) == []
    return str(info.value)


# -- the source table and the QI list --------------------------------------------------------
def test_unknown_table_lists_tables_and_suggests(con, people):
    run(con, "CREATE TABLE orders(x INTEGER)")
    msg = refused(con, UnknownTableError, table="peple")
    assert "'peple'" in msg
    assert "Did you mean 'people'?" in msg
    assert "'orders'" in msg and "'people'" in msg


def test_unknown_table_in_empty_database(con):
    msg = refused(con, UnknownTableError, table="people")
    assert "'people'" in msg
    assert "Did you mean" not in msg


def test_unknown_column_lists_columns(con, people):
    msg = refused(con, UnknownColumnError, qid=["age", "zipp"])
    assert "'zipp'" in msg
    assert "Did you mean 'zip'?" in msg
    for column in ("id", "age", "zip", "city", "salary"):
        assert repr(column) in msg


def test_unknown_column_is_case_sensitive_about_the_culprit(con, people):
    msg = refused(con, UnknownColumnError, qid=["nope"])
    assert "'nope'" in msg and "'people'" in msg


def test_empty_qid(con, people):
    msg = refused(con, InputError, qid=[])
    assert "qid" in msg and "empty" in msg


def test_qid_as_a_string(con, people):
    msg = refused(con, InputError, qid="age")
    assert "qid" in msg and "'age'" in msg


def test_qid_with_a_non_string(con, people):
    msg = refused(con, InputError, qid=["age", 3])
    assert "3" in msg


def test_duplicate_qi(con, people):
    msg = refused(con, InputError, qid=["age", "zip", "age"])
    assert "'age'" in msg and "twice" in msg


@pytest.mark.parametrize(
    ("k", "shown"),
    [(0, "got 0"), (-1, "got -1"), (True, "got True"), ("5", "got '5'"), (5.0, "got 5.0"), (None, "got None")],
)
def test_bad_k(con, people, k, shown):
    msg = refused(con, InputError, k=k)
    assert msg.startswith("k must be")
    assert shown in msg


def test_k_larger_than_the_table(con, people):
    msg = refused(con, InputError, k=101)
    assert "k=101" in msg and "100 rows" in msg and "'people'" in msg


def test_k_equal_to_the_table_is_fine(con, people):
    release = sqlanon.anonymize(con, "people", qid=["age"], k=100)
    assert (release.partitions, release.k_achieved) == (1, 100)


def test_empty_table_refuses_any_k(con):
    run(con, "CREATE TABLE empty(a INTEGER)")
    msg = refused(con, InputError, table="empty", qid=["a"], k=1)
    assert "0 rows" in msg


@pytest.mark.engines("duckdb")  # DuckDB's own types (STRUCT, MAP); PostgreSQL's: test_unsupported_postgres_qi_type
@pytest.mark.parametrize(
    ("column", "type_text"),
    [("blob", "BLOB"), ("ints", "INTEGER[]"), ("rec", "STRUCT(a INTEGER, b VARCHAR)"),
     ("tm", "TIME"), ("iv", "INTERVAL"), ("m", "MAP(VARCHAR, INTEGER)")],
)
def test_unsupported_qi_type(con, column, type_text):
    con.execute(
        "CREATE TABLE odd AS SELECT i AS id, 'ab'::BLOB AS blob, [i, 2]::INTEGER[] AS ints, "
        "{'a': i::INTEGER, 'b': 'x'} AS rec, TIME '10:00:00' AS tm, INTERVAL 1 DAY AS iv, "
        "MAP {'a': 1} AS m FROM range(20) t(i)"
    )
    msg = refused(con, UnsupportedTypeError, table="odd", qid=["id", column])
    assert repr(column) in msg
    assert type_text in msg


# PostgreSQL types as the catalog spells them (format_type) -> the type an error names.
POSTGRES_UNSUPPORTED = {
    "bytea": "BYTEA", "integer[]": "INTEGER[]", "text[]": "TEXT[]", "json": "JSON", "jsonb": "JSONB",
    "interval": "INTERVAL", "time": "TIME WITHOUT TIME ZONE", "timetz": "TIME WITH TIME ZONE",
    "uuid": "UUID", "point": "POINT", "int4range": "INT4RANGE", "pair": "PAIR",
}
POSTGRES_VALUES = {
    "bytea": "CAST('ab' AS bytea)", "integer[]": "ARRAY[CAST(i AS integer), 2]", "text[]": "ARRAY['a', 'b']",
    "json": "CAST('{\"a\": 1}' AS json)", "jsonb": "CAST('[1, 2]' AS jsonb)", "interval": "i * INTERVAL '1 day'",
    "time": "TIME '10:00:00'", "timetz": "CAST('10:00:00+02' AS timetz)", "uuid": "gen_random_uuid()",
    "point": "point(i, 1)", "int4range": "int4range(0, CAST(i AS integer) + 1)", "pair": "ROW(i, 'x')::pair",
}


@pytest.mark.engines("postgres")  # PostgreSQL's own types; DuckDB's: test_unsupported_qi_type
@pytest.mark.parametrize("pg_type", sorted(POSTGRES_UNSUPPORTED))
def test_unsupported_postgres_qi_type(con, pg_type):
    run(con, "CREATE TYPE pair AS (a bigint, b text)")  # a composite type
    run(con, f"CREATE TABLE odd AS SELECT i AS id, CAST({POSTGRES_VALUES[pg_type]} AS {pg_type}) AS c FROM {series(20)}")
    msg = refused(con, UnsupportedTypeError, table="odd", qid=["id", "c"])
    assert msg.startswith(f"QI 'c' has type {POSTGRES_UNSUPPORTED[pg_type]}, which sqlanon cannot generalize.")


# PostgreSQL types sqlanon generalizes (as ranges: numbers, temporals, ordered text and
# booleans), with the values of the test table
POSTGRES_SUPPORTED = {
    "smallint": "CAST(mod(i, 30) AS smallint)",
    "integer": "CAST(mod(i, 30) AS integer)",
    "bigint": "mod(i, 30)",
    "real": "CAST(mod(i, 30) AS real) / 4",
    "double precision": "CAST(mod(i, 30) AS double precision) / 3",
    "numeric": "CAST(mod(i, 30) AS numeric) / 7",
    "numeric(12,3)": "CAST(mod(i, 30) AS numeric) / 7",
    "date": "DATE '2020-02-01' + CAST(mod(i, 30) AS integer)",
    "timestamp": "TIMESTAMP '2020-02-01 10:00' + mod(i, 30) * INTERVAL '1 hour'",
    "timestamp(3)": "TIMESTAMP '2020-02-01 10:00:00.123' + mod(i, 30) * INTERVAL '1 hour'",
    "timestamptz": "TIMESTAMPTZ '2020-02-01 10:00+02' + mod(i, 30) * INTERVAL '1 hour'",
    "text": "'v' || mod(i, 30)",
    "varchar(20)": "'v' || mod(i, 30)",
    "char(3)": "'v' || mod(i, 30)",
    "boolean": "mod(i, 2) = 0",
}
TEXTUAL = ("text", "varchar(20)", "char(3)")


@pytest.mark.engines("postgres")  # PostgreSQL's spellings of the types DuckDB's tests cover as DuckDB types
def test_postgres_types_are_classified(con):
    """One table, a column of each type, all of them QIs of one release (one run: ~0.3 s each)."""
    names = {t: f"c{i}" for i, t in enumerate(sorted(POSTGRES_SUPPORTED))}
    typed = ", ".join(f"CAST({POSTGRES_SUPPORTED[t]} AS {t}) AS {c}" for t, c in names.items())
    run(con, f"CREATE TABLE typed AS SELECT i AS id, {typed} FROM {series(120)}")
    con.commit()
    release = sqlanon.anonymize(con, "typed", qid=list(names.values()), k=5)
    assert release.verification.ok and release.k_achieved >= 5
    assert columns(con, release.view) == ["id", *[f"{c}_{m}" for c in names.values() for m in ("min", "max")], "eq_class"]
    for pg_type, c in names.items():
        # every row within its published range, checked by plain SQL on the source (text ranges
        # are in code point order, whatever the database's collation)
        value = f'typed.{c} COLLATE "C"' if pg_type in TEXTUAL else f"typed.{c}"
        outside = con.execute(f"SELECT count(*) FROM {quote(release.view)} AS v JOIN typed USING (id) "
                              f"WHERE NOT ({value} BETWEEN v.{c}_min AND v.{c}_max)").fetchone()[0]
        assert outside == 0, pg_type
        kind = next(q.kind for q in sqlanon.publish.manifest.read(con, release.view).qis if q.name == c)
        assert kind == ("temporal" if pg_type.startswith(("date", "timestamp")) else
                        "ordinal" if pg_type in TEXTUAL or pg_type == "boolean" else "numeric"), pg_type
    assert con.execute(f"SELECT count(*) FROM {quote(release.view)}").fetchone()[0] == 120


def test_unsupported_type_is_fine_as_a_non_qi(con, engine_name):
    listed = "ARRAY[i]" if engine_name == "postgres" else "[i]"
    run(con, f"CREATE TABLE odd AS SELECT i AS id, CAST('ab' AS BYTEA) AS blob, {listed} AS l FROM {series(20)}")
    release = sqlanon.anonymize(con, "odd", qid=["id"], k=5)
    assert con.execute(f"SELECT count(*) FROM {release.view} WHERE blob = CAST('ab' AS BYTEA)").fetchone()[0] == 20
    assert con.execute(f"SELECT count(*) FROM {release.view} WHERE l[1] BETWEEN id_min AND id_max").fetchone()[0] == 20


# -- hierarchies -----------------------------------------------------------------------------
def test_hierarchy_missing_values_names_them(con, people):
    msg = refused(con, HierarchyError, qid=["age", "city"],
                  hierarchies={"city": {"*": {"x0-1": ["x0", "x1"], "x2": ["x2"]}}})
    assert "'city'" in msg
    assert "2 value(s)" in msg
    assert "'x3'" in msg and "'x4'" in msg
    assert "'x0'" not in msg and "'x2'" not in msg


def test_hierarchy_missing_many_values_is_summarised(con):
    run(con, f"CREATE TABLE t AS SELECT i AS id, 'v' || lpad(CAST(i AS VARCHAR), 3, '0') AS c FROM {series(30)}")
    msg = refused(con, HierarchyError, table="t", qid=["c"], hierarchies={"c": {"*": ["v000"]}})
    assert "29 value(s)" in msg
    assert "'v001'" in msg and "and 9 more" in msg


@pytest.mark.parametrize(
    ("hierarchy", "fragment"),
    [
        ([["x0", "a", "*"], ["x1", "a", "ROOT"]], "root"),
        ([["x0", "*"], ["x0", "*"]], "listed twice"),
        ([["x0", "a", "*"], ["a", "*"]], "leaf"),
        ([["x0", "", "*"]], "empty"),
        ([], "empty"),
        ({}, "empty"),
        (42, "int"),
        ("no_such_table_or_file", "neither an existing file nor a table"),
    ],
)
def test_malformed_hierarchy(con, people, hierarchy, fragment):
    msg = refused(con, HierarchyError, qid=["age", "city"], hierarchies={"city": hierarchy})
    assert fragment in msg


def test_malformed_hierarchy_file_is_named(con, people, tmp_path):
    path = tmp_path / "city.csv"
    path.write_text("x0;a;*\nx1;b;OTHER\n", encoding="utf-8")
    msg = refused(con, HierarchyError, qid=["city"], hierarchies={"city": str(path)})
    assert str(path) in msg and "row 2" in msg


def test_a_file_that_is_no_hierarchy_is_not_quoted(con, people, tmp_path):
    """Issue 49: a password file given as a hierarchy was refused with two of its lines quoted
    (as the roots of rows 1 and 2). Rows without a separator are no hierarchy: said so, unquoted."""
    path = tmp_path / "passwd"
    path.write_text("root:x:0:0:secret-gecos:/root:/bin/bash\nalice:x:1000:1000:another-secret:/home:/bin/sh\n")
    msg = refused(con, HierarchyError, qid=["city"], hierarchies={"city": str(path)})
    assert str(path) in msg and "not an ARX hierarchy" in msg
    assert "secret" not in msg and "bin/bash" not in msg and "alice" not in msg


def test_malformed_hierarchy_table_is_named(con, people):
    run(con, "CREATE TABLE h AS SELECT * FROM (VALUES ('x0', '*'), ('x0', '*')) t(leaf, root)")
    msg = refused(con, HierarchyError, qid=["city"], hierarchies={"city": "h"})
    assert "'h'" in msg and "listed twice" in msg


def test_hierarchy_for_a_non_qi(con, people):
    msg = refused(con, HierarchyError, qid=["age"], hierarchies={"city": CITY})
    assert "'city'" in msg and "not QIs" in msg


def test_hierarchy_for_an_unknown_column(con, people):
    msg = refused(con, HierarchyError, qid=["age"], hierarchies={"nope": CITY})
    assert "'nope'" in msg


@pytest.mark.parametrize("form", ["dict", "rows", "frame", "csv", "table"])
def test_hierarchy_forms_are_accepted(con, people, tmp_path, form):
    rows = [["x0", "x0-1", "*"], ["x1", "x0-1", "*"], ["x2", "x2-4", "*"], ["x3", "x2-4", "*"], ["x4", "x2-4", "*"]]
    if form == "dict":
        h = CITY
    elif form == "rows":
        h = rows
    elif form == "frame":
        h = pd.DataFrame(rows)
    elif form == "csv":
        path = tmp_path / "city.csv"
        path.write_text("".join(";".join(r) + "\n" for r in rows), encoding="utf-8")
        h = str(path)
    else:
        run(con, "CREATE TABLE city_h(leaf VARCHAR, l1 VARCHAR, root VARCHAR)")
        for row in rows:
            run(con, "INSERT INTO city_h VALUES (?, ?, ?)", row)
        h = "city_h"
    release = sqlanon.anonymize(con, "people", qid=["city"], k=5, hierarchies={"city": h})
    # 20 rows per city: the hierarchy is split down to the leaves
    assert release.partitions == 5
    assert con.execute(f"SELECT count(*) FROM {release.view} WHERE city LIKE 'x_'").fetchone()[0] == 100


# -- output names ----------------------------------------------------------------------------
@pytest.mark.parametrize("suffix", ["", "_rules", "_rowmap"])
def test_output_name_taken_by_a_table(con, people, suffix):
    run(con, f"CREATE TABLE {quote('people_anon' + suffix)}(a INTEGER)")
    msg = refused(con, ObjectExistsError)
    assert repr("people_anon" + suffix) in msg and "replace=True" in msg


@pytest.mark.parametrize("suffix", ["", "_rules", "_rowmap"])
def test_output_name_taken_by_a_view(con, people, suffix):
    run(con, f"CREATE VIEW {quote('people_anon' + suffix)} AS SELECT 1 AS a")
    msg = refused(con, ObjectExistsError)
    assert repr("people_anon" + suffix) in msg and "view" in msg


def test_explicit_view_name_taken(con, people):
    run(con, "CREATE VIEW published AS SELECT 1 AS a")
    msg = refused(con, ObjectExistsError, view="published")
    assert "'published'" in msg


def test_replace_overwrites_an_earlier_release(con, people):
    first = sqlanon.anonymize(con, "people", qid=["age"], k=5)
    refused(con, ObjectExistsError, qid=["age", "zip"])
    second = sqlanon.anonymize(con, "people", qid=["age", "zip"], k=5, output=sqlanon.Output(replace=True))
    assert second.view == first.view
    assert columns(con, second.view) == ["id", "age_min", "age_max", "zip_min", "zip_max", "city", "salary", "eq_class"]
    assert sqlanon.verify(con, second.view, ["age", "zip"], 5).ok
    assert temp_objects(con) == []


@pytest.mark.parametrize(("ddl", "name"), [
    ("CREATE VIEW people_anon AS SELECT 1 AS a", "people_anon"),
    ("CREATE TABLE people_anon(a INTEGER)", "people_anon"),
    ("CREATE TABLE people_anon_rules(a INTEGER)", "people_anon_rules"),
    ("CREATE TABLE people_anon_rowmap(a INTEGER)", "people_anon_rowmap"),
])
def test_replace_never_overwrites_what_is_not_a_release(con, people, ddl, name):
    """replace=True replaces only a sqlanon release of the same name (its manifest lists it)."""
    run(con, ddl)
    before = objects(con)
    msg = refused(con, ObjectExistsError, replace=True)
    assert repr(name) in msg and "not an object of a sqlanon release" in msg
    assert objects(con) == before


def test_replace_never_drops_the_table_behind_a_source_view(con, people):
    """anonymize(con, "src_view", view="base_table", replace=True) must not destroy the raw data."""
    run(con, "CREATE VIEW src_view AS SELECT * FROM people")
    refused(con, ObjectExistsError, table="src_view", view="people", replace=True)
    assert con.execute("SELECT count(*) FROM people").fetchone()[0] == 100


def test_replace_never_overwrites_another_release(con, people):
    first = sqlanon.anonymize(con, "people", qid=["age"], k=5, output=sqlanon.Output(view="first"))
    msg = refused(con, ObjectExistsError, view="first_rules", replace=True)
    assert "'first_rules'" in msg
    assert sqlanon.verify(con, first.view, ["age"], 5, class_column="eq_class").ok
    assert con.execute("SELECT count(*) FROM first_rules").fetchone()[0] == first.regions


def test_replace_never_drops_a_release_the_source_reads(con, people):
    first = sqlanon.anonymize(con, "people", qid=["age"], k=5, output=sqlanon.Output(view="first"))
    run(con, "CREATE VIEW over_first AS SELECT * FROM first")
    refused(con, ObjectExistsError, table="over_first", qid=["age_min"], view="first", replace=True)
    assert sqlanon.verify(con, first.view, ["age"], 5, class_column="eq_class").ok


def test_replace_never_drops_a_hierarchy_table(con, people):
    run(con, f"CREATE TABLE people_anon_hierarchies AS SELECT 'x' || i AS leaf, '*' AS root FROM {series(5)}")
    refused(con, ObjectExistsError, qid=["city"], hierarchies={"city": "people_anon_hierarchies"}, replace=True)
    assert con.execute("SELECT count(*) FROM people_anon_hierarchies").fetchone()[0] == 5


@pytest.mark.parametrize("replace", ["yes", 1, None])
def test_replace_must_be_a_bool(con, people, replace):
    msg = refused(con, InputError, replace=replace)
    assert "replace must be True or False" in msg


def test_replace_a_release_drops_what_it_no_longer_needs(con, people):
    sqlanon.anonymize(con, "people", qid=["age", "city"], k=5, hierarchies={"city": {"*": [f"x{i}" for i in range(5)]}})
    run(con, "CREATE VIEW pv AS SELECT * FROM people")
    second = sqlanon.anonymize(con, "pv", qid=["age"], k=5, output=sqlanon.Output(view="people_anon", replace=True))
    assert second.materialized
    names = {o[2] for o in objects(con)}
    assert "people_anon_hierarchies" not in names
    # the live view's row map (key, region, hash) was replaced by the snapshot's rows
    columns = [d[0] for d in con.execute("SELECT * FROM people_anon_rowmap LIMIT 0").description]
    assert "key0" not in columns and "age" not in columns and columns[-1] == "eq_class"


def test_replace_over_a_table_named_like_the_view_fails_closed(con, people):
    """A refused replace leaves everything as it was."""
    run(con, "CREATE TABLE people_anon(a INTEGER)")
    run(con, "INSERT INTO people_anon VALUES (7)")
    before = objects(con)
    try:
        sqlanon.anonymize(con, "people", qid=["age"], k=5, output=sqlanon.Output(replace=True))
    except SqlanonError:
        usable(con)
        assert objects(con) == before
        assert con.execute("SELECT * FROM people_anon").fetchall() == [(7,)]
    assert temp_objects(con) == []


@pytest.mark.parametrize("replace", [False, True])
def test_view_named_like_the_source_is_always_refused(con, people, replace):
    msg = refused(con, ObjectExistsError, view="people", replace=replace)
    assert "'people'" in msg and "source" in msg


@pytest.mark.parametrize("replace", [False, True])
def test_rules_named_like_the_source_is_always_refused(con, replace):
    make_people(con, 50, name="rel_rules")
    msg = refused(con, ObjectExistsError, table="rel_rules", view="rel", replace=replace)
    assert "'rel_rules'" in msg and "source" in msg
    assert con.execute("SELECT count(*) FROM rel_rules").fetchone()[0] == 50


@pytest.mark.parametrize("replace", [False, True])
def test_view_named_like_the_source_up_to_case_is_refused(con, people, replace):
    # as above: refused on PostgreSQL too, where "PEOPLE" could be a second relation
    refused(con, ObjectExistsError, view="PEOPLE", replace=replace)


def test_view_name_taken_up_to_case_is_refused(con, people, engine_name):
    run(con, "CREATE TABLE people_anon(a INTEGER)")
    if engine_name == "duckdb":  # one object for DuckDB, whatever the case
        refused(con, ObjectExistsError, view="People_Anon")
        return
    # PostgreSQL keeps quoted names apart: "People_Anon" is created beside people_anon, which
    # stays as it was (a replace=True would never drop it either)
    release = sqlanon.anonymize(con, "people", qid=["age", "zip"], k=5,
                                output=sqlanon.Output(view="People_Anon", replace=True))
    assert rows(con, f"SELECT count(*) FROM {quote(release.view)}") == [(100,)]
    assert rows(con, "SELECT count(*) FROM people_anon") == [(0,)]


def test_view_name_of_a_new_object_is_not_refused_by_other_schemas(con, people, new_schema):
    other = new_schema("other")
    run(con, f"CREATE TABLE {quote(other)}.people_anon(a INTEGER)")
    release = sqlanon.anonymize(con, "people", qid=["age"], k=5)
    main = quote(here(con)[1])
    assert con.execute(f"SELECT count(*) FROM {main}.{release.view}").fetchone()[0] == 100


def test_source_in_another_schema_detects_collision_in_current_schema(con, new_schema):
    s = quote(new_schema("s"))
    main = quote(here(con)[1])
    make_people(con, 50, name="t")
    run(con, f"CREATE TABLE {s}.t AS SELECT * FROM {main}.t")
    run(con, f"DROP TABLE {main}.t")
    run(con, f"CREATE TABLE {main}.t_anon(a INTEGER)")
    refused(con, ObjectExistsError, table=f"{s.strip(chr(34))}.t", qid=["age"])


def test_source_in_another_schema_ignores_names_there(con, new_schema):
    s = new_schema("s")
    run(con, f"CREATE TABLE {quote(s)}.u AS SELECT i AS id, mod(i, 50) AS age FROM {series(50)}")
    run(con, f"CREATE TABLE {quote(s)}.u_anon(a INTEGER)")
    release = sqlanon.anonymize(con, f"{s}.u", qid=["age"], k=5)
    main = quote(here(con)[1])
    assert con.execute(f"SELECT count(*) FROM {main}.{quote(release.view)}").fetchone()[0] == 50


def test_temp_source_detects_collision_in_current_schema(con):
    run(con, f"CREATE TEMP TABLE tt AS SELECT i AS id, mod(i, 50) AS age FROM {series(50)}")
    run(con, "CREATE TABLE tt_anon(a INTEGER)")
    refused(con, ObjectExistsError, table="tt", qid=["age"])


@pytest.mark.parametrize("view", ["", 3])
def test_bad_view_name(con, people, view):
    msg = refused(con, InputError, view=view)
    assert "view" in msg


@pytest.mark.parametrize("clash", ["age_min", "age_max", "zip_min"])
def test_non_qi_column_named_like_a_published_column(con, clash):
    run(con, f"CREATE TABLE t AS SELECT i AS id, mod(i, 50) AS age, mod(i, 7) AS zip, i AS {quote(clash)} "
             f"FROM {series(50)}")
    msg = refused(con, ObjectExistsError, table="t")
    assert repr(clash) in msg and "duplicate" in msg


def test_qi_named_like_a_published_column_of_another_qi_is_not_a_clash(con):
    # 'zip_min' is a QI itself, so it is replaced by zip_min_min/zip_min_max: no duplicate.
    run(con, "CREATE TABLE t AS SELECT i AS id, mod(i, 50) AS age, mod(i, 7) AS age_max_x, mod(i, 3) AS zip_min "
             f"FROM {series(60)}")
    release = sqlanon.anonymize(con, "t", qid=["age", "zip_min"], k=5)
    assert columns(con, release.view) == ["id", "age_min", "age_max", "age_max_x", "zip_min_min", "zip_min_max", "eq_class"]


def test_non_qi_column_clash_up_to_case(con):
    # PostgreSQL could hold "AGE_MIN" beside age_min in a view; sqlanon refuses up to case there too
    run(con, f'CREATE TABLE t AS SELECT i AS id, mod(i, 50) AS age, mod(i, 7) AS "AGE_MIN" FROM {series(50)}')
    refused(con, ObjectExistsError, table="t", qid=["age"])


def test_hierarchical_qi_named_eq_class(con):
    """The class column's name is derived around the user's columns (issue: ordinary names)."""
    run(con, f"CREATE TABLE t AS SELECT i AS id, 'c' || mod(i, 3) AS eq_class FROM {series(60)}")
    release = sqlanon.anonymize(con, "t", qid=["eq_class"], k=5, hierarchies={"eq_class": {"*": ["c0", "c1", "c2"]}})
    assert release.class_column == "eq_class_1" and release.verification.ok
    assert columns(con, release.view) == ["id", "eq_class", "eq_class_1"]


@pytest.mark.parametrize(("memory_rows", "shown"), [(-1, "got -1"), ("10", "got '10'"), (1.5, "got 1.5"), (True, "got True")])
def test_bad_memory_rows(con, people, memory_rows, shown):
    msg = refused(con, InputError, memory_rows=memory_rows)
    assert "memory_rows" in msg and shown in msg


def test_memory_rows_zero_is_allowed(con, people):
    release = sqlanon.anonymize(con, "people", qid=["age", "zip"], k=5,
                                algorithm=sqlanon.Mondrian(strategy=sqlanon.Levels(memory_rows=0)))
    assert release.verification.ok


@pytest.mark.parametrize("table", ["", None, 3])
def test_bad_table_argument(con, people, table):
    msg = refused(con, InputError, table=table)
    assert "table" in msg


def test_input_errors_are_value_errors(con, people):
    with pytest.raises(ValueError):
        sqlanon.anonymize(con, "people", qid=["age"], k=0)


# -- identifiers -----------------------------------------------------------------------------
WEIRD_TABLE = 'pa"tients'
WEIRD_COLUMNS = ("zip code", "âge", "it's")


@pytest.fixture
def weird(con) -> str:
    zip_code, age, its, note = (quote(c) for c in (*WEIRD_COLUMNS, "no te;"))
    run(con,
        f"CREATE TABLE {quote(WEIRD_TABLE)} AS SELECT i AS id, CAST(mod(i, 13) AS INTEGER) AS {zip_code}, "
        f"CAST(mod(i, 90) AS INTEGER) AS {age}, 'v' || mod(i, 4) AS {its}, 'note ' || i AS {note} FROM {series(200)}"
    )
    return WEIRD_TABLE


@pytest.mark.parametrize("view", [None, 'my "view\'s" ünï', "x; DROP TABLE t; --", "a.b"])
def test_quotes_spaces_and_unicode_just_work(con, weird, view):
    hierarchy = {"*": {"a'b\"": ["v0", "v1"], "c d": ["v2", "v3"]}}
    release = sqlanon.anonymize(con, weird, qid=list(WEIRD_COLUMNS), k=5, hierarchies={"it's": hierarchy},
                                output=sqlanon.Output(view=view, key="id"))
    expected_view = view if view is not None else WEIRD_TABLE + "_anon"
    assert release.view == expected_view
    assert release.rules == expected_view + "_rules"
    assert release.rowmap == expected_view + "_rowmap"
    assert release.table == WEIRD_TABLE
    assert release.qid == WEIRD_COLUMNS
    assert columns(con, release.view) == ["id", "zip code_min", "zip code_max", "âge_min", "âge_max", "it's",
                                          "no te;", "eq_class"]
    assert con.execute(f"SELECT count(*) FROM {quote(release.view)}").fetchone()[0] == 200
    labels = {r[0] for r in con.execute(f'SELECT DISTINCT "it\'s" FROM {quote(release.view)}').fetchall()}
    assert labels <= {"v0", "v1", "v2", "v3", "a'b\"", "c d", "*"}
    check = sqlanon.verify(con, release.view, list(WEIRD_COLUMNS), 5, class_column="eq_class")
    assert check.ok and check.rows == 200
    assert check.columns == ("zip code_min", "zip code_max", "âge_min", "âge_max", "it's")
    assert temp_objects(con) == []


def test_injection_as_a_table_name(con):
    run(con, f"CREATE TABLE t AS SELECT i AS a FROM {series(10)}")
    before = objects(con)
    for name in ("x; DROP TABLE t; --", 't"; DROP TABLE t; --', "t; DROP TABLE t"):
        with pytest.raises(UnknownTableError) as info:
            sqlanon.anonymize(con, name, qid=["a"], k=2)
        assert repr(name) in str(info.value)
        usable(con)
    assert objects(con) == before
    assert con.execute("SELECT count(*) FROM t").fetchone()[0] == 10


def test_injection_as_a_column_name(con):
    run(con, f"CREATE TABLE t AS SELECT i AS a FROM {series(10)}")
    with pytest.raises(UnknownColumnError):
        sqlanon.anonymize(con, "t", qid=['a" FROM t; DROP TABLE t; --'], k=2)
    usable(con)
    assert con.execute("SELECT count(*) FROM t").fetchone()[0] == 10


def test_injection_in_data_values_and_hierarchy_labels(con):
    evil = "x'); DROP TABLE t; --"
    run(con, "CREATE TABLE t(id INTEGER, c VARCHAR)")
    for i in range(20):
        run(con, "INSERT INTO t VALUES (?, ?)", [i, evil if i % 2 else "ok"])
    release = sqlanon.anonymize(con, "t", qid=["c"], k=5, hierarchies={"c": {"*": {evil + "'": [evil, "ok"]}}})
    assert release.partitions == 2
    assert con.execute("SELECT count(*) FROM t").fetchone()[0] == 20
    assert rows(con, f"SELECT count(*) FROM {release.view} WHERE c = ?", [evil]) == [(10,)]


def test_schema_qualified_source(con, new_schema):
    s = new_schema("s")
    run(con, f"CREATE TABLE {quote(s)}.people AS SELECT i AS id, mod(i, 40) AS age FROM {series(80)}")
    release = sqlanon.anonymize(con, f"{s}.people", qid=["age"], k=4)
    assert release.table == "people"
    assert con.execute(f"SELECT count(*) FROM {release.view}").fetchone()[0] == 80


# -- the engine's identifier limit ------------------------------------------------------------
# PostgreSQL cuts a name to 63 bytes (UTF-8) without an error; every name a release derives is
# checked first. DuckDB has no limit. (Spark: a table's name is a directory name, 255 bytes.)
@pytest.mark.engines("postgres")
@pytest.mark.parametrize("view, culprit", [
    ("v" * 60, "'" + "v" * 60 + "_rules', which is 66 bytes"),  # published, then could not be reloaded
    ("w" * 70, "'" + "w" * 70 + "', which is 70 bytes"),  # misreported as a concurrent run
    ("é" * 29, "_rules', which is 64 bytes"),  # 35 characters: bytes count, not characters
    ("h" * 52, "'" + "h" * 52 + "_hierarchies', which is 64 bytes"),
])
def test_postgres_refuses_a_view_name_it_would_cut(con, people, view, culprit):
    msg = refused(con, InputError, view=view, hierarchies={"city": CITY}, qid=["age", "city"])
    assert culprit in msg and "at most 63 bytes" in msg and "view=" in msg


@pytest.mark.engines("postgres")
def test_postgres_refuses_a_default_view_name_it_would_cut(con):
    table = "t" * 60
    run(con, f"CREATE TABLE {quote(table)} AS SELECT i AS id, mod(i, 40) AS age FROM {series(80)}")
    msg = refused(con, InputError, table=table, qid=["age"])
    assert f"'{table}_anon', which is 65 bytes" in msg and "pass view= a shorter name" in msg


@pytest.mark.engines("postgres")
@pytest.mark.parametrize("qi, hierarchical, culprit", [
    ("a" * 62, False, "_min', which is 66 bytes"),  # was: column reference ... is ambiguous
    ("b" * 59, False, "_null', which is 64 bytes"),
    ("c" * 59, True, "_node', which is 64 bytes"),
    ("ß" * 29, False, "_null', which is 63 bytes"),  # 29 two-byte characters + 5: just fits ...
])
def test_postgres_refuses_a_qi_whose_columns_it_would_cut(con, qi, hierarchical, culprit):
    run(con, f"CREATE TABLE t AS SELECT i AS id, mod(i, 4) AS {quote(qi)} FROM {series(80)}")
    hierarchies = {qi: {"*": {"low": ["0", "1"], "high": ["2", "3"]}}} if hierarchical else None
    if qi.startswith("ß"):  # ... so the release is made, and reads back
        release = sqlanon.anonymize(con, "t", qid=[qi], k=4, output="v")
        assert sqlanon.apply(con, release.view, "t", view="again").placed == 80
        return
    msg = refused(con, InputError, table="t", qid=[qi], k=4, hierarchies=hierarchies)
    assert f"a column of QI '{qi}'" in msg and culprit in msg and "rename the column" in msg


@pytest.mark.engines("postgres")
def test_postgres_refuses_a_class_column_it_would_cut(con, people):
    msg = refused(con, InputError, class_column="k" * 64)
    assert "class column" in msg and "64 bytes" in msg and "class_column=" in msg


@pytest.mark.engines("postgres")
def test_postgres_names_of_exactly_63_bytes_work(con, people):
    view = "v" * 51  # v..._hierarchies: 63 bytes
    release = sqlanon.anonymize(con, "people", qid=["age", "city"], k=5, hierarchies={"city": CITY},
                                output=sqlanon.Output(view=view, class_column="c" * 63))
    assert release.hierarchies == view + "_hierarchies"
    applied = sqlanon.apply(con, view, "people", view="a" * 63)
    assert applied.placed == 100 and columns(con, applied.view)[-1] == "c" * 63


@pytest.mark.engines("postgres")
def test_postgres_apply_refuses_an_output_name_it_would_cut(con, people):
    release = sqlanon.anonymize(con, "people", qid=["age"], k=5, output="v")
    before = objects(con)
    with pytest.raises(InputError, match="the recoded table would be named 'xxx.*64 bytes"):
        sqlanon.apply(con, release.view, "people", view="x" * 64)
    usable(con)
    assert objects(con) == before and temp_objects(con) == []


@pytest.mark.engines("postgres")
def test_postgres_apply_with_long_hierarchical_qi_names(con):
    # apply once named a temp table after each hierarchical QI: cut to 63 bytes, two QIs that
    # share their first 35 characters got one name
    a, b = "q" * 50 + "_one", "q" * 50 + "_two"
    run(con, f"CREATE TABLE t AS SELECT i AS id, 'x' || mod(i, 2) AS {quote(a)}, 'y' || mod(i, 3) AS {quote(b)} "
             f"FROM {series(60)}")
    release = sqlanon.anonymize(con, "t", qid=[a, b], k=2,
                                hierarchies={a: {"*": ["x0", "x1"]}, b: {"*": ["y0", "y1", "y2"]}}, output="v")
    applied = sqlanon.apply(con, release.view, "t", view="again")
    assert applied.placed == 60
    assert rows(con, f"SELECT count(*) FROM again a JOIN v USING (id) WHERE a.{quote(a)} = v.{quote(a)} "
                     f"AND a.{quote(b)} = v.{quote(b)}") == [(60,)]


@pytest.mark.engines("duckdb")
def test_duckdb_takes_long_names(con):
    qi, view = "q" * 300, "v" * 300
    run(con, f"CREATE TABLE t AS SELECT i AS id, mod(i, 40) AS {quote(qi)} FROM {series(80)}")
    release = sqlanon.anonymize(con, "t", qid=[qi], k=4, output=view)
    assert sqlanon.apply(con, view, "t", view="again").placed == 80
    assert release.verification.ok and columns(con, view)[1] == qi + "_min"


# -- fail closed, nothing lost ---------------------------------------------------------------
def snapshot(con, table: str):
    """Everything observable about a base table: its rows by their physical address (DuckDB's
    rowid; PostgreSQL's ctid and the transaction that wrote each row version, xmin) and its
    catalog entry and columns."""
    if is_postgres(con):
        data = rows(con, f"SELECT ctid::text, xmin::text, * FROM {quote(table)} ORDER BY ctid")
        meta = rows(con, "SELECT c.oid::bigint, c.relname, c.relkind, c.relpersistence, c.relnatts, c.relfilenode, "
                         "obj_description(c.oid, 'pg_class'), ARRAY(SELECT pg_get_constraintdef(k.oid) FROM pg_constraint k "
                         "WHERE k.conrelid = c.oid ORDER BY k.oid)::text FROM pg_class c "
                         "WHERE c.relname = ? AND c.relnamespace = current_schema()::regnamespace", [table])
        types = rows(con, "SELECT attname, format_type(atttypid, atttypmod), attnotnull FROM pg_attribute "
                          "WHERE attrelid = to_regclass(?) AND attnum > 0 ORDER BY attnum", [quote(table)])
        return data, meta, types
    data = con.execute(f"SELECT rowid, * FROM {quote(table)} ORDER BY rowid").fetchall()
    meta = con.execute(
        "SELECT * EXCLUDE (database_oid, schema_oid) FROM duckdb_tables() WHERE table_name = ?", [table]
    ).fetchall()
    types = con.execute(f"DESCRIBE {quote(table)}").fetchall()
    return data, meta, types


def view_sql(con, view: str) -> list[tuple]:
    """A view's stored definition."""
    if is_postgres(con):
        return rows(con, "SELECT definition FROM pg_views WHERE viewname = ? AND schemaname = current_schema()", [view])
    return rows(con, "SELECT sql FROM duckdb_views() WHERE view_name = ?", [view])


def release_state(con, view: str) -> dict:
    """An earlier release as data: its view definition and output, its rules and row map."""
    return {
        "definition": view_sql(con, view),
        "view": con.execute(f"SELECT * FROM {quote(view)} ORDER BY id").fetchall(),
        "view_columns": columns(con, view),
        "rules": con.execute(f"SELECT * FROM {quote(view + '_rules')} ORDER BY region").fetchall(),
        "rowmap": con.execute(f"SELECT * FROM {quote(view + '_rowmap')} ORDER BY key0").fetchall(),
    }


@pytest.fixture
def mixed(con) -> str:
    """500 rows (490 after a DELETE: physical row addresses with gaps), committed: the tests
    start outside any transaction (PostgreSQL: sqlanon's own transaction, in autocommit)."""
    run(con, "CREATE TABLE mixed (id BIGINT PRIMARY KEY, age BIGINT, day DATE, city VARCHAR, note DOUBLE PRECISION)")
    run(con,
        "INSERT INTO mixed SELECT i AS id, CASE WHEN mod(i, 9) = 0 THEN NULL ELSE mod(i, 37) END AS age, "
        "DATE '2001-01-01' + CAST(mod(i, 100) AS INTEGER) AS day, 'x' || mod(i, 5) AS city, i / 3.0 AS note "
        f"FROM {series(500)}"
    )
    run(con, "DELETE FROM mixed WHERE mod(id, 50) = 7")  # rowids with gaps
    con.commit()
    return "mixed"


@pytest.mark.parametrize("memory_rows", [None, 0])
def test_source_table_is_unchanged(con, mixed, memory_rows):
    before = snapshot(con, mixed)
    release = sqlanon.anonymize(con, mixed, qid=["age", "day", "city"], k=5, hierarchies={"city": CITY},
                                algorithm=sqlanon.Mondrian(strategy=sqlanon.Levels(memory_rows=memory_rows)),
                                output=sqlanon.Output(key="id"))
    assert release.rows == 490
    assert snapshot(con, mixed) == before
    assert temp_objects(con) == []
    database, schema = here(con)
    assert objects(con) - {(database, schema, "mixed", "table")} == {
        (database, schema, "mixed_anon", "view"),
        (database, schema, "mixed_anon_rules", "table"),
        (database, schema, "mixed_anon_rowmap", "table"),
        (database, schema, "mixed_anon_hierarchies", "table"),
    }


def test_source_view_and_its_table_are_unchanged(con, mixed):
    run(con, "CREATE VIEW mixed_v AS SELECT * FROM mixed WHERE id < 400")
    con.commit()
    before = snapshot(con, mixed)
    definition = view_sql(con, "mixed_v")
    assert definition
    release = sqlanon.anonymize(con, "mixed_v", qid=["age", "day"], k=5)
    assert release.materialized
    assert snapshot(con, mixed) == before
    assert view_sql(con, "mixed_v") == definition
    assert temp_objects(con) == []


def _raise_after(real):
    def wrapper(*args, **kwargs):
        real(*args, **kwargs)
        raise RuntimeError("injected failure")
    return wrapper


def _raise(*args, **kwargs):
    raise RuntimeError("injected failure")


# (module, attribute, replacement factory, memory_rows): each crashes at a different step
CRASHES = {
    "encode": (sqlanon.pipeline, "encode", lambda real: _raise, None),
    "run_sql": (sqlanon.mondrian.builder, "repartition", lambda real: _raise, 0),
    "run_memory": (sqlanon.mondrian.builder.Partitioner, "run_memory", lambda real: _raise, None),
    "create_rules": (sqlanon.publish.pipeline, "create_rules", _raise_after, None),
    "rowmap_query": (sqlanon.publish.pipeline, "rowmap_query", _raise_after, None),
    "publish": (sqlanon.publish.pipeline, "publish", _raise_after, None),
    "publish_sql_path": (sqlanon.publish.pipeline, "publish", _raise_after, 0),
}


def no_transaction_left(con) -> None:
    """On PostgreSQL, a run begun outside any transaction leaves none open, and the connection
    as the caller had it (not in autocommit mode)."""
    if is_postgres(con):
        from psycopg import pq

        assert con.info.transaction_status == pq.TransactionStatus.IDLE and not con.autocommit


@pytest.mark.parametrize("step", sorted(CRASHES))
def test_crash_mid_run_publishes_nothing(con, mixed, monkeypatch, step):
    target, attribute, factory, memory_rows = CRASHES[step]
    before_objects, before_source = objects(con), snapshot(con, mixed)
    con.commit()  # PostgreSQL: end the reads' transaction, so the run is in a transaction of its own
    monkeypatch.setattr(target, attribute, factory(getattr(target, attribute)))
    with pytest.raises(RuntimeError, match="injected failure"):
        sqlanon.anonymize(con, mixed, qid=["age", "day"], k=5,
                          algorithm=sqlanon.Mondrian(strategy=sqlanon.Levels(memory_rows=memory_rows)))
    no_transaction_left(con)
    assert temp_objects(con) == []
    assert objects(con) == before_objects
    assert snapshot(con, mixed) == before_source


@pytest.mark.parametrize("step", sorted(CRASHES))
def test_crash_mid_run_keeps_the_earlier_release(con, mixed, monkeypatch, step):
    target, attribute, factory, memory_rows = CRASHES[step]
    earlier = sqlanon.anonymize(con, mixed, qid=["age"], k=5)
    state, before_objects = release_state(con, earlier.view), objects(con)
    con.commit()  # PostgreSQL: end the reads' transaction, so the run is in a transaction of its own
    monkeypatch.setattr(target, attribute, factory(getattr(target, attribute)))
    with pytest.raises(RuntimeError, match="injected failure"):
        sqlanon.anonymize(con, mixed, qid=["age", "day", "city"], k=7, hierarchies={"city": CITY},
                          algorithm=sqlanon.Mondrian(strategy=sqlanon.Levels(memory_rows=memory_rows)),
                          output=sqlanon.Output(replace=True))
    no_transaction_left(con)
    assert temp_objects(con) == []
    assert objects(con) == before_objects
    assert release_state(con, earlier.view) == state
    monkeypatch.undo()
    # and the connection is usable: no transaction left open
    again = sqlanon.anonymize(con, mixed, qid=["age", "day"], k=5, output=sqlanon.Output(replace=True))
    assert again.verification.ok


def failing_verification(**overrides):
    fields = dict(ok=False, k=5, k_achieved=3, classes=10, rows=490, violating=2, columns=("age_min", "age_max"))
    fields.update(overrides)
    result = Verification(**fields)
    return lambda *args, **kwargs: result


@pytest.mark.parametrize(
    ("overrides", "fragment"),
    [
        ({}, "2 equivalence class(es) smaller than k=5 (smallest 3)"),
        ({"violating": 0, "k_achieved": 5, "rows": 489}, "489 published rows for 490 source rows"),
        ({"violating": 0, "k_achieved": 5, "unplaced": 4}, "4 rows without an equivalence class"),
    ],
)
def test_failed_verification_publishes_nothing(con, mixed, monkeypatch, overrides, fragment):
    before = objects(con)
    monkeypatch.setattr(sqlanon.publish.pipeline, "verify", failing_verification(**overrides))
    with pytest.raises(VerificationError) as info:
        sqlanon.anonymize(con, mixed, qid=["age", "day"], k=5)
    assert fragment in str(info.value)
    assert "'mixed_anon'" in str(info.value)
    usable(con)  # PostgreSQL: raised inside the transaction objects() opened
    assert objects(con) == before
    assert temp_objects(con) == []


def test_failed_verification_keeps_the_earlier_release(con, mixed, monkeypatch):
    earlier = sqlanon.anonymize(con, mixed, qid=["age"], k=5)
    state, before = release_state(con, earlier.view), objects(con)
    monkeypatch.setattr(sqlanon.publish.pipeline, "verify", failing_verification())
    with pytest.raises(VerificationError):
        sqlanon.anonymize(con, mixed, qid=["age", "day"], k=5, output=sqlanon.Output(replace=True))
    usable(con)
    assert objects(con) == before
    assert release_state(con, earlier.view) == state
    assert temp_objects(con) == []


def test_no_temp_objects_after_success(con, mixed):
    sqlanon.anonymize(con, mixed, qid=["age", "day", "city"], k=3, hierarchies={"city": CITY})
    sqlanon.anonymize(con, mixed, qid=["age", "day"], k=3,
                      algorithm=sqlanon.Mondrian(strategy=sqlanon.Levels(memory_rows=50)),
                      output=sqlanon.Output(view="second"))
    run(con, "CREATE VIEW mv AS SELECT * FROM mixed")
    sqlanon.anonymize(con, "mv", qid=["age"], k=3)  # the snapshot path
    assert temp_objects(con) == []


def test_temp_objects_exist_during_a_run_and_carry_the_prefix(con, mixed, monkeypatch):
    """The emptiness checks above are meaningful: mid-run, temp_objects() sees the run's tables."""
    seen: list[list[str]] = []
    real = sqlanon.mondrian.builder.Partitioner.run_memory

    def spy(self, *args, **kwargs):
        seen.append(temp_objects(con))
        temporary = ("SELECT relname FROM pg_class WHERE relpersistence = 't' AND relkind IN ('r', 'v', 'p')"
                     if is_postgres(con) else "SELECT table_name FROM duckdb_tables() WHERE temporary "
                     "UNION ALL SELECT view_name FROM duckdb_views() WHERE temporary AND NOT internal")
        seen.append([r[0] for r in con.execute(temporary).fetchall()])
        return real(self, *args, **kwargs)

    monkeypatch.setattr(sqlanon.mondrian.builder.Partitioner, "run_memory", spy)
    sqlanon.anonymize(con, mixed, qid=["age", "day"], k=5)
    ours, all_temporary = seen[0], seen[1]
    assert ours and sorted(all_temporary) == ours
    assert all(re.fullmatch(r"__sqlanon_[0-9a-f]{10}_\w+", name) for name in ours), ours
    assert len({name[:21] for name in ours}) == 1  # one run, one prefix
    assert temp_objects(con) == []


def test_temp_names_do_not_collide_with_user_objects(con, mixed):
    # A user object with the prefix is not ours to drop.
    run(con, "CREATE TABLE __sqlanon_user AS SELECT 1 AS a")
    sqlanon.anonymize(con, mixed, qid=["age"], k=5)
    assert temp_objects(con) == ["__sqlanon_user"]


def begin(con) -> None:
    """Open a transaction as a caller would: DuckDB's ``begin()``; psycopg opens one with the
    first statement (the connection is not in autocommit mode)."""
    if is_postgres(con):
        from psycopg import pq

        con.commit()
        rows(con, "SELECT 1")
        assert con.info.transaction_status == pq.TransactionStatus.INTRANS
    else:
        con.begin()


def test_anonymize_inside_a_caller_transaction(con, mixed):
    begin(con)
    release = sqlanon.anonymize(con, mixed, qid=["age"], k=5)
    con.commit()
    assert con.execute(f"SELECT count(*) FROM {release.view}").fetchone()[0] == 490
    assert temp_objects(con) == []


def test_anonymize_inside_a_caller_transaction_that_rolls_back(con, mixed):
    before = objects(con)
    begin(con)
    sqlanon.anonymize(con, mixed, qid=["age"], k=5)
    con.rollback()
    assert objects(con) == before and temp_objects(con) == []


def test_crash_inside_a_caller_transaction_publishes_nothing(con, mixed, monkeypatch):
    before = objects(con)
    monkeypatch.setattr(sqlanon.publish.pipeline, "publish", _raise_after(sqlanon.publish.pipeline.publish))
    begin(con)
    with pytest.raises(RuntimeError, match="injected failure"):
        sqlanon.anonymize(con, mixed, qid=["age"], k=5)
    usable(con)
    con.commit()
    assert objects(con) == before and temp_objects(con) == []


def test_crash_inside_a_caller_transaction_keeps_the_earlier_release(con, mixed, monkeypatch):
    earlier = sqlanon.anonymize(con, mixed, qid=["age"], k=5)
    state = release_state(con, earlier.view)
    monkeypatch.setattr(sqlanon.publish.pipeline, "publish", _raise_after(sqlanon.publish.pipeline.publish))
    begin(con)
    with pytest.raises((RuntimeError, SqlanonError)):
        sqlanon.anonymize(con, mixed, qid=["age", "day"], k=5, output=sqlanon.Output(replace=True))
    usable(con)
    con.commit()
    assert release_state(con, earlier.view) == state


def _sql_error_after(real):
    """``real`` (whose first argument is the engine), then a statement the database rejects."""
    def wrapper(engine, *args, **kwargs):
        out = real(engine, *args, **kwargs)
        engine.execute("SELECT * FROM __sqlanon_test_no_such_table")
        return out
    return wrapper


# PostgreSQL alone: DuckDB has no savepoints, and a failed statement aborts its caller's transaction
@pytest.mark.engines("postgres")
@pytest.mark.parametrize("step", ["encode", "publish"])
def test_database_error_inside_a_caller_transaction_rolls_back_to_the_call(con, mixed, monkeypatch, step):
    earlier = sqlanon.anonymize(con, mixed, qid=["age"], k=5)
    state = release_state(con, earlier.view)
    begin(con)
    run(con, "CREATE TABLE mine AS SELECT 42 AS answer")
    before = objects(con)
    module = sqlanon.pipeline if step == "encode" else sqlanon.publish.pipeline
    monkeypatch.setattr(module, step, _sql_error_after(getattr(module, step)))
    with pytest.raises(EngineError, match="__sqlanon_test_no_such_table"):
        sqlanon.anonymize(con, mixed, qid=["age", "day"], k=5, output=sqlanon.Output(replace=True))
    usable(con)
    assert objects(con) == before and temp_objects(con) == []
    assert release_state(con, earlier.view) == state
    con.commit()
    assert rows(con, "SELECT answer FROM mine") == [(42,)]
    assert release_state(con, earlier.view) == state


@pytest.mark.engines("postgres")  # psycopg's transaction states; DuckDB's caller transactions are above
@pytest.mark.parametrize("failure", ["input", "crash"])
def test_failure_keeps_the_callers_own_work_in_its_transaction(con, mixed, monkeypatch, failure):
    """sqlanon rolls back to its savepoint, not the caller's transaction: what the caller did
    before the call is still there, and commits."""
    begin(con)
    run(con, "CREATE TABLE mine AS SELECT 42 AS answer")
    run(con, "UPDATE mixed SET city = 'changed' WHERE id = 0")
    if failure == "crash":
        monkeypatch.setattr(sqlanon.publish.pipeline, "publish", _raise_after(sqlanon.publish.pipeline.publish))
    with pytest.raises((RuntimeError, UnknownColumnError)):
        sqlanon.anonymize(con, mixed, qid=["age", "nope" if failure == "input" else "day"], k=5)
    usable(con)
    assert temp_objects(con) == []
    con.commit()
    assert rows(con, "SELECT answer FROM mine") == [(42,)]
    assert rows(con, "SELECT city FROM mixed WHERE id = 0") == [("changed",)]
    assert "mixed_anon" not in {o[2] for o in objects(con)}


@pytest.mark.engines("postgres")  # psycopg's autocommit switch, which sqlanon sets for a call outside a transaction
def test_failure_outside_a_transaction_leaves_the_connection_as_it_was(con, mixed):
    with pytest.raises(UnknownColumnError):
        sqlanon.anonymize(con, mixed, qid=["nope"], k=5)
    no_transaction_left(con)
    with pytest.raises(InputError):
        sqlanon.anonymize(con, mixed, qid=["age"], k=0)
    no_transaction_left(con)
    assert sqlanon.anonymize(con, mixed, qid=["age"], k=5).verification.ok
    no_transaction_left(con)


def test_error_messages_do_not_leak_sql_for_input_errors(con, people):
    # Input errors are about the request; only EngineError carries SQL.
    msg = refused(con, UnknownColumnError, qid=["nope"])
    assert not re.search(r"\bSELECT\b", msg)
