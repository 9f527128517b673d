"""sqlanon.metrics: hand-computed releases with exact values, and a pandas brute force on random
tables (hypothesis), including suppressed rows, a 1e9 offset for RMSE and Adult's hierarchies."""

from __future__ import annotations

import decimal
import json
import math

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import sqlanon
from sqlanon.model.hierarchy import Hierarchy
from sqlanon.release.metrics import Metrics, metrics
from sqlanon.release.regions import regions
from tests.support import frame, is_postgres, load_frame, rows

pytestmark = pytest.mark.engines("duckdb", "postgres")

JOBS = {"*": {"medical": ["nurse", "doctor"], "office": ["clerk", "cashier"]}}
H3 = math.log2(3) - 2 / 3  # H(1/3, 2/3) in bits


def _df(con, sql: str) -> pd.DataFrame:
    """A query's result as a DataFrame, DECIMAL columns as float64 on both engines (as DuckDB's
    ``.df()`` gives them; psycopg gives ``Decimal`` objects)."""
    out = frame(con, sql)
    for c in out.columns:
        if out[c].dtype == object and out[c].map(lambda v: v is None or isinstance(v, decimal.Decimal)).all() \
                and out[c].notna().any():
            out[c] = out[c].astype("float64")
    return out


def _hand(con, key: str | None = None) -> sqlanon.Release:
    """Six rows, k=3: the job hierarchy splits first (tie on normalized range, QI position),
    giving {0,1,2} = (medical, age 1..3) and {3,4,5} = (office, age 10..12); neither splits
    further (a child would hold fewer than 3 rows). With ``key`` the release is a live view."""
    hand = pd.DataFrame([(0, "nurse", 1, "a", 10, "flu"), (1, "doctor", 2, "a", 20, "flu"), (2, "nurse", 3, "b", 30, "cold"),
                         (3, "clerk", 10, "b", 1, "hiv"), (4, "cashier", 11, "b", 2, "flu"), (5, "clerk", 12, "b", 3, "cold")],
                        columns=["id", "job", "age", "y", "t", "s"])
    load_frame(con, "hand", hand, types={"id": "INTEGER", "job": "VARCHAR", "age": "INTEGER", "y": "VARCHAR",
                                         "t": "DOUBLE", "s": "VARCHAR"})
    release = sqlanon.anonymize(con, "hand", qid=["job", "age"], k=3, hierarchies={"job": JOBS},
                                output=sqlanon.Output(key=key))
    assert release.materialized is (key is None)
    got = rows(con, "SELECT id, job, age_min, age_max, eq_class FROM hand_anon ORDER BY id")
    assert [r[1:4] for r in got] == [("medical", 1, 3)] * 3 + [("office", 10, 12)] * 3  # the premise
    return release


def test_hand_computed(con):
    release = _hand(con)
    got = metrics(con, release, targets=["y"], numeric_targets=["t"], sensitive=["s", "t"])
    assert (got.rows, got.suppressed, got.classes, got.k_achieved, got.k) == (6, 0, 2, 3, 3)
    assert got.avg_class_size == 3.0 and got.c_avg == 1.0
    assert got.dm == 9 + 9
    # job: medical and office each hold 2 of 4 leaves: (2-1)/(4-1); age: (3-1)/(12-1), (12-10)/11
    assert got.ncp == pytest.approx({"job": 1 / 3, "age": 2 / 11}, abs=1e-15)
    assert got.gcp == pytest.approx((1 / 3 + 2 / 11) / 2, abs=1e-15)
    assert got.lm == pytest.approx(1 / 3 + 2 / 11, abs=1e-15)
    assert got.cm == pytest.approx({"y": 1 / 6})  # row 2 ('b' among a, a, b)
    assert got.cond_entropy["y"] == pytest.approx(0.5 * H3, abs=1e-12)
    assert got.entropy["y"] == pytest.approx(H3, abs=1e-12)  # 2 a, 4 b
    assert got.rmse["t"] == pytest.approx(math.sqrt((200 + 2) / 6), abs=1e-12)
    assert got.l_distinct == {"s": 2, "t": 3}
    assert got.l_entropy["s"] == pytest.approx(3 / 2 ** (2 / 3), abs=1e-12)  # exp(H(2/3, 1/3))
    assert got.l_entropy["t"] == pytest.approx(3.0, abs=1e-12)
    assert got.min_variance == pytest.approx({"t": 2 / 3}, abs=1e-12)  # var_pop(1, 2, 3)
    assert "s" not in got.min_variance  # text: no variance
    # reloaded by name, the same figures
    assert metrics(con, "hand_anon", targets=["y"], numeric_targets=["t"], sensitive=["s", "t"]) == got


