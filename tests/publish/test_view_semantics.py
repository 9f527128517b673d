"""What a release publishes: the view (one row per base row, columns in place, live and failing
closed on changed rows), the rules relation, the row map, snapshots for sources without
row ids, and releases that outlive the connection (an on-disk DuckDB database, a PostgreSQL
database reached by a new session)."""

from __future__ import annotations

import datetime as dt

import duckdb
import numpy as np
import pandas as pd
import pytest

import sqlanon
from tests.support import is_postgres, load_frame, objects, quote, rows, temp_objects

pytestmark = pytest.mark.engines("duckdb", "postgres")

SEX = {"*": ["F", "M", "X"]}  # 'X' never occurs: an empty region that keeps the domain covered


@pytest.fixture
def base(con) -> str:
    # columns interleave QIs and non-QIs; id is the primary key (a live view joins on it)
    i = np.arange(300)
    load_frame(con, "base", pd.DataFrame({
        "id": i, "age": (20 + (i * 7) % 60).astype(np.int32), "note": [f"note {v}" for v in i],
        "sex": np.array(["F", "M"])[i % 2], "zip": [f"{v:05d}" for v in (i * 13) % 40],
        "payload": [f"{v * 1.5:.1f}" for v in i],
        "seen": [dt.date(2020, 1, 1) + dt.timedelta(days=int(v)) for v in i],
    }), primary_key="id", types={"payload": "DECIMAL(22, 1)"})
    return "base"


def anonymize(con, table="base", **kwargs):
    args = {"qid": ["age", "sex", "zip"], "k": 6, "hierarchies": {"sex": SEX}}
    args.update(kwargs)
    return sqlanon.anonymize(con, table, **args)


#: What a suppressed row shows for (age_min, age_max, sex, zip_min, zip_max): the root.
ROOT = (20, 79, "*", "00000", "00039")


def columns(con, relation: str) -> list[str]:
    return [d[0] for d in con.execute(f"SELECT * FROM {quote(relation)} LIMIT 0").description]


def column_types(con, relation: str) -> dict[str, str]:
    """``{column: type}`` as the engine spells it (DuckDB's DESCRIBE, PostgreSQL's format_type)."""
    if isinstance(con, duckdb.DuckDBPyConnection):
        return {r[0]: r[1] for r in con.execute(f"DESCRIBE {quote(relation)}").fetchall()}
    return dict(rows(con, "SELECT attname::text, format_type(atttypid, atttypmod) FROM pg_attribute "
                          "WHERE attrelid = ?::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
                     [quote(relation)]))


def classes(con, relation: str) -> set[frozenset[int]]:
    """The partition as a set of sets of ids."""
    groups: dict[object, set[int]] = {}
    for i, c in rows(con, f"SELECT id, eq_class FROM {quote(relation)}"):
        groups.setdefault(c, set()).add(i)
    return {frozenset(g) for g in groups.values()}


def kinds(con) -> dict[str, str]:
    """``{name: 'table' | 'view'}`` of the user's relations."""
    return {name: kind for _, _, name, kind in objects(con)}


# -- the view --------------------------------------------------------------------------------
def test_column_order(con, base):
    release = anonymize(con)
    assert columns(con, release.view) == [
        "id", "age_min", "age_max", "note", "sex", "zip_min", "zip_max", "payload", "seen", "eq_class"]


def test_column_order_follows_the_table_not_the_qid(con, base):
    release = anonymize(con, qid=["zip", "seen", "age"], hierarchies=None)
    assert columns(con, release.view) == [
        "id", "age_min", "age_max", "note", "sex", "zip_min", "zip_max", "payload", "seen_min", "seen_max", "eq_class"]


