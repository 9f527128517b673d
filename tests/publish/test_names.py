"""The names a release takes and is found by.

* Output names: a view or rules name taken by a table, a view or another release is refused
  (``replace=True`` replaces only an earlier release of the same source, never what it does not
  own or what the source reads); names are compared as the engine compares them (case), in the
  schema they land in.
* A release by name, in its schema: reloaded in exactly the schema that name means, never from
  another schema's release of that name; unqualified names follow the search path.
"""

from __future__ import annotations

import json
import re
from typing import NamedTuple

import duckdb
import pytest

import sqlanon
import sqlanon.datasets
import sqlanon.mondrian.builder
import sqlanon.pipeline
import sqlanon.publish.manifest
import sqlanon.publish.pipeline
from sqlanon import (
    InputError,
    ObjectExistsError,
    SqlanonError,
)
from sqlanon.publish import manifest
from sqlanon.release.regions import load_release
from tests.support import here, is_postgres, make_people, objects, quote, rows, run, temp_objects
from tests.support.db import CITY, columns, series
from tests.support.refusal import refused, usable

pytestmark = pytest.mark.engines("duckdb", "postgres")


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


# -- 10. a release by name, in its schema -----------------------------------------------------------------------
def use_schema(con, schema: str | None) -> None:
    """Make ``schema`` the current one (None: back to the session's default): DuckDB's ``SET
    schema``; PostgreSQL's search_path (the test's own schema by default)."""
    if is_postgres(con):
        run(con, "RESET search_path" if schema is None else f"SET search_path = {quote(schema)}")
    else:
        run(con, "RESET schema" if schema is None else f"SET schema = '{schema}'")


def search_path(con, *schemas: str) -> None:
    """Look unqualified names up in ``schemas``, in order."""
    if is_postgres(con):
        run(con, f"SET search_path = {', '.join(map(quote, schemas))}")
    else:
        run(con, f"SET search_path = '{','.join(schemas)}'")


class TwoSchemas(NamedTuple):
    releases: dict  # "s1" / "s2" -> the Release made there
    names: dict  # "s1" / "s2" -> the schema's name (PostgreSQL: prefixed by the test's schema)
    database: str  # DuckDB: 'memory'; PostgreSQL: the session's database


@pytest.fixture
def two_schemas(con, new_schema):
    """Schemas s1 and s2, each with a table ``src`` and a release ``anon`` of it (k=5 in s1,
    k=20 in s2), made while the schema was the current one; the session is back in its default
    schema (DuckDB's ``main``, the test's own schema on PostgreSQL)."""
    names = {"s1": new_schema("s1"), "s2": new_schema("s2")}
    releases = {}
    for schema, k, marker in (("s1", 5, 1), ("s2", 20, 2)):
        run(con, f"CREATE TABLE {quote(names[schema])}.src AS SELECT i AS id, mod(i, 90) AS age, mod(i, 7) AS zip, "
                 f"'x' || mod(i, 5) AS city, {marker} AS marker FROM {series(400)}")
        use_schema(con, names[schema])
        releases[schema] = sqlanon.anonymize(con, "src", qid=["age", "zip", "city"], k=k, hierarchies={"city": CITY},
                                             selections=["age > 30"], output=sqlanon.Output(view="anon"))
    use_schema(con, None)
    return TwoSchemas(releases, names, here(con)[0])


