"""End to end: the SQL-pushed Mondrian equals the in-memory oracle, and the release is sound.

The partition must equal :func:`reference_mondrian.reference_mondrian` exactly, whatever
``memory_rows`` is (pure SQL, pure in-memory, mixed); the published view must be k-anonymous,
keep every row and every non-QI value, publish bounds that contain the true values, and the
rules must tile the domain with no allowable split left (minimality).
"""

from __future__ import annotations

import re

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlanon
from tests.support import frame, is_postgres, objects, rows, run, temp_objects
from tests.support.mondrian import check_release, duckdb_statements, load, partition_of, rules_frame, tables
from tests.support.reference_mondrian import reference_mondrian

pytestmark = pytest.mark.engines("duckdb", "postgres")

MEMORY = [0, 7, 10**9]  # pure SQL, mixed, pure in-memory


# -- helpers ---------------------------------------------------------------------------------


# -- hypothesis: random tables ---------------------------------------------------------------


# engine-independent algorithm; DuckDB vs PostgreSQL identity is tests/e2e/test_engines.py
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.sampled_from(MEMORY))
def test_equals_reference_on_random_tables(case, memory_rows):
    df, qid, k, rows = case
    con = duckdb.connect()
    data = load(con, df)
    release = sqlanon.anonymize(con, "t", qid=qid, k=k, hierarchies=rows,
                                algorithm=sqlanon.Mondrian(strategy=sqlanon.Levels(memory_rows=memory_rows)))
    expected = reference_mondrian(data.drop(columns=["id"]), qid, k, rows)
    assert partition_of(con, release.view) == expected
    hierarchies = {q: sqlanon.Hierarchy.from_rows(r) for q, r in rows.items()}
    hierarchies = {q: (h.with_null_leaf() if data[q].isna().any() else h) for q, h in hierarchies.items()}
    check_release(con, release, data, qid, k, hierarchies)


# engine-independent algorithm; DuckDB vs PostgreSQL identity is tests/e2e/test_engines.py
@settings(max_examples=15, deadline=None)
@given(st.integers(50, 400), st.integers(1, 4), st.integers(2, 30), st.integers(0, 2**31))
def test_memory_threshold_does_not_change_the_result(n, d, k, seed):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({f"a{j}": rng.integers(0, rng.integers(2, 200), n) for j in range(d)})
    con = duckdb.connect()
    load(con, df)
    qid = list(df.columns)
    results = []
    for memory_rows in (0, int(rng.integers(1, n)), n):
        release = sqlanon.anonymize(con, "t", qid=qid, k=min(k, n),
                                    algorithm=sqlanon.Mondrian(strategy=sqlanon.Levels(memory_rows=memory_rows)),
                                    output=sqlanon.Output(replace=True))
        results.append((partition_of(con, release.view), rules_frame(con, release)))
    for partition, rules in results[1:]:
        assert partition == results[0][0]
        pd.testing.assert_frame_equal(rules, results[0][1])  # same regions, same numbering


@pytest.mark.engines("duckdb")
@pytest.mark.parametrize("memory_rows, suppression, dropped_early", [(50, 0.0, True), (0, 0.0, False), (50, 0.05, False)])
def test_the_working_table_is_dropped_before_the_publication_when_it_does_not_read_it(
        monkeypatch, memory_rows, suppression, dropped_early):
    """Rows all finished in memory and none suppressed: the row map reads only the finish's
    table, so the working table is dropped before the publication's transaction begins (inside
    it DuckDB would keep its blocks to the commit). Rows finished in SQL (``memory_rows=0``) or
    suppressed rows are read from it: then it is dropped only after the publication."""
    rng = np.random.default_rng(4)
    df = pd.DataFrame({"a": rng.integers(0, 90, 600), "b": rng.integers(0, 7, 600), "s": rng.integers(0, 3, 600)})
    con = duckdb.connect()
    load(con, df)
    statements = duckdb_statements(monkeypatch)
    release = sqlanon.anonymize(con, "t", qid=["a", "b"], k=8, suppression=suppression,
                                algorithm=sqlanon.Mondrian(strategy=sqlanon.Levels(memory_rows=memory_rows)))
    assert release.verification.ok and not temp_objects(con)
    # the working table the publication could read: of the run's working tables (rewritten per
    # level, and the rows that left the SQL levels), the one dropped last
    made = [m for sql in statements for m in re.findall(r'CREATE TEMPORARY TABLE "(__sqlanon_\w+_(?:work|finished)\d*)"', sql)]
    drop = max(statements.index(f'DROP TABLE IF EXISTS "{m}"') for m in made)
    rules = next(i for i, sql in enumerate(statements) if sql.startswith(f'CREATE TABLE "{release.rules}"'))
    begin = max(i for i, sql in enumerate(statements[:rules]) if sql.startswith("BEGIN"))
    assert (drop < begin) == dropped_early


