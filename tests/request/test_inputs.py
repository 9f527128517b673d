"""Every error up front, as a library error.

Each bad input below is refused with a specific :class:`sqlanon.SqlanonError` (an
:class:`sqlanon.InputError` where the request is at fault) before anything is created in the
database, and before the partitioning: a wrong ``con``, a malformed ``qid``, ``progress`` or
``constraints``, a cyclic or runaway hierarchy, a selection nested too deeply to parse, float QIs
holding inf or NaN, a read-only database. Numpy integers are integers. A release is reloaded by
name in exactly the schema that name means, never from another schema's release of that name.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import resource
import signal
from pathlib import Path
from typing import NamedTuple

import duckdb
import numpy as np
import pytest

import sqlanon
import sqlanon.datasets
import sqlanon.mondrian.builder
from sqlanon import HierarchyError, InputError, SelectionError, SqlanonError, load_hierarchy
from sqlanon.model.hierarchy import Hierarchy
from sqlanon.model.qi import QI
from sqlanon.model.selection import parse_selection
from sqlanon.publish import manifest
from sqlanon.release.regions import load_release
from tests.support import here, is_postgres, make_people, objects, quote, rows, run, temp_objects

pytestmark = pytest.mark.engines("duckdb", "postgres")

CITY = {"*": {"x0-1": ["x0", "x1"], "x2-4": ["x2", "x3", "x4"]}}


def series(n: int) -> str:
    """A FROM item of ``n`` rows numbered ``i`` (BIGINT 0..n-1), the same on DuckDB and PostgreSQL."""
    return f"generate_series(CAST(0 AS BIGINT), CAST({n - 1} AS BIGINT)) AS t(i)"


@pytest.fixture
def people(con) -> str:
    return make_people(con, 200)


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


def refused(con, exc: type[SqlanonError], call, *args, **kwargs) -> str:
    """Run ``call``, expecting ``exc`` (or a subclass); check nothing was written; return the message."""
    before = objects(con)
    with pytest.raises(exc) as info:
        call(*args, **kwargs)
    if is_postgres(con):  # raised inside the transaction objects() opened: still usable
        assert rows(con, "SELECT 1") == [(1,)]
    assert objects(con) == before
    assert temp_objects(con) == []
    return str(info.value)


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
    msg = refused(con, InputError, ENTRY_POINTS[entry], bad)
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
        msg = refused(con, InputError, ENTRY_POINTS[entry], cursor)
    assert msg.startswith("con must be a psycopg.Connection, got Cursor <psycopg.Cursor")
    closed = psycopg.connect(pg_database)
    closed.close()
    assert refused(con, InputError, ENTRY_POINTS[entry], closed) == "the PostgreSQL connection is closed"


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
    msg = refused(con, InputError, sqlanon.anonymize, con, "people", qid=qid, k=5)
    assert msg.startswith("qid must be a list of column names")
    msg = refused(con, InputError, sqlanon.verify, con, "people", qid, 5)
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
    msg = refused(con, InputError, sqlanon.anonymize, con, "people", qid=["age"], k=5, progress=progress)
    assert msg.startswith("progress must be a function")


# -- 4. constraints --------------------------------------------------------------------------------
NOT_CONSTRAINTS = [["x"], [5], [None], "x", 5, {"l": 2}]


def check_verify_constraints(con, released, constraints) -> None:
    msg = refused(con, InputError, sqlanon.verify, con, released.view, ["age", "zip"], 5, constraints=constraints)
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
    msg = refused(con, InputError, sqlanon.anonymize, con, "people", qid=["age"], k=5, privacy=constraints)
    assert "constraint objects" in msg and "DistinctLDiversity" in msg


def test_verify_checks_constraint_parameters(con, released):
    msg = refused(con, InputError, sqlanon.verify, con, released.view, ["age", "zip"], 5,
                  constraints=[sqlanon.DistinctLDiversity("city", 0)])
    assert "integer l >= 1" in msg


# -- 5. hierarchies -----------------------------------------------------------------------------------
def test_cyclic_hierarchy_dict_is_refused_naming_the_cycle(con, people):
    inner: dict = {"x0": None, "x1": None}
    inner["back"] = inner
    with deadline(5):
        msg = refused(con, HierarchyError, sqlanon.anonymize, con, "people", qid=["city"], k=5,
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
    msg = refused(con, HierarchyError, sqlanon.anonymize, con, "people", qid=["city"], k=5, hierarchies=hierarchies)
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
        msg = refused(con, SelectionError, call)
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
    msg = refused(con, InputError, sqlanon.anonymize, con, "t", qid=["z", "x"], k=5)
    assert msg.startswith(f"QI 'x' ({float_type}) has {rows} row(s) that are not finite numbers: {fragment}.")
    assert "isfinite(x)" in msg


def test_float_qi_whose_range_overflows_is_refused(con):
    run(con, "CREATE TABLE t AS SELECT i AS id, CASE WHEN i = 0 THEN CAST(-1.7e308 AS FLOAT8) WHEN i = 1 "
             f"THEN CAST(1.7e308 AS FLOAT8) ELSE CAST(i AS FLOAT8) END AS x FROM {series(100)}")
    msg = refused(con, InputError, sqlanon.anonymize, con, "t", qid=["x"], k=5)
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
    msg = refused(con, InputError, sqlanon.apply, con, "people_anon", "people", view="recoded")
    assert "read-only" in msg and "the recoded table" in msg
    msg = refused(con, InputError, sqlanon.regions, con, "people_anon", name="points")
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
    msg = refused(con, InputError, sqlanon.anonymize, con, "people", qid=["age"], k=5, output=sqlanon.Output("second"))
    assert msg.startswith(f"the PostgreSQL connection to {database!r} is read-only, and the release (its view, "
                          f"rules relation and row map) would be written to it, in schema {schema}. Nothing was done")


@pytest.mark.engines("postgres")
def test_postgres_read_only_connection_refuses_apply_and_regions(pg_read_only):
    con = pg_read_only
    msg = refused(con, InputError, sqlanon.apply, con, "people_anon", "people", view="recoded")
    assert "read-only" in msg and "the recoded table" in msg
    msg = refused(con, InputError, sqlanon.regions, con, "people_anon", name="points")
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
    msg = refused(con, InputError, sqlanon.anonymize, con, "people", qid=["age"], k=k)
    assert msg.startswith("k must be an integer")
    msg = refused(con, InputError, sqlanon.verify, con, "people", ["age"], k)
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
            assert refused(con, InputError, call).startswith("replace must be True or False")


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
    refused(con, InputError, OTHER[case], con)


@pytest.mark.engines("postgres")
# PostgreSQL: every case in one test, on one set-up (a release costs ~0.3 s there, the cases ms)
def test_other_malformed_parameters_are_input_errors_on_postgres(con, released):
    for case in sorted(OTHER):
        refused(con, InputError, OTHER[case], con)


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
