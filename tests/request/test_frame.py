"""``sqlanon.anonymize_frame`` (issue 19, part 5): a pandas DataFrame or PyArrow table in, the
anonymized frame and its Release out -- equal to :func:`sqlanon.anonymize` on a DuckDB table of
the same data, row for row in the input's order, with every non-QI column (and the index) the
input's own."""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlanon
from tests.support import request_options

SEX = {"*": ["F", "M"]}


def make(seed: int, n: int, nulls: bool) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.integers(17, 70, n).astype(float)
    if nulls:
        age[rng.random(n) < 0.1] = np.nan
    return pd.DataFrame({
        "note": pd.Categorical(rng.choice(["a", "b", "c"], n)),
        "age": pd.array(age, dtype="Int64"),
        "zip": rng.integers(0, 8, n).astype(np.int32),
        "sex": rng.choice(["F", "M"], n),
        "income": rng.normal(50, 10, n),
        "when": pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 99, n), unit="D"),
    }, index=pd.Index(rng.permutation(n) * 10, name="rid"))


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), n=st.integers(12, 80), nulls=st.booleans(),
       options=st.sampled_from([{}, {"published": "domain"}, {"target": "income"}, {"sensitive": "note", "l": 1.5},
                                {"recoding": "single"}]))
def test_frame_equals_anonymize_on_a_duckdb_table(seed, n, nulls, options):
    frame = make(seed, n, nulls)
    qid = ["age", "zip", "sex"]
    k = 4
    out, release = sqlanon.anonymize_frame(frame, qid=qid, k=k, hierarchies={"sex": SEX}, **request_options(**options))
    # the same data as a DuckDB table, anonymized directly
    con = duckdb.connect()
    table = frame.reset_index(drop=True).assign(pos=np.arange(n))
    con.register("src", table)
    con.execute("CREATE TABLE people AS SELECT * FROM src")
    direct = sqlanon.anonymize(con, "people", qid=qid, k=k, hierarchies={"sex": SEX},
                               output=sqlanon.Output(key="pos"), **request_options(**options))
    want = con.execute(f"SELECT age_min, age_max, zip_min, zip_max, sex, eq_class FROM {direct.view} ORDER BY pos").df()
    assert list(out.columns) == ["note", "age_min", "age_max", "zip_min", "zip_max", "sex", "income", "when", "eq_class"]
    got = out[list(want.columns)].reset_index(drop=True)
    for c in want.columns:
        assert got[c].astype(object).where(got[c].notna(), None).tolist() == \
            want[c].astype(object).where(want[c].notna(), None).tolist(), c
    assert (release.partitions, release.k_achieved, release.published) == (direct.partitions, direct.k_achieved, direct.published)
    # non-QI columns and the index: the input's own, dtypes included
    assert out.index.equals(frame.index)
    for c in ("note", "income", "when"):
        pd.testing.assert_series_equal(out[c], frame[c])
    assert len(out) == n and release.verification.ok


def test_arrow_in_arrow_out_and_the_release_lives_in_the_connection():
    frame = make(1, 60, False)
    table = pa.Table.from_pandas(frame, preserve_index=False)
    con = duckdb.connect()
    out, release = sqlanon.anonymize_frame(table, ["age", "zip"], 5, con=con, name="people", published="domain",
                                           output=sqlanon.Output(view="people_v"))
    assert isinstance(out, pa.Table) and out.num_rows == 60
    assert out.column_names == ["note", "age_min", "age_max", "zip_min", "zip_max", "sex", "income", "when", "eq_class"]
    for c in ("note", "sex", "income", "when"):
        assert out.column(c).equals(table.column(c))
    assert sqlanon.metrics(con, release).k_achieved >= 5 and release.view == "people_v"
    # a second frame in the same connection needs another name, or replace=True
    with pytest.raises(sqlanon.ObjectExistsError, match="already exists"):
        sqlanon.anonymize_frame(table, ["age"], 5, con=con, name="people")
    again, _ = sqlanon.anonymize_frame(table, ["age"], 5, con=con, name="people",
                                       output=sqlanon.Output(view="people_v", replace=True))
    assert again.column_names[:3] == ["note", "age_min", "age_max"]