@pytest.mark.engines("duckdb")
def test_a_table_that_fits_in_memory_is_encoded_while_the_finish_reads_it():
    """With no SQL level the working table is read once, so it is a temp view (never written);
    with one it is a table; either way the release is the same and nothing is left behind."""
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"a": rng.integers(0, 90, 400), "b": rng.integers(0, 7, 400)})
    con = duckdb.connect()
    load(con, df)
    def explain(memory_rows, **options):
        algorithm = sqlanon.Mondrian(strategy=sqlanon.Levels(memory_rows=memory_rows))
        return sqlanon.Request("t", ["a", "b"], 5, algorithm=algorithm, **options).explain(con)

    fits = explain(400)
    split = explain(399)
    work_view = re.compile(r'CREATE TEMPORARY VIEW "__sqlanon_\w+_work"')
    assert work_view.search(fits) and not work_view.search(split)
    # either way the source is read in place (a numbered view, no whole copy), in one transaction
    # that a working view holds until the finish has read it
    for listing in (fits, split):
        assert re.search(r'CREATE TEMPORARY VIEW "__sqlanon_\w+_numbered"', listing)
        assert "SELECT *" not in listing.split("_snapshot")[1][:200]
    # (fits: the one read of the working view -- where the QIs are coded, or the finish -- comes first)
    fetch = re.search(r'SELECT\s+\*\s+FROM "__sqlanon_\w+_work"', fits)
    assert fetch and fits.index("COMMIT") > fetch.start() and split.index("COMMIT") < split.index("Finish in memory")
    out = []
    for memory_rows in (400, 399):
        release = sqlanon.anonymize(con, "t", qid=["a", "b"], k=5,
                                    algorithm=sqlanon.Mondrian(strategy=sqlanon.Levels(memory_rows=memory_rows)),
                                    output=sqlanon.Output(replace=True))
        out.append((partition_of(con, release.view), rules_frame(con, release)))
        assert release.verification.ok and not temp_objects(con)
    assert out[0][0] == out[1][0]
    pd.testing.assert_frame_equal(out[0][1], out[1][1])
    with_budget = explain(400, suppression=0.1, output=sqlanon.Output(replace=True))
    # with a budget the working table is written (the publication reads the suppressed rows' codes
    # from it); the baseline (the request without suppression) and the run finish from one fetch
    # of it; the baseline copies nothing and uploads no rows
    assert not work_view.search(with_budget)
    assert len(re.findall(r'SELECT\s+\*\s+FROM "__sqlanon_\w+_work"', with_budget)) == 1
    assert "baseline" not in with_budget


