"""sqlanon.imprecision against brute force (KDD 2006, Section 3.4, equation 6).

The oracle for random tables is independent of the parser and of the SQL: a region is returned
for a predicate iff *some point of its published box* satisfies the predicate, found by
enumerating every point of the box (integer QIs: every integer in ``[q_min, q_max]``, plus NULL
and everything below when ``q_min`` is NULL; hierarchical QIs: the leaves under the node) and
evaluating the generated predicate in plain Python with SQL's three-valued logic. True rows are
the source rows for which that evaluation is TRUE. On Adult, a pandas computation from the rules
and the hierarchies checks per-box overlap with inner hierarchy nodes.
"""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlanon
from sqlanon.errors import InputError, UnknownTableError
from sqlanon.model.hierarchy import Hierarchy
from sqlanon.model.selection import Members, Range, SelectionError, parse_selection
from sqlanon.publish import manifest
from sqlanon.release.imprecision import Imprecision, imprecision
from tests.support import frame, is_postgres, run
from tests.support import rows as fetch_rows
from tests.support.selections import (
    box_points,
    evaluate,
    example_connection,
    examples,
    make_table,
    predicates,
    release_for,
    render,
    tables,
)

pytestmark = pytest.mark.engines("duckdb", "postgres")


# -- random predicates over (a INTEGER, b INTEGER, h hierarchical) -----------------------------------


def overlapping_regions(rules: pd.DataFrame, hierarchy, p) -> pd.DataFrame:
    hit = [any(evaluate(p, pt) is True for pt in box_points(r, hierarchy)) for _, r in rules.iterrows()]
    return rules[np.array(hit, dtype=bool)] if len(rules) else rules


def release_hierarchy(con, view):
    return manifest.read(con, view).hierarchies["h"]


