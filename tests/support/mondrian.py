"""Brute-force oracles of a Mondrian release, shared by the tests of every search that publishes one.

* :func:`load` loads a frame with an ``id`` column; :func:`partition_of`, :func:`rules_frame`
  read a release back.
* :func:`check_release`: every documented property of a release, from the published relations
  (one row per base row, k-anonymity, rules that tile the domain, minimality).
* :func:`tables` and :func:`workloads`: random tables (hypothesis) for releases without and with
  a workload (targets, sensitive columns).
* :func:`judge` and :func:`impurity_of`: a constraint's verdict and a criterion's impurity in
  plain Python, for :func:`tests.support.reference_mondrian.reference_mondrian`.
* :func:`duckdb_statements`: the SQL every DuckDB engine runs from now on.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np
import pandas as pd
from hypothesis import strategies as st

import sqlanon
from sqlanon.model.hierarchy import Hierarchy
from tests.support.db import frame, load_frame, rows, run


def load(con, df: pd.DataFrame, name: str = "t") -> pd.DataFrame:
    """Create (or replace) table ``name`` from ``df`` plus an ``id`` column (0..n-1 in the
    frame's order); return it as the engine reads it back."""
    data = df.copy()
    data.insert(0, "id", np.arange(len(df)))
    run(con, f'DROP TABLE IF EXISTS "{name}"')
    load_frame(con, name, data)
    return frame(con, f'SELECT * FROM "{name}" ORDER BY id')


def partition_of(con, view: str) -> set[frozenset[int]]:
    groups: dict[int, set[int]] = {}
    for rid, cls in rows(con, f'SELECT id, eq_class FROM "{view}"'):
        groups.setdefault(cls, set()).add(rid)
    return {frozenset(g) for g in groups.values()}


def rules_frame(con, release: sqlanon.Release) -> pd.DataFrame:
    return frame(con, f'SELECT * FROM "{release.rules}" ORDER BY region')


def _null(v: object) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA or v is pd.NaT


def in_box(value: object, rule: pd.Series, qi: str, h: Hierarchy | None) -> bool:
    """Does a QI value fall in a rule's domain box (the documented membership test)?"""
    if h is not None:
        code = int(h.code_of([None if _null(value) else value])[0])
        node = int(rule[f"{qi}_node"])
        return code >= 0 and int(h.leaf_lo[node]) <= code <= int(h.leaf_hi[node])
    if _null(value):
        return bool(rule[f"{qi}_null"])
    lo, hi = rule[f"{qi}_lo"], rule[f"{qi}_hi"]
    return (_null(lo) or value > lo) and (_null(hi) or value <= hi)


def check_release(
    con,
    release: sqlanon.Release,
    data: pd.DataFrame,
    qid: list[str],
    k: int,
    hierarchies: dict[str, Hierarchy],
) -> None:
    """Every documented property of a release, checked from the published relations."""
    view = frame(con, f'SELECT * FROM "{release.view}" ORDER BY id')
    rules = rules_frame(con, release)
    # One row per base row, non-QI columns unchanged.
    assert len(view) == len(data)
    assert view["id"].tolist() == list(range(len(data)))
    others = [c for c in data.columns if c not in qid]
    pd.testing.assert_frame_equal(view[others].reset_index(drop=True), data[others].reset_index(drop=True))
    # k-anonymity over the published QI columns, independently of eq_class.
    published = [p for q in qid for p in ((q,) if q in hierarchies else (f"{q}_min", f"{q}_max"))]
    sizes = view.groupby(published, dropna=False).size()
    assert sizes.min() >= k
    assert sqlanon.verify(con, release.view, qid, k).ok
    # Rules: ids 0..R-1, sizes add up, partitions = non-empty regions.
    assert rules["region"].tolist() == list(range(len(rules)))
    assert rules["size"].sum() == len(data)
    assert release.partitions == int((rules["size"] > 0).sum())
    assert Counter(view["eq_class"]) == {r: s for r, s in zip(rules["region"], rules["size"]) if s > 0}
    by_region = rules.set_index("region")
    for _, row in view.iterrows():
        rule = by_region.loc[row["eq_class"]]
        value_row = data.loc[row["id"]]
        for q in qid:
            v = value_row[q]
            h = hierarchies.get(q)
            assert in_box(v, rule, q, h), (q, v, dict(rule))
            if h is None:  # published bounds contain the value; NULL sorts first
                lo, hi = row[f"{q}_min"], row[f"{q}_max"]
                if _null(v):
                    assert _null(lo)
                else:
                    assert (_null(lo) or lo <= v) and v <= hi
            else:
                assert row[q] == h.labels[int(rule[f"{q}_node"])] or (_null(row[q]) and h.labels[int(rule[f"{q}_node"])] is None)
    check_tiling(rules, data, qid, hierarchies)
    check_minimal(view, rules, data, qid, k, hierarchies)


def probe_values(values: pd.Series, h: Hierarchy | None) -> list[object]:
    """Points of one QI's domain: every value, the gaps between them, beyond both ends, NULL."""
    if h is not None:
        return list(h.leaves)
    present = sorted({v for v in values if not _null(v)})
    points: list[object] = [None, *present]
    if present and all(isinstance(v, (int, float, np.integer, np.floating)) for v in present):
        nums = [float(v) for v in present]
        points += [nums[0] - 1, nums[-1] + 1] + [(a + b) / 2 for a, b in zip(nums, nums[1:])]
    elif present and all(isinstance(v, str) for v in present):
        points += ["", present[-1] + "~"] + [a + "\x00" for a in present]
    return points


def check_tiling(rules: pd.DataFrame, data: pd.DataFrame, qid: list[str], hierarchies: dict[str, Hierarchy]) -> None:
    """Every point of the domain (values, gaps, beyond the ends, NULL) is in exactly one rule."""
    axes = [probe_values(data[q], hierarchies.get(q)) for q in qid]
    points = list(itertools.product(*axes))
    if len(points) > 3000:
        points = [points[i] for i in np.random.default_rng(0).choice(len(points), 3000, replace=False)]
    members = [
        [all(in_box(v, rule, q, hierarchies.get(q)) for v, q in zip(point, qid)) for _, rule in rules.iterrows()]
        for point in points
    ]
    assert all(sum(m) == 1 for m in members), "rules must cover the domain without overlap"


def check_minimal(view, rules, data, qid, k, hierarchies) -> None:
    """No region has an allowable split left (brute force over every cut and hierarchy node)."""
    for region, ids in view.groupby("eq_class")["id"]:
        rows = data.loc[ids.tolist()]
        rule = rules.set_index("region").loc[region]
        for q in qid:
            h = hierarchies.get(q)
            if h is None:
                key = rows[q].map(lambda v: (0, 0) if _null(v) else (1, v))
                counts = Counter(key)
                left = 0
                for value in sorted(counts)[:-1]:
                    left += counts[value]
                    assert not (left >= k and len(rows) - left >= k), f"region {region} splits on {q}"
            else:
                node = int(rule[f"{q}_node"])
                if not h.children[node]:
                    continue
                codes = h.code_of([None if _null(v) else v for v in rows[q]])
                child = h.child_of(np.full(len(codes), node), codes)
                sizes = Counter(child.tolist()).values()
                assert not all(s >= k for s in sizes), f"region {region} splits hierarchy {q}"


@st.composite
def tables(draw):
    n = draw(st.integers(1, 40))
    d = draw(st.integers(1, 3))
    cols: dict[str, list] = {}
    hierarchies: dict[str, list[list[str]]] = {}
    for j in range(d):
        kind = draw(st.sampled_from(["int", "float", "text", "hier"]))
        nulls = draw(st.booleans())
        if kind == "int":
            values = draw(st.lists(st.integers(-3, draw(st.integers(0, 30))), min_size=n, max_size=n))
        elif kind == "float":
            values = draw(st.lists(st.sampled_from([-1.5, 0.0, 0.25, 2.0, 7.75, 1e6]), min_size=n, max_size=n))
        else:
            leaves = [f"v{i}" for i in range(draw(st.integers(1, 6)))]
            values = draw(st.lists(st.sampled_from(leaves), min_size=n, max_size=n))
            if kind == "hier":
                groups = draw(st.lists(st.integers(0, 2), min_size=len(leaves), max_size=len(leaves)))
                deep = draw(st.booleans())
                hierarchies[f"q{j}"] = [
                    [leaf, f"g{g}", f"h{g % 2}", "*"] if deep else [leaf, f"g{g}", "*"]
                    for leaf, g in zip(leaves, groups)
                ]
        if nulls:
            mask = draw(st.lists(st.booleans(), min_size=n, max_size=n))
            values = [None if m else v for v, m in zip(values, mask)]
        series = pd.Series(values, dtype="Int64" if kind == "int" else ("Float64" if kind == "float" else object))
        cols[f"q{j}"] = series
    cols["payload"] = pd.Series([f"p{i}" for i in range(n)])
    k = draw(st.integers(1, n))
    return pd.DataFrame(cols), [f"q{j}" for j in range(d)], k, hierarchies


def duckdb_statements(monkeypatch) -> list[str]:
    """The SQL of every statement DuckDB engines run or fetch rows of from now on, in order (the
    list fills as they run)."""
    from sqlanon.engine.duckdb import DuckDBEngine
    statements: list[str] = []
    for method in ("_run", "_fetch_numpy", "_fetch_rows"):
        original = getattr(DuckDBEngine, method)
        monkeypatch.setattr(DuckDBEngine, method,
                            lambda self, sql, original=original: (statements.append(sql), original(self, sql))[1])
    return statements


def _values(df: pd.DataFrame, col: str, rows) -> list:
    return [None if pd.isna(v) else v for v in df[col].to_numpy()[rows]]


def judge(df: pd.DataFrame, constraint) -> callable:
    """``ok(rows)`` for one constraint, from the raw values of the rows."""

    def ok(rows) -> bool:
        if isinstance(constraint, sqlanon.VarianceDiversity):
            vals = [v for v in _values(df, constraint.sensitive, rows) if v is not None]
            var = float(np.var(np.array(vals, dtype=float))) if vals else 0.0
            return var >= constraint.v * (1 - 1e-9)
        counts = sorted(Counter(_values(df, constraint.sensitive, rows)).values(), reverse=True)
        n = sum(counts)
        if isinstance(constraint, sqlanon.DistinctLDiversity):
            return len(counts) >= constraint.l
        if isinstance(constraint, sqlanon.EntropyLDiversity):
            h = -sum(c / n * math.log(c / n) for c in counts)
            return h >= math.log(constraint.l) - 1e-9
        return counts[0] < constraint.c * sum(counts[constraint.l - 1 :])

    return ok


def impurity_of(df: pd.DataFrame, criterion) -> callable | None:
    """``impurity(rows, partition_rows)`` for one criterion (None for Median)."""

    def bits(col, rows):
        counts = Counter(_values(df, col, rows)).values()
        n = sum(counts)
        return -sum(c * math.log2(c / n) for c in counts) if n else 0.0

    def sse(col, rows):
        vals = np.array([v for v in _values(df, col, rows) if v is not None], dtype=float)
        return float(((vals - vals.mean()) ** 2).sum()) if len(vals) else 0.0

    if isinstance(criterion, sqlanon.InfoGain):
        return lambda rows, part: sum(bits(t, rows) for t in criterion.targets)
    if isinstance(criterion, sqlanon.Regression):
        return lambda rows, part: sum(sse(t, rows) for t in criterion.targets)
    if isinstance(criterion, sqlanon.Targets):
        def normalized(rows, part):
            total = 0.0
            for t in criterion.classes:
                base = bits(t, part)
                total += bits(t, rows) / base if base > 0 else 0.0
            for t in criterion.numeric:
                base = sse(t, part)
                total += sse(t, rows) / base if base > 0 else 0.0
            return total
        return normalized
    return None


@st.composite
def workloads(draw):
    n = draw(st.integers(4, 36))
    d = draw(st.integers(1, 2))
    cols: dict[str, pd.Series] = {}
    hierarchies = {}
    for j in range(d):
        if draw(st.booleans()):
            cols[f"q{j}"] = pd.Series(draw(st.lists(st.integers(0, draw(st.integers(1, 12))), min_size=n, max_size=n)),
                                      dtype="Int64")
        else:
            leaves = [f"v{i}" for i in range(draw(st.integers(2, 5)))]
            cols[f"q{j}"] = pd.Series(draw(st.lists(st.sampled_from(leaves), min_size=n, max_size=n)), dtype=object)
            groups = draw(st.lists(st.integers(0, 1), min_size=len(leaves), max_size=len(leaves)))
            hierarchies[f"q{j}"] = [[leaf, f"g{g}", "*"] for leaf, g in zip(leaves, groups)]
    labels = draw(st.lists(st.sampled_from(["x", "y", "z", None]), min_size=n, max_size=n))
    cols["label"] = pd.Series(labels, dtype=object)
    big = draw(st.booleans())  # a large offset: the moments must stay exact / stable
    cols["amount"] = pd.Series([v + (10**9 if big else 0) for v in draw(st.lists(st.integers(0, 9), min_size=n, max_size=n))],
                               dtype="Int64")
    cols["ratio"] = pd.Series(draw(st.lists(st.sampled_from([0.5, 1.25, 2.0, 7.5, None]), min_size=n, max_size=n)),
                              dtype="Float64")
    cols["diag"] = pd.Series(draw(st.lists(st.sampled_from(["flu", "hiv", "cold"]), min_size=n, max_size=n)), dtype=object)
    cols["cost"] = pd.Series(draw(st.lists(st.integers(0, 5), min_size=n, max_size=n)), dtype="Int64")
    constraint = draw(st.sampled_from([
        None,
        sqlanon.DistinctLDiversity("diag", 2),
        sqlanon.EntropyLDiversity("diag", 1.5),
        sqlanon.RecursiveCLDiversity("diag", c=2.0, l=2),
        sqlanon.VarianceDiversity("cost", 0.5),
    ]))
    criterion = draw(st.sampled_from([
        sqlanon.Median(),
        sqlanon.InfoGain("label"),
        sqlanon.InfoGain("label", min_gain=0.3),
        sqlanon.Regression("amount"),
        sqlanon.Regression("amount", "ratio"),
        sqlanon.Targets(classes=("label",), numeric=("amount",)),
    ]))
    k = draw(st.integers(1, max(1, n // 3)))
    return pd.DataFrame(cols), [f"q{j}" for j in range(d)], k, hierarchies, constraint, criterion
