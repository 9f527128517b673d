"""Iyengar's genetic algorithm: V. S. Iyengar, *Transforming Data to Satisfy Privacy
Constraints*, KDD 2002 -- flexible single-dimensional generalizations with row suppression,
searched by a GENITOR-style steady-state genetic algorithm (Whitley, ICGA 1989) over the
compressed table.

**Chromosome** (Section 5): one bit per gap between successive values of each QI, QIs
concatenated. A numeric (ordered) QI's values are its codes in order; a bit set is an interval
end point, so any set of bits is a discretization. A categorical QI's values are its hierarchy's
leaves in in-order (leaf codes are in that order); a bit set separates two neighbouring leaves,
and only some bit strings are *valid*: the groups must be a set of tree nodes that every
leaf-to-root path meets exactly once (a cut of the tree).

**Repair** (Section 5, "modifies newly generated chromosomes that are invalid into valid ones
while retaining as much as possible"): a categorical QI's groups become the maximal nodes with no
set bit inside them (every leaf is such a node), and the bits are rewritten to the boundaries of
those nodes. Every separation the chromosome asked for is kept; the fewest are added for a cut.

**Fitness** (Sections 3, 5): the generalization is applied to the compressed table (a class key
per distinct QI vector, ``pandas.factorize``, weighted ``bincount``) and the classes smaller than
k are suppressed -- "the metric computation ... computes the suppressions that are needed" --
then LM or CM (:mod:`sqlanon.model.utility`: a suppressed row loses 1 in every QI for LM and is
penalized in CM). A candidate that needs more suppression than the request allows is infeasible:
its fitness ranks it below every feasible one (by how many rows too many), so it can parent but
is never returned. The all-root chromosome (no bits) is feasible (k <= N) and is in the initial
population, so a feasible solution always exists; the result never violates k.

**GENITOR steady state**: the population is kept sorted by fitness; each iteration picks two
parents by linear rank bias (bias 1.5, Whitley's recommendation), makes one child by two-point
crossover or (half the time) by taking each QI's bits whole from either parent, flips each bit
with probability ``mutation``, repairs it, and the child replaces the
worst member when it is better and not already present. Stops after ``iterations`` or ``budget``
seconds (whichever is given; default 10,000 iterations). Reproducible: everything random comes
from ``numpy.random.default_rng(seed)``; with ``iterations=`` the result is a function of the
seed, with ``budget=`` the number of iterations depends on the machine.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..model.hierarchy import Hierarchy

#: Default number of iterations (one child each) when neither budget nor iterations is given.
DEFAULT_ITERATIONS = 10_000
#: Fitness offset of an infeasible candidate (needs more suppression than allowed).
INFEASIBLE = 1e9


@dataclass(frozen=True)
class Column:
    """One QI as the GA sees it: ``size`` values (codes); a ``hierarchy`` for a categorical QI,
    else the ``position`` of each code (numbers as they are) for an ordered one."""

    size: int
    hierarchy: Hierarchy | None = None
    position: np.ndarray | None = None


@dataclass(frozen=True)
class Solution:
    """A chromosome's generalization: per QI the group (value id) of every code -- an interval's
    first code, or a hierarchy node -- and per ordered QI the last code of each interval (by its
    first code); its suppressed rows and fitness."""

    bits: np.ndarray
    labels: tuple[np.ndarray, ...]
    ends: tuple[np.ndarray | None, ...]
    suppressed: int
    fitness: float


@dataclass(frozen=True)
class Result:
    """The best feasible solution, the iterations run, the fitness evaluations (the initial
    population's included), and whether the iterations ran out (False: the time budget
    stopped the run first)."""

    best: Solution
    iterations: int
    evaluations: int
    complete: bool


class Genetic:
    """The genetic algorithm over a compressed table (module docstring).

    Args:
        codes: (G, d) the distinct QI code vectors; counts: (G, m) rows per target label.
        columns: the d QIs; metric: ``"LM"`` or ``"CM"``; k; limit: the most rows suppressed.
    """

    def __init__(self, codes: np.ndarray, counts: np.ndarray, columns: Sequence[Column], metric: str, k: int,
                 limit: int) -> None:
        self.codes = [np.ascontiguousarray(codes[:, j], dtype=np.intp) for j in range(codes.shape[1])]
        self.y = np.asarray(counts, dtype=np.int64).reshape(len(codes), -1)
        self.n = self.y.sum(axis=1)
        self.weight = self.n.astype(np.float64)
        self.label1 = self.y[:, -1].astype(np.float64)
        self.total = int(self.n.sum())
        self.cache: dict[tuple[int, bytes], tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]] = {}
        self.columns = tuple(columns)
        self.metric, self.k, self.limit = metric, k, limit
        self.d = len(self.columns)
        self.offsets = np.cumsum([0] + [max(c.size - 1, 0) for c in self.columns])
        self.length = int(self.offsets[-1])
        # per QI: rows per code (LM's generalization loss is a sum over codes)
        self.code_rows = [np.bincount(self.codes[j], weights=self.n, minlength=c.size).astype(np.float64)
                          for j, c in enumerate(self.columns)]
        self.node_loss = []
        self.span = []
        for c in self.columns:
            if c.hierarchy is not None:
                h = c.hierarchy
                self.node_loss.append((h.leaf_hi - h.leaf_lo).astype(np.float64) / max(h.n_leaves - 1, 1))
                self.span.append(1.0)
            else:
                assert c.position is not None
                self.node_loss.append(None)
                self.span.append(float(c.position[-1] - c.position[0]) or 1.0)

    # -- chromosome -> generalization --------------------------------------------------------------
    def decode(self, bits: np.ndarray) -> tuple[np.ndarray, list[np.ndarray], list[np.ndarray], list[np.ndarray | None]]:
        """Repair ``bits`` (a copy) and return it with, per QI, each code's group index
        (0, 1, ... in code order), its value id and (ordered QIs) the intervals' last codes.
        A QI's part depends on its own bits only, and children share most of them with their
        parents: each part is cached by its bits."""
        bits = bits.copy()
        groups, labels, ends = [], [], []
        for j in range(self.d):
            b = bits[self.offsets[j]: self.offsets[j + 1]]
            key = (j, b.tobytes())
            part = self.cache.get(key)
            if part is None:
                if len(self.cache) > 200_000:
                    self.cache.clear()
                part = self.cache[key] = self._decode_qi(j, b)
            groups.append(part[0])
            labels.append(part[1])
            ends.append(part[2])
            bits[self.offsets[j]: self.offsets[j + 1]] = part[3]
        return bits, groups, labels, ends

    def _decode_qi(self, j: int, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]:
        """QI ``j``'s part of :meth:`decode`: ``(group, label, end, repaired bits)``."""
        c = self.columns[j]
        if c.hierarchy is not None:
            label = _cut(c.hierarchy, b)
            b = label[1:] != label[:-1]
            end = None
        else:
            start = np.concatenate(([True], b))
            label = np.maximum.accumulate(np.where(start, np.arange(c.size), 0))
            end = np.empty(c.size, dtype=np.int64)
            heads = np.flatnonzero(start)
            end[heads] = np.append(heads[1:], c.size) - 1
        group = np.concatenate(([0], np.cumsum(b))).astype(np.int32)
        return group, label, end, b

    def classes(self, groups: Sequence[np.ndarray]) -> tuple[np.ndarray, int]:
        """Each compressed row's class under the per-code groups, and the number of classes."""
        key = groups[0][self.codes[0]].astype(np.int64) if self.d else np.zeros(len(self.n), dtype=np.int64)
        space = int(groups[0][-1]) + 1 if self.d else 1
        for j in range(1, self.d):
            width = int(groups[j][-1]) + 1
            if width > 1:
                key += groups[j][self.codes[j]] * np.int64(space)
                space *= width
            if space > 2**40:  # keep the key small: renumber the classes so far
                index, uniques = pd.factorize(key, sort=False)
                key, space = index.astype(np.int64), len(uniques)
        if space <= 4 * len(key) + 1024:
            return key, space  # dense enough to count directly
        index, uniques = pd.factorize(key, sort=False)
        return index.astype(np.int64), len(uniques)

    def fitness(self, groups: Sequence[np.ndarray], labels: Sequence[np.ndarray], ends: Sequence[np.ndarray | None],
                ) -> tuple[float, int]:
        """``(fitness, suppressed rows)``: the metric with the classes below k suppressed, plus
        :data:`INFEASIBLE` when that is more than the limit."""
        cls, C = self.classes(groups)
        size = np.bincount(cls, weights=self.weight, minlength=C)
        small_class = size < self.k
        S = int(size[small_class].sum())
        N = float(self.total)
        if self.metric == "CM":
            if self.y.shape[1] == 2:  # the usual binary label: one more count
                second = np.bincount(cls, weights=self.label1, minlength=C)
                top = np.maximum(second, size - second)
            else:
                top = np.zeros(C)
                for c in range(self.y.shape[1]):
                    top = np.maximum(top, np.bincount(cls, weights=self.y[:, c].astype(np.float64), minlength=C))
            value = float(((size - top)[~small_class]).sum() + S) / N
        else:
            rows = np.flatnonzero(small_class[cls]) if S else np.zeros(0, dtype=np.int64)
            value = 0.0
            for j in range(self.d):
                per_code = self.code_loss(j, labels[j], ends[j])
                kept = float(self.code_rows[j] @ per_code) - float(self.weight[rows] @ per_code[self.codes[j][rows]])
                value += (kept + S) / N
        if S > self.limit:
            value += INFEASIBLE + (S - self.limit)
        return value, S

    def code_loss(self, j: int, label: np.ndarray, end: np.ndarray | None) -> np.ndarray:
        """LM's loss of each code of QI ``j`` under its group: the node's ``(M_P - 1)/(M - 1)``,
        or the interval's width over the column's span (Iyengar, Section 3.1)."""
        c = self.columns[j]
        if c.hierarchy is not None:
            return self.node_loss[j][label]
        assert end is not None and c.position is not None
        return (c.position[end[label]] - c.position[label]) / self.span[j]

    def evaluate(self, bits: np.ndarray) -> Solution:
        """Repair and score one chromosome."""
        bits, groups, labels, ends = self.decode(bits)
        value, S = self.fitness(groups, labels, ends)
        return Solution(bits, tuple(labels), tuple(ends), S, value)

    # -- the steady-state loop ---------------------------------------------------------------------
    def run(self, seed: int = 0, iterations: int | None = None, budget: float | None = None, population: int = 200,
            mutation: float | None = None, on_generation: Callable[[int, float], None] | None = None) -> Result:
        """GENITOR (module docstring); ``on_generation(iteration, best fitness)`` every 100 iterations."""
        started = time.perf_counter()
        rng = np.random.default_rng(seed)
        limit_iter = DEFAULT_ITERATIONS if iterations is None and budget is None else iterations
        rate = (1.0 / max(self.length, 1)) if mutation is None else mutation
        pool = [self.evaluate(np.zeros(self.length, dtype=bool))]
        seen = {pool[0].bits.tobytes()}
        evaluations = 1
        tries = 0
        while len(pool) < population and tries < 20 * population:
            tries += 1
            density = rng.uniform(0.0, 0.5) ** 2  # mostly coarse: fine ones need heavy suppression
            s = self.evaluate(rng.random(self.length) < density)
            evaluations += 1
            if s.bits.tobytes() not in seen:
                seen.add(s.bits.tobytes())
                pool.append(s)
        pool.sort(key=lambda s: s.fitness)
        fitness = np.array([s.fitness for s in pool])
        P = len(pool)
        done = 0
        complete = True
        while True:
            if limit_iter is not None and done >= limit_iter:
                break
            if budget is not None and time.perf_counter() - started >= budget:
                complete = limit_iter is None
                break
            a, b = _rank_pick(rng, P), _rank_pick(rng, P)
            child = (_two_point(rng, pool[a].bits, pool[b].bits) if rng.random() < 0.5 else
                     _per_qi(rng, pool[a].bits, pool[b].bits, self.offsets))
            child ^= rng.random(self.length) < rate
            s = self.evaluate(child)
            evaluations += 1
            done += 1
            key = s.bits.tobytes()
            if s.fitness < fitness[-1] and key not in seen:
                seen.discard(pool[-1].bits.tobytes())
                seen.add(key)
                at = int(np.searchsorted(fitness, s.fitness, side="right"))
                pool.insert(at, s)
                pool.pop()
                fitness = np.insert(fitness, at, s.fitness)[:-1]
            if on_generation is not None and done % 100 == 0:
                on_generation(done, float(fitness[0]))
        best = next(s for s in pool if s.suppressed <= self.limit)  # the all-root chromosome is feasible
        if on_generation is not None:
            on_generation(done, best.fitness)
        return Result(best, done, evaluations, complete)


