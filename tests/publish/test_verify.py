"""sqlanon.verify on hand-built relations, with every number of the result known."""

from __future__ import annotations

import pytest

import sqlanon
from sqlanon import InputError, UnknownColumnError, UnknownTableError, Verification
from tests.support import objects, temp_objects

pytestmark = pytest.mark.engines("duckdb", "postgres")


@pytest.fixture
def released(con) -> str:
    """A hand-made release: classes (1-10, a) x3, (11-20, b) x4, (NULL-20, NULL) x3 of which one
    has no eq_class."""
    con.execute("""CREATE TABLE released AS SELECT * FROM (VALUES
        (1, 10, 'a', 0, 'p1'), (1, 10, 'a', 0, 'p2'), (1, 10, 'a', 0, 'p3'),
        (11, 20, 'b', 1, 'p4'), (11, 20, 'b', 1, 'p5'), (11, 20, 'b', 1, 'p6'), (11, 20, 'b', 1, 'p7'),
        (NULL, 20, NULL, 2, 'p8'), (NULL, 20, NULL, 2, 'p9'), (NULL, 20, NULL, NULL, 'p10')
    ) t(age_min, age_max, sex, eq_class, payload)""")
    return "released"


def test_k_anonymous(con, released):
    v = sqlanon.verify(con, released, ["age", "sex"], 3)
    assert v == Verification(ok=True, k=3, k_achieved=3, classes=3, rows=10, violating=0,
                             columns=("age_min", "age_max", "sex"), unplaced=0)


def test_violating(con, released):
    v = sqlanon.verify(con, released, ["age", "sex"], 4)
    assert v == Verification(ok=False, k=4, k_achieved=3, classes=3, rows=10, violating=2,
                             columns=("age_min", "age_max", "sex"), unplaced=0)
    assert sqlanon.verify(con, released, ["age", "sex"], 5).violating == 3
    assert sqlanon.verify(con, released, ["age", "sex"], 1).ok


def test_qid_resolves_ranges_and_plain_columns(con, released):
    assert sqlanon.verify(con, released, ["age"], 1).columns == ("age_min", "age_max")
    assert sqlanon.verify(con, released, ["sex"], 1).columns == ("sex",)
    # a published column can be named directly
    v = sqlanon.verify(con, released, ["age_max"], 1)
    assert (v.columns, v.classes, v.k_achieved) == (("age_max",), 2, 3)
    # the order of qid is kept
    assert sqlanon.verify(con, released, ["sex", "age"], 1).columns == ("sex", "age_min", "age_max")


def test_a_plain_column_wins_over_a_range(con):
    con.execute("CREATE TABLE r AS SELECT 1 AS age, 1 AS age_min, 2 AS age_max")
    assert sqlanon.verify(con, "r", ["age"], 1).columns == ("age",)


def test_needs_both_ends_of_a_range(con):
    con.execute("CREATE TABLE r AS SELECT 1 AS age_min, 2 AS other")
    with pytest.raises(UnknownColumnError) as info:
        sqlanon.verify(con, "r", ["age"], 1)
    assert "'age'" in str(info.value) and "'age_max'" in str(info.value)


def test_nulls_group_together(con):
    # NULL = NULL for grouping: the three NULL rows are one class
    con.execute("CREATE TABLE r AS SELECT * FROM "
                "(VALUES (NULL, NULL), (NULL, NULL), (NULL, NULL), (1, 1), (1, 1), (1, 1)) t(a, b)")
    v = sqlanon.verify(con, "r", ["a", "b"], 3)
    assert (v.ok, v.classes, v.k_achieved, v.rows) == (True, 2, 3, 6)
    # NULL in one column only is a different class than NULL in both
    con.execute("INSERT INTO r VALUES (NULL, 1)")
    v = sqlanon.verify(con, "r", ["a", "b"], 3)
    assert (v.ok, v.classes, v.k_achieved, v.violating) == (False, 3, 1, 1)


def test_class_column_counts_unplaced_rows(con, released):
    v = sqlanon.verify(con, released, ["age", "sex"], 3, class_column="eq_class")
    assert v == Verification(ok=False, k=3, k_achieved=3, classes=3, rows=10, violating=0,
                             columns=("age_min", "age_max", "sex"), unplaced=1, class_column="eq_class")
    assert v.failures() == ("k-anonymity(k=3)",)  # not a release: a row without a class fails k
    con.execute("UPDATE released SET eq_class = 2 WHERE payload = 'p10'")
    assert sqlanon.verify(con, released, ["age", "sex"], 3, class_column="eq_class").ok


def test_class_column_does_not_define_classes(con, released):
    # eq_class is only checked for NULLs; classes come from the QI columns alone
    con.execute("UPDATE released SET eq_class = 99 WHERE payload = 'p1'")
    v = sqlanon.verify(con, released, ["age", "sex"], 3, class_column="eq_class")
    assert (v.classes, v.k_achieved, v.unplaced) == (3, 3, 1)


