"""The depth-first compiled finish of the workload criteria (InfoGain, Regression, Targets) under
privacy models beyond k (sqlanon/mondrian/workload_finish.py with sqlanon/mondrian/workload_models.py
and the models' compiled faces) gives exactly what the level-by-level finish gives: the same
leaves, ids, rows and progress, for every model with a face -- distinct, entropy and recursive
(c,l)-diversity, variance diversity, t-closeness (equal and ordered), delta-disclosure,
beta-likeness -- alone and together, on one and two threads, through the attribute lists, the
binned QIs and the histogram phase, and through the release."""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqlanon
from sqlanon.model.criteria import InfoGain, Regression, Targets
from sqlanon.model.domain import Domain
from sqlanon.model.partition import Boxes
from sqlanon.model.privacy import (
    BetaLikeness,
    DeltaDisclosure,
    DistinctLDiversity,
    EntropyLDiversity,
    KAnonymity,
    RecursiveCLDiversity,
    TCloseness,
    VarianceDiversity,
)
from sqlanon.model.qi import QI
from sqlanon.model.stats import StatColumn
from sqlanon.mondrian import builder
from sqlanon.mondrian.builder import Batch, Partitioner
from sqlanon.mondrian.compiled import histograms, workload_finish
from tests.mondrian.test_model_finish import model_list
from tests.mondrian.test_workload_finish import batches, setting
from tests.support.finish import assert_same

#: The criteria's columns (tests/test_workload_finish.py's), the models' class column ``s`` and
#: numeric column ``u`` (summed as integers).
STATS = (StatColumn("y", "class", size=3), StatColumn("z", "class", size=2), StatColumn("v", "numeric", exact=True),
         StatColumn("w", "numeric", exact=True))
FLOAT_STATS = STATS[:2] + (StatColumn("v", "numeric"), StatColumn("w", "numeric"))

CRITERIA = [InfoGain("y"), InfoGain("y", min_gain=0.05), InfoGain("y", "z"), Regression("v"),
            Regression("v", min_gain=40.0), Regression("v", "w"), Targets(("y",), ("v",)), Targets(("y", "z"), ()),
            Targets((), ("w", "v"), 0.1)]

MODELS = ["distinct", "entropy", "recursive", "variance", "closeness", "delta", "beta"]


def one_model(kind: str, draw, V: int, s_counts: np.ndarray):
    """A privacy model of ``kind`` over the class column ``s`` (V codes) or the numeric column ``u``."""
    texts = [str(i) for i in range(V)]
    if kind == "distinct":
        return DistinctLDiversity("s", draw(st.integers(1, 4)))
    if kind == "entropy":
        return EntropyLDiversity("s", draw(st.sampled_from([1.0, 1.3, 2.0, 2.5, 3.0])))
    if kind == "recursive":
        return RecursiveCLDiversity("s", draw(st.sampled_from([0.5, 1.0, 2.0, 4.0])), draw(st.integers(1, 3)))
    if kind == "variance":
        return VarianceDiversity("u", draw(st.sampled_from([0.0, 1.0, 4.0, 30.0])))
    if kind == "closeness":
        return TCloseness("s", draw(st.sampled_from([0.05, 0.2, 0.5])), draw(st.sampled_from(["equal", "ordered"]))) \
            .with_reference(texts, s_counts)
    if kind == "delta":
        return DeltaDisclosure("s", draw(st.sampled_from([0.5, 1.0, 3.0]))).with_reference(texts, s_counts)
    return BetaLikeness("s", draw(st.sampled_from([0.3, 1.0, 4.0])), draw(st.booleans())).with_reference(texts, s_counts)


