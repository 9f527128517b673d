"""Iyengar's genetic algorithm (``search="genetic"``): the repair gives tree cuts, the fitness
equals LM and CM computed independently with pandas, the result always satisfies k within the
suppression limit (hypothesis), seeds reproduce, and the release on DuckDB and PostgreSQL."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sqlanon
from sqlanon.model.hierarchy import Hierarchy
from sqlanon.singledim.genetic import Column, Genetic, _cut
from tests.support import frame, load_frame

TREE = {"*": {"a": {"a1": ["a11", "a12"], "a2": ["a21", "a22"]}, "b": {"b1": ["b11", "b12"], "b2": ["b21", "b22"]}}}
SMALL = {"*": {"x": ["x1", "x2", "x3"], "y": ["y1", "y2"]}}


def _table(seed: int, n: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    leaves = ["a11", "a12", "a21", "a22", "b11", "b12", "b21", "b22"]
    return pd.DataFrame({"id": np.arange(n), "t": rng.choice(leaves, n, p=rng.dirichlet(np.ones(8))),
                         "s": rng.choice(["x1", "x2", "x3", "y1", "y2"], n),
                         "num": rng.integers(0, 15, n) * 3 + 20, "lab": rng.choice(["no", "yes"], n, p=[0.65, 0.35])})


def _setup(df: pd.DataFrame, metric: str, k: int, limit: int):
    h_t, h_s = Hierarchy.from_dict(TREE), Hierarchy.from_dict(SMALL)
    values = np.unique(df["num"])
    codes = np.column_stack([h_t.code_of(df["t"].tolist()), h_s.code_of(df["s"].tolist()),
                             np.searchsorted(values, df["num"])])
    label = (df["lab"] == "yes").astype(int).to_numpy()
    keys, inverse = np.unique(codes, axis=0, return_inverse=True)
    y = np.zeros((len(keys), 2), dtype=np.int64)
    np.add.at(y, (inverse.ravel(), label), 1)
    columns = [Column(h_t.n_leaves, h_t), Column(h_s.n_leaves, h_s), Column(len(values), position=values.astype(float))]
    return Genetic(keys, y, columns, metric, k, limit), keys, (h_t, h_s, values)


def _pandas_metric(df: pd.DataFrame, sol, trees, metric: str, k: int) -> tuple[float, int]:
    """LM / CM of the solution's generalization, from the rows, with pandas."""
    h_t, h_s, values = trees
    g = pd.DataFrame({
        "t": [h_t.labels[sol.labels[0][c]] for c in h_t.code_of(df["t"].tolist())],
        "s": [h_s.labels[sol.labels[1][c]] for c in h_s.code_of(df["s"].tolist())],
    })
    code = np.searchsorted(values, df["num"])
    first, last = sol.labels[2][code], sol.ends[2][sol.labels[2][code]]
    g["lo"], g["hi"] = values[first], values[last]
    g["lab"] = df["lab"].to_numpy()
    size = g.groupby(["t", "s", "lo", "hi"])["lab"].transform("size")
    sup = size < k
    S, N = int(sup.sum()), len(df)
    kept = g[~sup]
    if metric == "CM":
        minority = kept.groupby(["t", "s", "lo", "hi"])["lab"].agg(lambda x: len(x) - x.value_counts().max()).sum()
        return (minority + S) / N, S
    leaves = lambda h, label: len([r for r in h.to_rows() if label in r])  # noqa: E731
    lm = 0.0
    for q, h in (("t", h_t), ("s", h_s)):
        lm += (kept[q].map(lambda x: (leaves(h, x) - 1) / (h.n_leaves - 1)).sum() + S) / N
    lm += (((kept["hi"] - kept["lo"]) / (values[-1] - values[0])).sum() + S) / N
    return lm, S