def test_hand_computed_with_suppressed_rows(con):
    release = _hand(con, key="id")  # a live view: it follows the inserts below
    # inserted after the release: no class, every QI fully generalized in the view (the
    # hierarchy's root, the smallest age_min and largest age_max of the rules)
    con.execute("INSERT INTO hand VALUES (6,'nurse',5,'a',100,'flu'), (7,'clerk',11,'b',4,'hiv')")
    assert con.execute("SELECT id, job, age_min, age_max FROM hand_anon WHERE eq_class IS NULL "
                       "ORDER BY id").fetchall() == [(6, "*", 1, 12), (7, "*", 1, 12)]
    got = metrics(con, release, targets=["y"], numeric_targets=["t"], sensitive=["s", "t"])
    assert (got.rows, got.suppressed, got.classes, got.k_achieved) == (8, 2, 2, 3)
    assert got.avg_class_size == 3.0 and got.c_avg == 1.0
    assert got.dm == 9 + 9 + 2 * 8
    assert got.ncp == pytest.approx({"job": (6 / 3 + 2) / 8, "age": (6 * 2 / 11 + 2) / 8}, abs=1e-15)
    assert got.lm == pytest.approx(0.5 + 17 / 44, abs=1e-15)
    assert got.cm["y"] == pytest.approx((1 + 2) / 8)
    # groups: (a, a, b), (b, b, b), suppressed (a, b)
    assert got.cond_entropy["y"] == pytest.approx((3 * H3 + 2 * 1.0) / 8, abs=1e-12)
    p = 3 / 8
    assert got.entropy["y"] == pytest.approx(-(p * math.log2(p) + (1 - p) * math.log2(1 - p)), abs=1e-12)
    # suppressed {100, 4} predicted by its own mean 52
    assert got.rmse["t"] == pytest.approx(math.sqrt((200 + 2 + 2 * 48 ** 2) / 8), abs=1e-12)
    assert got.l_distinct == {"s": 2, "t": 3}  # classes only
    assert got.min_variance["t"] == pytest.approx(2 / 3)


def test_hand_computed_ordered_kinds(con):
    """Dates (microseconds), text (ranks of the published bounds) and NULLs (at the lowest bound)."""
    con.execute("CREATE TABLE d AS SELECT * FROM (VALUES (DATE '2020-01-01'), (DATE '2020-01-02'), "
                "(DATE '2020-01-10'), (DATE '2020-01-11')) v(d)")
    con.execute("CREATE TABLE s AS SELECT * FROM (VALUES ('pear'), ('apple'), ('fig'), ('kiwi')) v(s)")
    con.execute("CREATE TABLE n AS SELECT * FROM (VALUES (0, NULL), (1, NULL), (2, 1), (3, 2), (4, 5), (5, 9)) v(id, a)")
    sqlanon.anonymize(con, "d", qid=["d"], k=2)
    sqlanon.anonymize(con, "s", qid=["s"], k=2)
    sqlanon.anonymize(con, "n", qid=["a"], k=2)
    assert sorted(con.execute("SELECT DISTINCT d_min, d_max FROM d_anon").fetchall()) == [
        (pd.Timestamp("2020-01-01").date(), pd.Timestamp("2020-01-02").date()),
        (pd.Timestamp("2020-01-10").date(), pd.Timestamp("2020-01-11").date())]
    assert metrics(con, "d_anon").ncp["d"] == pytest.approx(1 / 10, abs=1e-15)  # one day of ten
    assert sorted(con.execute("SELECT DISTINCT s_min, s_max FROM s_anon").fetchall()) == [
        ("apple", "fig"), ("kiwi", "pear")]
    assert metrics(con, "s_anon").ncp["s"] == pytest.approx(1 / 3, abs=1e-15)  # ranks 0-1, 2-3 of 0..3
    assert con.execute("SELECT a_min, a_max FROM n_anon ORDER BY id").fetchall() == [(None, 1)] * 3 + [(2, 9)] * 3
    # L = 1 (the smallest bound), U = 9: the NULL class [NULL, 1] loses 0, [2, 9] 7/8
    assert metrics(con, "n_anon").ncp["a"] == pytest.approx(7 / 16, abs=1e-15)


