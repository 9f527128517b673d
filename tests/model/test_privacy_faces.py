"""Each privacy model's compiled face (sqlanon/model/privacy/compiled.py) gives its numpy
judgement's verdict, class by class, on random value counts and moments -- near the thresholds
too (the parameters are drawn from the classes' own measures). Only non-empty classes: the
depth-first finish never judges an empty one (every child of an ordered cut has rows)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlanon.model.privacy import (
    BetaLikeness,
    DeltaDisclosure,
    DistinctLDiversity,
    EntropyLDiversity,
    RecursiveCLDiversity,
    TCloseness,
    VarianceDiversity,
)
from sqlanon.model.privacy.compiled import passes, table
from sqlanon.model.stats import ClassStats
from tests.support.stats import OneColumn


def models(rng, counts, moments, table_counts):
    """One model of each kind with a face, thresholds near the classes' measures."""
    def pick(values):
        return float(values[rng.integers(len(values))]) if len(values) else 1.0

    n = counts.sum(axis=1)
    V = counts.shape[1]
    out = [DistinctLDiversity("s", int(rng.integers(1, V + 2))),
           RecursiveCLDiversity("s", float(rng.choice([0.5, 1.0, 2.0, 3.0, 7.5])), int(rng.integers(1, V + 2)))]
    with np.errstate(divide="ignore", invalid="ignore"):
        p = counts / np.maximum(n, 1)[:, None]
        h = -(np.where(p > 0, p * np.log(np.where(p > 0, p, 1)), 0)).sum(axis=1)
    out.append(EntropyLDiversity("s", max(1.0, math.exp(pick(h[n > 0])))))
    out.append(EntropyLDiversity("s", float(rng.choice([1.0, 1.5, 2.0, 3.0]))))
    var = (moments[:, 2] - moments[:, 1].astype(float) ** 2 / np.maximum(moments[:, 0], 1)) / np.maximum(moments[:, 0], 1)
    out.append(VarianceDiversity("v", max(0.0, pick(var))))
    texts = [str(i) for i in range(V)]
    for distance in ("equal", "ordered"):
        t = TCloseness("s", 0.3, distance).with_reference(texts, table_counts)
        d = t.ground.emd(counts)
        out.append(TCloseness("s", max(0.0, pick(d)), distance).with_reference(texts, table_counts))
    for delta in (0.5, 1.0, 2.0):
        out.append(DeltaDisclosure("s", delta).with_reference(texts, table_counts))
    for enhanced in (False, True):
        out.append(BetaLikeness("s", float(rng.choice([0.2, 1.0, 3.0])), enhanced).with_reference(texts, table_counts))
    return out


@given(st.integers(0, 2**32 - 1))
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_faces_give_the_numpy_verdicts(seed):
    rng = np.random.default_rng(seed)
    V = int(rng.integers(1, 8))
    K = int(rng.integers(1, 40))
    counts = rng.integers(0, rng.choice([2, 5, 50]), (K, V)).astype(np.int64)
    counts[rng.random(K) < 0.1] = 0  # empty classes pass
    counts[:, rng.random(V) < 0.2] = 0  # values absent from every class
    values = rng.integers(-20, 20, (K, 40))
    sizes = rng.integers(0, 40, K)
    moments = np.array([[s, values[i, :s].sum(), (values[i, :s] ** 2).sum()] for i, s in enumerate(sizes)],
                       dtype=np.int64)
    table_counts = counts.sum(axis=0) + rng.integers(1, 30, V)
    stats = ClassStats(counts.sum(axis=1), (np.asfortranarray(counts),), (moments,))
    for model in models(rng, counts, moments, table_counts):
        expected = model.allowed(ClassStats(moments[:, 0], (), (moments,)) if model.numeric_columns else stats,
                                 OneColumn())
        face = model.face()
        arrays = table([face], [0], [V], int(max(counts.sum(axis=1).max(), 1)))
        buf = np.zeros(V, dtype=np.int64)
        size = moments[:, 0] if model.numeric_columns else counts.sum(axis=1)
        judged = np.flatnonzero(size > 0)  # the finish judges only non-empty classes
        got = [passes(*arrays, np.ascontiguousarray(counts[i]), moments[i:i + 1], buf) for i in judged]
        np.testing.assert_array_equal(got, expected[judged], err_msg=model.describe())


def test_models_without_a_face():
    """The hierarchical t-closeness and unbound reference models have none (level by level)."""
    assert TCloseness("s", 0.2).face() is None
    assert DeltaDisclosure("s", 1.0).face() is None
    assert BetaLikeness("s", 1.0).face() is None