def test_unknown_class_column(con, released):
    with pytest.raises(UnknownColumnError) as info:
        sqlanon.verify(con, released, ["age"], 2, class_column="eq_clas")
    assert "'eq_clas'" in str(info.value) and "Did you mean 'eq_class'?" in str(info.value)


def test_empty_relation(con):
    con.execute("CREATE TABLE r(a INTEGER)")
    v = sqlanon.verify(con, "r", ["a"], 2)
    assert v == Verification(ok=False, k=2, k_achieved=0, classes=0, rows=0, violating=0, columns=("a",), unplaced=0)


def test_single_class(con):
    con.execute("CREATE TABLE r AS SELECT 'x' AS a FROM generate_series(1, 7) t(i)")
    assert sqlanon.verify(con, "r", ["a"], 7) == Verification(
        ok=True, k=7, k_achieved=7, classes=1, rows=7, violating=0, columns=("a",), unplaced=0)
    assert sqlanon.verify(con, "r", ["a"], 8).violating == 1


def test_views_and_odd_names(con):
    con.execute('CREATE TABLE "we""ird t" AS SELECT i % 3 AS "zip code_min", i % 3 AS "zip code_max", '
                "'x' AS \"it's\" FROM generate_series(0, 11) t(i)")
    con.execute('CREATE VIEW "my view" AS SELECT * FROM "we""ird t"')
    for relation in ('we"ird t', "my view"):
        v = sqlanon.verify(con, relation, ["zip code", "it's"], 4)
        assert (v.ok, v.classes, v.k_achieved, v.columns) == (True, 3, 4, ("zip code_min", "zip code_max", "it's"))


def test_schema_qualified_relation(con):
    con.execute("CREATE SCHEMA s")
    con.execute("CREATE TABLE s.r AS SELECT i % 2 AS a FROM generate_series(0, 9) t(i)")
    v = sqlanon.verify(con, "s.r", ["a"], 5)
    assert (v.ok, v.classes, v.rows) == (True, 2, 10)


def test_unknown_relation(con, released):
    with pytest.raises(UnknownTableError) as info:
        sqlanon.verify(con, "releasd", ["age"], 2)
    assert "'releasd'" in str(info.value) and "Did you mean 'released'?" in str(info.value)


def test_unknown_column(con, released):
    with pytest.raises(UnknownColumnError) as info:
        sqlanon.verify(con, released, ["age", "sx"], 2)
    message = str(info.value)
    assert "'sx'" in message and "'sx_min'" in message and "Did you mean 'sex'?" in message
    for column in ("age_min", "age_max", "sex", "eq_class", "payload"):
        assert repr(column) in message


@pytest.mark.parametrize("k", [0, -1, True, False, "3", 2.0, None])
def test_invalid_k(con, released, k):
    with pytest.raises(InputError) as info:
        sqlanon.verify(con, released, ["age"], k)
    assert repr(k) in str(info.value)


@pytest.mark.parametrize("qid", [[], "age", ()])
def test_invalid_qid(con, released, qid):
    with pytest.raises(InputError, match="qid"):
        sqlanon.verify(con, released, qid, 2)


def test_verify_writes_nothing(con, released):
    before = objects(con)
    sqlanon.verify(con, released, ["age", "sex"], 3, class_column="eq_class")
    assert objects(con) == before and temp_objects(con) == []


def test_verify_checks_a_real_release_independently(con):
    con.execute("CREATE TABLE t AS SELECT i AS id, i % 40 AS age, 'c' || (i % 4) AS c FROM generate_series(0, 199) t(i)")
    release = sqlanon.anonymize(con, "t", qid=["age", "c"], k=10)
    v = sqlanon.verify(con, release.view, ["age", "c"], 10, class_column="eq_class")
    assert v == release.verification
    sizes = con.execute(f"SELECT count(*) FROM {release.view} GROUP BY age_min, age_max, c_min, c_max").fetchall()
    assert (v.classes, v.k_achieved, v.rows) == (len(sizes), min(s for s, in sizes), 200)
    # tamper with the release: one row's bounds made unique -> a class of 1
    con.execute(f"CREATE TABLE tampered AS SELECT id, CASE WHEN id = 0 THEN -1 ELSE age_min END AS age_min, "
                f"age_max, c_min, c_max, eq_class FROM {release.view}")
    assert [r[0] for r in con.execute("SELECT * FROM tampered LIMIT 0").description] == \
        [r[0] for r in con.execute(f"SELECT * FROM {release.view} LIMIT 0").description]
    bad = sqlanon.verify(con, "tampered", ["age", "c"], 10, class_column="eq_class")
    assert (bad.ok, bad.k_achieved, bad.violating, bad.classes) == (False, 1, 1, v.classes + 1)