def test_rmse_is_stable_under_a_large_offset(con):
    # e = i/1024 is exact in binary, and so is 1e9 + e: any loss would come from the computation
    i = np.arange(200, dtype=np.int64)
    load_frame(con, "big", pd.DataFrame({"id": i, "q": i % 13, "e": (i * 7 % 8) / 1024.0, "t": 1e9 + (i * 7 % 8) / 1024.0}))
    sqlanon.anonymize(con, "big", qid=["q"], k=10, output=sqlanon.Output(key="id"))  # a live view: the two inserts are suppressed
    con.execute("INSERT INTO big VALUES (900, 1, 3 / 1024.0, 1e9 + 3 / 1024.0), (901, 1, 0.0, 1e9)")
    df = _df(con, "SELECT eq_class, e FROM big_anon")
    assert len(df) == 202 and df["eq_class"].isna().sum() == 2
    group = df["eq_class"].fillna(-1)
    residual = df["e"] - df.groupby(group)["e"].transform("mean")
    expected = math.sqrt((residual ** 2).mean())
    got = metrics(con, "big_anon", numeric_targets=["t", "e"], sensitive=["t"])
    assert expected > 1e-4
    assert got.rmse["e"] == pytest.approx(expected, rel=1e-12)
    assert got.rmse["t"] == pytest.approx(expected, rel=1e-9)
    variances = df.groupby("eq_class")["e"].var(ddof=0)
    assert got.min_variance["t"] == pytest.approx(variances.min(), rel=1e-9)
    # the test can tell: the one-pass formula E[t^2] - E[t]^2 (per class) is garbage here
    t = 1e9 + df["e"]
    naive = (t ** 2).groupby(group).transform("mean") - t.groupby(group).transform("mean") ** 2
    assert abs(math.sqrt(max(naive.mean(), 0.0)) - expected) > 0.1 * expected


def test_adult_hierarchical_ncp(adult):
    con, hierarchies = adult
    qid = ["age", "sex", "education", "marital-status", "native-country"]
    hier = ["sex", "education", "marital-status", "native-country"]
    sqlanon.anonymize(con, "adult", qid=qid, k=20, hierarchies={c: hierarchies[c] for c in hier})
    got = metrics(con, "adult_anon", targets=["salary-class"], sensitive=["occupation"])
    view = _df(con, "SELECT * FROM adult_anon")
    rules = _df(con, "SELECT * FROM adult_anon_rules").set_index("region")
    for c in hier:
        h = Hierarchy.from_csv(hierarchies[c])
        node = rules.loc[view["eq_class"], f"{c}_node"].to_numpy()
        assert [h.labels[x] for x in node] == view[c].tolist()  # the node is the published one
        leaves = h.leaf_hi[node] - h.leaf_lo[node] + 1
        assert got.ncp[c] == pytest.approx(((leaves - 1) / (h.n_leaves - 1)).mean(), abs=1e-12)
    age = (view["age_max"] - view["age_min"]) / (view["age_max"].max() - view["age_min"].min())
    assert got.ncp["age"] == pytest.approx(age.mean(), abs=1e-12)
    assert 0 < got.ncp["native-country"] < 1 and got.k_achieved >= 20
    brute = _brute(view, rules, {"age": ("numeric", None)} | {c: ("hierarchy", Hierarchy.from_csv(hierarchies[c]))
                                                              for c in hier},
                   20, ["salary-class"], [], ["occupation"])
    _compare(got, brute)


