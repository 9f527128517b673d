"""The optimal full-domain generalization: a search of the generalization lattice over the
compressed table (the core of ARX -- Kohlmayer et al., *Flash: efficient, stable and optimal
k-anonymity*, PASSAT 2012; El Emam et al.'s OLA, JAMIA 2009; LeFevre, DeWitt & Ramakrishnan's
Incognito, SIGMOD 2005, whose rollups this follows).

Every QI has a hierarchy; a *node* gives each QI a level (0 the leaves, ``h_q`` the root) and
generalizes every value of that QI to its ancestor that many steps up. A class of a node is
*kept* when it has at least ``k`` rows and satisfies every further constraint asked for
(distinct, entropy or recursive (c, l)-diversity of a sensitive column, judged by the
constraint objects' own ``allowed`` on the class's value counts, :meth:`Lattice.kept`); the
other classes are suppressed. A node *satisfies* the request when its suppressed rows are at
most the suppression limit. The search returns the satisfying node of least metric
(:mod:`sqlanon.model.utility`).

How:

* **Rolling up, in numpy.** A node's classes are computed from its parent's in the enumeration
  tree below (one QI one level higher): every class row is a key ``sum_q node_q * radix_q``
  (hierarchy node ids), raising QI ``q`` one level replaces ``node_q`` by its parent, and the
  classes are the distinct keys (a hash, ``pandas.factorize``) with their rows summed. Near the
  top of the lattice the tables are tiny. (Measured on Adult, ``benchmarks/bench_singledim.py
  --only rollup``: one roll-up step ~0.14 ms in numpy, one SQL ``GROUP BY`` over the table with
  every QI's hierarchy level joined ~106 ms in DuckDB -- so the database computes the compressed
  table once and the lattice is walked in memory.)
* **Enumeration tree.** A node's parent lowers its *last* raised QI by one; its children raise a
  QI at or after that one. Every node is reached exactly once, by a depth-first walk that keeps
  only the tables on the current path.
* **Pruning by bounds only, sound with suppression and l-diversity.** Generalizing only merges
  classes. With k alone the suppressed rows never grow upward (a merge of classes containing a
  kept one is kept), and so for distinct l-diversity (the union of value sets only grows) --
  the monotonicity Flash's and OLA's predictive tagging rest on. Entropy and recursive (c, l)-
  diversity are monotone only *without* suppression (Machanavajjhala et al., TKDD 2007,
  Section 5: the union of two classes that satisfy them satisfies them), but a kept class merged
  with a failing one may fail: ``{a, b}`` is entropy 2-diverse, ``{a x 100}`` is not, and their
  union ``{a x 101, b}`` is not either -- its 102 rows are suppressed where 100 were (ARX too
  treats such models as monotone only at a suppression limit of 0). So the search tags nothing
  as satisfying or failing: every node it reaches gets its classes judged. (Here a node's
  class table gives its suppression and its metric at once, and the walk goes upward, so tags
  would save little anyway.) What it prunes with are the metrics' *bounds*
  (:func:`sqlanon.model.utility.bound`: the metric with nothing suppressed, tighter for DM and
  AECS), which never decrease upward and never exceed the metric whichever classes are
  suppressed: suppressing a class never lowers any metric (a suppressed row costs the root's
  loss 1 in LM/Loss/Precision, ``N`` in DM, 1 in CM, a non-negative term in Entropy), DM's
  bound only assumes a kept class has ``>= k`` rows and AECS's that at most ``N / k`` classes are
  kept. When a node's bound exceeds the best value found, so does every node above it, and its
  whole subtree is skipped. For LM, Loss, Precision and Entropy the bound is a function of the
  levels alone, so a pruned child is never even rolled up; children are visited in order of
  their bounds, so good nodes come early.
* **Exact, with deterministic ties.** Every node not pruned that satisfies the request is
  evaluated; among nodes of equal metric (within a relative ``1e-12``) the one with the smallest
  sum of levels wins, then the smallest level vector in QI order.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import RecodingError
from ..model import utility
from ..model.hierarchy import Hierarchy
from ..model.privacy import Constraint
from ..model.stats import ClassStats

#: Relative tolerance within which two metric values tie.
TIE = 1e-12


@dataclass(frozen=True)
class Node:
    """One evaluated lattice node: its levels, suppressed rows and metric value."""

    levels: tuple[int, ...]
    suppressed: int
    value: float


@dataclass(frozen=True)
class Result:
    """The optimum (None when no node satisfies the request), the nodes whose classes were
    computed, those pruned with their subtree, and the lattice's size."""

    best: Node | None
    checked: int
    pruned: int
    size: int


