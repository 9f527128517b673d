"""Selection Mondrian (KDD 2006, Section 3.4): splits that minimize the imprecision of the
workload's selections first, then the inner criterion.

The partition must equal the brute-force oracle (every allowed split enumerated in plain
Python, query-region membership evaluated in Python from the predicate's parts, not from its
SQL), whether the work ran in SQL, in memory or both; and on data with rectangular selections
it must publish less imprecision than Median Mondrian.
"""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import sqlanon
from sqlanon.model.hierarchy import Hierarchy
from sqlanon.model.qi import QI
from sqlanon.model.selection import parse_selection
from tests.support import load_frame, objects, quote, request_options, rows
from tests.support.mondrian import _values, impurity_of, load, partition_of, workloads
from tests.support.reference_mondrian import reference_mondrian

# Light end-to-end runs on a small table run on both engines; the oracle property test and the
# quality comparison on 20,000 rows are DuckDB's alone (each is marked).
pytestmark = pytest.mark.engines("duckdb", "postgres")

_OPS = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal, "=": np.equal}


@st.composite
def boxes(draw, df: pd.DataFrame, qid: list[str], hierarchies: dict):
    """One query region: a conjunction of conditions, as (SQL text, row membership)."""
    parts, inside = [], np.ones(len(df), dtype=bool)
    for col in draw(st.lists(st.sampled_from(qid), min_size=1, max_size=2, unique=True)):
        values = _values(df, col, slice(None))
        present = np.array([v is not None for v in values])
        if col in hierarchies:
            rows = hierarchies[col]
            labels = sorted({r[0] for r in rows} | {r[1] for r in rows})
            chosen = draw(st.lists(st.sampled_from(labels), min_size=1, max_size=3, unique=True))
            leaves = {r[0] for r in rows if r[0] in chosen or r[1] in chosen}
            parts.append(f"{col} IN ({', '.join(repr(c) for c in chosen)})" if len(chosen) > 1
                         else f"{col} = {chosen[0]!r}")
            inside &= np.array([v in leaves for v in values])
            continue
        x = np.array([v if v is not None else 0 for v in values], dtype=float)
        if draw(st.booleans()):
            a, b = sorted(draw(st.lists(st.integers(-1, 13), min_size=2, max_size=2)))
            parts.append(f"{col} BETWEEN {a} AND {b}")
            inside &= present & (x >= a) & (x <= b)
        else:
            op, v = draw(st.sampled_from(sorted(_OPS))), draw(st.integers(-1, 13))
            parts.append(f"{col} {op} {v}")
            inside &= present & _OPS[op](x, v)
    return " AND ".join(parts), inside


@st.composite
def selection_workloads(draw):
    df, qid, k, hierarchies, _, _ = draw(workloads())
    regions = draw(st.lists(boxes(df, qid, hierarchies), min_size=1, max_size=3, unique_by=lambda b: b[0]))
    # Several predicates, one of them an OR of regions: each region counts on its own.
    split = draw(st.integers(1, len(regions)))
    predicates = [" OR ".join(f"({t})" for t, _ in regions[:split])] + [t for t, _ in regions[split:]]
    inner = draw(st.sampled_from([sqlanon.Median(), sqlanon.InfoGain("label"),
                                  sqlanon.InfoGain("label", min_gain=0.3), sqlanon.Regression("amount")]))
    return df, qid, k, hierarchies, predicates, [m for _, m in regions], inner


def selection_oracle(df: pd.DataFrame, members: list[np.ndarray], inner):
    """``impurity`` and ``weak`` of Selection Mondrian for the oracle: (imprecision, inner)."""
    inner_impurity = impurity_of(df, inner)

    def impurity(rows, part):
        n = len(rows)
        imprecision = sum(n - int(m[rows].sum()) for m in members if m[rows].any())
        return float(imprecision), (0.0 if inner_impurity is None else inner_impurity(rows, part))

    def weak(gains) -> bool:
        return gains[0] <= 0 and (isinstance(inner, sqlanon.Median) or gains[1] < inner.min_gain)

    return impurity, weak


# engine-independent algorithm; DuckDB vs PostgreSQL identity is tests/e2e/test_engines.py
@pytest.mark.engines("duckdb")
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(selection_workloads(), st.sampled_from([0, 5, 10**9]))
def test_selection_mondrian_equals_the_oracle(case, memory_rows):
    df, qid, k, hierarchies, predicates, members, inner = case
    # The parser drops a box of an OR that lies inside another (the union is unchanged); the
    # oracle weighs every region it drew, so draw again when one would be dropped.
    qis = [QI(q, "hierarchy", "VARCHAR", Hierarchy.from_rows(hierarchies[q])) if q in hierarchies
           else QI(q, "numeric", "BIGINT") for q in qid]
    assume(sum(len(parse_selection(p, qis).boxes) for p in predicates) == len(members))
    con = duckdb.connect()
    load(con, df)
    criterion = inner if not isinstance(inner, sqlanon.Median) else None
    release = sqlanon.anonymize(con, "t", qid=qid, k=k, hierarchies=hierarchies, selections=predicates,
                                algorithm=sqlanon.Mondrian(criterion, strategy=sqlanon.Levels(memory_rows=memory_rows)))
    impurity, weak = selection_oracle(df, members, inner)
    assert partition_of(con, release.view) == reference_mondrian(df, qid, k, hierarchies, impurity=impurity, weak=weak)
    assert release.selections == tuple(predicates)