def test_odd_names_and_types(con):
    """Booleans, enums (ranked in enum order), TIMESTAMPTZ, DECIMAL, HUGEINT (PostgreSQL: NUMERIC(38, 0));
    quoted names; a view named like the query's internal CTEs."""
    con.execute("CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')")
    if is_postgres(con):
        con.execute(
            'CREATE TABLE "we ird" AS SELECT i::BIGINT AS id, (i % 2 = 0) AS "b ool", '
            "(ARRAY['sad', 'ok', 'happy'])[i % 3 + 1]::mood AS m, "
            "TIMESTAMPTZ '2020-01-01 00:00:00+00' + make_interval(secs => i * i * 3600.5) AS tz, "
            '(i * 1.25)::NUMERIC(10, 2) AS dec, (i * 1000)::NUMERIC(38, 0) AS hi, i % 3 AS "y""", '
            # named like the aliases inside the metric queries
            "i % 4 AS c, i % 5 AS label, i * 0.5 AS s, i % 7 AS mu, i % 6 AS cls FROM generate_series(0, 39) r(i)")
    else:
        con.execute(
            'CREATE TABLE "we ird" AS SELECT i AS id, (i % 2 = 0) AS "b ool", '
            "(['sad', 'ok', 'happy'])[i % 3 + 1]::mood AS m, "
            "TIMESTAMPTZ '2020-01-01 00:00:00+00' + to_seconds(i * i * 3600.5) AS tz, "
            '(i * 1.25)::DECIMAL(10, 2) AS dec, (i * 1000)::HUGEINT AS hi, i % 3 AS "y""", '
            # named like the aliases inside the metric queries
            "i % 4 AS c, i % 5 AS label, i * 0.5 AS s, i % 7 AS mu, i % 6 AS cls FROM range(40) r(i)")
    qid = ["b ool", "m", "tz", "dec", "hi"]
    for view in ("rank0", "__sqlanon_rank1"):
        release = sqlanon.anonymize(con, "we ird", qid=qid, k=4, output=sqlanon.Output(view=view))
        got = metrics(con, release, targets=['y"', "c", "label", "cls"], numeric_targets=["id", "s", "mu"],
                      sensitive=["id", "c", "s", "cls"])
        view_rows = _df(con, f'SELECT * FROM "{view}"')
        rules = _df(con, f'SELECT * FROM "{view}_rules"').set_index("region")
        order = {"sad": 0, "ok": 1, "happy": 2}.__getitem__
        kinds = {"b ool": ("ordinal", None), "m": ("ordinal", order), "tz": ("temporal", None),
                 "dec": ("numeric", None), "hi": ("numeric", None)}
        kinds = {q: kinds[q] for q in qid}
        _compare(got, _brute(view_rows, rules, kinds, 4, ['y"', "c", "label", "cls"], ["id", "s", "mu"],
                             ["id", "c", "s", "cls"]))
        assert 0 < got.ncp["tz"] < 1
        if "m" not in qid:
            continue
        assert 0 < got.ncp["m"] < 1
        points = regions(con, release, as_frame=True)
        bounds = sorted(set(rules["m_min"]) | set(rules["m_max"]), key=order)
        expected = sorted((i, bounds.index(a), bounds.index(b)) for i, a, b in view_rows[["id", "m_min", "m_max"]].values)
        assert sorted(map(tuple, points[["id", "m__lo", "m__hi"]].values.tolist())) == expected


def test_inputs_are_validated(con):
    release = _hand(con)
    with pytest.raises(sqlanon.UnknownColumnError, match="Available:.*'t'"):
        metrics(con, release, targets=["nope"])
    for bad in (["age"], ["age_min"], ["job"], ["eq_class"]):
        with pytest.raises(sqlanon.InputError) as info:
            metrics(con, release, targets=bad)
        assert not isinstance(info.value, sqlanon.UnknownColumnError)
    with pytest.raises(sqlanon.InputError, match="quasi-identifier"):
        metrics(con, release, sensitive=["job"])
    with pytest.raises(sqlanon.InputError, match="numeric"):
        metrics(con, release, numeric_targets=["s"])
    with pytest.raises(sqlanon.InputError, match="list"):
        metrics(con, release, targets="y")
    with pytest.raises(sqlanon.InputError, match="twice"):
        metrics(con, release, targets=["y", "y"])
    with pytest.raises(sqlanon.InputError, match="not a sqlanon release"):
        metrics(con, "hand")


def test_as_dict_and_frame(con):
    got = metrics(con, _hand(con), targets=["y"], numeric_targets=["t"], sensitive=["s", "t"])
    d = got.as_dict()
    assert list(d)[:5] == ["view", "qid", "k", "rows", "suppressed"]
    assert json.loads(json.dumps(d)) == d
    assert d["ncp"] == {"job": got.ncp["job"], "age": got.ncp["age"]}
    frame = got.to_frame()
    assert list(frame.columns) == ["value"]
    assert frame.loc["dm", "value"] == 18 and isinstance(frame.loc["dm", "value"], int)
    assert frame.loc["ncp[age]", "value"] == got.ncp["age"]
    assert frame.loc["l_distinct[t]", "value"] == 3
    assert "view" not in frame.index and "min_variance[s]" not in frame.index
    assert list(frame.index[:3]) == ["k", "rows", "suppressed"]


