"""sqlanon.violations: the classes that break each constraint, worst first; and the constraint
and criterion records of release manifests read back exactly.

* On random tables, every constraint kind: the count and the worst value agree with
  :func:`sqlanon.verify`, and the listed classes with a brute-force computation per class.
* constraints and criteria round-trip through their JSON records, thresholds to the last digit;
  ``describe()`` texts (for people) stay short.
"""

from __future__ import annotations

import json
import math

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sqlanon
from sqlanon.model.criteria import criterion_from_record, criterion_record
from sqlanon.model.privacy import from_record, to_record
from sqlanon.publish.violations import violations


def _measure(rows: pd.DataFrame, c, whole: pd.DataFrame | None = None) -> tuple[float, bool]:
    """(the constraint's measure, fails) of one class, by hand (t-closeness, delta-disclosure and
    beta-likeness against ``whole``; the latter two as ARX's DDisclosurePrivacy, BasicBLikeness
    and EnhancedBLikeness judge a class: every value present in it)."""
    if isinstance(c, (sqlanon.DeltaDisclosure, sqlanon.BetaLikeness)):
        p = rows[c.sensitive].fillna("<NULL>").value_counts() / len(rows)
        q = whole[c.sensitive].fillna("<NULL>").value_counts() / len(whole)
        if isinstance(c, sqlanon.DeltaDisclosure):
            bits = [abs(math.log2(p[v] / q[v])) for v in p.index]
            return max(bits), any(b >= c.delta for b in bits)
        increase = [(p[v] - q[v]) / q[v] for v in p.index]
        bound = [min(c.beta, -math.log(q[v])) if c.enhanced else c.beta for v in p.index]
        return max(increase), any(x > b + 1e-9 for x, b in zip(increase, bound))
    if isinstance(c, sqlanon.TCloseness):
        nulls = ["<NULL>"] if whole[c.sensitive].isna().any() else []
        order = [*nulls, *sorted(whole[c.sensitive].dropna().unique())]  # NULL first, then ascending
        def share(frame):
            counts = frame[c.sensitive].fillna("<NULL>").value_counts()
            return np.array([counts.get(v, 0) for v in order], dtype=float) / len(frame)
        r = share(rows) - share(whole)
        d = 0.5 * np.abs(r).sum() if c.distance == "equal" else np.abs(np.cumsum(r)).sum() / max(len(order) - 1, 1)
        return float(d), d > c.t + 1e-9
    if isinstance(c, sqlanon.KAnonymity):
        return float(len(rows)), len(rows) < c.k
    if isinstance(c, sqlanon.VarianceDiversity):
        values = rows[c.sensitive].dropna().to_numpy(dtype=float)
        variance = float(values.var()) if len(values) else 0.0
        return variance, variance < c.v * (1 - 1e-9)
    counts = np.sort(rows[c.sensitive].fillna("<NULL>").value_counts().to_numpy())[::-1]
    if isinstance(c, sqlanon.DistinctLDiversity):
        return float(len(counts)), len(counts) < c.l
    if isinstance(c, sqlanon.EntropyLDiversity):
        p = counts / counts.sum()
        h = float(-(p * np.log(p)).sum())
        return math.exp(h), h < math.log(c.l) - 1e-9
    tail = counts[c.l - 1:].sum()
    return (math.inf if tail == 0 else counts[0] / tail), not counts[0] < c.c * tail