def test_explicit_criterion_equals_the_keyword(people):
    via_keyword = sqlanon.anonymize(people, "p", qid=["age", "zip"], k=5, selections=["age > 40"], target="label",
                                    output=sqlanon.Output(view="a"))
    explicit = sqlanon.anonymize(people, "p", qid=["age", "zip"], k=5,
                                 algorithm=sqlanon.Mondrian(sqlanon.Selections(["age > 40"], then=sqlanon.InfoGain("label"))),
                                 output=sqlanon.Output(view="b"))
    assert partition_of(people, via_keyword.view) == partition_of(people, explicit.view)
    m = sqlanon.publish.manifest.read(people, "b")
    assert m.selections == ("age > 40",)
    assert m.criterion == "selections(['age > 40'], then=infogain('label'))"


def test_selection_splits_along_the_query_region(people):
    """With k=5 on 200 rows, Median alone cuts age at its median; one region, age in (40, 60],
    must come back with (almost) nothing else: every published class either lies inside it or
    holds none of its rows, up to the k constraint."""
    release = sqlanon.anonymize(people, "p", qid=["age", "zip"], k=5, selections=["age > 40 AND age <= 60"])
    bounds = rows(people, f"SELECT age_min, age_max FROM {quote(release.view)}")
    assert len(bounds) == 200
    straddling = [r for r in bounds if r[0] <= 40 < r[1] or r[0] <= 60 < r[1]]
    assert straddling == []


@pytest.mark.parametrize("kwargs,error,text", [
    ({"selections": ["income > 3"]}, sqlanon.InputError, "income"),
    ({"selections": ["1=1; DROP TABLE p"]}, sqlanon.InputError, "DROP"),
    ({"selections": [3]}, sqlanon.InputError, "selections= takes SQL predicates"),
    ({"selections": ["age > 3"], "criterion": sqlanon.Selections(["age > 4"])}, sqlanon.InputError, "not both"),
    ({"criterion": sqlanon.Selections([])}, sqlanon.InputError, "one or more SQL predicates"),
    ({"criterion": sqlanon.Selections(["age > 3"], then="median")}, sqlanon.InputError, "then="),
])
def test_bad_selections_fail_before_any_work(people, kwargs, error, text):
    before = objects(people)
    with pytest.raises(error, match=text):
        sqlanon.anonymize(people, "p", qid=["age", "zip"], k=5, **request_options(**kwargs))
    assert objects(people) == before


@pytest.fixture
def people(con):
    rng = np.random.default_rng(7)
    n = 200
    age, zip_, label, income = (rng.integers(18, 90, n), rng.integers(53700, 53800, n), rng.choice(["x", "y"], n),
                                rng.integers(0, 10**5, n))
    load_frame(con, "p", pd.DataFrame({"id": np.arange(n), "age": age, "zip": zip_, "label": label, "income": income}),
               types={"id": "INTEGER", "age": "INTEGER", "zip": "INTEGER", "income": "INTEGER"})
    return con


@pytest.fixture(scope="module")
def agrawal():
    """20,000 Agrawal rows (benchmarks/agrawal.py, the data of the paper's Figure 9)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from agrawal import QI_COLUMNS, generate

    con = duckdb.connect()
    data = generate(20_000, seed=3)  # noqa: F841 (read by name below)
    con.execute("CREATE TABLE agrawal AS SELECT * FROM data")
    return con, QI_COLUMNS


C2_BOXES = ["age < 40 AND salary BETWEEN 50000 AND 100000",
            "age >= 40 AND age < 60 AND salary BETWEEN 75000 AND 125000",
            "age >= 60 AND salary BETWEEN 25000 AND 75000"]


# engine-independent algorithm; DuckDB vs PostgreSQL identity is tests/e2e/test_engines.py
@pytest.mark.engines("duckdb")
@pytest.mark.parametrize("k", [10, 50, 100, 250, 500])
def test_selection_mondrian_beats_median_on_c2(agrawal, k):
    """KDD 2006, Figure 9: C2's imprecision is lowest when its three boxes are the selections."""
    con, qis = agrawal
    c2 = " OR ".join(f"({b})" for b in C2_BOXES)

    def imprecision(qid, **kw) -> int:
        release = sqlanon.anonymize(con, "agrawal", qid=qid, k=k, output=sqlanon.Output(view="v", replace=True), **kw)
        return sqlanon.imprecision(con, release, c2).total

    selection = imprecision(qis, selections=C2_BOXES)
    assert selection < imprecision(qis)
    assert selection < imprecision(["age", "salary"])


def test_release_reports_its_imprecision(people):
    """``release.imprecision()`` and ``metrics()`` measure the workload's own selections."""
    selections = ["age > 40 AND age <= 60", "zip < 53720 OR age >= 80"]
    release = sqlanon.anonymize(people, "p", qid=["age", "zip"], k=5, selections=selections)
    measured = release.imprecision()
    assert [p.text for p in measured.predicates] == selections
    assert measured.predicates[0].imprecision == 0  # the region was split off exactly
    assert sqlanon.metrics(people, release).imprecision == {p.text: p.imprecision for p in measured.predicates}
    assert sqlanon.metrics(people, release.view, selections=["age < 30"]).imprecision == {
        "age < 30": sqlanon.imprecision(people, release, "age < 30").total}
    plain = sqlanon.anonymize(people, "p", qid=["age", "zip"], k=5, output=sqlanon.Output(view="plain"))
    assert sqlanon.metrics(people, plain).imprecision == {}
    with pytest.raises(sqlanon.InputError, match="no selections"):
        plain.imprecision()
