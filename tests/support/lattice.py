"""The optimal full-domain lattice by brute force, with pandas from the hierarchies' ARX rows
(for ``tests/singledim/test_singledim_lattice.py`` and the distribution models' lattice tests).

* :data:`TREE`, :data:`SMALL`, :data:`FLAT`: three hierarchies of :func:`_random_frame`'s columns.
* :func:`_compressed`: a table as the lattice's input (distinct QI codes and class counts).
* :func:`_generalized`: every node's generalized table; :func:`_brute`: every node evaluated.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

TREE = {"*": {"a": {"a1": ["a11", "a12"], "a2": ["a21", "a22"]}, "b": {"b1": ["b11", "b12"], "b2": ["b21", "b22"]}}}


SMALL = {"*": {"x": ["x1", "x2", "x3"], "y": ["y1", "y2"]}}


FLAT = {"*": ["p", "q", "r"]}


def _compressed(df: pd.DataFrame, qid, hierarchies, target=None):
    codes = np.column_stack([h.code_of(df[q].tolist()) for q, h in zip(qid, hierarchies)])
    assert (codes >= 0).all()
    labels = (pd.factorize(df[target], sort=True)[0] if target else np.zeros(len(df), dtype=np.int64))
    keys, inverse = np.unique(codes, axis=0, return_inverse=True)
    m = int(labels.max()) + 1
    y = np.zeros((len(keys), m), dtype=np.int64)
    np.add.at(y, (inverse.ravel(), labels), 1)
    return keys, y


def _generalized(df: pd.DataFrame, qid, hierarchies, target=None) -> list[tuple[tuple[int, ...], pd.DataFrame]]:
    """Every node's generalized table, from the hierarchies' ARX rows ``[leaf, ..., root]``."""
    rows = [{r[0]: r for r in h.to_rows()} for h in hierarchies]
    out = []
    for levels in itertools.product(*[range(h.height + 1) for h in hierarchies]):
        gen = pd.DataFrame({q: df[q].map({v: r[l] for v, r in rows[j].items()}) for j, (q, l) in enumerate(zip(qid, levels))})
        if target:
            gen["_t"] = df[target]
        out.append((levels, gen))
    return out


def _brute(df: pd.DataFrame, qid, hierarchies, metric: str, k: int, limit: int, target=None, nodes=None,
           fails=None):
    """Every node evaluated with pandas (``nodes``: :func:`_generalized`, computed if None;
    ``fails``: per node, the rows of classes failing an l-diversity requirement, suppressed too)."""
    N = len(df)
    rows = [{r[0]: r for r in h.to_rows()} for h in hierarchies]
    heights = [h.height for h in hierarchies]
    leaves = [h.n_leaves for h in hierarchies]
    best = None
    for levels, gen in (nodes if nodes is not None else _generalized(df, qid, hierarchies, target)):
        size = gen.groupby(list(qid))[qid[0]].transform("size")
        small = size < k
        if fails is not None:
            small = small | fails[levels]
        S = int(small.sum())
        if S > limit:
            continue
        kept = gen[~small]
        if metric == "DM":
            v = float((kept.groupby(list(qid)).size() ** 2).sum() + N * S)
        elif metric == "AECS":
            v = N / (kept.groupby(list(qid)).ngroups + (1 if S else 0))
        elif metric == "CM":
            counts = kept.groupby(list(qid))["_t"].value_counts().unstack(fill_value=0)
            v = ((counts.sum(axis=1) - counts.max(axis=1)).sum() + S) / N
        elif metric == "Precision":
            v = float(np.mean([((N - S) * (l / h if h else 0) + S) / N for l, h in zip(levels, heights)]))
        elif metric in ("LM", "Loss"):
            per = []
            for j, q in enumerate(qid):
                under = {label: n for label, n in pd.Series([r[levels[j]] for r in rows[j].values()]).value_counts().items()}
                loss = kept[q].map(lambda x: (under[x] - 1) / max(leaves[j] - 1, 1)).sum()
                per.append((loss + S) / N)
            v = float(sum(per)) if metric == "LM" else float(np.exp(np.log1p(per).mean()) - 1)
        else:  # Entropy: original values against their generalized values, suppressed by generalized values
            v = 0.0
            for q in qid:
                c = df[q].value_counts()
                g = gen[q].groupby(df[q]).first()
                cg = gen[q].value_counts()
                v += float(sum(c[x] * math.log2(cg[g[x]] / c[x]) for x in c.index))
                s = gen.loc[small, q].value_counts()
                v += float(sum(s[x] * math.log2(S / s[x]) for x in s.index))
        key = (round(v, 9), sum(levels), levels)
        if best is None or key < best[0]:
            best = (key, levels, v, S)
    return best


def _random_frame(seed: int, n: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    leaves = ["a11", "a12", "a21", "a22", "b11", "b12", "b21", "b22"]
    p = rng.dirichlet(np.ones(len(leaves)) * 0.7)
    return pd.DataFrame({"id": np.arange(n), "t": rng.choice(leaves, n, p=p), "s": rng.choice(["x1", "x2", "x3", "y1", "y2"], n),
                         "f": rng.choice(["p", "q", "r"], n), "lab": rng.choice(["no", "yes"], n, p=[0.7, 0.3])})
