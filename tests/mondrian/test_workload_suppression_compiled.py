"""The workload criteria's depth-first compiled finish with a suppression budget (issue 52;
sqlanon/mondrian/compiled/workload_finish.py with workload_trim.py) gives exactly what the
level-by-level finish gives: the same leaves (suppressed ones included, with their boxes), ids,
rows and progress, for InfoGain, Regression and Targets under k alone and with one distinct,
entropy, variance or t-closeness model, on one and two threads, through the attribute lists,
the binned QIs and the histogram phase; a request with a suppression limit takes that finish;
and a request without one does not compile the suppression code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlanon
from sqlanon.model.criteria import InfoGain, Regression
from sqlanon.model.domain import Domain
from sqlanon.model.partition import Boxes
from sqlanon.model.privacy import EntropyLDiversity, KAnonymity, VarianceDiversity
from sqlanon.model.qi import QI
from sqlanon.model.stats import StatColumn
from sqlanon.mondrian import builder
from sqlanon.mondrian.builder import Batch, Partitioner
from sqlanon.mondrian.compiled import histograms, median_finish, workload_finish
from tests.mondrian.test_workload_finish import CRITERIA, STATS, batches, setting
from tests.mondrian.test_workload_models_finish import STATS as MODEL_STATS
from tests.mondrian.test_workload_models_finish import cases
from tests.support import request_options
from tests.support.finish import assert_same

ROOT = Path(__file__).resolve().parents[2]


def budgets(data, seg_n: np.ndarray) -> np.ndarray:
    """Each root's budget: none, a row or a few, a tenth, a third, or all of its rows."""
    return np.array([data.draw(st.sampled_from([0, 1, 3, int(n) // 10, int(n) // 3, int(n)])) for n in seg_n])


def finish(case: dict, criterion, models: list, stats: tuple, budget: np.ndarray, fast: bool,
           threads: int = 1) -> dict:
    """One batch through Partitioner.run_memory with the roots' suppression ``budget``; the
    compiled finish must take it when ``fast`` (else the identity would prove nothing)."""
    codes, seg_n, domains, k = case["codes"], case["seg_n"], case["domains"], case["k"]
    R, d = len(seg_n), len(domains)
    saved = builder._WORKLOAD_FINISH
    builder._WORKLOAD_FINISH = fast
    try:
        p = Partitioner(domains, [KAnonymity(k), *models], criterion, stat_columns=stats, threads=threads)
        p.next_pid = 1000
        seg = Boxes(np.arange(7, 7 + R, dtype=np.int64), seg_n.astype(np.int64), np.zeros((R, d), np.int64),
                    np.tile([dom.size - 1 for dom in domains], (R, 1)).astype(np.int64), np.full((R, d), -1, np.int64),
                    budget.astype(np.int64))
        assert p._workload_finish_applies(seg)
        seen = []
        p.progress = seen.append
        classes, numbers = list(case["classes"]), list(case["numbers"])
        if models:
            classes.append(case["s"].astype(np.int64))
            numbers.append(case["u"].astype(np.int64))
        rows, pid = p.run_memory(Batch(codes.astype(np.int32), classes, numbers, disposable=True), seg)
    finally:
        builder._WORKLOAD_FINISH = saved
    order = np.argsort(rows)
    leaves = p.leaves.collect()
    return {"leaves": p.leaf_table(), "budgets": leaves.boxes.budget, "rows": rows[order], "pid": pid[order],
            "next_pid": p.next_pid,
            "levels": p.levels, "finished": p.rows_finished,
            "progress": [(x.level, x.open_partitions, x.rows_finished) for x in seen]}


def same(case: dict, criterion, models: list, stats: tuple, budget: np.ndarray, threads: int) -> dict:
    """The compiled finish's result, asserted the level-by-level one's and within the budget."""
    fast = finish(case, criterion, models, stats, budget, True, threads)
    slow = finish(case, criterion, models, stats, budget, False)
    assert_same(fast, slow)
    np.testing.assert_array_equal(fast["budgets"], slow["budgets"], err_msg="the leaves' budgets")
    dropped = fast["leaves"]["suppressed"].astype(bool)
    assert np.isin(fast["pid"], fast["leaves"]["pid"][dropped]).sum() <= budget.sum()
    return fast


# -- k alone ---------------------------------------------------------------------------------
@given(batches(), CRITERIA, st.integers(1, 2), st.data())
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_k_alone_with_a_budget_gives_the_level_by_level_partition(case, criterion, threads, data):
    same(case, criterion, [], case.get("stats", STATS), budgets(data, case["seg_n"]), threads)


@given(batches(), CRITERIA, st.integers(1, 2), st.sampled_from([None, 3, 10**6]), st.sampled_from([0, 1, 40, 150]),
       st.data())
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_k_alone_binned_qis_and_histogram_phase_with_a_budget(case, criterion, threads, width, wide, data):
    """Binned QIs (``width``: None none, 10^6 all but the first) trim from their records, and
    nodes wider than ``wide`` rows (0: every node) split on histograms share their budgets and
    hand a node that may only suppress to the lists."""
    with setting("_BIN_WIDTH", width), setting("_HIST_WIDE", wide, histograms):
        same(case, criterion, [], case.get("stats", STATS), budgets(data, case["seg_n"]), threads)


# -- one privacy model beyond k -------------------------------------------------------------
def _stats(case: dict) -> tuple:
    return case.get("stats", MODEL_STATS) + (StatColumn("s", "class", size=case["V"]),
                                            StatColumn("u", "numeric", exact=True))


@pytest.mark.parametrize("kind", ["distinct", "entropy", "variance", "closeness"])
@given(data=st.data(), threads=st.integers(1, 2))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_each_model_with_a_budget_gives_the_level_by_level_partition(kind, data, threads):
    case = data.draw(cases(kind))
    same(case, case["criterion"], case["models"], _stats(case), budgets(data, case["seg_n"]), threads)


@pytest.mark.parametrize("kind", ["distinct", "entropy", "variance", "closeness"])
@given(data=st.data(), threads=st.integers(1, 2), width=st.sampled_from([None, 3, 10**6]),
       wide=st.sampled_from([0, 1, 40, 150]))
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_each_model_binned_and_histogram_phase_with_a_budget(kind, data, threads, width, wide):
    case = data.draw(cases(kind))
    with setting("_BIN_WIDTH", width), setting("_HIST_WIDE", wide, histograms):
        same(case, case["criterion"], case["models"], _stats(case), budgets(data, case["seg_n"]), threads)


def outliers(seed: int) -> dict:
    """A batch big enough for the histogram phase, the wide nodes' growth on two threads and
    the threads' subtrees, with far outliers to trim, a label and targets that follow the QIs,
    and sensitive values that block some splits."""
    rng = np.random.default_rng(seed)
    M = 2 * median_finish.PARALLEL_ROWS + 12345
    sizes = [5000, 40, 3, 100000]
    domains = [Domain(QI(f"q{j}", "numeric", "INTEGER"), n, "", np.arange(n, dtype=np.float64))
               for j, n in enumerate(sizes)]
    codes = np.vstack([np.minimum(rng.geometric(0.01, M), 4999), np.minimum(rng.geometric(0.05, M), 39),
                       rng.integers(0, 3, M), np.minimum(rng.geometric(0.001, M), 99999)])
    y = np.where(rng.random(M) < 0.3, rng.integers(0, 3, M), codes[1] % 3)
    z = rng.integers(0, 2, M)
    v = (codes[0] // 50 + rng.integers(-20, 21, M)).astype(np.int64)
    w = rng.choice([-3, 0, 5], M).astype(np.int64)
    s = np.where(rng.random(M) < 0.7, codes[0] // 1000, rng.integers(0, 5, M))
    u = codes[1] + rng.integers(0, 3, M)
    return {"codes": codes, "seg_n": np.array([M - 20000, 15000, 5000]), "domains": domains, "k": 25,
            "classes": (y, z), "numbers": (v, w), "s": s, "u": u, "V": 5}


@pytest.mark.parametrize("criterion, models", [
    (InfoGain("y"), []),
    (Regression("v"), []),
    (InfoGain("y"), [EntropyLDiversity("s", 2.0)]),
    (Regression("v"), [VarianceDiversity("u", 2.0)]),
])
def test_outliers_on_two_threads(criterion, models):
    case = outliers(11)
    budget = (case["seg_n"] * 0.01).astype(np.int64)
    stats = STATS + ((StatColumn("s", "class", size=5), StatColumn("u", "numeric", exact=True)) if models else ())
    fast = same(case, criterion, models, stats, budget, 2)
    assert fast["leaves"]["suppressed"].sum() > 0


def chain(M: int = 79) -> dict:
    """One QI of ``M`` distinct evenly spaced codes, k = 40 and a budget of every row: no
    ordinary split, and trimming one row off an end is the cheapest suppressing split again
    and again (each narrows the kept rows by a row's width for one row's slack) -- a chain of
    suppressed leaves, many more nodes than rows / k."""
    rng = np.random.default_rng(M)
    return {"codes": np.arange(M)[None, :], "seg_n": np.array([M]), "k": 40,
            "domains": [Domain(QI("q0", "numeric", "INTEGER"), M, "", np.arange(M, dtype=np.float64))],
            "classes": (rng.integers(0, 3, M), rng.integers(0, 2, M)),
            "numbers": (rng.integers(-9, 9, M), rng.integers(0, 3, M))}


@pytest.mark.parametrize("criterion", [None, InfoGain("y"), Regression("v")])
def test_a_chain_of_trims_fits_the_node_table(criterion):
    """The node table holds the suppressed leaves too (it was sized for rows / k nodes: the
    chain wrote past it, Median's finish included)."""
    case = chain()
    budget = case["seg_n"].copy()
    if criterion is None:  # Median's finish
        from tests.support.finish import finish as median

        fast = median(case["codes"], case["seg_n"], case["domains"], 40, True, budget=budget)
        assert_same(fast, median(case["codes"], case["seg_n"], case["domains"], 40, False, budget=budget))
    else:
        fast = same(case, criterion, [], STATS, budget, 1)
    assert fast["leaves"]["suppressed"].sum() > 10


# -- the request takes the compiled finish ----------------------------------------------------
def _frame(n: int = 900, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    a = np.minimum(rng.geometric(0.05, n), 300)
    return pd.DataFrame({"a": a, "b": rng.integers(0, 50, n),
                         "c": np.where(rng.random(n) < 0.02, 10_000, rng.integers(0, 30, n)),
                         "label": np.where(rng.random(n) < 0.2, rng.integers(0, 3, n), a % 3),
                         "amount": rng.integers(-50, 50, n) + a, "s": rng.integers(0, 4, n)})


def _release(frame: pd.DataFrame, fast: bool, memory_rows: int, monkeypatch, **request) -> tuple[list, list, int]:
    """The release's rules and view with ``suppression=0.03``, the compiled finish on or off,
    and how many batches with a budget the compiled workload finish took (a release with a
    limit also partitions once without it, for its "before" figures: those batches have none)."""
    calls = []
    real = workload_finish.finish

    def counted(*args, **kwargs):
        calls.append(kwargs.get("budget"))
        return real(*args, **kwargs)

    monkeypatch.setattr(builder, "_WORKLOAD_FINISH", fast)
    monkeypatch.setattr(workload_finish, "finish", counted)
    con = duckdb.connect()
    try:
        con.register("frame", frame)
        con.execute("CREATE TABLE t AS SELECT row_number() OVER () AS id, * FROM frame")
        release = sqlanon.anonymize(con, "t", qid=["a", "b", "c"], k=9, suppression=0.03, **request,
                                    algorithm=sqlanon.Mondrian(strategy=sqlanon.Levels(memory_rows=memory_rows)),
                                    output=sqlanon.Output(key="id"))
        assert release.verification.ok and 0 < release.suppressed <= int(0.03 * len(frame))
        return (con.execute(f'SELECT * FROM "{release.rules}" ORDER BY ALL').fetchall(),
                con.execute(f'SELECT * FROM "{release.view}" ORDER BY id').fetchall(),
                sum(b is not None and bool((b > 0).any()) for b in calls))
    finally:
        con.close()


@pytest.mark.parametrize("memory_rows", [40, 10**9])
@pytest.mark.parametrize("target, privacy", [
    ("label", []), ("amount", []), ("label", [sqlanon.DistinctLDiversity("s", 2)]),
    ("amount", [sqlanon.EntropyLDiversity("s", 1.8)]),
])
def test_a_request_with_a_suppression_limit_takes_the_compiled_finish(target, privacy, memory_rows, monkeypatch):
    """Through the release: the compiled finish takes the batches (with their budgets), and the
    rules and suppressed rows are those of the level-by-level finish."""
    frame = _frame()
    rules, view, calls = _release(frame, True, memory_rows, monkeypatch, target=target, privacy=privacy)
    assert calls > 0
    assert (rules, view) == _release(frame, False, memory_rows, monkeypatch, target=target, privacy=privacy)[:2]


def test_the_request_keeps_its_engine_sized_memory_rows():
    """A workload request with a suppression limit is one a compiled finish takes whole, so its
    ``memory_rows`` stays engine-sized (before: capped at 2M rows for the level-by-level finish)."""
    from sqlanon.engine import engine_for
    from sqlanon.request.spec import DEFAULT_MEMORY_ROWS, default_memory_rows

    con = duckdb.connect()
    con.execute("SET memory_limit = '20GB'")
    con.execute("CREATE TABLE t AS SELECT i AS a, i % 7 AS b, (i % 3)::VARCHAR AS y, i % 11 AS v, "
                "(i % 5)::VARCHAR AS s FROM range(100) r(i)")
    engine = engine_for(con)
    sized = default_memory_rows(engine)
    assert sized > DEFAULT_MEMORY_ROWS
    for target, extra in (("y", {}), ("v", {}), (["y", "v"], {}), ("y", {"sensitive": "s", "l": 2})):
        request = sqlanon.Request("t", ["a", "b"], 5, **request_options(target=target, suppression=0.05, **extra))
        assert request.resolve(engine).memory_rows == sized


# -- compile cost ----------------------------------------------------------------------------
def test_no_budget_compiles_no_suppression_code(tmp_path):
    """From an empty cache (a kernel loaded from numba's cache does not compile what it calls,
    so only a compilation shows it): InfoGain under k alone without a budget compiles neither
    the trim nor the budget's share -- the budget is a specialization of its own -- and with
    one, both."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env["NUMBA_CACHE_DIR"] = str(tmp_path)
    out = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import json
        import numpy as np
        from sqlanon.model.domain import Domain
        from sqlanon.model.qi import QI
        from sqlanon.mondrian.compiled import median_finish, workload_finish, workload_trim

        def compiled():
            return [len(workload_trim.trim.signatures), len(median_finish._shares.signatures),
                    len(workload_finish._grow.signatures)]

        rng = np.random.default_rng(0)
        codes = rng.integers(0, 20, (2, 300)).astype(np.int32)
        domains = [Domain(QI(f"q{j}", "numeric", "INTEGER"), 20, "", np.arange(20.0)) for j in range(2)]
        y = (codes[0] % 3).astype(np.int64)
        seg_n = np.array([300], dtype=np.int64)
        workload_finish.finish(codes.copy(), seg_n, domains, 5, [y], [3], [], False, 0.0)
        before = compiled()
        workload_finish.finish(codes.copy(), seg_n, domains, 5, [y], [3], [], False, 0.0,
                               budget=np.zeros(1, np.int64))
        zero = compiled()
        workload_finish.finish(codes.copy(), seg_n, domains, 5, [y], [3], [], False, 0.0, budget=np.array([30]))
        print(json.dumps([before, zero, compiled()]))
    """)], cwd=ROOT, capture_output=True, text=True, timeout=1800, env=env)
    assert out.returncode == 0, out.stderr
    before, zero, after = json.loads(out.stdout)
    assert before == [0, 0, 1] and zero == before
    assert after == [1, 1, 2]