@st.composite
def cases(draw, kind: str | None = None):
    """A workload batch (tests/test_workload_finish.py's) with a sensitive class column ``s``
    and a numeric one ``u`` (uniform, skewed, or following the first QI: the models then block
    the criterion's cuts), and the model ``kind`` (None: one to three of any kind)."""
    case = draw(batches())
    codes = case["codes"]
    M = codes.shape[1]
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    V = draw(st.integers(1, 6))
    skew = draw(st.sampled_from(["uniform", "skewed", "clustered"]))
    if skew == "uniform":
        s = rng.integers(0, V, M)
    elif skew == "skewed":
        s = np.minimum(rng.geometric(0.5, M) - 1, V - 1)
    else:
        s = (codes[0] * V // max(int(codes[0].max()) + 1, 1)).astype(np.int64) % V
    u = rng.integers(-5, 6, M) * draw(st.sampled_from([1, 3]))
    if skew == "clustered":
        u = u + codes[0] % 4 * 10
    counts = np.bincount(s, minlength=V)
    models = [one_model(kind, draw, V, counts)] if kind else model_list(draw, V, counts)
    # tests/test_model_finish.py's variance reads "v", here a target that may be summed in floats: "u"
    models = [VarianceDiversity("u", m.v) if isinstance(m, VarianceDiversity) else m for m in models]
    case.update(k=min(case["k"], 10), models=models, s=s, u=u, V=V, criterion=draw(st.sampled_from(CRITERIA)))
    return case


def finish(case: dict, fast: bool, threads: int = 1) -> dict:
    """One batch through Partitioner.run_memory under the case's criterion and models."""
    codes, seg_n, domains, k, V = case["codes"], case["seg_n"], case["domains"], case["k"], case["V"]
    R, d = len(seg_n), len(domains)
    stats = case.get("stats", STATS) + (StatColumn("s", "class", size=V), StatColumn("u", "numeric", exact=True))
    saved = builder._WORKLOAD_FINISH
    builder._WORKLOAD_FINISH = fast
    try:
        p = Partitioner(domains, [KAnonymity(k), *case["models"]], case["criterion"], stat_columns=stats,
                        threads=threads)
        p.next_pid = 1000
        seg = Boxes(np.arange(7, 7 + R, dtype=np.int64), seg_n.astype(np.int64), np.zeros((R, d), np.int64),
                    np.tile([dom.size - 1 for dom in domains], (R, 1)).astype(np.int64), np.full((R, d), -1, np.int64))
        assert p._workload_finish_applies(seg)
        seen = []
        p.progress = seen.append
        classes = [*case["classes"], case["s"].astype(np.int64)]
        numbers = [*case["numbers"], case["u"].astype(np.int64)]
        rows, pid = p.run_memory(Batch(codes.astype(np.int32), classes, numbers, disposable=True), seg)
    finally:
        builder._WORKLOAD_FINISH = saved
    order = np.argsort(rows)
    return {"leaves": p.leaf_table(), "rows": rows[order], "pid": pid[order], "next_pid": p.next_pid,
            "levels": p.levels, "finished": p.rows_finished,
            "progress": [(x.level, x.open_partitions, x.rows_finished) for x in seen]}


@pytest.mark.parametrize("kind", MODELS)
@given(data=st.data(), threads=st.integers(1, 2))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_each_model_gives_the_level_by_level_partition(kind, data, threads):
    case = data.draw(cases(kind))
    assert_same(finish(case, True, threads), finish(case, False))


@given(cases(), st.integers(1, 2))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_models_together_give_the_level_by_level_partition(case, threads):
    assert_same(finish(case, True, threads), finish(case, False))


@given(cases(), st.integers(1, 2), st.sampled_from([None, 3, 10**6]), st.sampled_from([0, 1, 40, 150]))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_binned_qis_and_histogram_phase_give_the_same(case, threads, width, wide):
    """QIs scored on histograms carried down the tree (``width``: None none binned, 10^6 all but
    the first), and nodes wider than ``wide`` rows split in the histogram phase (0: every node):
    their rows are named differently there, and the models judge the same splits."""
    with setting("_BIN_WIDTH", width), setting("_HIST_WIDE", wide, histograms):
        assert_same(finish(case, True, threads), finish(case, False))


def twins(seed: int, M: int = 600) -> dict:
    """Two QIs with the same codes (every cut of one is a cut of the other with the same key),
    a label that the first code range decides, and a sensitive value constant there: the
    criterion's best cut (that range alone) fails l-diversity, so the allowable cuts are walked
    (:func:`sqlanon.mondrian.compiled.workload_models._decide`) and their keys tie across the twins."""
    rng = np.random.default_rng(seed)
    q = rng.integers(0, 40, M)
    domains = [Domain(QI(f"q{j}", "numeric", "INTEGER"), 40, "", np.arange(40.0)) for j in range(2)]
    s = np.where(q < 10, 0, rng.integers(0, 3, M))
    y = np.where(q < 10, 0, np.where(rng.random(M) < 0.8, 1, 2))
    return {"codes": np.vstack([q, q]), "seg_n": np.array([M]), "domains": domains, "k": 5,
            "classes": (y, rng.integers(0, 2, M)), "numbers": (rng.integers(-9, 9, M), rng.integers(0, 3, M)),
            "s": s, "u": rng.integers(0, 5, M), "V": 3, "models": [DistinctLDiversity("s", 2)],
            "criterion": InfoGain("y")}


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("threads", [1, 2])
def test_twin_qis_tie_on_the_key_and_go_by_rank(seed, threads):
    """Among allowable cuts of equal key the QI of the better rank wins (the first twin): the
    leaves, ids and rows of the level-by-level finish, which splits on the first twin only."""
    case = twins(seed)
    fast = finish(case, True, threads)
    assert_same(fast, finish(case, False))
    leaves = fast["leaves"]
    assert len(leaves["n"]) > 5 and (leaves["lo1"] == 0).all() and (leaves["hi1"] == 39).all()


# -- through the whole release ----------------------------------------------------------------
def release_rows(frame: pd.DataFrame, target, constraints, fast: bool, memory_rows: int) -> tuple[list, list]:
    con = duckdb.connect()
    saved = builder._WORKLOAD_FINISH
    builder._WORKLOAD_FINISH = fast
    try:
        con.register("frame", frame)
        con.execute("CREATE TABLE t AS SELECT row_number() OVER () AS id, * FROM frame")
        release = sqlanon.anonymize(con, "t", qid=["a", "b", "c"], k=4, privacy=constraints, target=target,
                                    algorithm=sqlanon.Mondrian(strategy=sqlanon.Levels(memory_rows)),
                                    output=sqlanon.Output(key="id"))
        assert release.verification.ok
        return (con.execute(f'SELECT * FROM "{release.rules}" ORDER BY ALL').fetchall(),
                con.execute(f'SELECT * FROM "{release.view}" ORDER BY id').fetchall())
    finally:
        builder._WORKLOAD_FINISH = saved
        con.close()


@pytest.mark.parametrize("target, constraints", [
    ("label", [EntropyLDiversity("s", 2.0)]),
    ("amount", [VarianceDiversity("v", 3.0)]),
    ("label", [TCloseness("s", 0.25)]),
    (["label", "amount"], [RecursiveCLDiversity("s", 3.0, 2), DistinctLDiversity("s", 2)]),
    ("amount", [TCloseness("s", 0.25, "ordered"), BetaLikeness("s", 2.0)]),
    ("label", [DeltaDisclosure("s", 1.5)]),
])
@pytest.mark.parametrize("memory_rows", [10**9, 300])
def test_same_rules_and_view_through_the_release(target, constraints, memory_rows, monkeypatch):
    """Through anonymize (SQL levels first at ``memory_rows`` 300): the compiled finish is taken
    and the rules and view are those of the level-by-level finish."""
    calls = []
    real = workload_finish.finish
    monkeypatch.setattr(workload_finish, "finish", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    rng = np.random.default_rng(len(constraints) + memory_rows % 7)
    n = 3000
    a = rng.integers(0, 200, n)
    frame = pd.DataFrame({"a": a, "b": rng.integers(0, 12, n), "c": rng.normal(50, 10, n).round(1),
                          "s": np.where(rng.random(n) < 0.5, [f"x{x}" for x in a // 40], "y"),
                          "v": rng.integers(0, 20, n), "label": np.where(a < 60, "p", rng.choice(["p", "q"], n)),
                          "amount": a * 3 + rng.integers(-50, 50, n)})
    fast = release_rows(frame, target, constraints, True, memory_rows)
    assert calls, "the compiled finish was not taken"
    assert fast == release_rows(frame, target, constraints, False, memory_rows)
