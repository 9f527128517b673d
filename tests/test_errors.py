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
from conftest import make_people, objects, quote, temp_objects

import sqlanon
import sqlanon.api
import sqlanon.publish.pipeline
import sqlanon.mondrian.builder
from sqlanon import (
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

CITY = {"*": {"x0-1": ["x0", "x1"], "x2-4": ["x2", "x3", "x4"]}}


@pytest.fixture
def people(con) -> str:
    return make_people(con, 100)


def refused(con, exc: type[SqlanonError], table: str = "people", **kwargs) -> str:
    """Call anonymize, expecting exactly ``exc``; check nothing was written; return the message."""
    before = objects(con)
    args = {"table": table, "qid": ["age", "zip"], "k": 5}
    args.update(kwargs)
    with pytest.raises(SqlanonError) as info:
        sqlanon.anonymize(con, **args)
    assert type(info.value) is exc, f"{type(info.value).__name__}: {info.value}"
    assert objects(con) == before
    assert temp_objects(con) == []
    return str(info.value)


# -- the source table and the QI list --------------------------------------------------------
def test_unknown_table_lists_tables_and_suggests(con, people):
    con.execute("CREATE TABLE orders(x INTEGER)")
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
    con.execute("CREATE TABLE empty(a INTEGER)")
    msg = refused(con, InputError, table="empty", qid=["a"], k=1)
    assert "0 rows" in msg


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


def test_unsupported_type_is_fine_as_a_non_qi(con):
    con.execute("CREATE TABLE odd AS SELECT i AS id, 'ab'::BLOB AS blob, [i] AS l FROM range(20) t(i)")
    release = sqlanon.anonymize(con, "odd", qid=["id"], k=5)
    assert con.execute(f"SELECT count(*) FROM {release.view} WHERE blob = 'ab'::BLOB").fetchone()[0] == 20


# -- hierarchies -----------------------------------------------------------------------------
def test_hierarchy_missing_values_names_them(con, people):
    msg = refused(con, HierarchyError, qid=["age", "city"],
                  hierarchies={"city": {"*": {"x0-1": ["x0", "x1"], "x2": ["x2"]}}})
    assert "'city'" in msg
    assert "2 value(s)" in msg
    assert "'x3'" in msg and "'x4'" in msg
    assert "'x0'" not in msg and "'x2'" not in msg


def test_hierarchy_missing_many_values_is_summarised(con):
    con.execute("CREATE TABLE t AS SELECT i AS id, 'v' || lpad(i::VARCHAR, 3, '0') AS c FROM range(30) t(i)")
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


def test_malformed_hierarchy_table_is_named(con, people):
    con.execute("CREATE TABLE h AS SELECT * FROM (VALUES ('x0', '*'), ('x0', '*')) t(leaf, root)")
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
        con.execute("CREATE TABLE city_h(leaf VARCHAR, l1 VARCHAR, root VARCHAR)")
        con.executemany("INSERT INTO city_h VALUES (?, ?, ?)", rows)
        h = "city_h"
    release = sqlanon.anonymize(con, "people", qid=["city"], k=5, hierarchies={"city": h})
    # 20 rows per city: the hierarchy is split down to the leaves
    assert release.partitions == 5
    assert con.execute(f"SELECT count(*) FROM {release.view} WHERE city LIKE 'x_'").fetchone()[0] == 100


# -- output names ----------------------------------------------------------------------------
@pytest.mark.parametrize("suffix", ["", "_rules", "_rowmap"])
def test_output_name_taken_by_a_table(con, people, suffix):
    con.execute(f"CREATE TABLE {quote('people_anon' + suffix)}(a INTEGER)")
    msg = refused(con, ObjectExistsError)
    assert repr("people_anon" + suffix) in msg and "replace=True" in msg


@pytest.mark.parametrize("suffix", ["", "_rules", "_rowmap"])
def test_output_name_taken_by_a_view(con, people, suffix):
    con.execute(f"CREATE VIEW {quote('people_anon' + suffix)} AS SELECT 1 AS a")
    msg = refused(con, ObjectExistsError)
    assert repr("people_anon" + suffix) in msg and "view" in msg


def test_explicit_view_name_taken(con, people):
    con.execute("CREATE VIEW published AS SELECT 1 AS a")
    msg = refused(con, ObjectExistsError, view="published")
    assert "'published'" in msg


def test_replace_overwrites_an_earlier_release(con, people):
    first = sqlanon.anonymize(con, "people", qid=["age"], k=5)
    refused(con, ObjectExistsError, qid=["age", "zip"])
    second = sqlanon.anonymize(con, "people", qid=["age", "zip"], k=5, replace=True)
    assert second.view == first.view
    columns = [r[0] for r in con.execute(f"DESCRIBE {second.view}").fetchall()]
    assert columns == ["id", "age_min", "age_max", "zip_min", "zip_max", "city", "salary", "eq_class"]
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
    con.execute(ddl)
    before = objects(con)
    msg = refused(con, ObjectExistsError, replace=True)
    assert repr(name) in msg and "not an object of a sqlanon release" in msg
    assert objects(con) == before


def test_replace_never_drops_the_table_behind_a_source_view(con, people):
    """anonymize(con, "src_view", view="base_table", replace=True) must not destroy the raw data."""
    con.execute("CREATE VIEW src_view AS SELECT * FROM people")
    refused(con, ObjectExistsError, table="src_view", view="people", replace=True)
    assert con.execute("SELECT count(*) FROM people").fetchone()[0] == 100


def test_replace_never_overwrites_another_release(con, people):
    first = sqlanon.anonymize(con, "people", qid=["age"], k=5, view="first")
    msg = refused(con, ObjectExistsError, view="first_rules", replace=True)
    assert "'first_rules'" in msg
    assert sqlanon.verify(con, first.view, ["age"], 5, class_column="eq_class").ok
    assert con.execute("SELECT count(*) FROM first_rules").fetchone()[0] == first.regions


def test_replace_never_drops_a_release_the_source_reads(con, people):
    first = sqlanon.anonymize(con, "people", qid=["age"], k=5, view="first")
    con.execute("CREATE VIEW over_first AS SELECT * FROM first")
    refused(con, ObjectExistsError, table="over_first", qid=["age_min"], view="first", replace=True)
    assert sqlanon.verify(con, first.view, ["age"], 5, class_column="eq_class").ok


def test_replace_never_drops_a_hierarchy_table(con, people):
    con.execute("CREATE TABLE people_anon_hierarchies AS SELECT 'x' || i AS leaf, '*' AS root FROM range(5) t(i)")
    refused(con, ObjectExistsError, qid=["city"], hierarchies={"city": "people_anon_hierarchies"}, replace=True)
    assert con.execute("SELECT count(*) FROM people_anon_hierarchies").fetchone()[0] == 5


@pytest.mark.parametrize("replace", ["yes", 1, None])
def test_replace_must_be_a_bool(con, people, replace):
    msg = refused(con, InputError, replace=replace)
    assert "replace must be True or False" in msg


def test_replace_a_release_drops_what_it_no_longer_needs(con, people):
    sqlanon.anonymize(con, "people", qid=["age", "city"], k=5, hierarchies={"city": {"*": [f"x{i}" for i in range(5)]}})
    con.execute("CREATE VIEW pv AS SELECT * FROM people")
    second = sqlanon.anonymize(con, "pv", qid=["age"], k=5, view="people_anon", replace=True)
    assert second.materialized
    names = {o[2] for o in objects(con)}
    assert "people_anon_rowmap" not in names and "people_anon_hierarchies" not in names


def test_replace_over_a_table_named_like_the_view_fails_closed(con, people):
    """A refused replace leaves everything as it was."""
    con.execute("CREATE TABLE people_anon(a INTEGER)")
    con.execute("INSERT INTO people_anon VALUES (7)")
    before = objects(con)
    try:
        sqlanon.anonymize(con, "people", qid=["age"], k=5, replace=True)
    except SqlanonError:
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
    refused(con, ObjectExistsError, view="PEOPLE", replace=replace)


def test_view_name_taken_up_to_case_is_refused(con, people):
    con.execute("CREATE TABLE people_anon(a INTEGER)")
    refused(con, ObjectExistsError, view="People_Anon")


def test_view_name_of_a_new_object_is_not_refused_by_other_schemas(con, people):
    con.execute("CREATE SCHEMA other")
    con.execute("CREATE TABLE other.people_anon(a INTEGER)")
    release = sqlanon.anonymize(con, "people", qid=["age"], k=5)
    assert con.execute(f"SELECT count(*) FROM main.{release.view}").fetchone()[0] == 100


def test_source_in_another_schema_detects_collision_in_current_schema(con):
    con.execute("CREATE SCHEMA s")
    make_people(con, 50, name="t")
    con.execute("CREATE TABLE s.t AS SELECT * FROM main.t")
    con.execute("DROP TABLE main.t")
    con.execute("CREATE TABLE main.t_anon(a INTEGER)")
    refused(con, ObjectExistsError, table="s.t", qid=["age"])


def test_source_in_another_schema_ignores_names_there(con):
    con.execute("CREATE SCHEMA s")
    con.execute("CREATE TABLE s.u AS SELECT i AS id, i % 50 AS age FROM range(50) t(i)")
    con.execute("CREATE TABLE s.u_anon(a INTEGER)")
    release = sqlanon.anonymize(con, "s.u", qid=["age"], k=5)
    assert con.execute(f"SELECT count(*) FROM main.{quote(release.view)}").fetchone()[0] == 50


def test_temp_source_detects_collision_in_current_schema(con):
    con.execute("CREATE TEMP TABLE tt AS SELECT i AS id, i % 50 AS age FROM range(50) t(i)")
    con.execute("CREATE TABLE tt_anon(a INTEGER)")
    refused(con, ObjectExistsError, table="tt", qid=["age"])


@pytest.mark.parametrize("view", ["", 3])
def test_bad_view_name(con, people, view):
    msg = refused(con, InputError, view=view)
    assert "view" in msg


@pytest.mark.parametrize("clash", ["age_min", "age_max", "zip_min"])
def test_non_qi_column_named_like_a_published_column(con, clash):
    con.execute(f"CREATE TABLE t AS SELECT i AS id, i % 50 AS age, i % 7 AS zip, i AS {quote(clash)} "
                "FROM range(50) t(i)")
    msg = refused(con, ObjectExistsError, table="t")
    assert repr(clash) in msg and "duplicate" in msg


def test_qi_named_like_a_published_column_of_another_qi_is_not_a_clash(con):
    # 'zip_min' is a QI itself, so it is replaced by zip_min_min/zip_min_max: no duplicate.
    con.execute("CREATE TABLE t AS SELECT i AS id, i % 50 AS age, i % 7 AS age_max_x, i % 3 AS zip_min "
                "FROM range(60) t(i)")
    release = sqlanon.anonymize(con, "t", qid=["age", "zip_min"], k=5)
    columns = [r[0] for r in con.execute(f"DESCRIBE {release.view}").fetchall()]
    assert columns == ["id", "age_min", "age_max", "age_max_x", "zip_min_min", "zip_min_max", "eq_class"]


def test_non_qi_column_clash_up_to_case(con):
    con.execute('CREATE TABLE t AS SELECT i AS id, i % 50 AS age, i % 7 AS "AGE_MIN" FROM range(50) t(i)')
    refused(con, ObjectExistsError, table="t", qid=["age"])


def test_hierarchical_qi_named_eq_class(con):
    """The class column's name is derived around the user's columns (issue: ordinary names)."""
    con.execute("CREATE TABLE t AS SELECT i AS id, 'c' || (i % 3) AS eq_class FROM range(60) t(i)")
    release = sqlanon.anonymize(con, "t", qid=["eq_class"], k=5, hierarchies={"eq_class": {"*": ["c0", "c1", "c2"]}})
    assert release.class_column == "eq_class_1" and release.verification.ok
    columns = [r[0] for r in con.execute(f"DESCRIBE {release.view}").fetchall()]
    assert columns == ["id", "eq_class", "eq_class_1"]


@pytest.mark.parametrize(("memory_rows", "shown"), [(-1, "got -1"), ("10", "got '10'"), (1.5, "got 1.5"), (True, "got True")])
def test_bad_memory_rows(con, people, memory_rows, shown):
    msg = refused(con, InputError, memory_rows=memory_rows)
    assert "memory_rows" in msg and shown in msg


def test_memory_rows_zero_is_allowed(con, people):
    release = sqlanon.anonymize(con, "people", qid=["age", "zip"], k=5, memory_rows=0)
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
    con.execute(
        f"CREATE TABLE {quote(WEIRD_TABLE)} AS SELECT i AS id, (i % 13)::INTEGER AS {zip_code}, "
        f"(i % 90)::INTEGER AS {age}, 'v' || (i % 4) AS {its}, 'note ' || i AS {note} FROM range(200) t(i)"
    )
    return WEIRD_TABLE


@pytest.mark.parametrize("view", [None, 'my "view\'s" ünï', "x; DROP TABLE t; --", "a.b"])
def test_quotes_spaces_and_unicode_just_work(con, weird, view):
    hierarchy = {"*": {"a'b\"": ["v0", "v1"], "c d": ["v2", "v3"]}}
    release = sqlanon.anonymize(con, weird, qid=list(WEIRD_COLUMNS), k=5, view=view,
                                hierarchies={"it's": hierarchy}, key="id")
    expected_view = view if view is not None else WEIRD_TABLE + "_anon"
    assert release.view == expected_view
    assert release.rules == expected_view + "_rules"
    assert release.rowmap == expected_view + "_rowmap"
    assert release.table == WEIRD_TABLE
    assert release.qid == WEIRD_COLUMNS
    columns = [r[0] for r in con.execute(f"DESCRIBE {quote(release.view)}").fetchall()]
    assert columns == ["id", "zip code_min", "zip code_max", "âge_min", "âge_max", "it's", "no te;", "eq_class"]
    assert con.execute(f"SELECT count(*) FROM {quote(release.view)}").fetchone()[0] == 200
    labels = {r[0] for r in con.execute(f'SELECT DISTINCT "it\'s" FROM {quote(release.view)}').fetchall()}
    assert labels <= {"v0", "v1", "v2", "v3", "a'b\"", "c d", "*"}
    check = sqlanon.verify(con, release.view, list(WEIRD_COLUMNS), 5, class_column="eq_class")
    assert check.ok and check.rows == 200
    assert check.columns == ("zip code_min", "zip code_max", "âge_min", "âge_max", "it's")
    assert temp_objects(con) == []


def test_injection_as_a_table_name(con):
    con.execute("CREATE TABLE t AS SELECT i AS a FROM range(10) t(i)")
    before = objects(con)
    for name in ("x; DROP TABLE t; --", 't"; DROP TABLE t; --', "t; DROP TABLE t"):
        with pytest.raises(UnknownTableError) as info:
            sqlanon.anonymize(con, name, qid=["a"], k=2)
        assert repr(name) in str(info.value)
    assert objects(con) == before
    assert con.execute("SELECT count(*) FROM t").fetchone()[0] == 10


def test_injection_as_a_column_name(con):
    con.execute("CREATE TABLE t AS SELECT i AS a FROM range(10) t(i)")
    with pytest.raises(UnknownColumnError):
        sqlanon.anonymize(con, "t", qid=['a" FROM t; DROP TABLE t; --'], k=2)
    assert con.execute("SELECT count(*) FROM t").fetchone()[0] == 10


def test_injection_in_data_values_and_hierarchy_labels(con):
    evil = "x'); DROP TABLE t; --"
    con.execute("CREATE TABLE t(id INTEGER, c VARCHAR)")
    con.executemany("INSERT INTO t VALUES (?, ?)", [(i, evil if i % 2 else "ok") for i in range(20)])
    release = sqlanon.anonymize(con, "t", qid=["c"], k=5, hierarchies={"c": {"*": {evil + "'": [evil, "ok"]}}})
    assert release.partitions == 2
    assert con.execute("SELECT count(*) FROM t").fetchone()[0] == 20
    assert con.execute(f"SELECT count(*) FROM {release.view} WHERE c = ?", [evil]).fetchone()[0] == 10


def test_schema_qualified_source(con):
    con.execute("CREATE SCHEMA s")
    con.execute("CREATE TABLE s.people AS SELECT i AS id, i % 40 AS age FROM range(80) t(i)")
    release = sqlanon.anonymize(con, "s.people", qid=["age"], k=4)
    assert release.table == "people"
    assert con.execute(f"SELECT count(*) FROM {release.view}").fetchone()[0] == 80


# -- fail closed, nothing lost ---------------------------------------------------------------
def snapshot(con, table: str):
    """Everything observable about a base table: its rows by rowid and its catalog entry."""
    rows = con.execute(f"SELECT rowid, * FROM {quote(table)} ORDER BY rowid").fetchall()
    meta = con.execute(
        "SELECT * EXCLUDE (database_oid, schema_oid) FROM duckdb_tables() WHERE table_name = ?", [table]
    ).fetchall()
    columns = con.execute(f"DESCRIBE {quote(table)}").fetchall()
    return rows, meta, columns


def release_state(con, view: str) -> dict:
    """An earlier release as data: its view definition and output, its rules and row map."""
    return {
        "definition": con.execute("SELECT sql FROM duckdb_views() WHERE view_name = ?", [view]).fetchall(),
        "view": con.execute(f"SELECT * FROM {quote(view)} ORDER BY id").fetchall(),
        "view_columns": con.execute(f"DESCRIBE {quote(view)}").fetchall(),
        "rules": con.execute(f"SELECT * FROM {quote(view + '_rules')} ORDER BY region").fetchall(),
        "rowmap": con.execute(f"SELECT * FROM {quote(view + '_rowmap')} ORDER BY key0").fetchall(),
    }


@pytest.fixture
def mixed(con) -> str:
    con.execute("CREATE TABLE mixed (id BIGINT PRIMARY KEY, age BIGINT, day DATE, city VARCHAR, note DOUBLE)")
    con.execute(
        "INSERT INTO mixed SELECT i AS id, CASE WHEN i % 9 = 0 THEN NULL ELSE i % 37 END AS age, "
        "DATE '2001-01-01' + (i % 100)::INTEGER AS day, 'x' || (i % 5) AS city, i / 3.0 AS note "
        "FROM range(500) t(i)"
    )
    con.execute("DELETE FROM mixed WHERE id % 50 = 7")  # rowids with gaps
    return "mixed"


@pytest.mark.parametrize("memory_rows", [None, 0])
def test_source_table_is_unchanged(con, mixed, memory_rows):
    before = snapshot(con, mixed)
    release = sqlanon.anonymize(con, mixed, qid=["age", "day", "city"], k=5, memory_rows=memory_rows,
                                hierarchies={"city": CITY}, key="id")
    assert release.rows == 490
    assert snapshot(con, mixed) == before
    assert temp_objects(con) == []
    assert objects(con) - {("memory", "main", "mixed", "table")} == {
        ("memory", "main", "mixed_anon", "view"),
        ("memory", "main", "mixed_anon_rules", "table"),
        ("memory", "main", "mixed_anon_rowmap", "table"),
        ("memory", "main", "mixed_anon_hierarchies", "table"),
    }


def test_source_view_and_its_table_are_unchanged(con, mixed):
    con.execute("CREATE VIEW mixed_v AS SELECT * FROM mixed WHERE id < 400")
    before = snapshot(con, mixed)
    definition = con.execute("SELECT sql FROM duckdb_views() WHERE view_name = 'mixed_v'").fetchall()
    release = sqlanon.anonymize(con, "mixed_v", qid=["age", "day"], k=5)
    assert release.materialized
    assert snapshot(con, mixed) == before
    assert con.execute("SELECT sql FROM duckdb_views() WHERE view_name = 'mixed_v'").fetchall() == definition
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
    "encode": (sqlanon.api, "encode", lambda real: _raise, None),
    "run_sql": (sqlanon.mondrian.builder, "repartition", lambda real: _raise, 0),
    "run_memory": (sqlanon.mondrian.builder.Partitioner, "run_memory", lambda real: _raise, None),
    "create_rules": (sqlanon.publish.pipeline, "create_rules", _raise_after, None),
    "create_rowmap": (sqlanon.publish.pipeline, "create_rowmap", _raise_after, None),
    "publish": (sqlanon.publish.pipeline, "publish", _raise_after, None),
    "publish_sql_path": (sqlanon.publish.pipeline, "publish", _raise_after, 0),
}