def test_random_tables_against_enumeration(con, engine_name):
    @settings(max_examples=examples(engine_name, 40, 4), deadline=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(data=tables(), ps=st.lists(predicates(), min_size=1, max_size=3))
    def run_example(data, ps):
        with example_connection(con) as c:
            random_table_against_enumeration(c, *data, ps)

    run_example()


def random_table_against_enumeration(con, rows, k, ps):
    release = release_for(con, rows, k)
    texts = []
    for p in ps:
        try:
            parse_selection(render(p), manifest.read(con, release.view).qis)
        except SelectionError as e:
            assert "NOT over" in str(e)
            continue
        texts.append(p)
    if not texts:
        return
    result = imprecision(con, release, [render(p) for p in texts])
    rules = frame(con, f'SELECT * FROM "{release.rules}"')
    view = frame(con, f'SELECT eq_class FROM "{release.view}"')
    h = release_hierarchy(con, release.view)
    source = [dict(zip(("id", "a", "b", "h", "v"), r)) for r in rows]
    for p, got in zip(texts, result.predicates):
        hit = overlapping_regions(rules, h, p)
        returned = int(hit["size"].sum())
        true = sum(evaluate(p, r) is True for r in source)
        assert (got.returned, got.true, got.imprecision) == (returned, true, returned - true), got.text
        assert returned == int(view["eq_class"].isin(hit["region"]).sum())  # sizes match the view
        assert got.imprecision >= 0
    assert result.total == sum(p.imprecision for p in result.predicates)


def test_hand_computed(con):
    """A one-QI table where the regions are known: a NULL shares a region with small values."""
    values = [None, 1, 2, 5, 6, 7, 20, 21, 22, 30, 31, 32]
    make_table(con, [(i, a, 0, "p1", "x") for i, a in enumerate(values)])
    release = sqlanon.anonymize(con, "t", qid=["a"], k=3)
    boxes = fetch_rows(con, f'SELECT a_min, a_max, size FROM "{release.rules}" ORDER BY region')
    assert boxes == [(None, 2, 3), (5, 7, 3), (20, 22, 3), (30, 32, 3)]
    r = imprecision(con, release, ["a < 0", "a IS NULL", "a = 6", "a > 6 AND a < 20", "a BETWEEN 3 AND 4",
                                   "a <> 6", "a > 100", "a IS NOT NULL", "a >= 2 OR a = 6"])
    assert [(p.returned, p.true) for p in r.predicates] == [
        (3, 0),    # the NULL region reads as [bottom, 2]
        (3, 1),
        (3, 1),
        (3, 1),    # (6, 20): only [5, 7] overlaps; 7 is true
        (0, 0),    # falls between two regions
        (12, 10),
        (0, 0),
        (12, 11),
        (12, 10),  # [5, 7] counted once though both boxes overlap it
    ]
    assert r.total == 3 + 2 + 2 + 2 + 0 + 2 + 0 + 1 + 2
    assert (r.returned, r.true) == (48, 34)
    frame = r.to_frame()
    assert list(frame.columns) == ["predicate", "returned", "true", "imprecision"]
    assert frame["predicate"].tolist()[0] == "a < 0" and frame["imprecision"].sum() == r.total


def test_adult_hierarchies_against_pandas(adult):
    con, paths = adult
    hier = {c: paths[c] for c in ("education", "marital-status", "workclass")}
    release = sqlanon.anonymize(con, "adult", qid=["age", "education", "marital-status", "workclass"], k=25,
                                hierarchies=hier)
    m = manifest.read(con, release.view)
    texts = [
        "age BETWEEN 30 AND 50",
        "education = 'Higher education' AND age > 60",
        "\"marital-status\" IN ('spouse present', 'Never-married') OR workclass = 'Self-emp-inc'",
        "education <> 'Bachelors' AND age < 25",
        "age < 18 OR age >= 65",
        "workclass NOT IN ('Government', 'Private') AND education = 'Primary School'",
        "workclass = 'Unemployed' OR \"marital-status\" = 'spouse not present'",
        "age = 38 AND education = 'Masters' AND \"marital-status\" = 'Divorced'",
    ]
    result = imprecision(con, release.view, texts)
    rules = frame(con, f'SELECT * FROM "{release.rules}"')
    source = frame(con, "SELECT * FROM adult")
    hs = {c: Hierarchy.from_csv(p) for c, p in hier.items()}  # no NULLs in Adult
    for text, got in zip(texts, result.predicates):
        sel = parse_selection(text, m.qis)
        hit = np.zeros(len(rules), dtype=bool)
        true = np.zeros(len(source), dtype=bool)
        for box in sel.boxes:
            in_box = np.ones(len(rules), dtype=bool)
            row_in = np.ones(len(source), dtype=bool)
            for c in box.conditions:
                if isinstance(c, Range):
                    lo = c.low.value if c.low else -np.inf
                    hi = c.high.value if c.high else np.inf
                    assert c.low is None or c.low.closed and (c.high is None or c.high.closed)  # integers
                    q_min = rules["age_min"].astype("Float64").to_numpy(dtype=float, na_value=np.nan)
                    q_max = rules["age_max"].astype("Float64").to_numpy(dtype=float, na_value=np.nan)
                    in_box &= (q_max >= lo) & (q_min <= hi)  # no NULL ages in Adult
                    row_in &= source["age"].between(lo, hi).to_numpy()
                else:
                    assert isinstance(c, Members)
                    h = hs[c.name]
                    leaves_of = [set(h.leaves[h.leaf_lo[n]: h.leaf_hi[n] + 1]) for n in rules[f"{c.name}_node"]]
                    in_box &= np.array([bool(ls & c.leaves) for ls in leaves_of])
                    row_in &= source[c.name].isin(c.leaves).to_numpy()
            hit |= in_box
            true |= row_in
        assert got.returned == int(rules.loc[hit, "size"].sum()), text
        assert got.true == int(true.sum()), text
        dialect = "postgres" if is_postgres(con) else "duckdb"
        assert got.true == fetch_rows(con, f"SELECT count(*) FROM adult WHERE {sel.predicate().sql(dialect)}")[0][0]
        assert got.imprecision >= 0 and got.true > 0, text


def test_inner_node_equals_its_leaves(adult):
    con, paths = adult
    release = sqlanon.anonymize(con, "adult", qid=["age", "education"], k=50,
                                hierarchies={"education": paths["education"]})
    leaves = "'Bachelors', 'Masters', 'Doctorate', 'Prof-school', 'Assoc-acdm', 'Assoc-voc', 'Some-college'"
    a, b, c, d = imprecision(con, release, ["education = 'Higher education'", f"education IN ({leaves})",
                                            "education = 'Higher education' AND age > 60",
                                            f"age > 60 AND education IN ({leaves})"]).predicates
    assert (a.returned, a.true) == (b.returned, b.true) and a.true > 0
    assert (c.returned, c.true) == (d.returned, d.true) and c.imprecision > 0


def test_nulls_in_a_hierarchy(con):
    rows = [(i, i % 10, i % 5, [None, "p1", "p2", "s1", "bsc", "msc"][i % 6], "x") for i in range(60)]
    release = release_for(con, rows, 4)
    r = imprecision(con, release, ["h IS NULL", "h IS NOT NULL", "h = '*'", "h = 'school' OR h IS NULL"])
    rules = frame(con, f'SELECT * FROM "{release.rules}"')
    h = release_hierarchy(con, release.view)
    assert h.has_null_leaf
    null_node = int(h.leaf_node[0])
    with_null = rules[[h.leaf_lo[n] <= 0 <= h.leaf_hi[n] for n in rules["h_node"]]]
    assert r.predicates[0].returned == int(with_null["size"].sum()) and r.predicates[0].true == 10
    assert r.predicates[1].true == 50 and r.predicates[2].true == 50  # '*' means its leaves; NULL is not one of them
    assert r.predicates[3].true == 40
    assert r.predicates[2].returned == int(rules.loc[rules["h_node"] != null_node, "size"].sum())


def test_trained_and_untrained_predicates_and_names(con):
    make_table(con, [(i, i % 10, i % 5, "p1", "x") for i in range(50)], name="my table")
    release = sqlanon.anonymize(con, "my table", qid=["a", "b"], k=5, output=sqlanon.Output(view="my view"))
    one = imprecision(con, "my view", "a > 4")
    assert isinstance(one, Imprecision) and len(one.predicates) == 1 and one.view == "my view"
    assert one.predicates[0].true == 25
    assert imprecision(con, release, []).total == 0


@pytest.mark.engines("duckdb")  # DuckDB alone reads a Parquet file in place
def test_file_source(con, tmp_path):
    make_table(con, [(i, i % 10, i % 5, "p1", "x") for i in range(40)])
    path = str(tmp_path / "t.parquet")
    con.execute(f"COPY t TO '{path}' (FORMAT PARQUET)")
    release = sqlanon.anonymize(con, path, qid=["a", "b"], k=4, output=sqlanon.Output(view="pq_anon"))
    assert release.materialized
    r = imprecision(con, release, "a BETWEEN 2 AND 4")
    assert r.predicates[0].true == 12 and r.predicates[0].returned >= 12


@pytest.mark.engines("postgres")
def test_file_source_is_refused_on_postgres(con, tmp_path):
    """PostgreSQL reads no data file in place: a clear InputError naming the engine, nothing written."""
    make_table(con, [(i, i % 10, i % 5, "p1", "x") for i in range(40)])
    path = str(tmp_path / "t.parquet")
    with duckdb.connect() as writer:  # a real Parquet file, written by DuckDB
        make_table(writer, [(i, i % 10, i % 5, "p1", "x") for i in range(40)])
        writer.execute(f"COPY t TO '{path}' (FORMAT PARQUET)")
    with pytest.raises(InputError, match=r"only the DuckDB engine reads in place; on postgres load it into a table"):
        sqlanon.anonymize(con, path, qid=["a", "b"], k=4, output=sqlanon.Output(view="pq_anon"))
    assert fetch_rows(con, "SELECT count(*) FROM pg_class WHERE relname = 'pq_anon'") == [(0,)]


def test_errors(con):
    make_table(con, [(i, i % 10, i % 5, "p1", "x") for i in range(30)])
    release = sqlanon.anonymize(con, "t", qid=["a", "b"], k=3)
    with pytest.raises(SelectionError, match="'v' is not a quasi-identifier"):
        imprecision(con, release, ["a > 1", "v = 'x'"])
    with pytest.raises(SelectionError, match="2 statements"):
        imprecision(con, release, "a > 1; DROP TABLE t")
    assert fetch_rows(con, "SELECT count(*) FROM t") == [(30,)]
    with pytest.raises(InputError, match="SQL strings"):
        imprecision(con, release, [1])
    with pytest.raises(InputError, match="not a sqlanon release"):
        imprecision(con, "t", "a > 1")
    run(con, "ALTER TABLE t RENAME TO t2")
    with pytest.raises(UnknownTableError):
        imprecision(con, release, "a > 1")