def test_not_a_frame_fails_clearly():
    for bad in ([1, 2], {"age": [1, 2]}, np.zeros((3, 2)), "people"):
        with pytest.raises(sqlanon.FrameError, match="pandas DataFrame or a PyArrow Table"):
            sqlanon.anonymize_frame(bad, qid=["age"], k=2)
    with pytest.raises(sqlanon.FrameError, match="non-empty strings"):
        sqlanon.anonymize_frame(pd.DataFrame({0: [1, 2], 1: [3, 4]}), qid=[0], k=1)
    with pytest.raises(sqlanon.FrameError, match="distinct"):
        sqlanon.anonymize_frame(pd.DataFrame([[1, 2]], columns=["a", "A"]), qid=["a"], k=1)
    with pytest.raises(sqlanon.FrameError, match="key="):
        sqlanon.anonymize_frame(pd.DataFrame({"a": [1, 2]}), qid=["a"], k=1, output=sqlanon.Output(key="a"))
    with pytest.raises(sqlanon.FrameError, match="DuckDB connection"):
        sqlanon.anonymize_frame(pd.DataFrame({"a": [1, 2]}), qid=["a"], k=1, con=object())
    con = duckdb.connect()
    with pytest.raises(sqlanon.UnknownColumnError, match="age"):
        sqlanon.anonymize_frame(pd.DataFrame({"a": [1, 2]}), qid=["age"], k=1, con=con)
    assert con.execute("SELECT count(*) FROM duckdb_tables()").fetchall() == [(0,)]  # nothing left behind


# -- nothing the function did not load is ever overwritten (issue 49, parts 2 and 4) ----------
def _catalog(con) -> list[tuple]:
    """Every table's and view's name, kind and rows, for comparing before and after."""
    names = con.execute("SELECT table_name, 'table' FROM duckdb_tables() UNION ALL "
                        "SELECT view_name, 'view' FROM duckdb_views() WHERE NOT internal").fetchall()
    return sorted((n, kind, sorted(con.execute(f'SELECT * FROM "{n}"').fetchall(), key=repr)) for n, kind in names)


@pytest.mark.parametrize("ddl", ["CREATE TABLE people AS SELECT 7 AS precious",
                                 "CREATE TABLE people AS SELECT 7 AS precious, 0::BIGINT AS __sqlanon_row",
                                 "CREATE VIEW people AS SELECT 7 AS precious"], ids=["table", "table-like", "view"])
@pytest.mark.parametrize("replace", [False, True])
def test_a_table_or_view_of_the_callers_is_never_replaced(ddl, replace):
    """``name=`` of the caller's own table (even one shaped like an upload) or view: refused with
    ObjectExistsError, before anything is written, whatever ``replace`` says."""
    con = duckdb.connect()
    con.execute(ddl)
    before = _catalog(con)
    with pytest.raises(sqlanon.ObjectExistsError, match="'people'"):
        sqlanon.anonymize_frame(make(1, 40, False), ["age"], 5, con=con, name="people",
                                output=sqlanon.Output(replace=replace))
    assert _catalog(con) == before


@pytest.mark.parametrize("bad", [dict(qid=["nope"]), dict(k=1000), dict(hierarchies={"sex": {"*": ["F"]}}),
                                 dict(view="people")], ids=["column", "k", "hierarchy", "view"])
def test_the_request_is_validated_before_an_earlier_upload_is_replaced(bad):
    """A refused request with ``replace=True`` leaves the earlier upload (and its release) as they were."""
    con = duckdb.connect()
    sqlanon.anonymize_frame(make(1, 40, False), ["age", "sex"], 5, con=con, name="people",
                            hierarchies={"sex": SEX})
    before = _catalog(con)
    request = {"qid": ["age", "sex"], "k": 5, "hierarchies": {"sex": SEX}, **bad}
    with pytest.raises(sqlanon.InputError):
        sqlanon.anonymize_frame(make(2, 60, False), con=con, name="people", **request,
                                output=sqlanon.Output(replace=True))
    assert _catalog(con) == before


def test_the_source_of_another_release_is_never_replaced():
    con = duckdb.connect()
    _, first = sqlanon.anonymize_frame(make(1, 40, False), ["age"], 5, con=con, name="people")
    before = _catalog(con)
    with pytest.raises(sqlanon.ObjectExistsError, match=r"source of the release\(s\) \['people_anon'\]"):
        sqlanon.anonymize_frame(make(2, 60, False), ["age"], 5, con=con, name="people",
                                output=sqlanon.Output(view="other", replace=True))
    assert _catalog(con) == before
    assert sqlanon.verify(con, first.view, ["age"], 5, class_column="eq_class").ok
    # replacing that release too is what replace=True is for
    _, again = sqlanon.anonymize_frame(make(2, 60, False), ["age"], 5, con=con, name="people",
                                       output=sqlanon.Output(replace=True))
    assert again.rows == 60 and again.view == first.view


def test_a_read_only_connection_is_refused_clearly(tmp_path):
    path = str(tmp_path / "ro.duckdb")
    duckdb.connect(path).close()
    con = duckdb.connect(path, read_only=True)
    with pytest.raises(sqlanon.ReadOnlyError, match="read-only"):
        sqlanon.anonymize_frame(make(1, 40, False), ["age"], 5, con=con)
    assert _catalog(con) == []
