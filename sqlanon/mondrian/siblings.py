"""Sibling subtraction: a child's frequency groups from its parent's, without scanning its rows.

A child's rows are its parent's rows less its sibling's, so its groups on a QI are the parent's
groups on that QI less the sibling's (the histogram subtraction of gradient-boosting tree
learners, here over AV/AVC/AVS groups and moments). And on the QI the parent split on, a
child's groups are the parent's groups in the child's code interval. So once a level has the
groups of every (partition, QI) pair, the next level needs to compute only the groups of the
smaller child of each binary split and derives the larger child's: about 40 % of the rows
instead of all of them (measured on Agrawal with LSD splits).

Counts and integer sums are exact either way. Floating-point sums of the larger child round
differently from summing its rows (so do SQL and numpy sums, in different orders); a split
decision does not hang on the last bits of a sum (see :data:`sqlanon.mondrian.split.TIE`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..model.stats import ClassStats, FrequencyGroups, ranges
from .split import Children


@dataclass(frozen=True)
class Level:
    """The groups computed for one level's (partition, QI) pairs: ``groups`` sorted by
    ``(part, code)``, ``part`` indexing the pairs; pair ``i``'s groups are
    ``starts[i]:starts[i + 1]``; ``key`` the pairs' keys ``pid * d + attr``, sorted, and
    ``pair`` the pair of each key."""

    key: np.ndarray
    pair: np.ndarray
    starts: np.ndarray
    groups: FrequencyGroups

    @classmethod
    def of(cls, d: int, pid: np.ndarray, attr: np.ndarray, groups: FrequencyGroups) -> Level:
        """``groups`` (sorted by ``(part, code)``) of pairs ``(pid[i], attr[i])``, each pair once."""
        key = pid.astype(np.int64) * d + attr
        order = np.argsort(key)
        starts = np.concatenate(([0], np.cumsum(np.bincount(groups.part, minlength=len(key)))))
        return cls(key[order], order, starts, groups)

    def find(self, key: np.ndarray) -> np.ndarray:
        """The pair of each key, -1 where absent."""
        if len(self.key) == 0:
            return np.full(len(key), -1, dtype=np.int64)
        at = np.minimum(np.searchsorted(self.key, key), len(self.key) - 1)
        return np.where(self.key[at] == key, self.pair[at], -1)

    def pairs(self, at: np.ndarray, lo: np.ndarray | None = None, hi: np.ndarray | None = None) -> FrequencyGroups:
        """The groups of pairs ``at`` (with codes in ``[lo, hi]`` if given), ``part`` = position
        in ``at``."""
        first, stop = self.starts[at], self.starts[at + 1]
        if lo is not None:  # codes are sorted within a pair
            key = (self.groups.part.astype(np.int64) << 32) | self.groups.code
            first = np.searchsorted(key, (at << 32) | lo)
            stop = np.searchsorted(key, (at << 32) | hi, side="right")
        lengths = stop - first
        return _take(self.groups, ranges(first, stop), np.repeat(np.arange(len(at)), lengths))


@dataclass(frozen=True)
class Kin:
    """What each partition of a level knows about its parent's split: sorted by ``pid``; the
    parent's pid, the QI it split on, this child's code interval on it, and the sibling's pid
    when the split had exactly two children (-1 otherwise)."""

    pid: np.ndarray
    parent: np.ndarray
    attr: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    sibling: np.ndarray
    n: np.ndarray

    @classmethod
    def of(cls, parent_pid: np.ndarray, chosen: np.ndarray, kids: Children, child_pid: np.ndarray) -> Kin:
        """From a level's split: ``kids`` (parent indexes ``parent_pid`` and ``chosen``) and the
        children's pids in ``kids`` order."""
        per_parent = np.bincount(kids.parent, minlength=len(parent_pid))
        pair = per_parent[kids.parent] == 2
        first = np.concatenate(([True], kids.parent[1:] != kids.parent[:-1])) if len(kids.parent) else np.zeros(0, bool)
        other = np.where(first, np.arange(len(kids.parent)) + 1, np.arange(len(kids.parent)) - 1)
        sibling = np.where(pair, child_pid[np.clip(other, 0, max(len(child_pid) - 1, 0))], -1)
        order = np.argsort(child_pid)
        return cls(child_pid[order], parent_pid[kids.parent][order], chosen[kids.parent][order],
                   kids.lo[order], kids.hi[order], sibling[order], kids.count[order].astype(np.int64))

    def at(self, pid: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.pid, pid)