def _cut(h: Hierarchy, bits: np.ndarray) -> np.ndarray:
    """The repaired group of each leaf: the maximal nodes with no set bit between their leaves
    (bit ``i`` separates leaves ``i`` and ``i + 1``)."""
    before = np.concatenate(([0], np.cumsum(bits)))  # set bits among the first i gaps
    inside = before[h.leaf_hi] - before[h.leaf_lo]  # set bits strictly inside each node
    whole = inside == 0
    parent = np.asarray(h.parent)
    top = whole & ((parent < 0) | ~whole[np.maximum(parent, 0)])
    # each leaf's group: its shallowest whole ancestor (the ancestors' path, root first)
    path = np.asarray(h.ancestors)  # (leaves, height + 1)
    chosen = top[path]
    first = chosen.argmax(axis=1)
    return path[np.arange(len(path)), first].astype(np.int64)


def _rank_pick(rng: np.random.Generator, size: int, bias: float = 1.5) -> int:
    """An index into a population sorted best first, with linear rank bias (Whitley 1989)."""
    if size <= 1:
        return 0
    x = (bias - np.sqrt(bias * bias - 4.0 * (bias - 1.0) * rng.random())) / 2.0 / (bias - 1.0)
    return min(int(size * x), size - 1)


def _two_point(rng: np.random.Generator, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Two-point crossover: ``a`` with a random slice taken from ``b``."""
    child = a.copy()
    if len(a) > 1:
        i, j = sorted(rng.integers(0, len(a) + 1, size=2))
        child[i:j] = b[i:j]
    return child


def _per_qi(rng: np.random.Generator, a: np.ndarray, b: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Uniform crossover of whole QIs: each QI's bits from one parent or the other (a QI's
    generalization is the building block)."""
    child = a.copy()
    take = rng.random(len(offsets) - 1) < 0.5
    for j in np.flatnonzero(take):
        child[offsets[j]: offsets[j + 1]] = b[offsets[j]: offsets[j + 1]]
    return child