# -- brute force on random tables ---------------------------------------------------------------
J = {"*": {"P": {"P1": ["a", "b"], "P2": ["c"]}, "Q": ["d", "e", "f"]}}


def _loss(lo: pd.Series, hi: pd.Series, low_bound: float, high_bound: float) -> np.ndarray:
    """(hi - lo) / (U - L) per row; a NULL lo sits at L, a NULL hi (all-NULL class) loses 0."""
    lo = pd.to_numeric(lo).astype("float64").fillna(low_bound).to_numpy()
    hi = pd.to_numeric(hi).astype("float64").to_numpy()
    width = high_bound - low_bound
    return np.nan_to_num((hi - lo) / width) if width > 0 else np.zeros(len(hi))


def _brute(view: pd.DataFrame, rules: pd.DataFrame, kinds: dict, k: int, targets, numeric, sensitive) -> dict:
    """Every metric from the view's rows in pandas (rules only for the hierarchy nodes)."""
    n = len(view)
    sup = view["eq_class"].isna().to_numpy()
    placed = view[~sup]
    sizes = placed.groupby("eq_class").size()
    out: dict = {"rows": n, "suppressed": int(sup.sum()), "classes": len(sizes),
                 "k_achieved": int(sizes.min()) if len(sizes) else 0,
                 "dm": int((sizes ** 2).sum()) + int(sup.sum()) * n}
    out["avg_class_size"] = len(placed) / len(sizes) if len(sizes) else None
    out["c_avg"] = out["avg_class_size"] / k if len(sizes) else None
    ncp = {}
    for q, (kind, h) in kinds.items():
        if kind == "hierarchy":
            node = rules.loc[placed["eq_class"].astype(int), f"{q}_node"].to_numpy()
            loss = (h.leaf_hi[node] - h.leaf_lo[node]) / (h.n_leaves - 1)
        else:
            lo, hi = placed[f"{q}_min"], placed[f"{q}_max"]
            if kind == "temporal":
                lo, hi = [pd.to_datetime(x, utc=True).dt.tz_convert(None).astype("datetime64[us]")
                          .astype("int64").where(x.notna()) for x in (lo, hi)]
            if kind == "ordinal":
                bounds = sorted(set(lo.dropna()) | set(hi.dropna()), key=h or (lambda v: v))
                rank = {v: i for i, v in enumerate(bounds)}
                lo, hi = lo.map(rank), hi.map(rank)
            values = pd.to_numeric(pd.concat([lo, hi])).dropna()
            loss = _loss(lo, hi, float(values.min()) if len(values) else 0.0,
                         float(values.max()) if len(values) else 0.0)
        ncp[q] = (float(np.sum(loss)) + sup.sum()) / n
    out["ncp"] = ncp
    out["gcp"] = sum(ncp.values()) / len(ncp)
    out["lm"] = sum(ncp.values())
    group = view["eq_class"].astype("float").fillna(-1)

    def values(column: pd.Series) -> pd.Series:
        """Labels as values, NULL as one more (SQL groups -0.0 with 0.0; text would not)."""
        return column.astype(object).map(lambda v: "<NULL>" if pd.isna(v) else v)

    def entropy(labels: pd.Series) -> float:
        p = labels.value_counts(normalize=True).to_numpy()
        return float(-(p * np.log(p)).sum())

    out["cm"], out["cond_entropy"], out["entropy"] = {}, {}, {}
    for t in targets:
        labels = values(view[t])
        minority = sum(len(x) - x.value_counts().iloc[0] for _, x in labels[~sup].groupby(group[~sup]))
        out["cm"][t] = (minority + sup.sum()) / n
        out["cond_entropy"][t] = sum(len(x) * entropy(x) for _, x in labels.groupby(group)) / n / math.log(2)
        out["entropy"][t] = entropy(labels) / math.log(2)
    out["rmse"] = {}
    for t in numeric:
        v = view[t].astype(float)
        ok = v.notna()
        residual = (v - v.groupby(group).transform("mean"))[ok]
        out["rmse"][t] = math.sqrt((residual ** 2).mean()) if ok.any() else None
    out["l_distinct"], out["l_entropy"], out["min_variance"] = {}, {}, {}
    for c in sensitive:
        labels = values(placed[c])
        by = labels.groupby(placed["eq_class"])
        out["l_distinct"][c] = int(by.nunique().min())
        out["l_entropy"][c] = float(min(math.exp(entropy(x)) for _, x in by))
        if pd.api.types.is_numeric_dtype(placed[c]):
            var = placed[c].astype(float).groupby(placed["eq_class"]).var(ddof=0).fillna(0.0)
            out["min_variance"][c] = float(var.min()) if len(var) else None
    return out


