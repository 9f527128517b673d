"""Workload-aware splitting and diversity constraints.

The library's partition must equal a brute-force oracle (every allowed split of every candidate
attribute enumerated in plain Python, constraints and criteria written independently here) for
every constraint and criterion, whether the work ran in SQL, in memory or both; every published
class must satisfy every constraint; and on real and synthetic data the workload criteria must
beat Median at their own game.
"""

from __future__ import annotations

import math

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlanon
from sqlanon.model.stats import ClassStats
from sqlanon.model.summaries import entropy, variance
from tests.support import load_frame, objects, request_options, rows
from tests.support.mondrian import impurity_of, judge, load, partition_of, workloads
from tests.support.reference_mondrian import reference_mondrian
from tests.support.stats import OneColumn

# Light tests of a database-facing path run on both engines; the oracle/property tests and the
# quality comparisons on large data are DuckDB's alone (each is marked).
pytestmark = pytest.mark.engines("duckdb", "postgres")


# -- the oracle's constraints and criteria, in plain Python ----------------------------------


# -- hypothesis: random tables, requirements and criteria ------------------------------------


# engine-independent algorithm; DuckDB vs PostgreSQL identity is tests/e2e/test_engines.py
@pytest.mark.engines("duckdb")
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(workloads(), st.sampled_from([0, 5, 10**9]))
def test_equals_brute_force_for_every_constraint_and_criterion(case, memory_rows):
    df, qid, k, hierarchies, constraint, criterion = case
    con = duckdb.connect()
    data = load(con, df).drop(columns=["id"])
    constraints = [constraint] if constraint else []
    ok = judge(data, constraint) if constraint else None
    if ok is not None and not ok(np.arange(len(data))):
        with pytest.raises(sqlanon.InputError, match="whole table"):
            sqlanon.anonymize(con, "t", qid=qid, k=k, hierarchies=hierarchies, privacy=constraints,
                              algorithm=sqlanon.Mondrian(criterion))
        return
    release = sqlanon.anonymize(con, "t", qid=qid, k=k, hierarchies=hierarchies, privacy=constraints,
                                algorithm=sqlanon.Mondrian(criterion, strategy=sqlanon.Levels(memory_rows=memory_rows)))
    expected = reference_mondrian(data, qid, k, hierarchies, ok=ok, impurity=impurity_of(data, criterion),
                                  min_gain=criterion.min_gain)
    assert partition_of(con, release.view) == expected
    # Every published class satisfies every constraint (checked again, independently, in SQL).
    check = sqlanon.verify(con, release.view, qid, k, constraints=constraints)
    assert check.ok and all(c.ok for c in check.checks)


# engine-independent algorithm; DuckDB vs PostgreSQL identity is tests/e2e/test_engines.py
@pytest.mark.engines("duckdb")
@settings(max_examples=12, deadline=None)  # ~2.5 s each (three releases, one all SQL levels)
@given(st.integers(60, 300), st.integers(0, 2**31), st.sampled_from(["infogain", "regression", "targets", "ldiv"]))
def test_sql_and_memory_paths_agree_on_larger_tables(n, seed, kind):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "a": rng.integers(0, 40, n), "b": rng.integers(0, 8, n), "c": rng.integers(0, 3, n),
        "label": rng.choice(["p", "q", "r"], n), "y": rng.normal(100, 15, n).round(2), "s": rng.choice(list("ABCDE"), n),
    })
    con = duckdb.connect()
    load(con, df)
    kw = {"infogain": {"target": "label"}, "regression": {"target": "y"}, "targets": {"target": ["label", "y"]},
          "ldiv": {"sensitive": "s", "l": 2, "target": "label"}}[kind]
    results = []
    for memory_rows in (0, int(rng.integers(10, n)), n):
        release = sqlanon.anonymize(con, "t", qid=["a", "b", "c"], k=6,
                                    algorithm=sqlanon.Mondrian(strategy=sqlanon.Levels(memory_rows=memory_rows)),
                                    output=sqlanon.Output(replace=True), **kw)
        results.append((partition_of(con, release.view), con.sql(f'SELECT * FROM "{release.rules}" ORDER BY region').df()))
    for partition, rules in results[1:]:
        assert partition == results[0][0]
        pd.testing.assert_frame_equal(rules, results[0][1])


# -- constraint verdicts against brute force -------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 12), min_size=1, max_size=6), st.integers(1, 4), st.floats(0.5, 4))
def test_diversity_verdicts_match_their_definitions(counts, l, c):
    vec = np.array([counts])
    stats = ClassStats(np.array([sum(counts)]), (vec,), ())
    n = sum(counts)
    if n == 0:
        return  # an empty class is always acceptable
    desc = sorted(counts, reverse=True)
    h = -sum(x / n * math.log(x / n) for x in counts if x)
    assert sqlanon.DistinctLDiversity("s", l).allowed(stats, OneColumn())[0] == (sum(1 for x in counts if x) >= l)
    assert sqlanon.EntropyLDiversity("s", l).allowed(stats, OneColumn())[0] == (h >= math.log(l) - 1e-9)
    assert sqlanon.RecursiveCLDiversity("s", c=c, l=l).allowed(stats, OneColumn())[0] == (desc[0] < c * sum(desc[l - 1 :]))