def test_one_row_per_base_row_with_unchanged_non_qi_values(con, base):
    release = anonymize(con)
    view = release.view
    assert con.execute(f"SELECT count(*), count(DISTINCT id) FROM {view}").fetchone() == (300, 300)
    for a, b in (("SELECT id, note, payload, seen FROM base", f"SELECT id, note, payload, seen FROM {view}"),
                 (f"SELECT id, note, payload, seen FROM {view}", "SELECT id, note, payload, seen FROM base")):
        assert con.execute(f"SELECT count(*) FROM ({a} EXCEPT ALL {b}) AS d").fetchone()[0] == 0
    # QI columns are published as ranges/labels that hold the original values
    assert con.execute(f"""SELECT count(*) FROM base b JOIN {view} v USING (id)
        WHERE NOT (b.age BETWEEN v.age_min AND v.age_max) OR NOT (b.zip BETWEEN v.zip_min AND v.zip_max)
           OR NOT (v.sex = b.sex OR v.sex = '*') OR v.eq_class IS NULL""").fetchone()[0] == 0
    assert release.verification.ok and release.verification.rows == 300


def test_column_types(con, engine_name, base):
    release = anonymize(con)
    source = column_types(con, "base")
    types = column_types(con, release.view)
    # a hierarchy label is VARCHAR (PostgreSQL: character varying, no length), eq_class BIGINT
    text, bigint = ("VARCHAR", "BIGINT") if engine_name == "duckdb" else ("character varying", "bigint")
    assert types == {"id": source["id"], "age_min": source["age"], "age_max": source["age"], "note": source["note"],
                     "sex": text, "zip_min": source["zip"], "zip_max": source["zip"],
                     "payload": source["payload"], "seen": source["seen"], "eq_class": bigint}
    assert source["payload"] == ("DECIMAL(22,1)" if engine_name == "duckdb" else "numeric(22,1)")


def test_is_a_view_over_the_base_table(con, base):
    release = anonymize(con)
    assert not release.materialized
    assert kinds(con)[release.view] == "view"
    assert release.notes == ()


def test_inserted_rows_are_suppressed(con, base):
    release = anonymize(con)
    before = con.execute(f"SELECT * FROM {release.view} ORDER BY id").fetchall()
    con.execute("INSERT INTO base VALUES (1000, 33, 'new', 'F', '00007', 1.5, DATE '2021-01-01'), "
                "(1001, NULL, 'new2', NULL, NULL, NULL, NULL)")
    rows = con.execute(f"SELECT * FROM {release.view} WHERE id >= 1000 ORDER BY id").fetchall()
    assert rows == [
        (1000, 20, 79, "new", "*", "00000", "00039", 1.5, dt.date(2021, 1, 1), None),
        (1001, 20, 79, "new2", "*", "00000", "00039", None, None, None)]
    assert con.execute(f"SELECT * FROM {release.view} WHERE id < 1000 ORDER BY id").fetchall() == before
    check = sqlanon.verify(con, release.view, ["age", "sex", "zip"], 6, class_column="eq_class")
    assert (check.rows, check.unplaced, check.ok, check.leaked) == (302, 2, True, 0)
    assert check.suppressed == (("new, changed or duplicate-key row", 2, 0),)


def test_rows_whose_qi_changed_are_suppressed(con, base):
    release = anonymize(con)
    original = dict(con.execute(f"SELECT id, eq_class FROM {release.view}").fetchall())
    con.execute("UPDATE base SET age = age + 1 WHERE id = 3")
    con.execute("UPDATE base SET sex = 'X' WHERE id = 4")
    con.execute("UPDATE base SET zip = NULL WHERE id = 5")
    con.execute("UPDATE base SET note = 'edited', payload = -1 WHERE id = 6")  # not a QI
    rows = {r[0]: r[1:] for r in con.execute(
        f"SELECT id, age_min, age_max, sex, zip_min, zip_max, eq_class, note FROM {release.view} WHERE id BETWEEN 3 AND 6"
    ).fetchall()}
    for i in (3, 4, 5):
        assert rows[i][:6] == (*ROOT, None), i
        assert rows[i][6] == f"note {i}"
    sizes = dict(con.execute(f"SELECT region, size FROM {release.rules}").fetchall())
    shrunk = {original[i] for i in (3, 4, 5)}
    if original[6] not in shrunk or sizes[original[6]] - sum(original[i] == original[6] for i in (3, 4, 5)) >= 6:
        assert rows[6][5] == original[6] and rows[6][0] is not None  # a non-QI change keeps the row placed
    assert rows[6][6] == "edited"
    # the three changed rows, and the rest of any class that fell below k with them
    expected = 3 + sum(sizes[c] - sum(original[i] == c for i in (3, 4, 5)) for c in shrunk
                       if sizes[c] - sum(original[i] == c for i in (3, 4, 5)) < 6)
    assert con.execute(f"SELECT count(*) FROM {release.view} WHERE eq_class IS NULL").fetchone()[0] == expected