@settings(max_examples=25, deadline=None, database=None)
@given(st.integers(1, 300), st.integers(0, 2**32 - 1))
def test_violations_against_verify_and_brute_force(n, seed):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "a": rng.integers(0, 4, n),
        "b": rng.choice(["x", "y", None], n),
        "s": rng.choice(["p", "q", "r", None], n, p=[0.55, 0.25, 0.1, 0.1]),
        "v": np.where(rng.random(n) < 0.1, np.nan, rng.normal(0, 3, n).round(1)),
    })
    constraints = [
        sqlanon.KAnonymity(int(rng.integers(1, 25))),
        sqlanon.DistinctLDiversity("s", int(rng.integers(1, 5))),
        sqlanon.EntropyLDiversity("s", float(rng.uniform(1, 3.5))),
        sqlanon.RecursiveCLDiversity("s", float(rng.uniform(0.3, 4)), int(rng.integers(1, 4))),
        sqlanon.VarianceDiversity("v", float(rng.uniform(0, 12))),
        sqlanon.TCloseness("s", float(rng.uniform(0.05, 0.5))),
        sqlanon.TCloseness("s", float(rng.uniform(0.05, 0.5)), "ordered"),
        sqlanon.DeltaDisclosure("s", float(rng.uniform(0.2, 2.5))),
        sqlanon.BetaLikeness("s", float(rng.uniform(0.1, 3))),
        sqlanon.BetaLikeness("s", float(rng.uniform(0.1, 3)), enhanced=True),
    ]
    con = duckdb.connect()
    try:
        con.register("frame", frame)
        con.execute("CREATE TABLE t AS SELECT a, b, s, v FROM frame")
        groups = [rows for _, rows in frame.groupby(["a", "b"], dropna=False)]
        for c in constraints:
            found = violations(con, "t", ["a", "b"], c, limit=7)
            check = sqlanon.verify(con, "t", ["a", "b"], c.k if isinstance(c, sqlanon.KAnonymity) else 1,
                                   constraints=[] if isinstance(c, sqlanon.KAnonymity) else [c])
            violating = check.violating if isinstance(c, sqlanon.KAnonymity) else check.checks[0].violating
            per_class = [(_measure(rows, c, frame), rows) for rows in groups]
            bad = [m for (m, fails), _ in per_class if fails]
            assert found.violating == violating == len(bad), c
            highest = isinstance(c, (sqlanon.RecursiveCLDiversity, sqlanon.TCloseness, sqlanon.DeltaDisclosure,
                                     sqlanon.BetaLikeness))
            worst = (max if highest else min)(
                m for (m, _), _ in per_class)
            assert found.worst == pytest.approx(worst), c
            assert found.constraint == c.describe() and len(found.classes) == min(7, len(bad))
            ordered = sorted(bad, reverse=highest)
            assert [v.value for v in found.classes] == pytest.approx(ordered[:7]), c
            for v in found.classes:
                rows = frame[(frame["a"] == v.key["a"]) & (frame["b"].isna() if v.key["b"] is None
                                                           else frame["b"] == v.key["b"])]
                assert len(rows) == v.size and _measure(rows, c, frame) == (pytest.approx(v.value), True)
    finally:
        con.close()


def test_records_round_trip_exactly():
    for c in [sqlanon.KAnonymity(10), sqlanon.DistinctLDiversity("it's, (odd)", 3),
              sqlanon.EntropyLDiversity("dx", 1.5), sqlanon.EntropyLDiversity("dx", 50),
              sqlanon.EntropyLDiversity("dx", 1.23456789012), sqlanon.RecursiveCLDiversity("dx", 0.1 + 0.2, 2),
              sqlanon.VarianceDiversity("cost", 1e6), sqlanon.VarianceDiversity("a=1, l=2", 1 / 3),
              sqlanon.TCloseness("dx", 0.1 + 0.2), sqlanon.TCloseness("dx", 0.25, "ordered"),
              sqlanon.TCloseness("dx", 1 / 3, "hierarchical", sqlanon.Hierarchy.from_dict({"*": {"ab": ["a", "b"]}})),
              sqlanon.DeltaDisclosure("dx", 0.1 + 0.2), sqlanon.BetaLikeness("dx", 1 / 3),
              sqlanon.BetaLikeness("dx", 2.5, enhanced=True)]:
        back = from_record(json.loads(json.dumps(to_record(c))))  # as the manifest stores it
        assert back == c and type(back) is type(c)
    for criterion in [sqlanon.Median(), sqlanon.InfoGain("y", "z", min_gain=0.1 + 0.2), sqlanon.Regression("cost"),
                      sqlanon.Targets(("y",), ("cost",), 1 / 3),
                      sqlanon.Selections(["age < 30 OR zip = '1'"], sqlanon.InfoGain("y"))]:
        back = criterion_from_record(json.loads(json.dumps(criterion_record(criterion))))
        assert back == criterion and type(back) is type(criterion)
    # short texts stay short (reports show them)
    assert sqlanon.EntropyLDiversity("dx", 50).describe() == "entropy l-diversity('dx', l=50)"
    assert sqlanon.EntropyLDiversity("dx", 1.23456789012).describe() == "entropy l-diversity('dx', l=1.23456789012)"
    for record in [{"type": "DeltaPresence", "sensitive": "dx", "delta": 0.2}, {"type": "KAnonymity", "k": 2, "l": 3}]:
        with pytest.raises((ValueError, TypeError)):
            from_record(record)
    for record in [{"type": "Median", "targets": ["y"]}, {"type": "InfoGain"}, {"type": "Genetic"}, ["Median"],
                   {"type": "Selections", "predicates": ["a < 1"],
                    "then": {"type": "Selections", "predicates": [], "then": {"type": "Median"}}}]:
        with pytest.raises(ValueError):
            criterion_from_record(record)