def test_variance_from_centered_moments_is_exact_with_large_offsets():
    values = np.array([10**12 + v for v in (1, 2, 3, 4, 10)], dtype=np.int64)
    center = int(values.mean().round())
    t = values - center
    moments = np.array([[len(t), t.sum(), (t * t).sum()]], dtype=np.int64)
    assert variance(moments)[0] == pytest.approx(np.var([1, 2, 3, 4, 10]), rel=1e-12)
    assert entropy(np.array([[2, 2, 0]]))[0] == pytest.approx(math.log(2))


@given(st.floats(-1e12, 1e12), st.floats(1e-9, 1e12), st.floats(0, 1))
def test_float_center_is_the_mean_on_a_grid_of_its_range(lo, width, where):
    """Within half a step (2^-24 of the range, rounded down to a power of two) of the mean, on
    the grid of those steps, so last-bit changes of the mean mostly leave it as it is; a
    constant column is centered on its value."""
    from sqlanon.request.workload import float_center

    hi = lo + width
    if not hi > lo:
        return
    mean = lo + where * (hi - lo)
    step = 2.0 ** (math.floor(math.log2(hi - lo)) - 24)
    center = float_center(mean, lo, hi)
    assert abs(center - mean) <= step / 2 * (1 + 1e-9)
    assert center / step == round(center / step)
    assert float_center(lo, lo, lo) == lo and float_center(None, None, None) == 0.0


def test_float_center_ignores_the_last_bits_of_a_parallel_average():
    """Four averages of one DuckDB column of 10M rows differed in their last bits (the engine
    adds partial sums in any order); their centers do not."""
    means = [-1008.512440610994, -1008.5124406109875, -1008.5124406109261, -1008.5124406109898]
    from sqlanon.request.workload import float_center

    assert len({float_center(m, -203457.3, 174988.6) for m in means}) == 1


def test_float_targets_with_a_large_offset_stay_stable(con):
    rng = np.random.default_rng(1)
    n = 400
    df = pd.DataFrame({"a": rng.integers(0, 50, n), "y": 1e9 + rng.normal(0, 1, n)})
    load(con, df)
    release = sqlanon.anonymize(con, "t", qid=["a"], k=10, privacy=[sqlanon.VarianceDiversity("y", 0.3)])
    per_class = [v for (v,) in rows(con, f'SELECT var_pop(y - 1e9) AS v FROM "{release.view}" GROUP BY eq_class')]
    assert len(per_class) > 1 and all(v >= 0.3 * (1 - 1e-9) for v in per_class)


# -- workload criteria beat Median at their own game -----------------------------------------
def conditional_entropy(con, view: str, label: str) -> float:
    """H(C | P) in bits of ``label`` given the published equivalence classes."""
    return con.sql(
        f'WITH c AS (SELECT eq_class, "{label}" AS s, count(*) AS n FROM "{view}" GROUP BY ALL), '
        "e AS (SELECT sum(n) AS tot, sum(n) * ln(sum(n)) - sum(n * ln(n)) AS nh FROM c GROUP BY eq_class) "
        "SELECT sum(nh) / sum(tot) / ln(2) FROM e"
    ).fetchall()[0][0]


# engine-independent algorithm; DuckDB vs PostgreSQL identity is tests/e2e/test_engines.py
@pytest.mark.engines("duckdb")
@pytest.mark.parametrize("k", [5, 10, 25, 50, 100, 250])
def test_infogain_lowers_conditional_entropy_on_adult(adult, k):
    con, hierarchies = adult
    qid = ["age", "sex", "race", "marital-status", "education", "native-country", "workclass", "occupation"]
    h = {q: hierarchies[q] for q in qid if q != "age"}
    median = sqlanon.anonymize(con, "adult", qid=qid, k=k, hierarchies=h,
                               output=sqlanon.Output(view="median_anon", replace=True))
    infogain = sqlanon.anonymize(con, "adult", qid=qid, k=k, hierarchies=h, target="salary-class",
                                 output=sqlanon.Output(view="infogain_anon", replace=True))
    assert infogain.k_achieved >= k and median.k_achieved >= k
    assert conditional_entropy(con, "infogain_anon", "salary-class") < conditional_entropy(con, "median_anon", "salary-class")


def rmse(con, view: str, target: str) -> float:
    return con.sql(
        f'SELECT sqrt(avg(sq)) FROM (SELECT ("{target}" - avg("{target}") OVER (PARTITION BY eq_class)) ** 2 AS sq '
        f'FROM "{view}")'
    ).fetchall()[0][0]