def groups_with_siblings(
    pid: np.ndarray, attr: np.ndarray, d: int, kin: Kin | None, before: Level | None, here: np.ndarray,
    compute: Callable[[np.ndarray, np.ndarray], FrequencyGroups],
) -> tuple[FrequencyGroups, Level]:
    """The groups of pairs ``(pid[i], attr[i])`` (``part`` = i), computing only what the
    previous level's groups (``before``) cannot give: ``compute(pid, attr)`` returns the groups
    of the pairs asked (``part`` = position), for partitions among ``here`` (sorted pids).
    Returns the groups and the :class:`Level` of all groups this call computed or derived, for
    the next level.

    * On the QI its parent split on, a pair's groups are the parent's in the child's interval.
    * The larger child of a two-way split (the later one on a tie) takes its parent's groups
      less its sibling's, whose groups are computed (asked for even if the sibling did not ask).
    * Every other pair is computed.
    """
    Q = len(pid)
    slice_, derive = np.zeros(Q, bool), np.zeros(Q, bool)
    parent_at = np.full(Q, -1)
    if kin is not None and before is not None and Q:
        k = kin.at(pid)
        parent_at = before.find(kin.parent[k] * d + attr)
        known = parent_at >= 0
        slice_ = known & (attr == kin.attr[k])
        sib = kin.sibling[k]
        sib_n = np.where(sib >= 0, kin.n[kin.at(np.maximum(sib, 0))], np.iinfo(np.int64).max)
        larger = (sib >= 0) & ((kin.n[k] > sib_n) | ((kin.n[k] == sib_n) & (pid > sib)))
        # the sibling's rows must be where compute() looks (or it has none)
        reachable = (sib_n == 0) | np.isin(sib, here)
        derive = known & ~slice_ & larger & reachable
    # the computed pairs: asked ones, then the siblings the derived pairs need
    direct = (~slice_ & ~derive).nonzero()[0]
    need_pid = kin.sibling[kin.at(pid[derive])] if derive.any() else np.zeros(0, np.int64)
    asked_key = pid[direct].astype(np.int64) * d + attr[direct]
    need_key = need_pid.astype(np.int64) * d + attr[derive]
    extra_key = np.setdiff1d(need_key, asked_key)
    comp_pid = np.concatenate((pid[direct], extra_key // d))
    comp_attr = np.concatenate((attr[direct], extra_key % d))
    computed = compute(comp_pid, comp_attr) if len(comp_pid) else _take(before.groups, *[np.zeros(0, np.int64)] * 2)
    now = Level.of(d, comp_pid, comp_attr, computed)
    asked = int(now.starts[len(direct)])  # the asked pairs come first: a prefix of the groups
    pieces = [(direct, _take(computed, slice(0, asked), computed.part[:asked]))]
    if slice_.any():
        s = slice_.nonzero()[0]
        k = kin.at(pid[s])
        pieces.append((s, before.pairs(parent_at[s], kin.lo[k], kin.hi[k])))
    if derive.any():
        s = derive.nonzero()[0]
        pieces.append((s, subtract(before.pairs(parent_at[s]), now.pairs(now.find(need_key)))))
    groups = _assemble(pieces, Q)
    if len(extra_key) == 0:
        return groups, Level.of(d, pid, attr, groups)
    # keep the extra siblings' groups for the next level too
    extra = now.pairs(np.arange(len(direct), len(comp_pid)))
    both = FrequencyGroups.concat([groups, _shift(extra, Q)])
    return groups, Level.of(d, np.concatenate((pid, extra_key // d)), np.concatenate((attr, extra_key % d)), both)


def merge_levels(levels: list[Level], d: int) -> Level | None:
    """One :class:`Level` of several calls' (each pair in one of them)."""
    levels = [lv for lv in levels if len(lv.key)]
    if not levels:
        return None
    if len(levels) == 1:
        return levels[0]
    offset = np.cumsum([0] + [len(lv.key) for lv in levels])
    groups = FrequencyGroups.concat([_shift(lv.groups, int(o)) for lv, o in zip(levels, offset[:-1])])
    key = np.empty(int(offset[-1]), dtype=np.int64)
    for lv, o in zip(levels, offset[:-1]):
        key[o + lv.pair] = lv.key  # each level's keys in its pairs' order
    return Level.of(d, key // d, key % d, groups)


def subtract(whole: FrequencyGroups, part: FrequencyGroups) -> FrequencyGroups:
    """``whole`` less ``part`` group by group (both sorted by ``(part, code)``; every group of
    ``part`` is one of ``whole``'s), empty groups left out. ``whole``'s arrays are reused."""
    key_w = (whole.part.astype(np.int64) << 32) | whole.code.astype(np.int64)
    key_p = (part.part.astype(np.int64) << 32) | part.code.astype(np.int64)
    at = np.searchsorted(key_w, key_p)
    if len(at) and not np.array_equal(key_w[np.minimum(at, len(key_w) - 1)], key_p):
        raise AssertionError("a sibling has a group its parent does not")
    s, p = whole.stats, part.stats
    for a, b in zip((s.n, *s.counts, *s.moments), (p.n, *p.counts, *p.moments)):
        a[at] -= b  # in place: ``whole`` is a fresh gather
    keep = (s.n > 0).nonzero()[0]
    return _take(whole, keep, whole.part[keep])


def _take(groups: FrequencyGroups, rows: np.ndarray, part: np.ndarray) -> FrequencyGroups:
    return FrequencyGroups(part, groups.code[rows], groups.stats.take(rows))


def _shift(groups: FrequencyGroups, by: int) -> FrequencyGroups:
    return FrequencyGroups(groups.part + by, groups.code, groups.stats)


def _assemble(pieces: list[tuple[np.ndarray, FrequencyGroups]], Q: int) -> FrequencyGroups:
    """Pieces of groups (``part`` = position in the piece's pair indices, sorted) as one set of
    groups with ``part`` = pair index, sorted by pair: each group scattered to its place."""
    nonempty = [(i, g) for i, g in pieces if len(i)]
    if len(nonempty) <= 1 and all(np.array_equal(i, np.arange(Q)) for i, _ in nonempty):
        return (nonempty or pieces)[0][1]  # already in pair order (or no pair at all)
    pieces = nonempty
    sizes = np.zeros(Q, dtype=np.int64)
    per_piece = [np.bincount(g.part, minlength=len(i)) for i, g in pieces]
    for (i, _), c in zip(pieces, per_piece):
        sizes[i] = c
    start = np.cumsum(sizes) - sizes
    dest = [start[i][g.part] + np.arange(len(g.part)) - (np.cumsum(c) - c)[g.part] for (i, g), c in zip(pieces, per_piece)]
    first = pieces[0][1]
    total = int(sizes.sum())
    out = FrequencyGroups(np.repeat(np.arange(Q), sizes), np.empty(total, first.code.dtype), ClassStats(
        np.empty(total, first.stats.n.dtype),
        tuple(np.empty((total, c.shape[1]), c.dtype, order="F") for c in first.stats.counts),
        tuple(np.empty((total, m.shape[1]), m.dtype) for m in first.stats.moments)))
    for (_, g), at in zip(pieces, dest):
        for a, b in zip((out.code, out.stats.n, *out.stats.counts, *out.stats.moments),
                        (g.code, g.stats.n, *g.stats.counts, *g.stats.moments)):
            a[at] = b
    return out