def _compare(got: Metrics, brute: dict) -> None:
    d = got.as_dict()
    for key, value in brute.items():
        if isinstance(value, dict):
            assert set(d[key]) == set(value), key
            for column, v in value.items():
                if v is None:
                    assert d[key][column] is None, (key, column)
                else:
                    assert d[key][column] == pytest.approx(v, rel=1e-9, abs=1e-12), (key, column)
        elif value is None:
            assert d[key] is None, key
        else:
            assert d[key] == pytest.approx(value, rel=1e-12, abs=1e-12), key


@st.composite
def tables(draw):
    n = draw(st.integers(6, 40))
    maybe = lambda s: st.one_of(st.none(), s) if draw(st.booleans()) else s  # noqa: E731
    rows = draw(st.lists(st.tuples(
        maybe(st.integers(0, 30)),
        st.dates(pd.Timestamp("2000-01-01").date(), pd.Timestamp("2000-03-01").date()),
        st.sampled_from(["ant", "bee", "cat", "dog", "eel"]),
        maybe(st.sampled_from("abcdef")),
        st.one_of(st.none(), st.sampled_from(["yes", "no", "maybe"])),
        st.one_of(st.none(), st.floats(-100, 100, allow_nan=False).map(lambda x: round(x, 3))),
        st.integers(0, 4),
    ), min_size=n, max_size=n))
    k = draw(st.integers(1, 4))
    extra = draw(st.lists(st.tuples(st.integers(0, 30), st.sampled_from("abcdef")), max_size=3))
    return rows, k, extra


@settings(max_examples=12, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow],
          phases=[Phase.explicit, Phase.generate])  # no shrinking: each example runs a release
@given(tables())
# engine-independent algorithm; DuckDB vs PostgreSQL identity is tests/e2e/test_engines.py
def test_random_tables_against_pandas(data):
    rows, k, extra = data
    con = duckdb.connect()
    try:
        # a declared key: the release is a live view, which shows the rows inserted after it
        con.execute("CREATE TABLE r(id INTEGER PRIMARY KEY, a INTEGER, d DATE, s VARCHAR, j VARCHAR, y VARCHAR, "
                    "t DOUBLE, z INTEGER)")
        con.executemany("INSERT INTO r VALUES (?, ?, ?, ?, ?, ?, ?, ?)", [[i, *r] for i, r in enumerate(rows)])
        release = sqlanon.anonymize(con, "r", qid=["a", "d", "s", "j"], k=k, hierarchies={"j": J})
        assert not release.materialized and release.key == ("id",)
        for i, (a, j) in enumerate(extra, len(rows)):  # suppressed: inserted after the release
            con.execute("INSERT INTO r VALUES (?, ?, DATE '2000-01-05', 'cat', ?, 'no', 1.5, 2)", [i, a, j])
        got = metrics(con, release, targets=["y", "z"], numeric_targets=["t", "z"], sensitive=["y", "z", "t"])
        view = con.execute("SELECT * FROM r_anon").df()
        rules = con.execute("SELECT * FROM r_anon_rules").df().set_index("region")
        h = Hierarchy.from_dict(J)
        if any(r[3] is None for r in rows):
            h = h.with_null_leaf()
        kinds = {"a": ("numeric", None), "d": ("temporal", None), "s": ("ordinal", None), "j": ("hierarchy", h)}
        _compare(got, _brute(view, rules, kinds, k, ["y", "z"], ["t", "z"], ["y", "z", "t"]))
        assert got.suppressed == len(extra)
    finally:
        con.close()