def test_delete_leaves_the_other_rows_intact(con, base):
    release = anonymize(con)
    hit = [r[0] for r in con.execute(f"SELECT eq_class FROM {release.view} WHERE id IN (10, 11)").fetchall()]
    before = con.execute(f"SELECT * FROM {release.view} WHERE eq_class NOT IN ({hit[0]}, {hit[1]}) ORDER BY id").fetchall()
    con.execute("DELETE FROM base WHERE id IN (10, 11)")
    after = con.execute(f"SELECT * FROM {release.view} WHERE eq_class IS NULL OR eq_class NOT IN ({hit[0]}, {hit[1]}) "
                        "ORDER BY id").fetchall()
    left = con.execute(f"SELECT count(*) FROM {release.view} WHERE eq_class IN ({hit[0]}, {hit[1]})").fetchone()[0]
    assert [r for r in after if r[-1] is not None] == before and len(before) >= 298 - 2 * 11
    assert len(after) + left == 298


def test_delete_then_insert_does_not_inherit_a_class(con, base):
    release = anonymize(con)
    con.execute("DELETE FROM base WHERE id = 10")
    con.execute("INSERT INTO base SELECT 2000, 99, 'n', 'M', 'zzzzz', 0, NULL")
    assert con.execute(f"SELECT age_min, age_max, sex, zip_min, zip_max, eq_class FROM {release.view} WHERE id = 2000"
                       ).fetchall() == [(*ROOT, None)]


# -- the rules relation and the row map -------------------------------------------------------
def test_rules_relation(con, base):
    release = anonymize(con)
    rules = release.rules
    assert columns(con, rules) == ["region", "size", "age_min", "age_max", "age_lo", "age_hi", "age_null",
                                   "sex", "sex_node", "zip_min", "zip_max", "zip_lo", "zip_hi", "zip_null"]
    count, total, lo, hi, distinct = con.execute(
        f"SELECT count(*), sum(size), min(region), max(region), count(DISTINCT region) FROM {rules}").fetchone()
    assert (total, lo, hi, distinct) == (300, 0, count - 1, count)
    assert release.regions == count
    assert release.partitions == con.execute(f"SELECT count(*) FROM {rules} WHERE size > 0").fetchone()[0]
    # 'X' never occurs: its empty region is kept so the rules cover the domain
    # (issue 19) it publishes its box: the training values between its cuts, open ends at the
    # column's own smallest / largest value
    empty = con.execute(f"SELECT size, age_min, age_max, zip_min, zip_max, age_lo, age_hi, zip_lo, zip_hi FROM {rules} "
                        f"WHERE sex = 'X'").fetchall()
    ages = sorted(20 + (i * 7) % 60 for i in range(300))
    zips = sorted(f"{v:05d}" for v in (i * 13 % 40 for i in range(300)))
    assert empty and all(
        (size, a_min, a_max, z_min, z_max) == (
            0, min(v for v in ages if a_lo is None or v > a_lo), ages[-1] if a_hi is None else a_hi,
            min(v for v in zips if z_lo is None or v > z_lo), zips[-1] if z_hi is None else z_hi)
        for size, a_min, a_max, z_min, z_max, a_lo, a_hi, z_lo, z_hi in empty)
    assert con.execute(f"SELECT count(*) FROM {rules} WHERE size = 0 AND sex <> 'X'").fetchone()[0] == 0
    assert release.partitions < release.regions
    # the view's classes are the non-empty regions, with the sizes the rules state
    assert con.execute(f"""SELECT count(*) FROM (SELECT eq_class, count(*) AS n FROM {release.view} GROUP BY eq_class) v
        FULL JOIN (SELECT region, size FROM {rules} WHERE size > 0) r ON v.eq_class = r.region
        WHERE v.n IS DISTINCT FROM r.size""").fetchone()[0] == 0
    # the published bounds in the view are those of the rules
    assert con.execute(f"""SELECT count(*) FROM {release.view} v JOIN {rules} r ON v.eq_class = r.region
        WHERE (v.age_min, v.age_max, v.sex, v.zip_min, v.zip_max) IS DISTINCT FROM
              (r.age_min, r.age_max, r.sex, r.zip_min, r.zip_max)""").fetchone()[0] == 0