@pytest.mark.parametrize("step", sorted(CRASHES))
def test_crash_mid_run_publishes_nothing(con, mixed, monkeypatch, step):
    target, attribute, factory, memory_rows = CRASHES[step]
    before_objects, before_source = objects(con), snapshot(con, mixed)
    monkeypatch.setattr(target, attribute, factory(getattr(target, attribute)))
    with pytest.raises(RuntimeError, match="injected failure"):
        sqlanon.anonymize(con, mixed, qid=["age", "day"], k=5, memory_rows=memory_rows)
    assert temp_objects(con) == []
    assert objects(con) == before_objects
    assert snapshot(con, mixed) == before_source


@pytest.mark.parametrize("step", sorted(CRASHES))
def test_crash_mid_run_keeps_the_earlier_release(con, mixed, monkeypatch, step):
    target, attribute, factory, memory_rows = CRASHES[step]
    earlier = sqlanon.anonymize(con, mixed, qid=["age"], k=5)
    state, before_objects = release_state(con, earlier.view), objects(con)
    monkeypatch.setattr(target, attribute, factory(getattr(target, attribute)))
    with pytest.raises(RuntimeError, match="injected failure"):
        sqlanon.anonymize(con, mixed, qid=["age", "day", "city"], k=7, memory_rows=memory_rows,
                          hierarchies={"city": CITY}, replace=True)
    assert temp_objects(con) == []
    assert objects(con) == before_objects
    assert release_state(con, earlier.view) == state
    monkeypatch.undo()
    # and the connection is usable: no transaction left open
    again = sqlanon.anonymize(con, mixed, qid=["age", "day"], k=5, replace=True)
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
    assert objects(con) == before
    assert temp_objects(con) == []


