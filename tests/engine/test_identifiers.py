"""Names with quotes, spaces, unicode or SQL fragments are identifiers, never SQL; and a name the
engine would cut (PostgreSQL's 63 bytes) is refused before any work."""

from __future__ import annotations

import pytest

import sqlanon
import sqlanon.datasets
import sqlanon.mondrian.builder
import sqlanon.pipeline
import sqlanon.publish.manifest
import sqlanon.publish.pipeline
from sqlanon import (
    InputError,
    UnknownColumnError,
    UnknownTableError,
)
from tests.support import objects, quote, rows, run, temp_objects
from tests.support.db import CITY, columns, series
from tests.support.refusal import refused, usable

pytestmark = pytest.mark.engines("duckdb", "postgres")


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
