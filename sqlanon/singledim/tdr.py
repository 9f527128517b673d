"""Top-down refinement (TDR): Fung, Wang & Yu, *Anonymizing Classification Data for Privacy
Preservation*, TKDE 2007, Algorithm 1 with the statistics of Section 4, over the compressed table.

The input is the table compressed by one ``GROUP BY`` (Section 4.1): one row per distinct vector
of QI codes with its class counts. Every QI starts at its most masked value -- the hierarchy
root, one interval over the whole (encoded) domain, or ``⊥`` for a categorical column without a
hierarchy -- and the loop performs, one at a time, the valid and beneficial refinement with the
best score (:mod:`sqlanon.singledim.scores`) until none is left or the budget is spent. Every
state the loop passes through satisfies the requirement (anti-monotonicity, Section 4.1), so an
early stop still yields a valid release (the paper's "anytime" property).

Statistics, kept as the paper's TIPS and QIT structures do but as arrays (Section 4.4):

* a value is identified per QI by an integer id: the first code of an interval, a hierarchy
  node, or a code disclosed from ``⊥`` (``-1``); ``labels[j][code]`` maps codes to ids and
  ``values[g, j]`` is the id of compressed row ``g`` -- ``R_v`` is ``values[:, j] == v``;
* each candidate's InfoGain (and an interval's optimal cut) depends only on its own records, so
  it is computed once, from the rows of the refinement that created it;
* per QID, a group id per row (the row's generalized QID value) and the group sizes ``a(qid)``;
  ``A_v(QID) = min(A(QID), smallest piece v cuts out of a group)``, and refining another value
  only splits pieces, so each candidate's smallest piece is updated from the refined rows
  alone (``np.minimum.at``). Disclosing a value from ``⊥`` is the exception (its remainder
  ``R'_⊥`` is not a union of pieces): those candidates are recomputed from the ``⊥`` rows.

So a refinement costs a few vectorized passes over the rows it refines, never a pass per
candidate. Ties of the score (within :data:`~sqlanon.singledim.scores.TIE`) go to the QI that
comes first in the request, then to the smallest value id (lowest interval, first hierarchy node
in pre-order, smallest code).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from ..model.hierarchy import Hierarchy
from . import scores

Kind = Literal["interval", "hierarchy", "suppression"]
#: The id of the suppressed value ``⊥`` of a categorical QI without a hierarchy.
SUPPRESSED = -1


@dataclass(frozen=True)
class Attribute:
    """One QI as TDR sees it: ``size`` codes; ``hierarchy`` for kind ``"hierarchy"``; for an
    interval the position of each code (numbers as they are, see
    :class:`sqlanon.model.domain.Domain`), used by the LM gain."""

    kind: Kind
    size: int
    hierarchy: Hierarchy | None = None
    position: np.ndarray | None = None


@dataclass(frozen=True)
class Requirement:
    """``<QID, k>`` (Definition 1): the QID as attribute indices."""

    columns: tuple[int, ...]
    k: int


@dataclass(frozen=True)
class Step:
    """One performed refinement: QI ``attribute``, value id ``value``, and its statistics."""

    attribute: int
    value: int
    gain: float
    loss: float
    score: float


@dataclass(frozen=True)
class Result:
    """The final cuts: per QI the value id of every code, per interval QI the last code of the
    interval starting at each id (``ends``), the value id per compressed row ``(G, d)``, the
    refinements performed, ``A(QID)`` per requirement and whether the loop ran out of
    candidates (False: the budget stopped it)."""

    labels: tuple[np.ndarray, ...]
    ends: tuple[np.ndarray | None, ...]
    values: np.ndarray
    steps: tuple[Step, ...]
    anonymity: tuple[int, ...]
    complete: bool


def refine(
    codes: np.ndarray, counts: np.ndarray, attributes: Sequence[Attribute], requirements: Sequence[Requirement], *,
    labelled: bool = True, use_score: bool = True, max_steps: int | None = None, max_seconds: float | None = None,
    on_step: Callable[[int, float], None] | None = None,
) -> Result:
    """Run TDR over a compressed table.

    Args:
        codes: (G, d) the distinct QI code vectors.
        counts: (G, m) rows of each class per vector (``labelled``), or (G, 1) rows.
        attributes: the d QIs; requirements: the ``<QID, k>`` pairs over them.
        labelled: the gain is InfoGain of the class counts; else the drop of LM.
        use_score: rank by ``Score = gain / (AnonyLoss + 1)``; else by the gain alone.
        max_steps, max_seconds: the anytime budget (None: none).
        on_step: called after every refinement with their number and the seconds since the start.
    """
    started = time.perf_counter()  # the budget counts the statistics of the most masked state too
    refiner = _Refiner(codes, counts, attributes, requirements, labelled, use_score)
    return refiner.run(max_steps, max_seconds, on_step, started)


def candidates(
    codes: np.ndarray, counts: np.ndarray, attributes: Sequence[Attribute], requirements: Sequence[Requirement], *,
    labelled: bool = True, use_score: bool = True,
) -> list[Step]:
    """Every valid, beneficial refinement of the most masked state with its statistics
    (e.g. the paper's Table 2b), QIs in order, values by id."""
    r = _Refiner(codes, counts, attributes, requirements, labelled, use_score)
    return [Step(j, int(v), float(g), float(l), float(s)) for s_, ids, gain, loss, j in r.scored()
            for v, g, l, s in zip(ids, gain, loss, s_)]


class _Refiner:
    """The state of one run: the cuts, TIPS's segments, every candidate's statistics and every
    QID's groups (module docstring); :meth:`best` chooses, :meth:`perform` refines."""

    def __init__(self, codes: np.ndarray, counts: np.ndarray, attributes: Sequence[Attribute],
                 requirements: Sequence[Requirement], labelled: bool, use_score: bool) -> None:
        self.codes = np.asfortranarray(codes, dtype=np.int64)  # column-major: every pass reads one QI
        self.y = np.asarray(counts, dtype=np.int64).reshape(len(self.codes), -1)
        self.n = self.y.sum(axis=1)
        self.weighted = bool((self.n != 1).any())  # else a piece's rows are its count
        self.total = int(self.n.sum())
        self.attrs = tuple(attributes)
        self.reqs = tuple(requirements)
        self.labelled, self.use_score = labelled, use_score
        G, d = self.codes.shape
        self.member = np.array([[j in r.columns for r in self.reqs] for j in range(d)], dtype=bool).reshape(d, -1)
        self.labels: list[np.ndarray] = []
        self.space: list[int] = []  # size of each QI's value-id space
        self.hi: list[np.ndarray | None] = []  # interval: last code of the interval starting at an id
        self.cut: list[np.ndarray | None] = []  # interval: its optimal cut (last code of the left child)
        for a in self.attrs:
            if a.kind == "suppression":
                self.labels.append(np.full(a.size, SUPPRESSED, dtype=np.int64))
            else:
                self.labels.append(np.zeros(a.size, dtype=np.int64))
            space = a.hierarchy.n_nodes if a.kind == "hierarchy" else a.size
            self.space.append(space)
            self.hi.append(np.full(a.size, a.size - 1, dtype=np.int64) if a.kind == "interval" else None)
            self.cut.append(np.full(a.size, -1, dtype=np.int64) if a.kind == "interval" else None)
        self.values = np.empty((G, d), dtype=np.int64, order="F")
        for j in range(d):
            self.values[:, j] = self.labels[j][self.codes[:, j]]
        # TIPS's links as arrays: per QI the rows ordered by value, each value's rows one segment
        # [first, end) of that order (slot = value id + 1, so ⊥ = -1 has slot 0) -- R_v costs |R_v|
        self.order = [np.arange(G, dtype=np.int64) for _ in range(d)]
        self.first = [np.zeros(s + 1, dtype=np.int64) for s in self.space]
        self.end = [np.zeros(s + 1, dtype=np.int64) for s in self.space]
        for j in range(d):
            self.end[j][int(self.values[0, j]) + 1 if G else 0] = G
        self.gain = [np.zeros(s, dtype=np.float64) for s in self.space]
        self.benefit = [np.zeros(s, dtype=bool) for s in self.space]
        self.candidate = [np.zeros(s, dtype=bool) for s in self.space]
        self.rank = [np.zeros(G, dtype=np.int64) for _ in range(d)]  # each row's child under its own value's refinement
        self.child_rank = []
        self.inner = [np.array([len(c) > 0 for c in a.hierarchy.children], dtype=bool) if a.kind == "hierarchy"
                      else None for a in self.attrs]
        for a in self.attrs:
            if a.kind == "hierarchy":
                h = a.hierarchy
                r = np.zeros(h.n_nodes, dtype=np.int64)
                for kids in h.children:
                    r[list(kids)] = np.arange(len(kids))
                self.child_rank.append(r)
            else:
                self.child_rank.append(None)
        # children per refinement: 2 for an interval, the widest node of a hierarchy
        self.fanout = [max(len(c) for c in a.hierarchy.children) if a.kind == "hierarchy" else 2 for a in self.attrs]
        everything = np.arange(G)
        for j in range(d):
            self._candidates(j, everything)
        # per requirement: group id per row, group sizes, A(QID)
        self.gid = [np.zeros(G, dtype=np.int64) for _ in self.reqs]
        self.size = [np.full(1024, 0, dtype=np.int64) for _ in self.reqs]  # a buffer: groups 0..used-1
        for size in self.size:
            size[0] = self.total
        self.used = [1 for _ in self.reqs]
        self.anonymity = np.array([self.total] * len(self.reqs), dtype=np.int64)
        self.pieces: dict[tuple[int, int], np.ndarray] = {}
        weights = self.n[everything] if self.weighted else None
        for i, r in enumerate(self.reqs):
            for j in r.columns:
                self.pieces[i, j] = np.full(self.space[j], np.iinfo(np.int64).max, dtype=np.int64)
                self._update_pieces(i, j, everything, self.gid[i][everything], weights)

    # -- the loop ---------------------------------------------------------------------------------
    def run(self, max_steps: int | None, max_seconds: float | None,
            on_step: Callable[[int, float], None] | None = None, started: float | None = None) -> Result:
        started = time.perf_counter() if started is None else started
        steps: list[Step] = []
        complete = False
        while True:
            if max_steps is not None and len(steps) >= max_steps:
                break
            if max_seconds is not None and time.perf_counter() - started >= max_seconds:
                break
            best = self.best()
            if best is None:
                complete = True
                break
            steps.append(best)
            self.perform(best.attribute, best.value)
            if on_step is not None:
                on_step(len(steps), time.perf_counter() - started)
        return Result(tuple(self.labels), tuple(self.hi), self.values, tuple(steps), tuple(int(a) for a in self.anonymity),
                      complete)

    def scored(self) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]]:
        """Per QI with candidates: ``(score, ids, gain, loss, j)`` of its valid, beneficial
        candidates (ids ascending)."""
        found = []
        for j in range(len(self.attrs)):
            ids = np.flatnonzero(self.candidate[j] & self.benefit[j])
            if not len(ids):
                continue
            after = np.zeros((len(ids), len(self.reqs)), dtype=np.int64)
            valid = np.ones(len(ids), dtype=bool)
            for i in np.flatnonzero(self.member[j]):
                smallest = self.pieces[i, j][ids]
                valid &= smallest >= self.reqs[i].k
                after[:, i] = np.minimum(smallest, self.anonymity[i])
            if not valid.any():
                continue
            ids, after = ids[valid], after[valid]
            loss = scores.anony_loss(self.anonymity, after, self.member[j])
            gain = self.gain[j][ids]
            found.append((scores.score(gain, loss) if self.use_score else gain, ids, gain, loss, j))
        return found

    def best(self) -> Step | None:
        """The valid, beneficial candidate of the best score (ties: first QI, smallest id)."""
        found = self.scored()
        if not found:
            return None
        top = max(float(s.max()) for s, *_ in found)
        for s, ids, gain, loss, j in found:  # QIs in request order: the first tie wins
            tied = np.flatnonzero(s >= top - scores.TIE * max(1.0, abs(top)))
            if len(tied):
                t = tied[0]  # ids ascend
                return Step(j, int(ids[t]), float(gain[t]), float(loss[t]), float(s[t]))
        raise AssertionError("the best score belongs to some candidate")

    def perform(self, j: int, v: int) -> None:
        """Refine value ``v`` of QI ``j`` (Section 4.3) and update the statistics (Section 4.4)."""
        a = self.attrs[j]
        # the refined records: R_v, or every suppressed record for a disclosure (R_⊥ splits)
        rows = self.records(j, SUPPRESSED if a.kind == "suppression" else v)
        labels = self.labels[j]
        if a.kind == "interval":
            t, hi = int(self.cut[j][v]), int(self.hi[j][v])
            labels[t + 1: hi + 1] = t + 1
            self.hi[j][t + 1], self.hi[j][v] = hi, t
        elif a.kind == "hierarchy":
            h = a.hierarchy
            leaves = np.arange(h.leaf_lo[v], h.leaf_hi[v] + 1)
            labels[leaves] = h.child_of(np.full(len(leaves), v), leaves)
        else:
            labels[v] = v
        self.candidate[j][v] = False
        self.values[rows, j] = labels[self.codes[rows, j]]
        self._resegment(j, SUPPRESSED if a.kind == "suppression" else v, rows)
        self._candidates(j, rows)
        weights = self.n[rows] if self.weighted else None
        for i in np.flatnonzero(self.member[j]):
            self._regroup(i, j, rows)
            gid = self.gid[i][rows]  # the same for every QI of the requirement: gathered once
            for other in self.reqs[i].columns:
                if other == j and a.kind != "suppression":
                    self.pieces[i, j][factorize(self.values[rows, j])[1]] = np.iinfo(np.int64).max
                self._update_pieces(i, other, rows, gid, weights)

    def records(self, j: int, v: int) -> np.ndarray:
        """The rows holding value ``v`` of QI ``j`` (``R_v``)."""
        return self.order[j][self.first[j][v + 1]: self.end[j][v + 1]]

    def _resegment(self, j: int, v: int, rows: np.ndarray) -> None:
        """After refining ``v``: its segment of rows ordered by their new values, one segment each."""
        start = int(self.first[j][v + 1])
        values = self.values[rows, j]
        index, distinct = factorize(values)  # few children: a stable radix sort of their ranks
        rank = np.empty(len(distinct), dtype=np.int64)
        rank[np.argsort(distinct)] = np.arange(len(distinct))
        key = rank[index].astype(np.uint16 if len(distinct) < 2**16 else np.int64)
        by = np.argsort(key, kind="stable")
        self.order[j][start: start + len(rows)] = rows[by]
        values = values[by]
        heads = np.flatnonzero(np.concatenate(([True], values[1:] != values[:-1])))
        slots = values[heads] + 1
        self.end[j][v + 1] = self.first[j][v + 1]  # emptied, unless a child keeps the id (a left interval)
        self.first[j][slots] = start + heads
        self.end[j][slots] = start + np.append(heads[1:], len(values))

    # -- statistics -------------------------------------------------------------------------------
    def _candidates(self, j: int, rows: np.ndarray) -> None:
        """Gain, benefit and (intervals) optimal cut of the values of QI ``j`` held by ``rows``
        (all of their records are among ``rows``); and each row's child rank under them."""
        a = self.attrs[j]
        if a.kind == "suppression":
            self._suppressed_candidates(j)
            return
        values = self.values[rows, j]
        if a.kind == "interval":
            codes = self.codes[rows, j]
            for v in sorted(factorize(values)[1].tolist()):
                self._interval(j, v, codes[values == v], rows[values == v])
            cut = self.cut[j][values]
            self.rank[j][rows] = (codes > cut).astype(np.int64)
            return
        h = a.hierarchy
        inner = self.inner[j]
        inverse, ids = factorize(values)
        open_ = inner[values]
        child = np.where(open_, h.ancestors[self.codes[rows, j], np.minimum(h.depth[values] + 1, h.height)], values)
        rank = np.where(open_, self.child_rank[j][child], 0)
        self.rank[j][rows] = rank
        piece_of, pieces = factorize(inverse * self.fanout[j] + rank)
        y = self._sum(piece_of, len(pieces), rows)
        parent = self._sum(inverse, len(ids), rows)
        owner = pieces // self.fanout[j]
        if self.labelled:
            children = np.bincount(owner, weights=scores.piece_entropy(y), minlength=len(ids))
            gain = scores.info_gain(parent, children)
            benefit = scores.beneficial(parent)
        else:
            width = (h.leaf_hi - h.leaf_lo).astype(np.float64) / max(h.n_leaves - 1, 1)
            piece_node = child[first_index(piece_of, len(pieces))]
            drop = scores.lm_gain(y[:, 0].astype(np.float64), width[ids[owner]], width[piece_node])
            gain = np.bincount(owner, weights=drop, minlength=len(ids)) / self.total
            benefit = gain > 0
        self.gain[j][ids] = gain
        self.benefit[j][ids] = benefit
        self.candidate[j][ids] = inner[ids]

    def _interval(self, j: int, v: int, codes: np.ndarray, rows: np.ndarray) -> None:
        """The optimal cut of the interval starting at code ``v`` (its records: ``rows``)."""
        hi = int(self.hi[j][v])
        self.candidate[j][v] = hi > v
        self.cut[j][v] = -1
        if hi == v:
            return
        per_code = self._sum(codes - v, hi - v + 1, rows)
        position = self.attrs[j].position
        width = None
        if not self.labelled:
            span = float(position[-1] - position[0]) or 1.0
            width = (position[v: hi + 1] - position[0]) / span
        t, gain = scores.best_cut(per_code, width)
        self.cut[j][v] = v + t
        self.gain[j][v] = gain if self.labelled else gain / self.total
        self.benefit[j][v] = bool(scores.beneficial(per_code.sum(axis=0)[None, :])[0]) if self.labelled else gain > 0

    def _suppressed_candidates(self, j: int) -> None:
        """Disclosing each value still suppressed: ``⊥ -> {v, ⊥}`` (eq. 5), from the ``⊥`` rows."""
        rows = self.records(j, SUPPRESSED)
        size = self.attrs[j].size
        self.candidate[j][:] = False
        if not len(rows):
            return
        codes = self.codes[rows, j]
        y = self._sum(codes, size, rows)
        present = np.flatnonzero(y.sum(axis=1))
        disclosed, parent = y[present], y[present].sum(axis=0)
        rest = parent[None, :] - disclosed
        if self.labelled:
            children = scores.piece_entropy(disclosed) + scores.piece_entropy(rest)
            gain = scores.info_gain(np.broadcast_to(parent, disclosed.shape), children)
            benefit = np.full(len(present), bool(scores.beneficial(parent[None, :])[0]))
        else:
            hidden = int((self.labels[j] == SUPPRESSED).sum())
            unit = 1.0 / max(size - 1, 1)
            n_v = disclosed[:, 0].astype(np.float64)
            gain = (scores.lm_gain(n_v, np.full(len(present), (hidden - 1) * unit), np.zeros(len(present)))
                    + scores.lm_gain(rest[:, 0].astype(np.float64), np.full(len(present), (hidden - 1) * unit),
                                     np.full(len(present), max(hidden - 2, 0) * unit))) / self.total
            benefit = gain > 0
        self.gain[j][present] = gain
        self.benefit[j][present] = benefit
        self.candidate[j][present] = True

    def _count(self, group: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Rows per ``group`` (aligned with ``rows``)."""
        if not self.weighted:
            return np.bincount(group)
        return np.bincount(group, weights=self.n[rows]).astype(np.int64)

    def _sum(self, group: np.ndarray, groups: int, rows: np.ndarray) -> np.ndarray:
        """(groups, m) class counts of ``rows`` per ``group`` (aligned with ``rows``)."""
        out = np.zeros((groups, self.y.shape[1]), dtype=np.int64)
        for c in range(self.y.shape[1]):
            out[:, c] = np.bincount(group, weights=self.y[rows, c], minlength=groups).astype(np.int64)
        return out

    def _regroup(self, i: int, j: int, rows: np.ndarray) -> None:
        """Give ``rows`` (refined on QI ``j``) their new group of requirement ``i``: groups only split."""
        gid = self.gid[i]
        old, old_ids = factorize(gid[rows])
        new, _ = factorize(gid[rows] * (self.space[j] + 1) + (self.values[rows, j] + 1))
        self.size[i][old_ids] -= self._count(old, rows)
        fresh = self._count(new, rows)
        used = self.used[i]
        if used + len(fresh) > len(self.size[i]):
            if used + len(fresh) > 4 * len(gid) + 1024:  # renumber the groups still alive
                gid[:], alive = factorize(gid)
                self.size[i][: len(alive)] = self.size[i][alive]
                used = len(alive)
            if used + len(fresh) > len(self.size[i]):  # grow the buffer (doubling: amortized O(1))
                self.size[i] = np.concatenate((self.size[i], np.zeros(max(len(self.size[i]), len(fresh)), np.int64)))
        self.size[i][used: used + len(fresh)] = fresh
        gid[rows] = used + new
        self.used[i] = used + len(fresh)
        self.anonymity[i] = min(int(self.anonymity[i]), int(fresh.min()))

    def _update_pieces(self, i: int, j: int, rows: np.ndarray, gid: np.ndarray, weights: np.ndarray | None) -> None:
        """Each candidate of QI ``j``: the smallest piece its refinement cuts from a group of
        requirement ``i``, lowered by the pieces of ``rows`` (whose groups hold no other rows;
        ``gid``: their groups, ``weights``: their row counts, None when each stands for one row)."""
        if self.attrs[j].kind == "suppression":
            self._suppressed_pieces(i, j)
            return
        base = int(gid.min()) if len(gid) else 0
        span = (int(gid.max()) - base + 1) * self.fanout[j] if len(gid) else 0
        key = (gid - base) * self.fanout[j] + self.rank[j][rows]  # the rows' groups are numbered together
        if span > 4 * len(rows) + 1024:  # too many bins: number the pieces present
            key, _ = factorize(key)
        size = (np.bincount(key) if weights is None else np.bincount(key, weights=weights).astype(np.int64))[key]
        np.minimum.at(self.pieces[i, j], self.values[rows, j], size)

    def _suppressed_pieces(self, i: int, j: int) -> None:
        """Disclosing ``v`` cuts each group holding ``⊥`` rows of code ``v`` into those rows and
        the rest (when there is a rest): recomputed from the ``⊥`` rows."""
        smallest = self.pieces[i, j]
        smallest[:] = np.iinfo(np.int64).max
        rows = self.records(j, SUPPRESSED)
        if not len(rows):
            return
        gid, codes = self.gid[i][rows], self.codes[rows, j]
        piece, _ = factorize(gid * self.attrs[j].size + codes)
        disclosed = np.bincount(piece, weights=self.n[rows]).astype(np.int64)[piece]
        rest = self.size[i][gid] - disclosed
        np.minimum.at(smallest, codes, np.where(rest > 0, np.minimum(disclosed, rest), disclosed))


def factorize(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(index, uniques)``: each key's position among the distinct keys, numbered by first
    appearance (a hash table, O(n): the refinement loop's hot path; ``np.unique`` sorts)."""
    index, uniques = pd.factorize(keys, sort=False)
    return index.astype(np.int64, copy=False), np.asarray(uniques, dtype=np.int64)


def first_index(index: np.ndarray, count: int) -> np.ndarray:
    """The first position of each of ``count`` numbers in ``index``."""
    first = np.empty(count, dtype=np.int64)
    first[index[::-1]] = np.arange(len(index) - 1, -1, -1)
    return first