@pytest.mark.engines("duckdb")
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), most=st.integers(15, 90), deleted=st.booleans(), suppression=st.sampled_from([0, 0.05]))
def test_the_snapshot_published_in_row_id_ranges_equals_one_statement(seed, most, deleted, suppression):
    """A table larger than the engine's join_rows is published one row-id range per statement
    (rowid gaps from deletes included): the same rows, regions and bounds as in one statement."""
    from sqlanon.engine import sqlgen
    from sqlanon.engine.duckdb import DuckDBEngine
    from sqlanon.publish import rules as rules_module

    rng = np.random.default_rng(seed)
    n = 160
    con = duckdb.connect()
    load(con, pd.DataFrame({"a": rng.integers(0, 40, n), "b": rng.integers(0, 5, n).astype(float),
                            "s": rng.choice(["x", "y", None], n)}))
    if deleted:
        run(con, "DELETE FROM t WHERE a % 7 = 3")
    kwargs = dict(qid=["a", "b"], k=4, suppression=suppression, output=sqlanon.Output(replace=True))
    one = sqlanon.anonymize(con, "t", **kwargs)
    expected = frame(con, f'SELECT * FROM "{one.view}" ORDER BY ALL')
    used: list[list[tuple]] = []
    real_chunks = rules_module.rid_chunks
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(DuckDBEngine, "join_rows", lambda self: most)
        mp.setattr(rules_module, "rid_chunks", lambda *a: used.append(real_chunks(*a)) or used[-1])
        chunked = sqlanon.anonymize(con, "t", **kwargs)
        ranges = real_chunks(DuckDBEngine(con), sqlgen.table("t"), "rowid", 10**9)
    assert len(used) == 1 and len(used[0]) > 1 and chunked.verification.ok and not temp_objects(con)
    got = frame(con, f'SELECT * FROM "{chunked.view}" ORDER BY ALL')
    pd.testing.assert_frame_equal(got, expected)
    ids = [r[0] for r in rows(con, "SELECT rowid FROM t")]
    assert ranges[0][0] <= min(ids) < ranges[0][1] and ranges[-1][1] > max(ids) and ranges[-1][0] <= max(ids)
    assert all(lo % most == 0 and hi == lo + most for lo, hi in ranges)  # multiples of most, as by_range
    assert all(x[1] <= y[0] for x, y in zip(ranges, ranges[1:]))  # ascending, apart
    assert all(sum(lo <= i < hi for lo, hi in ranges) == 1 for i in ids)  # every id in exactly one
    assert all(0 < sum(lo <= i < hi for i in ids) <= most for lo, hi in ranges)  # none empty


@pytest.mark.engines("duckdb")
def test_a_run_inside_the_callers_transaction_publishes_the_rows_it_appended():
    """Rows a transaction appended and has not committed carry DuckDB row ids from about 2^55 on: a
    run inside that transaction reads them in place, publishes them in the few row-id ranges
    that hold rows (not billions from the smallest id to the largest), and its release stands
    once the caller commits."""
    from sqlanon.engine.duckdb import DuckDBEngine
    from sqlanon.publish import rules as rules_module

    rng = np.random.default_rng(11)
    con = duckdb.connect()
    load(con, pd.DataFrame({"a": rng.integers(0, 60, 300), "b": rng.integers(0, 6, 300), "s": rng.integers(0, 9, 300)}))
    used: list[list[tuple]] = []
    real_chunks = rules_module.rid_chunks
    con.execute("BEGIN")
    con.execute("INSERT INTO t SELECT 300 + range, range % 60, range % 6, 100 + range FROM range(200)")
    assert min(r[0] for r in rows(con, "SELECT rowid FROM t WHERE s >= 100")) >= 36_028_797_018_960_000
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(DuckDBEngine, "join_rows", lambda self: 120)
        mp.setattr(rules_module, "rid_chunks", lambda *a: used.append(real_chunks(*a)) or used[-1])
        release = sqlanon.anonymize(con, "t", ["a", "b"], k=5,
                                    algorithm=sqlanon.Mondrian(strategy=sqlanon.Levels(memory_rows=100)))
    con.execute("COMMIT")
    assert release.verification.ok and release.rows == 500
    assert len(used) == 1 and 4 <= len(used[0]) <= 6, used
    assert rows(con, f'SELECT count(*), sum(s) FROM "{release.view}"') == rows(con, "SELECT count(*), sum(s) FROM t")
    assert sqlanon.verify(con, release.view, ["a", "b"], 5, class_column="eq_class").ok
    assert not temp_objects(con)