@pytest.mark.parametrize(("schema", "k"), [("s1", 5), ("s2", 20)])
def test_same_release_name_in_two_schemas(con, two_schemas, schema, k):
    s, database = two_schemas.names[schema], two_schemas.database
    name = f"{s}.anon"
    for given in (name, f"{database}.{s}.anon", f"{s}.anon_rules", two_schemas.releases[schema]):
        m = manifest.read(con, given) if isinstance(given, str) else load_release(con, given)
        assert (m.k, m.catalog, m.schema) == (k, database, s)
    rules = con.execute(f"SELECT count(*) FROM {quote(s)}.anon_rules").fetchone()[0]
    metrics = sqlanon.metrics(con, name)
    classes = con.execute(f"SELECT count(*) FROM {quote(s)}.anon_rules WHERE size > 0").fetchone()[0]
    assert (metrics.k, metrics.classes) == (k, classes)
    assert metrics.k_achieved >= k
    report = json.loads(sqlanon.report(con, name, format="json"))
    assert report["requirement"]["k"] == k and report["verification"]["ok"]
    assert {o["role"]: o["rows"] for o in report["objects"]}["rules"] == rules
    applied = sqlanon.apply(con, name, f"{s}.src", view=f"recoded_{schema}")
    assert applied.placed == 400
    assert con.execute(f"SELECT count(DISTINCT eq_class) FROM recoded_{schema}").fetchone()[0] == metrics.classes
    points = sqlanon.regions(con, name, as_frame=True)
    assert len(points) == 400 and points["eq_class"].nunique() == metrics.classes
    result = sqlanon.imprecision(con, name, "age > 40").predicates[0]
    expected = con.execute(f"SELECT sum(size) FROM {quote(s)}.anon_rules WHERE age_max >= 41").fetchone()[0]
    true = con.execute(f"SELECT count(*) FROM {quote(s)}.src WHERE age > 40").fetchone()[0]
    assert (result.returned, result.true) == (expected, true)
    sql = sqlanon.rewrite("SELECT count(*) FROM src WHERE age > 40", name, con=con)
    assert f'"{s}"."anon"' in sql and con.execute(sql).fetchone()[0] == expected


def test_a_release_reloads_where_it_was_made_after_the_schema_changed(con, two_schemas):
    use_schema(con, two_schemas.names["s2"])
    assert sqlanon.metrics(con, two_schemas.releases["s1"]).k == 5  # the Release object remembers s1
    assert sqlanon.metrics(con, "anon").k == 20  # the name means s2.anon here
    assert sqlanon.rewrite("SELECT count(*) FROM src", "anon", con=con) == 'SELECT COUNT(*) FROM "anon"'


def test_an_unqualified_name_follows_the_search_path(con, two_schemas):
    s1, s2 = two_schemas.names["s1"], two_schemas.names["s2"]
    with pytest.raises(InputError, match="'anon' is not a sqlanon release"):
        sqlanon.metrics(con, "anon")  # in main, no anon: the other schemas are not on the path
    search_path(con, s2, s1)
    assert sqlanon.metrics(con, "anon").k == 20
    search_path(con, s1, s2)
    assert sqlanon.metrics(con, "anon").k == 5


def test_the_first_object_on_the_path_is_the_one_read(con, two_schemas, new_schema):
    """Like DuckDB and PostgreSQL, the lookup stops at the first schema holding the name: a view
    named like the rules there is not a release, and s2's release behind it is not read instead."""
    s0, s1, s2 = new_schema("s0"), two_schemas.names["s1"], two_schemas.names["s2"]
    run(con, f"CREATE VIEW {quote(s0)}.anon_rules AS SELECT * FROM {quote(s1)}.anon_rules")
    search_path(con, s0, s2)
    found = re.escape(f"found view {two_schemas.database}.{s0}.anon_rules")
    with pytest.raises(InputError, match=f"not a sqlanon release.*{found}"):
        manifest.read(con, "anon")
    assert manifest.read(con, f"{s2}.anon").k == 20


def test_release_made_from_a_qualified_source_with_a_dotted_view_name(con, two_schemas):
    s1, database = two_schemas.names["s1"], two_schemas.database
    release = sqlanon.anonymize(con, f"{s1}.src", qid=["age"], k=7, output=sqlanon.Output(view=f"{s1}.other"))
    assert manifest.read(con, release.view).k == 7  # today the whole name: main."s1.other"
    assert sqlanon.metrics(con, release).k == 7
    assert manifest.read(con, f"{s1}.anon").k == 5 and manifest.read(con, f"{database}.{s1}.anon").k == 5