def test_rules_boxes_contain_the_rows(con, base):
    release = anonymize(con, qid=["age", "zip"], hierarchies=None)
    # q_lo < value <= q_hi (NULL = unbounded); boxes are disjoint, so each row falls into exactly one
    matches = con.execute(f"""
        SELECT b.id, count(r.region) AS n, min(r.region) AS region FROM base b LEFT JOIN {release.rules} r
          ON (r.age_lo IS NULL OR b.age > r.age_lo) AND (r.age_hi IS NULL OR b.age <= r.age_hi)
         AND (r.zip_lo IS NULL OR b.zip > r.zip_lo) AND (r.zip_hi IS NULL OR b.zip <= r.zip_hi)
        GROUP BY b.id""").fetchall()
    assert {n for _, n, _ in matches} == {1}
    placed = dict(con.execute(f"SELECT id, eq_class FROM {release.view}").fetchall())
    assert {i: region for i, _, region in matches} == placed


def test_rowmap(con, base):
    release = anonymize(con)
    assert release.rowmap == "base_anon_rowmap"
    assert columns(con, release.rowmap) == ["key0", "region", "rhash"]
    assert con.execute(f"SELECT count(*), count(DISTINCT key0) FROM {release.rowmap}").fetchone() == (300, 300)
    assert con.execute(f"""SELECT count(*) FROM base b JOIN {release.rowmap} m ON m.key0 = b.id
        JOIN {release.view} v ON v.id = b.id WHERE v.eq_class = m.region""").fetchone()[0] == 300


def test_regions_do_not_depend_on_memory_rows(con, base):
    a = anonymize(con, algorithm=sqlanon.Mondrian(strategy=sqlanon.Levels(memory_rows=0)),
                  output=sqlanon.Output(view="a"))
    b = anonymize(con, algorithm=sqlanon.Mondrian(strategy=sqlanon.Levels(memory_rows=40)),
                  output=sqlanon.Output(view="b"))
    c = anonymize(con, output=sqlanon.Output(view="c"))
    assert classes(con, "a") == classes(con, "b") == classes(con, "c")
    assert (con.execute("SELECT * FROM a_rules ORDER BY region").fetchall()
            == con.execute("SELECT * FROM c_rules ORDER BY region").fetchall())
    assert a.partitions == b.partitions == c.partitions


# -- sources without row ids -----------------------------------------------------------------
@pytest.mark.engines("duckdb")  # read_parquet/read_csv are DuckDB's; PostgreSQL's refusal: test_api
@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_view_over_files_publishes_a_snapshot(con, base, tmp_path, fmt):
    path = tmp_path / f"base.{fmt}"
    options = "(FORMAT parquet)" if fmt == "parquet" else "(FORMAT csv, HEADER)"
    con.execute(f"COPY base TO '{path}' {options}")
    reader = "read_parquet" if fmt == "parquet" else "read_csv"
    con.execute(f"CREATE VIEW files AS SELECT * FROM {reader}('{path}')")
    reference = anonymize(con, output=sqlanon.Output(view="reference"))
    release = anonymize(con, table="files")
    assert release.materialized is True
    assert release.rowmap == "files_anon_rowmap"
    assert release.view == "files_anon" and release.rules == "files_anon_rules"
    assert len(release.notes) == 1 and "'files'" in release.notes[0] and "'files_anon'" in release.notes[0]
    assert kinds(con)["files_anon"] == "view" and kinds(con)["files_anon_rowmap"] == "table"
    assert columns(con, release.view) == columns(con, reference.view)
    assert classes(con, release.view) == classes(con, reference.view)
    assert (release.partitions, release.regions, release.rows) == (reference.partitions, reference.regions, 300)
    assert (con.execute(f"SELECT * FROM {release.view} ORDER BY id").fetchall()
            == con.execute(f"SELECT * FROM {reference.view} ORDER BY id").fetchall())
    assert temp_objects(con) == []


