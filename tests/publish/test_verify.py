"""sqlanon.verify on hand-built relations, with every number of the result known."""

from __future__ import annotations

import pytest

import sqlanon
from sqlanon import InputError, UnknownColumnError, UnknownTableError, Verification
from sqlanon.publish.violations import violations
from tests.support import SUPPRESSING, frame, is_postgres, objects, rows, run, suppressing_release, temp_objects

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


def test_a_suppressed_row_showing_values_is_leaked(con):
    """A release's suppressed rows (class NULL) must show the fully generalized values: one that
    shows its own is counted as leaked and fails the check; one that is fully generalized does not."""
    rows = "generate_series(0, 59) i" if is_postgres(con) else "range(60) t(i)"
    con.execute(f"CREATE TABLE people AS SELECT i AS id, i % 30 AS age, i % 3 AS zip FROM {rows}")
    release = sqlanon.anonymize(con, "people", qid=["age", "zip"], k=5)  # no key: a view of a snapshot
    assert release.materialized and release.verification.ok and release.verification.leaked == 0
    first = release.rules
    # the view replaced by an edited copy of it, under its name
    con.execute(f"CREATE TABLE copied AS SELECT * FROM {release.view}")
    con.execute(f"DROP VIEW {release.view}")
    con.execute(f"ALTER TABLE copied RENAME TO {release.view}")
    con.execute(f"UPDATE {release.view} SET eq_class = NULL WHERE id IN (0, 1)")  # suppressed, still showing values
    check = sqlanon.verify(con, release.view, ["age", "zip"], 5, class_column="eq_class")
    assert (check.ok, check.unplaced, check.leaked) == (False, 2, 2)
    # fully generalized: the release's smallest lower and largest upper bound of every QI
    con.execute(f"UPDATE {release.view} SET age_min = (SELECT min(age_min) FROM {first}), "
                f"age_max = (SELECT max(age_max) FROM {first}), zip_min = (SELECT min(zip_min) FROM {first}), "
                f"zip_max = (SELECT max(zip_max) FROM {first}) WHERE id IN (0, 1)")
    check = sqlanon.verify(con, release.view, ["age", "zip"], 5, class_column="eq_class")
    assert check.unplaced == 2 and check.leaked == 0


# -- issue 49, part 3: verify agrees with the release ---------------------------------------------
@pytest.mark.parametrize("key", [None, "id"])
@pytest.mark.parametrize("search", SUPPRESSING)
def test_a_release_with_suppression_verifies_ok_as_the_quick_start_calls_it(con, search, key):
    """The README's own call -- no class column named -- on a valid release with suppressed
    rows: the class column and the suppression limit come from its manifest, so the suppressed
    rows (fully generalized, class NULL) form no class and the release verifies ok."""
    release, qid = suppressing_release(con, search, key)
    v = sqlanon.verify(con, release.view, qid, 10)
    assert v.ok and v.failures() == ()
    assert (v.release, v.class_column, v.unplaced, v.suppression_limit, v.leaked) == (
        True, "eq_class", release.suppressed, 9, 0)
    assert v == sqlanon.verify(con, release.view, qid, 10, class_column="eq_class") == release.verification
    # the violations listed for it are verify's: the suppressed rows are in no class
    assert violations(con, release.view, qid, sqlanon.KAnonymity(10)).violating == 0
    # another column named as the class column: no release semantics, its NULLs fail (closed)
    run(con, "CREATE TABLE other AS SELECT * FROM t_anon")
    other = sqlanon.verify(con, "other", qid, 10, class_column="eq_class")
    assert not other.ok and not other.release and other.unplaced == release.suppressed


@pytest.mark.parametrize("search", SUPPRESSING)
def test_a_tampered_release_with_suppression_does_not_verify(con, search):
    """Fail closed: a suppressed row given a real class (a group below k), one that shows its own
    values, a placed row alone in its class, and more suppressed rows than the release's limit
    each fail ``sqlanon.verify`` -- with no class column named, as with the release's own. (A
    single-dimensional release's own QID, checked on the placed rows, fails beside k.)"""
    release, qid = suppressing_release(con, search)
    view = release.view
    run(con, f"CREATE TABLE copied AS SELECT * FROM {view}")
    run(con, f"DROP VIEW {view}")
    run(con, f"ALTER TABLE copied RENAME TO {view}")
    published = [c for c in frame(con, f"SELECT * FROM {view} LIMIT 0").columns if c not in ("id", "eq_class")]
    hidden = rows(con, f"SELECT min(id) FROM {view} WHERE eq_class IS NULL")[0][0]
    root = rows(con, f"SELECT {', '.join(published)} FROM {view} WHERE id = ?", [hidden])[0]
    placed_class = rows(con, f"SELECT min(eq_class) FROM {view}")[0][0]

    def verdict(**kwargs):
        return sqlanon.verify(con, view, qid, 10, **kwargs)

    assert verdict().ok
    # a suppressed row given a real class: its fully generalized values form a group of 1
    run(con, f"UPDATE {view} SET eq_class = ? WHERE id = ?", [placed_class, hidden])
    for v in (verdict(), verdict(class_column="eq_class")):
        assert (v.ok, v.violating, v.k_achieved, v.failures()[0]) == (False, 1, 1, "k-anonymity(k=10)")
    run(con, f"UPDATE {view} SET eq_class = NULL WHERE id = ?", [hidden])
    assert verdict().ok
    # a suppressed row that shows its own value
    run(con, f"UPDATE {view} SET zip = '31' WHERE id = ?", [hidden])
    v = verdict()
    assert (v.ok, v.leaked, v.failures()) == (False, 1, ("suppressed rows fully generalized",))
    run(con, f"UPDATE {view} SET zip = ? WHERE id = ?", [root[published.index("zip")], hidden])
    assert verdict().ok
    # a placed row given values of its own: a class below k
    own = rows(con, f"SELECT zip FROM {view} WHERE id = 0")[0][0]
    run(con, f"UPDATE {view} SET zip = '3*' WHERE id = 0")  # no placed row's value
    v = verdict()
    assert (v.ok, v.k_achieved, v.failures()[0]) == (False, 1, "k-anonymity(k=10)")
    run(con, f"UPDATE {view} SET zip = ? WHERE id = 0", [own])
    assert verdict().ok
    # a whole class suppressed (fully generalized, in no class): more rows than the limit of 9
    sets = ", ".join(f"{c} = ?" for c in published)
    run(con, f"UPDATE {view} SET eq_class = NULL, {sets} WHERE eq_class = ?", [*root, placed_class])
    v = verdict()
    assert (v.ok, v.violating, v.leaked, v.unplaced > 9, v.failures()) == (
        False, 0, 0, True, ("suppression limit (9 rows)",))


@pytest.mark.parametrize("search", SUPPRESSING)
def test_a_live_release_beyond_its_suppression_limit_does_not_verify(con, search):
    """A live view (key=): rows its row map no longer places are suppressed by the recoding; past
    the release's limit, ``sqlanon.verify`` (no class column named) fails."""
    release, qid = suppressing_release(con, search, key="id")
    assert sqlanon.verify(con, release.view, qid, 10).ok
    run(con, f"UPDATE {release.rowmap} SET region = NULL WHERE key0 < 10")
    v = sqlanon.verify(con, release.view, qid, 10)
    assert not v.ok and v.recoded > 9 and "suppression limit (9 rows)" in v.failures()