def test_failed_verification_keeps_the_earlier_release(con, mixed, monkeypatch):
    earlier = sqlanon.anonymize(con, mixed, qid=["age"], k=5)
    state, before = release_state(con, earlier.view), objects(con)
    monkeypatch.setattr(sqlanon.publish.pipeline, "verify", failing_verification())
    with pytest.raises(VerificationError):
        sqlanon.anonymize(con, mixed, qid=["age", "day"], k=5, replace=True)
    assert objects(con) == before
    assert release_state(con, earlier.view) == state
    assert temp_objects(con) == []


def test_no_temp_objects_after_success(con, mixed):
    sqlanon.anonymize(con, mixed, qid=["age", "day", "city"], k=3, hierarchies={"city": CITY})
    sqlanon.anonymize(con, mixed, qid=["age", "day"], k=3, memory_rows=50, view="second")
    con.execute("CREATE VIEW mv AS SELECT * FROM mixed")
    sqlanon.anonymize(con, "mv", qid=["age"], k=3)  # the snapshot path
    assert temp_objects(con) == []


def test_temp_objects_exist_during_a_run_and_carry_the_prefix(con, mixed, monkeypatch):
    """The emptiness checks above are meaningful: mid-run, temp_objects() sees the run's tables."""
    seen: list[list[str]] = []
    real = sqlanon.mondrian.builder.Partitioner.run_memory

    def spy(self, *args, **kwargs):
        seen.append(temp_objects(con))
        seen.append([r[0] for r in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE temporary").fetchall()])
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
    con.execute("CREATE TABLE __sqlanon_user AS SELECT 1 AS a")
    sqlanon.anonymize(con, mixed, qid=["age"], k=5)
    assert temp_objects(con) == ["__sqlanon_user"]


def test_anonymize_inside_a_caller_transaction(con, mixed):
    con.begin()
    release = sqlanon.anonymize(con, mixed, qid=["age"], k=5)
    con.commit()
    assert con.execute(f"SELECT count(*) FROM {release.view}").fetchone()[0] == 490
    assert temp_objects(con) == []


def test_anonymize_inside_a_caller_transaction_that_rolls_back(con, mixed):
    before = objects(con)
    con.begin()
    sqlanon.anonymize(con, mixed, qid=["age"], k=5)
    con.rollback()
    assert objects(con) == before and temp_objects(con) == []


def test_crash_inside_a_caller_transaction_publishes_nothing(con, mixed, monkeypatch):
    before = objects(con)
    monkeypatch.setattr(sqlanon.publish.pipeline, "publish", _raise_after(sqlanon.publish.pipeline.publish))
    con.begin()
    with pytest.raises(RuntimeError, match="injected failure"):
        sqlanon.anonymize(con, mixed, qid=["age"], k=5)
    con.commit()
    assert objects(con) == before and temp_objects(con) == []


def test_crash_inside_a_caller_transaction_keeps_the_earlier_release(con, mixed, monkeypatch):
    earlier = sqlanon.anonymize(con, mixed, qid=["age"], k=5)
    state = release_state(con, earlier.view)
    monkeypatch.setattr(sqlanon.publish.pipeline, "publish", _raise_after(sqlanon.publish.pipeline.publish))
    con.begin()
    with pytest.raises((RuntimeError, SqlanonError)):
        sqlanon.anonymize(con, mixed, qid=["age", "day"], k=5, replace=True)
    con.commit()
    assert release_state(con, earlier.view) == state


def test_error_messages_do_not_leak_sql_for_input_errors(con, people):
    # Input errors are about the request; only EngineError carries SQL.
    msg = refused(con, UnknownColumnError, qid=["nope"])
    assert not re.search(r"\bSELECT\b", msg)