@pytest.mark.engines("duckdb")  # DuckDB's ATTACH, USE, temp catalog; PostgreSQL's lookup: the test below
@pytest.mark.parametrize("setup", [
    [],
    ["SET schema = 's1'"],
    ["SET search_path = 's2,s1'"],
    ["CREATE TEMP TABLE t AS SELECT 9 AS marker"],
    ["SET schema = 's1'", "DROP TABLE s1.t"],
    ["USE other"],
    ["USE other", "DROP TABLE other.main.t", "USE other.x"],
    ["SET search_path = 'other.x,s2'"],
    ["SET search_path = '\"s1\",main'"],
    ["CREATE TEMP TABLE t AS SELECT 9 AS marker", "SET schema = 's2'"],
    ["USE other.x", "SET search_path = 'memory.s1'"],
])
def test_name_resolution_agrees_with_duckdb(con, setup):
    from sqlanon.engine import engine_for

    con.execute("ATTACH ':memory:' AS other")
    con.execute("CREATE SCHEMA s1; CREATE SCHEMA s2; CREATE SCHEMA other.x")
    for marker, where in enumerate(["main", "s1", "s2", "other.main", "other.x"]):
        con.execute(f"CREATE TABLE {where}.t AS SELECT {marker} AS marker")
    for statement in setup:
        con.execute(statement)
    names = {0: ("memory", "main"), 1: ("memory", "s1"), 2: ("memory", "s2"), 3: ("other", "main"),
             4: ("other", "x"), 9: ("temp", "main")}
    for name in ("t", "s2.t", "x.t", "main.t", "other.t", "memory.t", "other.x.t", "memory.s1.t"):
        try:
            marker = con.execute(f"SELECT marker FROM {name}").fetchone()[0]
        except duckdb.CatalogException:
            marker = None
        hit = engine_for(con).find(name)
        assert (hit and (hit.catalog, hit.schema)) == names.get(marker), name


@pytest.mark.engines("postgres")  # PostgreSQL's search_path and pg_temp; DuckDB's lookup: the test above
@pytest.mark.parametrize("setup", [
    [],
    ["SET search_path = {s1}"],
    ["SET search_path = {s2}, {s1}"],
    ["CREATE TEMP TABLE t AS SELECT 9 AS marker"],  # the temp schema comes first unless listed
    ["CREATE TEMP TABLE t AS SELECT 9 AS marker", "SET search_path = {s2}"],
    ["CREATE TEMP TABLE t AS SELECT 9 AS marker", "SET search_path = {s1}, pg_temp"],
    ["SET search_path = {s1}", "DROP TABLE {s1}.t"],
    ['SET search_path = nosuch, "$user", {s2}'],  # schemas that do not exist are skipped
    ["DROP TABLE {main}.t", "SET search_path = {main}, {s2}"],
])
def test_name_resolution_agrees_with_postgres(con, new_schema, setup):
    from psycopg import errors

    from sqlanon.engine import engine_for

    database, main = here(con)
    s1, s2 = new_schema("s1"), new_schema("s2")
    for marker, where in enumerate([main, s1, s2]):
        run(con, f"CREATE TABLE {quote(where)}.t AS SELECT {marker} AS marker")
    for statement in setup:
        run(con, statement.format(main=quote(main), s1=quote(s1), s2=quote(s2)))
    names = {0: (database, main), 1: (database, s1), 2: (database, s2), 9: (database, "pg_temp")}
    for name in ("t", f"{s2}.t", f"{s1}.t", f"{main}.t", "pg_temp.t", f"{database}.{s1}.t", f"{database}.t",
                 "nosuch.t", f"other_database.{s1}.t"):
        try:
            with con.transaction():  # a savepoint: a name PostgreSQL cannot bind leaves the test's transaction usable
                marker = con.execute("SELECT marker FROM " + ".".join(map(quote, name.split(".")))).fetchone()[0]
        except (errors.UndefinedTable, errors.FeatureNotSupported):
            marker = None
        hit = engine_for(con).find(name)
        assert (hit and (hit.catalog, hit.schema)) == names.get(marker), name