# engine-independent algorithm; DuckDB vs PostgreSQL identity is tests/e2e/test_engines.py
@pytest.mark.engines("duckdb")
@pytest.mark.parametrize("target", ["r7", "r10"])
def test_regression_lowers_rmse_on_agrawal(con, target):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from agrawal import QI_COLUMNS, generate

    df = generate(20_000, seed=3)
    con.register("gen", df)
    con.execute("CREATE TABLE ag AS SELECT * FROM gen")
    for k in (10, 50, 250):
        sqlanon.anonymize(con, "ag", qid=QI_COLUMNS, k=k, output=sqlanon.Output(view="med", replace=True))
        sqlanon.anonymize(con, "ag", qid=QI_COLUMNS, k=k, target=target,
                          output=sqlanon.Output(view="lsd", replace=True))
        assert rmse(con, "lsd", target) < rmse(con, "med", target)


# -- validation ------------------------------------------------------------------------------
@pytest.fixture
def people(con):
    i = np.arange(300, dtype=np.int64)
    load_frame(con, "p", pd.DataFrame({"id": i, "age": i % 60, "zip": i % 7, "diag": np.array(["a", "b", "c"])[i % 3],
                                       "salary": (i * 37) % 101, "label": np.where(i % 2 == 0, "y", "n")}))
    return con


@pytest.mark.parametrize("kwargs, error, text", [
    ({"target": "age"}, sqlanon.InputError, "both a QI and a target"),
    ({"sensitive": "zip", "l": 2}, sqlanon.InputError, "both a QI and a sensitive"),
    ({"sensitive": "diag", "l": 2, "target": "diag"}, sqlanon.InputError, "both a target and a sensitive"),
    ({"sensitive": "diag"}, sqlanon.InputError, "sensitive= and l= go together"),
    ({"l": 2}, sqlanon.InputError, "sensitive= and l= go together"),
    ({"sensitive": "diag", "l": 0.5}, sqlanon.InputError, "l must be a number >= 1"),
    ({"target": "nope"}, sqlanon.UnknownColumnError, "'nope'"),
    ({"sensitive": "nope", "l": 2}, sqlanon.UnknownColumnError, "'nope'"),
    ({"target": "label", "criterion": sqlanon.InfoGain("label")}, sqlanon.InputError, "either target= or criterion="),
    ({"criterion": sqlanon.Regression("label")}, sqlanon.UnsupportedTypeError, "'label'"),
    ({"constraints": [sqlanon.VarianceDiversity("diag", 1.0)]}, sqlanon.UnsupportedTypeError, "'diag'"),
    ({"constraints": [sqlanon.RecursiveCLDiversity("diag", c=0, l=2)]}, sqlanon.InputError, "c must be"),
    ({"constraints": [sqlanon.DistinctLDiversity("diag", 0)]}, sqlanon.InputError, "integer l >= 1"),
    ({"constraints": [sqlanon.VarianceDiversity("salary", -1.0)]}, sqlanon.InputError, "v must be"),
    ({"constraints": ["k=5"]}, sqlanon.InputError, "constraint objects"),
    ({"criterion": sqlanon.InfoGain("label", min_gain=-1)}, sqlanon.InputError, "min_gain"),
    ({"sensitive": "diag", "l": 4}, sqlanon.InputError, "whole table does not satisfy entropy l-diversity"),
    ({"constraints": [sqlanon.DistinctLDiversity("diag", 4)]}, sqlanon.InputError, "whole table does not satisfy distinct"),
    ({"constraints": [sqlanon.VarianceDiversity("salary", 1e6)]}, sqlanon.InputError, "whole table does not satisfy variance"),
])
def test_bad_workloads_fail_before_any_work(people, kwargs, error, text):
    before = objects(people)
    with pytest.raises(error, match=text.replace("(", r"\(")):
        sqlanon.anonymize(people, "p", qid=["age", "zip"], k=5, **request_options(**kwargs))
    assert objects(people) == before


def test_keyword_shortcuts_pick_the_criterion_and_record_it(people):
    from sqlanon.publish import manifest

    sqlanon.anonymize(people, "p", qid=["age", "zip"], k=5, target="label", sensitive="diag", l=2,
                      output=sqlanon.Output(view="v1"))
    m = manifest.read(people, "v1")
    assert m.criterion == "infogain('label')"
    assert m.constraints == ("k-anonymity(k=5)", "entropy l-diversity('diag', l=2)")
    sqlanon.anonymize(people, "p", qid=["age", "zip"], k=5, target=["salary"], output=sqlanon.Output(view="v2"))
    assert manifest.read(people, "v2").criterion == "regression('salary')"
    sqlanon.anonymize(people, "p", qid=["age", "zip"], k=5, target=["label", "salary"],
                      output=sqlanon.Output(view="v3"))
    assert manifest.read(people, "v3").criterion == "targets(classes=['label'], numeric=['salary'])"
