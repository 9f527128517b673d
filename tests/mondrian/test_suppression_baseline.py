"""The "before" of Mondrian's root shares with ``suppression=`` (issue 52): when one depth-first
compiled finish grows the whole tree, the request without suppression is read off that tree
with its suppressing splits undone (:func:`sqlanon.mondrian.suppression.untrimmed`) instead of
being partitioned a second time -- and the shares are exactly those of the second partitioning
(:func:`sqlanon.mondrian.run.baseline`): per batch against the same finish without a budget,
and through whole releases against a run whose SQL levels take the baseline path."""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlanon
from sqlanon.model.criteria import Median
from sqlanon.model.domain import Domain
from sqlanon.model.partition import Boxes
from sqlanon.model.privacy import KAnonymity
from sqlanon.model.qi import QI
from sqlanon.model.stats import StatColumn
from sqlanon.mondrian import run as mondrian_run
from sqlanon.mondrian.builder import Batch, Partitioner
from sqlanon.mondrian.suppression import root_shares, shares_untrimmed
from tests.mondrian.test_workload_finish import CRITERIA, STATS
from tests.mondrian.test_workload_finish import batches as workload_batches
from tests.mondrian.test_workload_models_finish import STATS as MODEL_STATS
from tests.mondrian.test_workload_models_finish import cases
from tests.mondrian.test_workload_suppression_compiled import budgets
from tests.support.finish import batches


def _run(domains, constraints, criterion, stats, codes, seg_n, budget, classes=(), numbers=()):
    """One batch through the depth-first finish with the roots' ``budget``: the partitioner."""
    R, d = len(seg_n), len(domains)
    p = Partitioner(domains, constraints, criterion, stat_columns=stats)
    p.next_pid = 1000  # above the roots' ids
    seg = Boxes(np.arange(7, 7 + R, dtype=np.int64), seg_n.astype(np.int64), np.zeros((R, d), np.int64),
                np.tile([dom.size - 1 for dom in domains], (R, 1)).astype(np.int64), np.full((R, d), -1, np.int64),
                budget.astype(np.int64))
    assert p.depth_first_applies(seg)
    p.run_memory(Batch(codes.astype(np.int32), list(classes), list(numbers), disposable=False), seg)
    return p


def _same_before(domains, constraints, criterion, stats, codes, seg_n, budget, classes=(), numbers=()) -> bool:
    """The undone tree's shares equal the shares of the same batch finished without a budget;
    whether anything was suppressed."""
    rows = int(seg_n.sum())
    trimmed = _run(domains, constraints, criterion, stats, codes, seg_n, budget, classes, numbers)
    plain = _run(domains, constraints, criterion, stats, codes, seg_n, np.zeros_like(budget), classes, numbers)
    assert not plain.untrimmed
    regions = trimmed.leaves.collect()
    assert shares_untrimmed(regions, trimmed.untrimmed, domains, rows) == \
        root_shares(plain.leaves.collect(), domains, rows)
    return bool(regions.suppressed.any())


@given(batches(), st.data())
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_median_batch_undone_equals_the_batch_without_a_budget(case, data):
    codes, seg_n, domains, k = case
    _same_before(domains, [KAnonymity(k)], Median(), (), codes, seg_n, budgets(data, seg_n))


@given(workload_batches(), CRITERIA, st.data())
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_workload_batch_undone_equals_the_batch_without_a_budget(case, criterion, data):
    _same_before(case["domains"], [KAnonymity(case["k"])], criterion, case.get("stats", STATS), case["codes"],
                 case["seg_n"], budgets(data, case["seg_n"]), case["classes"], case["numbers"])


@pytest.mark.parametrize("kind", ["distinct", "entropy", "variance", "closeness"])
@given(data=st.data())
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_privacy_models_undone_equals_the_batch_without_a_budget(kind, data):
    case = data.draw(cases(kind))
    stats = case.get("stats", MODEL_STATS) + (StatColumn("s", "class", size=case["V"]),
                                             StatColumn("u", "numeric", exact=True))
    _same_before(case["domains"], [KAnonymity(case["k"]), *case["models"]], case["criterion"], stats,
                 case["codes"], case["seg_n"], budgets(data, case["seg_n"]),
                 [*case["classes"], case["s"].astype(np.int64)], [*case["numbers"], case["u"].astype(np.int64)])


def test_outliers_are_trimmed_and_undone():
    """A batch where suppression certainly happens (far outliers on both QIs)."""
    rng = np.random.default_rng(5)
    M = 3000
    domains = [Domain(QI(f"q{j}", "numeric", "INTEGER"), 500, "", np.arange(500, dtype=np.float64)) for j in range(2)]
    codes = np.vstack([np.minimum(rng.geometric(0.02, M), 499), np.minimum(rng.geometric(0.05, M), 499)])
    assert _same_before(domains, [KAnonymity(20)], Median(), (), codes, np.array([M]), np.array([60]))


def _frame(seed: int, n: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"id": np.arange(n), "a": np.minimum(rng.geometric(0.02, n), 400),
                         "b": rng.integers(0, 50, n), "c": np.minimum(rng.geometric(0.3, n), 12),
                         "y": np.where(rng.random(n) < 0.3, "p", "q"), "v": rng.integers(0, 1000, n)})


@pytest.mark.parametrize("target", [None, "y", "v"])
@pytest.mark.parametrize("seed", [0, 1])
def test_release_before_equals_the_partitioned_baseline(target, seed, monkeypatch):
    """A release finished depth-first in one batch reports the "before" a run through SQL levels
    (which partitions the baseline) reports, and partitions no baseline."""
    con = duckdb.connect()
    con.register("frame", _frame(seed, 4000))
    con.execute("CREATE TABLE t AS SELECT * FROM frame")
    request = dict(qid=["a", "b", "c"], k=10, suppression=0.02, **({"target": target} if target else {}))

    def release(memory_rows: int, name: str):
        return sqlanon.anonymize(con, "t", **request,
                                 algorithm=sqlanon.Mondrian(strategy=sqlanon.Levels(memory_rows=memory_rows)),
                                 output=sqlanon.Output(key="id", view=name))

    levels = release(500, "levels")  # SQL levels, then batches: the baseline is partitioned
    partitioned = []
    real = mondrian_run.baseline
    monkeypatch.setattr(mondrian_run, "baseline", lambda *a, **kw: partitioned.append(1) or real(*a, **kw))
    one = release(10**6, "one")
    assert one.suppressed > 0 and one.verification.ok
    assert not partitioned  # read off the run's tree
    assert one.outcome.at_root_before == levels.outcome.at_root_before
    assert sqlanon.metrics(con, one).at_root_before == levels.outcome.at_root_before  # the manifest
    assert one.outcome.at_root == levels.outcome.at_root
    con.close()