@dataclass(frozen=True)
class Table:
    """The classes of one node: a key per class (``sum_q node_q * radix_q``, so a QI's node is
    ``key // radix_q % width_q``), rows per target label ``y`` (C, m), rows ``n``, and per
    sensitive column the rows per value ``s[j]`` (C, V_j)."""

    key: np.ndarray
    y: np.ndarray
    n: np.ndarray
    s: tuple[np.ndarray, ...] = ()


@dataclass(frozen=True)
class Sensitive:
    """Where a sensitive column's value counts sit in a node's
    :class:`~sqlanon.model.stats.ClassStats` (the :class:`~sqlanon.model.stats.Layout`
    the constraints read them through): ``counts[names.index(column)]``."""

    names: tuple[str, ...]

    def counts(self, stats: ClassStats, column: str) -> np.ndarray:
        return stats.counts[self.names.index(column)]

    def moments(self, stats: ClassStats, column: str) -> np.ndarray:
        raise RecodingError(f"search='optimal' judges value counts only, not the moments of {column!r}")


class Lattice:
    """The generalization lattice of a compressed table.

    Args:
        codes: (G, d) leaf codes of each distinct QI vector.
        counts: (G, m) rows per target label of each vector (m = 1 without a target).
        hierarchies: the d hierarchies (leaf codes as in ``codes``).
        sensitive: per sensitive column, (G, V) rows per value code of each vector.
        constraints: what a class must satisfy besides ``k`` (distinct, entropy, recursive
            (c, l)-diversity), each judging the classes' value counts through its own
            vectorized ``allowed`` -- the code Mondrian's splits are judged by.
    """

    def __init__(self, codes: np.ndarray, counts: np.ndarray, hierarchies: Sequence[Hierarchy],
                 sensitive: Mapping[str, np.ndarray] | None = None, constraints: Sequence[Constraint] = ()) -> None:
        self.h = tuple(hierarchies)
        sensitive = dict(sensitive or {})
        self.layout = Sensitive(tuple(sensitive))
        self.constraints = tuple(constraints)
        for c in self.constraints:
            if c.numeric_columns or set(c.class_columns) - set(sensitive):
                raise RecodingError(f"search='optimal' cannot judge {c.describe()}: it needs the value counts of "
                                    f"{sorted(set(c.class_columns) - set(sensitive)) or list(c.numeric_columns)}")
        self.d = len(self.h)
        y = np.asarray(counts, dtype=np.int64).reshape(len(codes), -1)
        self.total = int(y.sum())
        self.heights = np.array([h.height for h in self.h], dtype=np.int64)
        widths = [h.n_nodes for h in self.h]
        if float(np.prod([float(w) for w in widths])) >= 2.0**62:
            raise RecodingError("search='optimal': the QIs' hierarchies have too many nodes together for the "
                                "lattice's 64-bit class keys; use fewer QIs or smaller hierarchies")
        self.radix = np.cumprod([1] + widths[:-1]).astype(np.int64)
        self.width = np.array(widths, dtype=np.int64)
        self.up = []  # a node's parent (the root its own), per QI
        self.node_loss = []  # (M_P - 1) / (M - 1) per node, per QI
        for h in self.h:
            parent = np.asarray(h.parent, dtype=np.int64).copy()
            parent[parent < 0] = np.flatnonzero(parent < 0)[0]
            self.up.append(parent)
            leaves = (h.leaf_hi - h.leaf_lo + 1).astype(np.float64)
            self.node_loss.append((leaves - 1) / max(h.n_leaves - 1, 1))
        codes = np.asarray(codes, dtype=np.int64).reshape(len(codes), self.d)
        self.leaf_node = [np.asarray(h.leaf_node, dtype=np.int64)[codes[:, j]] for j, h in enumerate(self.h)]
        key = np.zeros(len(codes), dtype=np.int64)
        for j in range(self.d):
            key += self.leaf_node[j] * self.radix[j]
        s_counts = tuple(np.asarray(v, dtype=np.int64).reshape(len(codes), -1) for v in sensitive.values())
        self.bottom = Table(key, y, y.sum(axis=1), s_counts)  # distinct keys: the compressed rows are
        # per QI: rows per leaf code, for the entropy metric
        self.leaf_rows = [np.bincount(codes[:, j], weights=self.bottom.n, minlength=h.n_leaves).astype(np.int64)
                          for j, h in enumerate(self.h)]
        # per QI and level, with nothing suppressed: sum_rows loss / N, and the entropy term
        self.level_loss: list[list[float]] = []
        self.level_entropy: list[list[float]] = []
        for j, h in enumerate(self.h):
            node = np.asarray(h.leaf_node, dtype=np.int64)
            losses, entropies = [], []
            for _ in range(int(self.heights[j]) + 1):
                rows = np.bincount(node, weights=self.leaf_rows[j], minlength=h.n_nodes)
                losses.append(float((self.leaf_rows[j] * self.node_loss[j][node]).sum()) / max(self.total, 1))
                entropies.append(utility.generalization_entropy(self.leaf_rows[j], rows[node]))
                node = self.up[j][node]
            self.level_loss.append(losses)
            self.level_entropy.append(entropies)

    @property
    def size(self) -> int:
        """Number of nodes."""
        return int(np.prod(self.heights + 1))

    def col(self, t: Table, j: int) -> np.ndarray:
        """QI ``j``'s hierarchy node in each class of ``t``."""
        return (t.key // self.radix[j]) % self.width[j]

    def roll(self, t: Table, j: int) -> tuple[Table, np.ndarray]:
        """Raise QI ``j`` one level: the new classes and the new class of each old one."""
        old = self.col(t, j)
        new = self.up[j][old]
        index, keys = pd.factorize(t.key + (new - old) * self.radix[j], sort=False)
        index = index.astype(np.int64, copy=False)
        C = len(keys)
        y = _sum_rows(index, t.y, C)
        n = y[:, 0].copy() if y.shape[1] == 1 else y.sum(axis=1)
        return Table(np.asarray(keys, dtype=np.int64), y, n, tuple(_sum_rows(index, a, C) for a in t.s)), index

    def kept(self, t: Table, k: int) -> np.ndarray:
        """(C,) the classes of ``t`` that satisfy the requirement -- at least ``k`` rows and every
        constraint's :meth:`~sqlanon.model.privacy.Constraint.allowed` on their value
        counts; the others are suppressed."""
        ok = t.n >= k
        if self.constraints:
            stats = ClassStats(t.n, t.s)
            for c in self.constraints:
                ok &= c.allowed(stats, self.layout)
        return ok

    def classes(self, t: Table, loss: bool) -> utility.Classes:
        """The classes of a table, with each class's per-QI loss when ``loss``."""
        cells = (np.column_stack([self.node_loss[j][self.col(t, j)] for j in range(self.d)]) if loss and self.d
                 else np.zeros((len(t.n), 0)))
        return utility.Classes(t.n, t.y, cells)

    def table(self, levels: Sequence[int]) -> tuple[Table, np.ndarray]:
        """The classes of a node computed from the bottom, and each compressed row's class."""
        t = self.bottom
        member = np.arange(len(t.key))
        for j, level in enumerate(levels):
            for _ in range(level):
                t, index = self.roll(t, j)
                member = index[member]
        return t, member

    def generalized(self, levels: Sequence[int]) -> np.ndarray:
        """(G, d) the hierarchy node of every compressed row's value at ``levels``."""
        out = np.empty((len(self.bottom.key), self.d), dtype=np.int64)
        for j in range(self.d):
            node = self.leaf_node[j]
            for _ in range(levels[j]):
                node = self.up[j][node]
            out[:, j] = node
        return out

    def metric(self, name: str, levels: Sequence[int], t: Table, k: int, kept: np.ndarray | None = None) -> float:
        """A node's metric (:mod:`sqlanon.model.utility`) from its classes, those not ``kept``
        (default :meth:`kept`) suppressed. LM, Loss and Entropy start from their per-level sums
        (:meth:`per_qi`) and correct for the suppressed classes only -- the same numbers as
        :func:`sqlanon.model.utility.value` on every class."""
        if kept is None:
            kept = self.kept(t, k)
        if name in ("DM", "AECS", "CM"):
            return utility.value(name, self.classes(t, False), k, kept)
        small = ~kept
        S = int(t.n[small].sum())
        if name == "Precision":
            return utility.precision(self.total, S, np.asarray(levels, float), self.heights.astype(float))
        per = self.per_qi(name, levels)
        if S:
            for j in range(self.d):
                node = self.col(t, j)[small]
                if name == "Entropy":
                    s = np.bincount(node, weights=t.n[small], minlength=self.h[j].n_nodes)
                    per[j] += utility.suppression_entropy(s)
                else:  # a suppressed row loses 1 instead of its node's loss
                    per[j] += (S - float((t.n[small] * self.node_loss[j][node]).sum())) / self.total
        return self.aggregate(name, per)

    def per_qi(self, name: str, levels: Sequence[int]) -> np.ndarray:
        """Per QI, the metric's share with nothing suppressed -- a function of the levels alone:
        LM's/Loss's ``sum_rows loss / N``, Entropy's ``sum_v c_v log2(c_g(v) / c_v)``."""
        table = self.level_entropy if name == "Entropy" else self.level_loss
        return np.array([table[j][level] for j, level in enumerate(levels)], dtype=np.float64)

    def aggregate(self, name: str, per: np.ndarray) -> float:
        """LM and Entropy sum the QIs; ARX's Loss takes their geometric mean."""
        if name == "Loss":
            return float(np.exp(np.log1p(per).mean()) - 1.0) if len(per) else 0.0
        return float(per.sum())

    def bound(self, name: str, levels: Sequence[int], t: Table | None, k: int) -> float:
        """:func:`sqlanon.model.utility.bound`: monotone, never above the metric here or above.
        For LM, Loss, Precision and Entropy a function of the levels alone (``t`` may be None)."""
        if name == "Precision":
            return utility.precision(self.total, 0, np.asarray(levels, float), self.heights.astype(float))
        if name in ("LM", "Loss", "Entropy"):
            return self.aggregate(name, self.per_qi(name, levels))
        assert t is not None
        return utility.bound(name, self.classes(t, False), k)

    def entropy(self, levels: Sequence[int], t: Table | None, k: int) -> float:
        """Non-uniform entropy of a node (its suppression term only with the classes ``t``)."""
        return self.metric("Entropy", levels, t, k) if t is not None else self.bound("Entropy", levels, None, k)

    def search(self, metric: str, k: int, limit: int, on_node: Callable[[int, Node | None], None] | None = None,
               ) -> Result:
        """The optimal node (module docstring). ``limit``: the most rows it may suppress;
        ``on_node(checked, best)`` is called every 256 nodes and at the end.

        The children of a node are visited in order of their bound (then QI order), so good
        nodes are found early and prune more; the order does not change the result."""
        best: Node | None = None
        checked = pruned = 0
        top = self.heights
        by_levels = metric in ("LM", "Loss", "Precision", "Entropy")  # bounds need no table

        def beaten(b: float) -> bool:
            return best is not None and b > best.value + TIE * max(1.0, abs(best.value))

        def better(v: float, levels: tuple[int, ...]) -> bool:
            if best is None:
                return True
            tol = TIE * max(1.0, abs(best.value))
            if v < best.value - tol:
                return True
            if v > best.value + tol:
                return False
            return (sum(levels), levels) < (sum(best.levels), best.levels)

        def visit(levels: list[int], t: Table, b: float, last: int) -> None:
            nonlocal best, checked, pruned
            if beaten(b):  # every node of the subtree is above this one: its bound is no lower
                pruned += 1
                return
            checked += 1
            if on_node is not None and checked % 256 == 0:
                on_node(checked, best)
            kept = self.kept(t, k)
            suppressed = int(t.n[~kept].sum())
            if suppressed <= limit:
                v = self.metric(metric, levels, t, k, kept)
                node = tuple(levels)
                if better(v, node):
                    best = Node(node, suppressed, v)
            children = []  # (bound, QI, table or None: rolled when visited)
            for j in range(last, self.d):
                if levels[j] < top[j]:
                    levels[j] += 1
                    child = None if by_levels else self.roll(t, j)[0]
                    children.append((self.bound(metric, levels, child, k), j, child))
                    levels[j] -= 1
            for cb, j, child in sorted(children, key=lambda c: (c[0], c[1])):
                if beaten(cb):  # also before rolling: the best may have improved meanwhile
                    pruned += 1
                    continue
                levels[j] += 1
                visit(levels, child if child is not None else self.roll(t, j)[0], cb, j)
                levels[j] -= 1

        root = [0] * self.d
        visit(root, self.bottom, self.bound(metric, root, self.bottom, k), 0)
        if on_node is not None:
            on_node(checked, best)
        return Result(best, checked, pruned, self.size)

    def all_nodes(self) -> list[tuple[int, ...]]:
        """Every node (for brute force in tests and benchmarks)."""
        return list(itertools.product(*[range(int(h) + 1) for h in self.heights]))



def _sum_rows(index: np.ndarray, a: np.ndarray, classes: int) -> np.ndarray:
    """(classes, V): the rows of ``a`` (R, V) summed by their class ``index`` (R,)."""
    out = np.empty((classes, a.shape[1]), dtype=np.int64)
    for c in range(a.shape[1]):  # one bincount per value: V is small, R large
        out[:, c] = np.bincount(index, weights=a[:, c], minlength=classes)
    return out
