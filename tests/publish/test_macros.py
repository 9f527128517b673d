"""``sql/macros.sql``: the SQL-only checks agree with :func:`sqlanon.verify` and a pandas brute force."""

from __future__ import annotations

import math

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlanon
from sqlanon.cli import install_macros, macros_path
from sqlanon.publish.verify import class_columns

TOLERANCE = 1e-9  # the macros' relative tolerance for the entropy and variance thresholds
MACROS = ["sqlanon_class_sizes", "sqlanon_distinct_l_check", "sqlanon_entropy_l_check", "sqlanon_k_check",
          "sqlanon_variance_check"]


@pytest.fixture(scope="module")
def mcon():
    """One connection with the macros, shared by the examples (each replaces table ``t``)."""
    con = duckdb.connect()
    con.execute(macros_path().read_text(encoding="utf-8"))  # what `duckdb DB < sql/macros.sql` does
    yield con
    con.close()


def load(con: duckdb.DuckDBPyConnection, frame: pd.DataFrame) -> None:
    con.register("frame", frame)
    con.execute("CREATE OR REPLACE TABLE t AS SELECT * FROM frame")
    con.unregister("frame")


def one(con: duckdb.DuckDBPyConnection, sql: str, params: list) -> dict:
    cursor = con.execute(sql, params)
    names = [d[0] for d in cursor.description]
    rows = cursor.fetchall()
    assert len(rows) == 1
    return dict(zip(names, rows[0]))


# Columns with small domains (so classes repeat) and NULLs; "b c" checks quoting.
values = st.one_of(st.none(), st.integers(0, 3))
texts = st.one_of(st.none(), st.sampled_from(["a", "b", "c"]))


@st.composite
def tables(draw) -> pd.DataFrame:
    n = draw(st.integers(0, 30))
    frame = pd.DataFrame({
        "x": pd.array(draw(st.lists(values, min_size=n, max_size=n)), dtype="Int64"),
        "b c": pd.array(draw(st.lists(texts, min_size=n, max_size=n)), dtype="string"),
        "y": pd.array(draw(st.lists(values, min_size=n, max_size=n)), dtype="Int64"),
        "s": pd.array(draw(st.lists(texts, min_size=n, max_size=n)), dtype="string"),
        "v": pd.array(draw(st.lists(st.one_of(st.none(), st.integers(-5, 5)), min_size=n, max_size=n)),
                      dtype="Int64"),
    })
    return frame


columns = st.lists(st.sampled_from(["x", "b c", "y"]), min_size=1, max_size=3, unique=True)
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def brute_classes(frame: pd.DataFrame, cols: list[str]):
    """Groups of rows by the class columns, NULLs grouping together."""
    return frame.groupby(cols, dropna=False, sort=False) if len(frame) else []


@SETTINGS
@given(frame=tables(), cols=columns, k=st.integers(1, 6))
def test_k_check_agrees_with_verify(mcon, frame, cols, k):
    load(mcon, frame)
    got = one(mcon, "SELECT * FROM sqlanon_k_check('t', ?, ?)", [cols, k])
    check = sqlanon.verify(mcon, "t", cols, k)
    assert got == {"ok": check.ok, "k_achieved": check.k_achieved, "classes": check.classes,
                   "violating": check.violating, "rows": check.rows}
    sizes = mcon.execute("SELECT * FROM sqlanon_class_sizes('t', ?)", [cols]).df()
    assert list(sizes.columns) == [c for c in frame.columns if c in cols] + ["class_size"]  # table order
    expected = sorted(len(g) for _, g in brute_classes(frame, cols))
    assert sorted(sizes["class_size"].tolist()) == expected
    assert sizes["class_size"].tolist() == sorted(sizes["class_size"].tolist())  # smallest first


@SETTINGS
@given(frame=tables(), cols=columns, l=st.integers(1, 4), lh=st.floats(0.5, 3.5))
def test_l_diversity_checks_agree_with_pandas(mcon, frame, cols, l, lh):
    load(mcon, frame)
    distinct, entropy_l = [], []
    for _, g in brute_classes(frame, cols):
        counts = g["s"].value_counts(dropna=False).to_numpy(dtype=float)  # NULL is one value
        p = counts / counts.sum()
        distinct.append(len(counts))
        entropy_l.append(math.exp(-(p * np.log(p)).sum()))
    got = one(mcon, "SELECT * FROM sqlanon_distinct_l_check('t', ?, 's', ?)", [cols, l])
    bad = sum(d < l for d in distinct)
    assert got == {"ok": bool(distinct) and bad == 0, "l_achieved": min(distinct, default=0),
                   "classes": len(distinct), "violating": bad}
    got = one(mcon, "SELECT * FROM sqlanon_entropy_l_check('t', ?, 's', ?)", [cols, lh])
    bad = sum(e < lh * (1 - TOLERANCE) for e in entropy_l)
    assert got["l_achieved"] == pytest.approx(min(entropy_l, default=0), rel=1e-12)
    assert (got["ok"], got["classes"], got["violating"]) == (bool(entropy_l) and bad == 0, len(entropy_l), bad)