@given(st.lists(st.integers(0, 10**6), max_size=60), st.integers(1, 2000))
@settings(max_examples=200, deadline=None)
def test_by_range_lists_rows_by_range_of_ids_and_keeps_their_order(ids, most):
    from sqlanon.mondrian.builder import by_range

    rid = np.array(ids, dtype=np.int64)
    order = by_range(rid, most)
    keys = [i // most for i in ids]
    if order is None:  # nothing to do (one range, or none), or too many ranges for 16-bit numbers
        assert len(set(keys)) <= 1 or max(keys) - min(keys) >= 2**16
        return
    assert sorted(order.tolist()) == list(range(len(ids)))
    expected = sorted(range(len(ids)), key=lambda i: keys[i])  # Python's sort is stable
    assert order.tolist() == expected


# -- real data -------------------------------------------------------------------------------
# engine-independent algorithm; DuckDB vs PostgreSQL identity is tests/e2e/test_engines.py (Adult included)
@pytest.mark.engines("duckdb")
@pytest.mark.parametrize("k", [2, 10, 100, 1000])
def test_adult_all_nine_columns_with_hierarchies(adult, k):
    check_adult(adult, k)


def check_adult(adult, k: int) -> None:
    con, hierarchies = adult
    qid = list(hierarchies)
    run(con, "CREATE TABLE adult_id AS SELECT row_number() OVER () - 1 AS id, * FROM adult")
    data = frame(con, "SELECT * FROM adult_id ORDER BY id")
    release = sqlanon.anonymize(con, "adult_id", qid=qid, k=k, hierarchies=hierarchies)
    assert release.k_achieved >= k and release.verification.ok
    assert release.rows == len(data) == 30162
    loaded = {q: sqlanon.load_hierarchy(p) for q, p in hierarchies.items()}
    view = frame(con, f'SELECT * FROM "{release.view}" ORDER BY id')
    assert view.groupby(qid, dropna=False).size().min() >= k
    assert view["id"].tolist() == data["id"].tolist()
    # Every published label is the node of the row's region, and the row's value is under it.
    rules = rules_frame(con, release).set_index("region")
    for q in qid:
        h = loaded[q]
        codes = h.code_of(data[q].tolist())
        nodes = rules.loc[view["eq_class"], f"{q}_node"].to_numpy()
        assert (h.leaf_lo[nodes] <= codes).all() and (codes <= h.leaf_hi[nodes]).all()
        assert view[q].tolist() == [h.labels[x] for x in nodes]
    if k in (10, 1000):  # the oracle is slow; twice is enough on the real data
        rows = {q: h.to_rows() for q, h in loaded.items()}
        assert partition_of(con, release.view) == reference_mondrian(data.drop(columns=["id"]), qid, k, rows)


# engine-independent algorithm; DuckDB vs PostgreSQL identity is tests/e2e/test_engines.py
@pytest.mark.engines("duckdb")
def test_adult_numeric_age_partition_is_minimal(adult):
    """Age as a number (no hierarchy) next to hierarchical QIs: full property check."""
    con, hierarchies = adult
    qid = ["age", "sex", "race", "education"]
    h = {q: hierarchies[q] for q in qid if q != "age"}
    run(con, "CREATE TABLE adult_small AS SELECT row_number() OVER () - 1 AS id, * FROM adult LIMIT 3000")
    data = frame(con, "SELECT * FROM adult_small ORDER BY id")
    release = sqlanon.anonymize(con, "adult_small", qid=qid, k=25, hierarchies=h)
    loaded = {q: sqlanon.load_hierarchy(p) for q, p in h.items()}
    check_release(con, release, data, qid, 25, loaded)
    assert partition_of(con, release.view) == reference_mondrian(
        data.drop(columns=["id"]), qid, 25, {q: x.to_rows() for q, x in loaded.items()}
    )


def test_release_reports_what_it_did(con):
    load(con, pd.DataFrame({"age": np.arange(100) % 37, "zip": np.arange(100) % 5}))
    seen = []
    release = sqlanon.anonymize(con, "t", qid=["age", "zip"], k=7, progress=seen.append,
                                algorithm=sqlanon.Mondrian(strategy=sqlanon.Levels(memory_rows=20)),
                                output=sqlanon.Output(key="id"))
    assert (release.view, release.rules, release.rowmap) == ("t_anon", "t_anon_rules", "t_anon_rowmap")
    assert release.key == ("id",) and release.class_column == "eq_class"
    assert release.k_achieved >= 7 and release.k == 7 and release.rows == 100
    assert release.elapsed > 0 and set(release.timings) >= {"validate", "encode", "publish_verify"}
    # a first run in this process may first say that it compiles kernels (sqlanon.compilation)
    assert [p.phase for p in seen if p.phase != "compile"][:1] == ["sql"] and seen[-1].open_partitions == 0
    assert seen[-1].rows_finished == 100
    assert not release.materialized and release.verification.ok


def _relations(con) -> set[str]:
    return {name for _, _, name, _ in objects(con)}


def test_inside_the_callers_transaction(con, engine_name):
    """Publishing joins an open transaction instead of breaking it; the caller decides."""
    load(con, pd.DataFrame({"age": np.arange(60) % 23, "zip": np.arange(60) % 4}))
    if engine_name == "duckdb":
        con.execute("BEGIN")
    else:  # psycopg (not autocommit) opens the caller's transaction with its first statement
        from psycopg import pq

        run(con, "UPDATE t SET zip = zip WHERE id = 0")  # a write of the caller's own, in it
        assert con.info.transaction_status == pq.TransactionStatus.INTRANS
    release = sqlanon.anonymize(con, "t", qid=["age", "zip"], k=5)
    if engine_name == "postgres":  # still the caller's transaction, still usable
        assert con.info.transaction_status == pq.TransactionStatus.INTRANS
    assert rows(con, f'SELECT count(*) FROM "{release.view}"') == [(60,)]
    assert _relations(con) >= {"t", "t_anon", "t_anon_rules"}
    if engine_name == "duckdb":
        con.execute("ROLLBACK")
    else:
        con.rollback()
    assert _relations(con) == {"t"} and temp_objects(con) == []
    if engine_name == "postgres":
        con.rollback()  # those reads opened a transaction: end it, the next call runs in none
    assert sqlanon.anonymize(con, "t", qid=["age", "zip"], k=5).verification.ok
    if engine_name == "postgres":  # outside a transaction the release is committed on return
        con.rollback()
        assert _relations(con) >= {"t", "t_anon"}


@pytest.mark.engines("duckdb")  # DuckDB reads Parquet/CSV in place; PostgreSQL refuses: below
@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_files_are_read_in_place_and_published_as_a_snapshot(con, tmp_path, suffix):
    """A path to Parquet/CSV files is a source: DuckDB reads it, a view of a snapshot is published."""
    load(con, pd.DataFrame({"age": np.arange(300) % 41, "zip": np.arange(300) % 6}))
    path = tmp_path / f"people{suffix}"
    con.execute(f"COPY t TO '{path}'")
    from_table = sqlanon.anonymize(con, "t", qid=["age", "zip"], k=9)
    from_file = sqlanon.anonymize(con, str(path), qid=["age", "zip"], k=9, output=sqlanon.Output(view="file_anon"))
    assert from_file.materialized and from_file.rowmap == "file_anon_rowmap" and str(path) in from_file.notes[0]
    kinds = dict(con.sql("SELECT view_name, 'view' FROM duckdb_views() UNION ALL "
                         "SELECT table_name, 'table' FROM duckdb_tables()").fetchall())
    assert kinds.get("file_anon") == "view" and kinds.get("file_anon_rowmap") == "table"
    assert partition_of(con, "file_anon") == partition_of(con, from_table.view)


@pytest.mark.engines("duckdb", "postgres")
def test_missing_files_are_named_as_files(con, tmp_path):
    """Issue 49: a missing file was "no table named '<path>'" with the catalog's tables listed, and
    a glob matching nothing a raw DuckDB IO error. Now: file not found, no files match, or the
    suffixes sqlanon reads -- before anything is written, on either engine, and from verify too."""
    load(con, pd.DataFrame({"age": np.arange(30) % 7}))
    for i in range(60):  # a catalog long enough that listing it would say nothing
        run(con, f"CREATE TABLE other_{i} (a INTEGER)")
    before = objects(con)
    cases = [(str(tmp_path / "missing.csv"), sqlanon.UnknownTableError, "file not found: "),
             (str(tmp_path / "no" / "such.parquet"), sqlanon.UnknownTableError, "file not found: "),
             (str(tmp_path / "none*.parquet"), sqlanon.UnknownTableError, "no files match "),
             ("people.jsonl", sqlanon.UnknownTableError, "file not found: "),
             (str(tmp_path / "book.xlsx"), sqlanon.InputError, "'.xlsx' is not a data file sqlanon reads "
                                                               "(Parquet, CSV or JSON files: .parquet, .csv, .tsv, .gz, "
                                                               ".json, .jsonl, .ndjson)")]
    if is_postgres(con):  # PostgreSQL reads no files: its refusal says so first, whether or not they exist
        refusal = (sqlanon.InputError, "which only the DuckDB engine reads in place; on postgres")
        cases = [(name, *(refusal if error is sqlanon.UnknownTableError else (error, message)))
                 for name, error, message in cases]
    for name, error, message in cases:
        for call in (lambda: sqlanon.anonymize(con, name, qid=["age"], k=2),
                     lambda: sqlanon.verify(con, name, ["age"], 2)):
            with pytest.raises(error) as info:
                call()
            assert message in str(info.value) and repr(name) in str(info.value), info.value
            assert "other_" not in str(info.value) and "Available" not in str(info.value)
    assert objects(con) == before and temp_objects(con) == []
    # a name that is no path is still looked up among the tables, with the hint
    with pytest.raises(sqlanon.UnknownTableError, match="no table or view named 'tt'. Did you mean 't'"):
        sqlanon.anonymize(con, "tt", qid=["age"], k=2)


@pytest.mark.engines("duckdb")
def test_errors_reading_a_file_never_quote_its_lines(con, tmp_path):
    """Issue 49: DuckDB's CSV errors quote the line they fail on and the value they could not
    convert -- here the 30,002nd line, past the rows DuckDB samples to detect types. The error
    names the line number and the column, not what the file holds."""
    path = tmp_path / "people.csv"
    lines = ["age,zip"] + [f"{i % 90},{i % 7}" for i in range(30_000)] + ["5,topsecret-value"]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(sqlanon.SqlanonError) as info:
        sqlanon.anonymize(con, str(path), qid=["age", "zip"], k=5, output="file_anon")
    message = str(info.value).split("\n-- while running:")[0]
    assert "topsecret" not in message and "Original Line" not in message
    assert "CSV Error on Line: 30002" in message and 'column "zip"' in message
    assert temp_objects(con) == []


@pytest.mark.engines("postgres")
@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_files_are_refused_clearly_on_postgres(con, tmp_path, suffix):
    """PostgreSQL cannot read data files in place: a clear InputError before anything is written,
    and the caller's transaction stays usable."""
    data = load(con, pd.DataFrame({"age": np.arange(300) % 41, "zip": np.arange(300) % 6}))
    path = tmp_path / f"people{suffix}"
    writer = duckdb.connect()  # a real file of that format, written by DuckDB
    writer.register("data", data)
    writer.execute(f"COPY data TO '{path}'")
    writer.close()
    before = objects(con)
    with pytest.raises(sqlanon.InputError) as info:
        sqlanon.anonymize(con, str(path), qid=["age", "zip"], k=9, output=sqlanon.Output(view="file_anon"))
    message = str(info.value)
    assert str(path) in message and "only the DuckDB engine reads" in message and "postgres" in message
    assert objects(con) == before and temp_objects(con) == []
    assert rows(con, "SELECT count(*) FROM t") == [(300,)]  # the connection still works


def test_text_qi_with_nulls_is_ranked_once(con):
    """A text QI with NULLs is measured by its codes, NULL being rank 0: its normalized range was
    computed on doubly shifted ranks, which chose the wrong QI to split (found by hypothesis)."""
    q0 = [1, 0, 1, 0, 0, 0, 0, 1] + [0] * 12 + [3, 3, 1]
    q1 = ["v0", "v0", None, "v0", "v0", "v0", "v0", None] + ["v0"] * 8 + ["v1", "v0", "v0", "v0", "v0", "v3", "v2"]
    df = pd.DataFrame({"q0": pd.Series(q0, dtype="Int64"), "q1": pd.Series(q1, dtype=object),
                       "q2": pd.Series([-1.5] * 23, dtype="Float64"), "payload": [f"p{i}" for i in range(23)]})
    data = load(con, df)
    release = sqlanon.anonymize(con, "t", qid=["q0", "q1", "q2"], k=2,
                                algorithm=sqlanon.Mondrian(strategy=sqlanon.Levels(memory_rows=0)))
    assert partition_of(con, release.view) == reference_mondrian(data.drop(columns=["id"]), ["q0", "q1", "q2"], 2, {})
    check_release(con, release, data, ["q0", "q1", "q2"], 2, {})  # every property, on each engine
