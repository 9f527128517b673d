"""Every bad request refused up front, as a library error.

Each bad input below is refused with the specific :class:`sqlanon.SqlanonError` subclass (an
:class:`sqlanon.InputError` where the request is at fault), with a message naming the culprit,
*before* anything is created in the database and before the partitioning: the catalog is
unchanged and no ``__sqlanon_`` temp object is left (:mod:`tests.support.refusal`). The source
table and its QIs; hierarchies; a wrong ``con``; a malformed ``qid``, ``progress``,
``constraints`` or other parameter; a cyclic or runaway hierarchy; a selection nested too deeply
to parse; float QIs holding inf or NaN; a read-only database. Numpy integers are integers.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import resource
import signal
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest

import sqlanon
import sqlanon.datasets
import sqlanon.mondrian.builder
import sqlanon.pipeline
import sqlanon.publish.manifest
import sqlanon.publish.pipeline
from sqlanon import (
    HierarchyError,
    InputError,
    SelectionError,
    UnknownColumnError,
    UnknownTableError,
    UnsupportedTypeError,
    load_hierarchy,
)
from sqlanon.model.hierarchy import Hierarchy
from sqlanon.model.qi import QI
from sqlanon.model.selection import parse_selection
from sqlanon.publish import manifest
from tests.support import here, make_people, objects, quote, run, temp_objects
from tests.support.db import CITY, columns, series
from tests.support.refusal import refused, refused_call

pytestmark = pytest.mark.engines("duckdb", "postgres")


@pytest.fixture
def released(con, people):
    """``people``, its release ``people_anon`` (with a selection, so every reader has work), and a
    hierarchy table ``city_h``."""
    run(con, f"CREATE TABLE city_h AS SELECT 'x' || i AS leaf, '*' AS root FROM {series(5)}")
    return sqlanon.anonymize(con, people, qid=["age", "zip"], k=5, selections=["age > 40"])


@contextlib.contextmanager
def deadline(seconds: float, megabytes: int = 1024):
    """Fail, instead of hanging or exhausting the machine's memory, if the block runs longer than
    ``seconds`` (TimeoutError) or allocates more than about ``megabytes`` (MemoryError): what a
    runaway input did before it was refused. POSIX, main thread; the memory bound needs Linux."""
    def expired(signum, frame):
        raise TimeoutError(f"still running after {seconds} s")

    limit = resource.getrlimit(resource.RLIMIT_AS)
    statm = Path("/proc/self/statm")
    if statm.exists():  # address space in use now, plus the allowance
        in_use = int(statm.read_text().split()[0]) * resource.getpagesize()
        cap = in_use + megabytes * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (cap if limit[1] < 0 else min(cap, limit[1]), limit[1]))
    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        resource.setrlimit(resource.RLIMIT_AS, limit)


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


def test_error_messages_do_not_leak_sql_for_input_errors(con, people):
    # Input errors are about the request; only EngineError carries SQL.
    msg = refused(con, UnknownColumnError, qid=["nope"])
    assert not re.search(r"\bSELECT\b", msg)


# -- 1. the connection -------------------------------------------------------------------------
ENTRY_POINTS = {
    "anonymize": lambda con: sqlanon.anonymize(con, "people", qid=["age"], k=5, output=sqlanon.Output(view="another")),
    "verify": lambda con: sqlanon.verify(con, "people_anon", ["age", "zip"], 5),
    "apply": lambda con: sqlanon.apply(con, "people_anon", "people", view="recoded"),
    "metrics": lambda con: sqlanon.metrics(con, "people_anon"),
    "report": lambda con: sqlanon.report(con, "people_anon"),
    "regions": lambda con: sqlanon.regions(con, "people_anon"),
    "imprecision": lambda con: sqlanon.imprecision(con, "people_anon", "age > 3"),
    "rewrite": lambda con: sqlanon.rewrite("SELECT count(*) FROM people WHERE age > 3", "people_anon", con=con),
    "load_hierarchy": lambda con: load_hierarchy("city_h", con=con),
    "load_adult": lambda con: sqlanon.datasets.load_adult(con, "adult2"),
    "load_cmc": lambda con: sqlanon.datasets.load_cmc(con, "cmc2"),
}


BAD_CONNECTIONS = {"None": None, "str": "db.duckdb", "int": 5, "object": object()}


def check_bad_connection(con, entry: str, bad) -> None:
    msg = refused_call(con, InputError, ENTRY_POINTS[entry], bad)
    assert msg.startswith("con must be a duckdb.DuckDBPyConnection (duckdb.connect(...)), a psycopg 3 connection "
                          "(psycopg.connect(...)) or a pyspark.sql.SparkSession")
    assert type(bad).__name__ in msg


@pytest.mark.engines("duckdb")
@pytest.mark.parametrize("bad", sorted(BAD_CONNECTIONS))
@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_a_connection_that_is_not_one_is_refused(con, released, entry, bad):
    if bad == "None" and entry in ("load_hierarchy", "rewrite"):
        pytest.skip("con is optional there")
    check_bad_connection(con, entry, BAD_CONNECTIONS[bad])


@pytest.mark.engines("postgres")
# PostgreSQL: every case in one test, on one set-up (a release costs ~0.3 s there, the cases ms)
def test_a_connection_that_is_not_one_is_refused_on_postgres(con, released):
    for entry, bad in itertools.product(sorted(ENTRY_POINTS), sorted(BAD_CONNECTIONS)):
        if not (bad == "None" and entry in ("load_hierarchy", "rewrite")):  # con is optional there
            check_bad_connection(con, entry, BAD_CONNECTIONS[bad])


@pytest.mark.engines("postgres")  # psycopg objects that are not an open connection
@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_a_psycopg_object_that_is_not_an_open_connection_is_refused(con, pg_database, entry):
    import psycopg

    with con.cursor() as cursor:
        msg = refused_call(con, InputError, ENTRY_POINTS[entry], cursor)
    assert msg.startswith("con must be a psycopg.Connection, got Cursor <psycopg.Cursor")
    closed = psycopg.connect(pg_database)
    closed.close()
    assert refused_call(con, InputError, ENTRY_POINTS[entry], closed) == "the PostgreSQL connection is closed"


def test_the_entry_points_work_with_a_connection(con, released, engine_name):
    """The table above calls every entry point properly: only ``con`` is wrong there (one test:
    a release costs ~0.3 s on PostgreSQL, each call little)."""
    for entry in sorted(ENTRY_POINTS):
        ENTRY_POINTS[entry](con)


def test_the_connection_is_checked_before_anything_else(con, people):
    with pytest.raises(InputError, match="^con must be"):
        sqlanon.anonymize(None, "no such table", qid=None, k=0)


# -- 2. qid --------------------------------------------------------------------------------------
@pytest.mark.parametrize("qid", [None, 5, 1.5, object(), {"age": 1}, {"age"}, b"age"],
                         ids=["None", "int", "float", "object", "dict", "set", "bytes"])
def test_qid_that_is_not_a_list_of_names(con, people, qid):
    msg = refused_call(con, InputError, sqlanon.anonymize, con, "people", qid=qid, k=5)
    assert msg.startswith("qid must be a list of column names")
    msg = refused_call(con, InputError, sqlanon.verify, con, "people", qid, 5)
    assert msg.startswith("qid must be a list of column names")


@pytest.mark.parametrize("text, listed", [("age,zip", "['age', 'zip']"), ("age, zip", "['age', 'zip']"),
                                          ("age", "['age']"), ("first name", "['first name']"), (",", "[',']")])
def test_qid_as_one_string_suggests_its_columns(con, people, text, listed):
    """Issue 49: qid="age,zip" suggested ['age,zip']; a comma separates the columns."""
    for call in (lambda: sqlanon.anonymize(con, "people", qid=text, k=5), lambda: sqlanon.verify(con, "people", text, 5)):
        with pytest.raises(InputError) as info:
            call()
        assert str(info.value) == f"qid must be a list of column names, got the string {text!r}; use {listed}"


@pytest.mark.parametrize("qid", [lambda: ("age", "zip"), lambda: np.array(["age", "zip"]), lambda: iter(["age", "zip"])],
                         ids=["tuple", "ndarray", "iterator"])
def test_qid_as_any_ordered_sequence(con, people, qid):
    release = sqlanon.anonymize(con, "people", qid=qid(), k=5)  # a new iterator for each engine
    assert release.qid == ("age", "zip")


# -- 3. progress ----------------------------------------------------------------------------------
@pytest.mark.parametrize("progress", [5, "print", object()])
def test_progress_that_is_not_callable(con, people, monkeypatch, progress):
    def never(*args, **kwargs):
        raise AssertionError("partitioning started")

    monkeypatch.setattr(sqlanon.mondrian.builder.Partitioner, "run_sql", never)
    msg = refused_call(con, InputError, sqlanon.anonymize, con, "people", qid=["age"], k=5, progress=progress)
    assert msg.startswith("progress must be a function")


# -- 4. constraints --------------------------------------------------------------------------------
NOT_CONSTRAINTS = [["x"], [5], [None], "x", 5, {"l": 2}]


def check_verify_constraints(con, released, constraints) -> None:
    msg = refused_call(con, InputError, sqlanon.verify, con, released.view, ["age", "zip"], 5, constraints=constraints)
    assert "constraint objects" in msg
    for name in ("DistinctLDiversity", "EntropyLDiversity", "RecursiveCLDiversity", "VarianceDiversity"):
        assert name in msg


@pytest.mark.engines("duckdb")
@pytest.mark.parametrize("constraints", NOT_CONSTRAINTS, ids=str)
def test_verify_constraints_that_are_not_constraint_objects(con, released, constraints):
    check_verify_constraints(con, released, constraints)


@pytest.mark.engines("postgres")
# PostgreSQL: every case in one test, on one set-up (a release costs ~0.3 s there, the cases ms)
def test_verify_constraints_that_are_not_constraint_objects_on_postgres(con, released):
    for constraints in NOT_CONSTRAINTS:
        check_verify_constraints(con, released, constraints)


@pytest.mark.parametrize("constraints", [5, "x", [None]], ids=str)
def test_anonymize_constraints_that_are_not_constraint_objects(con, people, constraints):
    msg = refused_call(con, InputError, sqlanon.anonymize, con, "people", qid=["age"], k=5, privacy=constraints)
    assert "constraint objects" in msg and "DistinctLDiversity" in msg


def test_verify_checks_constraint_parameters(con, released):
    msg = refused_call(con, InputError, sqlanon.verify, con, released.view, ["age", "zip"], 5,
                  constraints=[sqlanon.DistinctLDiversity("city", 0)])
    assert "integer l >= 1" in msg


# -- 5. hierarchies -----------------------------------------------------------------------------------
def test_cyclic_hierarchy_dict_is_refused_naming_the_cycle(con, people):
    inner: dict = {"x0": None, "x1": None}
    inner["back"] = inner
    with deadline(5):
        msg = refused_call(con, HierarchyError, sqlanon.anonymize, con, "people", qid=["city"], k=5,
                      hierarchies={"city": {"*": {"x0-1": inner, "x2-4": ["x2", "x3", "x4"]}}})
    assert "cyclic" in msg and "the dict at * > x0-1 > back is the dict at * > x0-1 again" in msg


def test_hierarchy_dict_containing_itself_at_the_top():
    top: dict = {"a": None}
    top["self"] = top
    with deadline(5), pytest.raises(HierarchyError, match="cyclic.*\\* > self"):
        Hierarchy.from_dict(top)


def test_hierarchy_dict_shared_by_two_parents_is_refused_at_once():
    # 2**60 paths if expanded: refused when the shared dict is met the second time
    shared: dict = {"leaf": None}
    for i in range(60):
        shared = {f"l{i}": shared, f"r{i}": shared}
    with deadline(5), pytest.raises(HierarchyError, match="also the children of"):
        load_hierarchy(shared)


def test_list_shared_by_two_parents():
    leaves = ["a", "b"]
    with pytest.raises(HierarchyError, match="list object is also the children of \\* > p"):
        load_hierarchy({"*": {"p": leaves, "q": leaves}})


def test_hierarchy_deeper_than_the_bound():
    chain = None
    for i in range(20_000):
        chain = {f"n{i}": chain}
    with deadline(5), pytest.raises(HierarchyError, match="more than 1000 levels"):
        load_hierarchy(chain)
    chain = None
    for i in range(1001):  # exactly MAX_HEIGHT levels below the root
        chain = {f"n{i}": chain}
    assert load_hierarchy(chain).height == 1000


def test_hierarchy_row_that_never_ends():
    def endless():
        for i in itertools.count():
            assert i < 5000, "the row was read on and on"
            yield f"c{i}"

    with pytest.raises(HierarchyError, match="row 1 has more than 1001 cells"):
        Hierarchy.from_rows([endless()])


@pytest.mark.parametrize("row", [5, None, "x0*"], ids=str)
def test_hierarchy_row_that_is_not_a_list(row):
    with pytest.raises(HierarchyError, match="row 2 must be a list of labels"):
        Hierarchy.from_rows([["x0", "*"], row])


@pytest.mark.parametrize("hierarchies", [5, ["city"], "city"], ids=str)
def test_hierarchies_that_is_not_a_dict(con, people, hierarchies):
    msg = refused_call(con, HierarchyError, sqlanon.anonymize, con, "people", qid=["city"], k=5, hierarchies=hierarchies)
    assert msg.startswith("hierarchies must be a dict")


# -- 6. deeply nested selections -------------------------------------------------------------------------
QIS = [QI("age", "numeric", "INTEGER"), QI("zip", "numeric", "INTEGER")]
DEEP = {
    "parentheses": "(" * 5000 + "age > 1" + ")" * 5000,
    "NOTs": "NOT " * 5000 + "age > 1",
    "cast": "age > " + "CAST(" * 2000 + "1" + " AS INTEGER)" * 2000,
    "minus": "age > " + "- " * 3000 + "1",
    "parentheses_40": "(" * 40 + "age > 1" + ")" * 40,
}


@pytest.mark.engines("duckdb")
@pytest.mark.parametrize("how", sorted(DEEP))
def test_deeply_nested_selection_is_refused(con, released, how):
    check_deeply_nested(con, released, DEEP[how])


@pytest.mark.engines("postgres")
# PostgreSQL: every case in one test, on one set-up (a release costs ~0.3 s there, the cases ms)
def test_deeply_nested_selection_is_refused_on_postgres(con, released):
    for how in sorted(DEEP):
        check_deeply_nested(con, released, DEEP[how])


def check_deeply_nested(con, released, text: str) -> None:
    for call in (lambda: parse_selection(text, QIS),
                 lambda: sqlanon.imprecision(con, released.view, text),
                 lambda: sqlanon.metrics(con, released.view, selections=[text]),
                 lambda: sqlanon.report(con, released.view, selections=[text]),
                 lambda: sqlanon.anonymize(con, "people", qid=["age", "zip"], k=5, selections=[text],
                                           output=sqlanon.Output(view="v2")),
                 lambda: sqlanon.rewrite(f"SELECT count(*) FROM people WHERE {text}", released, con=con)):
        msg = refused_call(con, SelectionError, call)
        assert "too deeply nested" in msg and "at most 32 levels" in msg


def test_deeply_nested_query_outside_where_is_refused(con, released):
    sql = "SELECT " + "(" * 5000 + "id" + ")" * 5000 + " FROM people"
    with pytest.raises(sqlanon.RewriteError, match="too deeply nested"):
        sqlanon.rewrite(sql, released, con=con)


def test_nesting_within_the_bound_is_fine(con, released):
    assert len(parse_selection("(" * 25 + "age > 1" + ")" * 25, QIS).boxes) == 1
    assert len(parse_selection("NOT " * 25 + "age > 1", QIS).boxes) == 1  # odd: age <= 1


@pytest.mark.engines("duckdb")  # engine-independent parser (10 s of sqlglot on either engine)
def test_long_chains_are_flat_not_deep(con, released):
    """5000 operands of one AND are one level: parsed and walked in a loop (a long OR chain
    meets the limit on boxes, below)."""
    text = " AND ".join(["age > 1", "zip < 5"] * 2500)
    assert len(parse_selection(text, QIS).boxes) == 1
    sql = sqlanon.rewrite(f"SELECT count(*) FROM people WHERE {text} AND id >= 0", released, con=con)
    assert con.execute(sql).fetchone()[0] > 0
    assert sqlanon.imprecision(con, released.view, text).predicates[0].true > 0
    passthrough = " AND ".join(["id >= 0"] * 5000)
    assert "id >= 0" in sqlanon.rewrite(f"SELECT count(*) FROM people WHERE {passthrough}", released, con=con)


def test_too_many_boxes_is_still_the_box_error(con, released):
    text = " OR ".join(f"age = {i}" for i in range(5000))
    with pytest.raises(SelectionError, match="more than 256 boxes"):
        parse_selection(text, QIS)


# -- 7. inf, NaN and overflowing floats in QIs --------------------------------------------------------------
@pytest.mark.parametrize(("bad", "rows", "fragment"), [
    ("'inf'", 3, "3 infinite (inf or -inf)"),
    ("'-inf'", 3, "3 infinite (inf or -inf)"),
    ("'nan'", 3, "3 NaN"),
    ("CASE WHEN i = 0 THEN 'inf' WHEN i = 1 THEN '-inf' ELSE 'nan' END", 3, "2 infinite (inf or -inf) and 1 NaN"),
])
@pytest.mark.parametrize("float_type", ["DOUBLE", "FLOAT"])
def test_non_finite_float_qi_is_refused(con, monkeypatch, bad, rows, fragment, float_type):
    # DOUBLE and FLOAT as sqlanon names them: float8 and float4 on both engines (PostgreSQL's
    # double precision and real, its FLOAT is double)
    sql_type = {"DOUBLE": "FLOAT8", "FLOAT": "FLOAT4"}[float_type]
    run(con, f"CREATE TABLE t AS SELECT i AS id, CASE WHEN i < 3 THEN CAST(({bad}) AS {sql_type}) "
             f"ELSE CAST(mod(i, 50) AS {sql_type}) END AS x, mod(i, 7) AS z FROM {series(200)}")
    monkeypatch.setattr(sqlanon.mondrian.builder.Partitioner, "run_sql", lambda *a, **k: pytest.fail("partitioned"))
    msg = refused_call(con, InputError, sqlanon.anonymize, con, "t", qid=["z", "x"], k=5)
    assert msg.startswith(f"QI 'x' ({float_type}) has {rows} row(s) that are not finite numbers: {fragment}.")
    assert "isfinite(x)" in msg


def test_float_qi_whose_range_overflows_is_refused(con):
    run(con, "CREATE TABLE t AS SELECT i AS id, CASE WHEN i = 0 THEN CAST(-1.7e308 AS FLOAT8) WHEN i = 1 "
             f"THEN CAST(1.7e308 AS FLOAT8) ELSE CAST(i AS FLOAT8) END AS x FROM {series(100)}")
    msg = refused_call(con, InputError, sqlanon.anonymize, con, "t", qid=["x"], k=5)
    assert "QI 'x' (DOUBLE) spans from -1.7e+308 to 1.7e+308" in msg and "overflows" in msg


def test_finite_floats_nulls_and_other_types_pass(con):
    run(con, "CREATE TABLE t AS SELECT i AS id, CASE WHEN mod(i, 10) = 0 THEN NULL ELSE CAST(i AS FLOAT8) / 7 END AS x, "
             "CAST(mod(i, 13) AS REAL) AS r, CAST(CAST(i AS FLOAT8) / 3 AS DECIMAL(10, 2)) AS d, mod(i, 9) AS n "
             f"FROM {series(300)}")
    release = sqlanon.anonymize(con, "t", qid=["x", "r", "d", "n"], k=5)
    assert release.verification.ok


def test_non_finite_values_of_a_hierarchical_float_qi_are_leaves(con):
    """A hierarchy matches values as text: 'inf' is a leaf like any other (no range is measured)."""
    run(con, "CREATE TABLE t AS SELECT i AS id, CASE WHEN mod(i, 2) = 0 THEN CAST('inf' AS FLOAT8) "
             f"ELSE CAST(1.0 AS FLOAT8) END AS x FROM {series(20)}")
    release = sqlanon.anonymize(con, "t", qid=["x"], k=5, hierarchies={"x": {"*": ["inf", "1"]}})
    assert release.partitions == 2


# -- 8. read-only databases ------------------------------------------------------------------------------
@pytest.fixture
def read_only(tmp_path):
    """A database file with ``people`` and a release of it, opened read-only."""
    path = str(tmp_path / "ro.duckdb")
    writer = duckdb.connect(path)
    make_people(writer, 200)
    sqlanon.anonymize(writer, "people", qid=["age", "zip"], k=5)
    writer.close()
    con = duckdb.connect(path, read_only=True)
    yield con, path
    con.close()


# DuckDB's read-only database files (read_only=True); PostgreSQL's read-only connections: below
@pytest.mark.engines("duckdb")
def test_anonymize_on_a_read_only_database_is_refused_up_front(read_only, monkeypatch):
    con, path = read_only
    monkeypatch.setattr(sqlanon.mondrian.builder.Partitioner, "run_sql", lambda *a, **k: pytest.fail("partitioned"))
    before = objects(con)
    with pytest.raises(InputError) as info:
        sqlanon.anonymize(con, "people", qid=["age"], k=5, output=sqlanon.Output(view="second"))
    assert type(info.value).__name__ == "ReadOnlyError"
    msg = str(info.value)
    assert msg.startswith(f"database 'ro' ({path}) is read-only (opened with read_only=True)")
    assert "the release (its view, rules relation and row map) would be written to it, in schema ro.main" in msg
    assert objects(con) == before and temp_objects(con) == []


@pytest.mark.engines("duckdb")  # DuckDB's read-only files; PostgreSQL: test_postgres_read_only_*
def test_apply_and_regions_on_a_read_only_database_are_refused(read_only):
    con, _ = read_only
    msg = refused_call(con, InputError, sqlanon.apply, con, "people_anon", "people", view="recoded")
    assert "read-only" in msg and "the recoded table" in msg
    msg = refused_call(con, InputError, sqlanon.regions, con, "people_anon", name="points")
    assert "read-only" in msg and "'points'" in msg


@pytest.mark.engines("duckdb")  # DuckDB's read-only files; PostgreSQL: test_postgres_read_only_*
def test_reading_a_release_on_a_read_only_database_works(read_only):
    con, _ = read_only
    reads_work(con)


def reads_work(con) -> None:
    assert sqlanon.verify(con, "people_anon", ["age", "zip"], 5).ok
    assert sqlanon.metrics(con, "people_anon").k == 5
    assert json.loads(sqlanon.report(con, "people_anon", format="json"))["requirement"]["k"] == 5
    assert len(sqlanon.regions(con, "people_anon", as_frame=True)) == 200
    assert sqlanon.imprecision(con, "people_anon", "age > 3").predicates[0].true > 0


@pytest.fixture(params=["read_only", "default_transaction_read_only"])
def pg_read_only(request, con):
    """``people`` and its release on PostgreSQL, then the connection made read-only: by psycopg's
    ``read_only`` attribute, or by the server setting ``default_transaction_read_only``."""
    make_people(con, 200)
    sqlanon.anonymize(con, "people", qid=["age", "zip"], k=5)
    con.commit()
    if request.param == "read_only":
        con.read_only = True
    else:
        run(con, "SET default_transaction_read_only = on")
        con.commit()
    return con


@pytest.mark.engines("postgres")
def test_postgres_read_only_connection_refuses_anonymize_up_front(pg_read_only, monkeypatch):
    con = pg_read_only
    monkeypatch.setattr(sqlanon.mondrian.builder.Partitioner, "run_sql", lambda *a, **k: pytest.fail("partitioned"))
    database, schema = here(con)
    msg = refused_call(con, InputError, sqlanon.anonymize, con, "people", qid=["age"], k=5, output=sqlanon.Output("second"))
    assert msg.startswith(f"the PostgreSQL connection to {database!r} is read-only, and the release (its view, "
                          f"rules relation and row map) would be written to it, in schema {schema}. Nothing was done")


@pytest.mark.engines("postgres")
def test_postgres_read_only_connection_refuses_apply_and_regions(pg_read_only):
    con = pg_read_only
    msg = refused_call(con, InputError, sqlanon.apply, con, "people_anon", "people", view="recoded")
    assert "read-only" in msg and "the recoded table" in msg
    msg = refused_call(con, InputError, sqlanon.regions, con, "people_anon", name="points")
    assert "read-only" in msg and "'points'" in msg


@pytest.mark.engines("postgres")
def test_postgres_read_only_connection_reads_a_release(pg_read_only):
    reads_work(pg_read_only)


# -- 9. numpy integers ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("k", [np.int64(10), np.int32(10), np.uint8(10)], ids=repr)
def test_numpy_integers_are_integers(con, people, k):
    release = sqlanon.anonymize(con, "people", qid=["age", "zip"], k=k,
                                privacy=[sqlanon.DistinctLDiversity("city", np.int64(2)),
                                             sqlanon.KAnonymity(np.int16(10))],
                                algorithm=sqlanon.Mondrian(strategy=sqlanon.Levels(memory_rows=np.int64(50))))
    assert release.k == 10 and type(release.k) is int
    assert release.verification.ok and release.k_achieved >= 10
    m = manifest.read(con, release.view)  # the manifest is JSON: numpy values would not serialize
    assert m.k == 10 and "distinct l-diversity('city', l=2)" in m.constraints
    assert sqlanon.verify(con, release.view, ["age", "zip"], np.int64(10)).ok


@pytest.mark.parametrize("k", [np.float64(10), 10.0, True, np.bool_(True)], ids=repr)
def test_numpy_floats_and_booleans_are_not(con, people, k):
    msg = refused_call(con, InputError, sqlanon.anonymize, con, "people", qid=["age"], k=k)
    assert msg.startswith("k must be an integer")
    msg = refused_call(con, InputError, sqlanon.verify, con, "people", ["age"], k)
    assert msg.startswith("k must be a positive integer")


@pytest.mark.parametrize("l", [np.int64(2), np.float32(1.5)], ids=repr)
def test_numpy_numbers_for_l(con, people, l):
    release = sqlanon.anonymize(con, "people", qid=["age"], k=5, sensitive="city", l=l)
    assert release.verification.ok


def test_replace_must_be_a_bool(con, released):
    for replace in ("yes", 1, None):
        for call in (lambda: sqlanon.anonymize(con, "people", qid=["age"], k=5, output=sqlanon.Output(replace=replace)),
                     lambda: sqlanon.apply(con, released, "people", replace=replace),
                     lambda: sqlanon.regions(con, released, name="pts", replace=replace)):
            assert refused_call(con, InputError, call).startswith("replace must be True or False")


# -- other parameters: never a TypeError or AttributeError ---------------------------------------------------
OTHER = {
    "anonymize sensitive=5": lambda con: sqlanon.anonymize(con, "people", qid=["age"], k=5, sensitive=5, l=2),
    "anonymize target=object": lambda con: sqlanon.anonymize(con, "people", qid=["age"], k=5, target=object()),
    "metrics targets=5": lambda con: sqlanon.metrics(con, "people_anon", targets=5),
    "metrics sensitive=object": lambda con: sqlanon.metrics(con, "people_anon", sensitive=object()),
    "metrics selections=5": lambda con: sqlanon.metrics(con, "people_anon", selections=5),
    "report selections=5": lambda con: sqlanon.report(con, "people_anon", selections=5),
    "report numeric_targets=5": lambda con: sqlanon.report(con, "people_anon", numeric_targets=5),
    "imprecision predicates=None": lambda con: sqlanon.imprecision(con, "people_anon", None),
    "imprecision predicates=5": lambda con: sqlanon.imprecision(con, "people_anon", 5),
    "parse_selection qis=None": lambda con: parse_selection("age > 1", None),
    "parse_selection qis=[5]": lambda con: parse_selection("age > 1", [5]),
    "verify class_column=5": lambda con: sqlanon.verify(con, "people_anon", ["age"], 5, class_column=5),
    "verify qid=bytes": lambda con: sqlanon.verify(con, "people_anon", b"age", 5),
    "anonymize min_gain='x'": lambda con: sqlanon.anonymize(
        con, "people", qid=["age"], k=5, algorithm=sqlanon.Mondrian(sqlanon.Targets(classes=["city"], min_gain="x"))),
    "anonymize min_gain=None": lambda con: sqlanon.anonymize(
        con, "people", qid=["age"], k=5,
        algorithm=sqlanon.Mondrian(sqlanon.Selections(["age > 3"], then=sqlanon.Targets(classes=["city"], min_gain=None)))),
}


@pytest.mark.engines("duckdb")
@pytest.mark.parametrize("case", sorted(OTHER))
def test_other_malformed_parameters_are_input_errors(con, released, case):
    refused_call(con, InputError, OTHER[case], con)


@pytest.mark.engines("postgres")
# PostgreSQL: every case in one test, on one set-up (a release costs ~0.3 s there, the cases ms)
def test_other_malformed_parameters_are_input_errors_on_postgres(con, released):
    for case in sorted(OTHER):
        refused_call(con, InputError, OTHER[case], con)