@SETTINGS
@given(frame=tables(), cols=columns, v=st.sampled_from([0, 0.25, 1, 2.25, 4, 6.5, 10]))
def test_variance_check_agrees_with_pandas(mcon, frame, cols, v):
    load(mcon, frame)
    variances = []
    for _, g in brute_classes(frame, cols):
        known = g["v"].dropna().to_numpy(dtype=float)  # NULLs are ignored
        variances.append(float(known.var()) if len(known) else 0.0)
    got = one(mcon, "SELECT * FROM sqlanon_variance_check('t', ?, 'v', ?)", [cols, v])
    bad = sum(x < v - TOLERANCE * abs(v) for x in variances)
    assert got["variance_achieved"] == pytest.approx(min(variances, default=0), rel=1e-9, abs=1e-12)
    assert (got["ok"], got["classes"], got["violating"]) == (bool(variances) and bad == 0, len(variances), bad)


def test_exact_thresholds_pass():
    """A class with l equally frequent values is entropy-l-diverse; variance v meets v."""
    con = duckdb.connect()
    install_macros(con)
    con.execute("CREATE TABLE e AS SELECT i % 2 AS c, i % 3 AS s FROM range(12) t(i)")  # 3 values x 2 rows
    assert one(con, "SELECT ok, violating FROM sqlanon_entropy_l_check('e', ['c'], 's', 3)", []) == \
        {"ok": True, "violating": 0}
    assert one(con, "SELECT ok FROM sqlanon_entropy_l_check('e', ['c'], 's', 3.01)", [])["ok"] is False
    assert one(con, "SELECT ok, variance_achieved FROM sqlanon_variance_check('e', ['c'], 's', 2.0 / 3)", []) == \
        {"ok": True, "variance_achieved": pytest.approx(2 / 3)}


def test_macros_check_a_release_like_verify(adult):
    con, hierarchies = adult
    qid = ["age", "sex", "education"]
    release = sqlanon.anonymize(con, "adult", qid, 25, hierarchies={"education": hierarchies["education"]})
    install_macros(con)
    cols = list(class_columns([d[0] for d in con.sql(f'SELECT * FROM "{release.view}" LIMIT 0').description], qid))
    assert cols == ["age_min", "age_max", "sex_min", "sex_max", "education"]
    got = one(con, "SELECT * FROM sqlanon_k_check(?, ?, 25)", [release.view, cols])
    assert got == {"ok": True, "k_achieved": release.k_achieved, "classes": release.partitions,
                   "violating": 0, "rows": 30_162}
    assert one(con, "SELECT ok FROM sqlanon_k_check(?, ?, ?)", [release.view, cols, release.k_achieved + 1])["ok"] is False
    # The salary class as sensitive attribute: most classes hold both values.
    got = one(con, "SELECT * FROM sqlanon_distinct_l_check(?, ?, 'salary-class', 2)", [release.view, cols])
    assert got["classes"] == release.partitions and 0 < got["violating"] < got["classes"]


def test_unknown_column_is_an_error_not_ignored(mcon):
    load(mcon, pd.DataFrame({"x": [1, 2], "s": ["a", "b"], "v": [1, 2]}))
    for sql in ("SELECT * FROM sqlanon_k_check('t', ['x', 'nope'], 2)",
                "SELECT * FROM sqlanon_distinct_l_check('t', ['x'], 'nope', 2)",
                "SELECT * FROM sqlanon_variance_check('t', ['nope'], 'v', 2)"):
        with pytest.raises(duckdb.BinderException, match="nope"):
            mcon.execute(sql)


def test_macros_read_files(mcon, tmp_path):
    path = tmp_path / "r.parquet"
    mcon.execute(f"COPY (SELECT i % 3 AS a FROM range(9) t(i)) TO '{path}' (FORMAT PARQUET)")
    assert one(mcon, "SELECT * FROM sqlanon_k_check(?, ['a'], 3)", [str(path)]) == \
        {"ok": True, "k_achieved": 3, "classes": 3, "violating": 0, "rows": 9}


def test_installed_macros_persist(tmp_path):
    db = str(tmp_path / "m.duckdb")
    con = duckdb.connect(db)
    installed = install_macros(con)
    assert [name for name, _ in installed] == MACROS
    assert dict(installed)["sqlanon_k_check"] == ["tbl", "cols", "k"]
    install_macros(con)  # CREATE OR REPLACE: installing twice is fine
    con.close()
    con = duckdb.connect(db)
    con.execute("CREATE TABLE p AS SELECT i % 4 AS a FROM range(10) t(i)")
    assert one(con, "SELECT ok, k_achieved FROM sqlanon_k_check('p', ['a'], 2)", []) == {"ok": True, "k_achieved": 2}
    con.close()