def test_view_over_a_table_is_also_a_snapshot(con, base):
    con.execute("CREATE VIEW older AS SELECT * FROM base WHERE id < 200")
    release = anonymize(con, table="older")
    assert release.materialized and release.rows == 200
    con.execute("INSERT INTO base SELECT 5000, 30, 'late', 'F', '00001', 0, NULL")
    # a snapshot: rows added to the source later do not appear
    assert con.execute(f"SELECT count(*) FROM {release.view}").fetchone()[0] == 200


def test_snapshot_replace(con, base):
    con.execute("CREATE VIEW vv AS SELECT * FROM base")
    if is_postgres(con):  # replace=True refuses to run inside the caller's open transaction
        con.commit()
    anonymize(con, table="vv")
    release = anonymize(con, table="vv", qid=["age"], hierarchies=None, output=sqlanon.Output(replace=True))
    assert columns(con, release.view)[:3] == ["id", "age_min", "age_max"]
    assert release.verification.ok


# -- releases outlive the connection ------------------------------------------------------------
def reconnect(target: str, engine_name: str, read_only: bool = False):
    """A new connection to ``target`` (a DuckDB file path or a PostgreSQL DSN): the DuckDB file opened again, or
    a new PostgreSQL session (same database and search_path)."""
    if engine_name == "duckdb":
        return duckdb.connect(target, read_only=read_only)
    import psycopg

    second = psycopg.connect(target)
    second.read_only = read_only or None
    return second


def test_on_disk_database_survives_reconnecting(con, engine_name, tmp_path):
    target = str(tmp_path / "release.duckdb") if engine_name == "duckdb" else con.info.dsn
    first = duckdb.connect(target) if engine_name == "duckdb" else con
    try:
        i = np.arange(400)
        load_frame(first, "base", pd.DataFrame({"id": i, "age": i % 70, "zip": [f"z{v}" for v in i % 9], "payload": i}),
                   primary_key="id")
        release = sqlanon.anonymize(first, "base", qid=["age", "zip"], k=8)
        published = first.execute(f"SELECT * FROM {release.view} ORDER BY id").fetchall()
        rules = first.execute(f"SELECT * FROM {release.rules} ORDER BY region").fetchall()
        assert temp_objects(first) == []
    finally:
        first.close()  # on PostgreSQL: the session ends, its temp objects with it
    second = reconnect(target, engine_name)
    try:
        assert second.execute(f"SELECT * FROM {release.view} ORDER BY id").fetchall() == published
        assert second.execute(f"SELECT * FROM {release.rules} ORDER BY region").fetchall() == rules
        check = sqlanon.verify(second, release.view, ["age", "zip"], 8, class_column="eq_class")
        assert check.ok and check.rows == 400
        # still live after reconnecting: a changed row is suppressed
        second.execute("UPDATE base SET age = 1000 WHERE id = 1")
        assert second.execute(f"SELECT age_min, age_max, eq_class FROM {release.view} WHERE id = 1").fetchone() == (0, 69, None)
        assert temp_objects(second) == []
    finally:
        second.close()


def test_on_disk_database_read_only_reconnect(con, engine_name, tmp_path):
    target = str(tmp_path / "ro.duckdb") if engine_name == "duckdb" else con.info.dsn
    first = duckdb.connect(target) if engine_name == "duckdb" else con
    try:
        i = np.arange(90)
        load_frame(first, "base", pd.DataFrame({"id": i, "age": i % 30}))
        release = sqlanon.anonymize(first, "base", qid=["age"], k=9)
    finally:
        first.close()
    second = reconnect(target, engine_name, read_only=True)
    try:
        assert second.execute(f"SELECT count(*), count(eq_class) FROM {release.view}").fetchone() == (90, 90)
        assert sqlanon.verify(second, release.view, ["age"], 9).ok
        if engine_name == "postgres":  # read-only indeed: the session refuses a write
            with pytest.raises(Exception, match="read-only transaction"):
                second.execute("DELETE FROM base")
    finally:
        second.close()