def test_repair_gives_tree_cuts():
    h = Hierarchy.from_dict(TREE)
    rng = np.random.default_rng(0)
    for _ in range(200):
        bits = rng.random(h.n_leaves - 1) < rng.random()
        node = _cut(h, bits)
        # every leaf meets exactly one chosen node on its path, and each chosen node is whole
        chosen = set(node.tolist())
        for leaf in range(h.n_leaves):
            assert sum(1 for a in set(h.ancestors[leaf].tolist()) if a in chosen) == 1
        for v in chosen:
            assert not bits[h.leaf_lo[v]: h.leaf_hi[v]].any()  # no set bit inside a group
        repaired = node[1:] != node[:-1]
        assert (repaired >= bits).all()  # separations asked for are kept
        assert (_cut(h, repaired) == node).all()  # a fixed point
    # the paper's example: one separation inside a subtree separates the whole subtree
    bits = np.zeros(7, dtype=bool)
    bits[1] = True  # between a12 and a21
    assert [h.labels[x] for x in _cut(h, bits)] == ["a1", "a1", "a2", "a2", "b", "b", "b", "b"]


@pytest.mark.parametrize("metric", ["LM", "CM"])
def test_fitness_equals_pandas(metric):
    df = _table(1, 300)
    ga, _, trees = _setup(df, metric, 6, 10**9)
    rng = np.random.default_rng(5)
    for _ in range(25):
        sol = ga.evaluate(rng.random(ga.length) < rng.random())
        expected, S = _pandas_metric(df, sol, trees, metric, 6)
        assert sol.suppressed == S
        assert sol.fitness == pytest.approx(expected, rel=1e-12, abs=1e-12)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), k=st.integers(2, 40), fraction=st.sampled_from([0.0, 0.01, 0.05, 0.2]),
       metric=st.sampled_from(["LM", "CM"]))
def test_result_satisfies_k(seed, k, fraction, metric):
    df = _table(seed, 120)
    limit = int(fraction * len(df))
    ga, keys, trees = _setup(df, metric, k, limit)
    result = ga.run(seed=seed, iterations=60, population=20)
    sol = result.best
    assert sol.suppressed <= limit and sol.fitness < 1e9
    expected, S = _pandas_metric(df, sol, trees, metric, k)
    assert S == sol.suppressed and sol.fitness == pytest.approx(expected)


def test_seeds_reproduce():
    df = _table(2, 400)
    runs = [_setup(df, "CM", 10, 8)[0].run(seed=s, iterations=300, population=30) for s in (7, 7, 8)]
    assert np.array_equal(runs[0].best.bits, runs[1].best.bits) and runs[0].best.fitness == runs[1].best.fitness
    assert runs[0].evaluations == runs[1].evaluations
    assert runs[2].iterations == 300


@pytest.mark.engines("duckdb", "postgres")
def test_release(con):
    df = _table(4, 500)
    load_frame(con, "t", df)
    seen = []
    release = sqlanon.anonymize(con, "t", qid=["t", "s", "num"], k=15, hierarchies={"t": TREE, "s": SMALL},
                                target="lab", suppression=0.03, progress=seen.append,
                                algorithm=sqlanon.Genetic(metric="CM", iterations=400, seed=3),
                                output=sqlanon.Output(key="id"))
    assert release.outcome.search == "genetic" and release.verification.ok and release.suppressed <= 15
    assert seen and seen[-1].phase == "genetic" and seen[-1].level == 400 and seen[-1].best == release.outcome.score
    view = frame(con, f'SELECT * FROM "{release.view}" ORDER BY id')
    assert len(view) == len(df) and view["lab"].tolist() == df["lab"].tolist()
    sizes = view[view["eq_class"].notna()].groupby("eq_class").size()
    assert (sizes >= 15).all()
    gone = view[view["eq_class"].isna()]
    assert len(gone) == release.suppressed
    assert (gone["t"] == "*").all() and (gone["num_min"] == df["num"].min()).all() and (gone["num_max"] == df["num"].max()).all()
    m = sqlanon.metrics(con, release, targets=["lab"])
    assert m.cm["lab"] == pytest.approx(release.outcome.score) and m.suppressed == release.suppressed
    lm = sqlanon.anonymize(con, "t", qid=["t", "s", "num"], k=15, hierarchies={"t": TREE, "s": SMALL},
                           suppression=0.03, algorithm=sqlanon.Genetic(metric="LM", iterations=300, seed=3),
                           output=sqlanon.Output(view="t_lm"))
    assert sqlanon.metrics(con, lm).lm == pytest.approx(lm.outcome.score)
    with pytest.raises(TypeError, match="max_seconds"):  # top-down refinement's budget: the GA's is budget=
        sqlanon.Genetic(max_seconds=3)
