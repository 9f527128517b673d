"""Sibling subtraction (sqlanon.siblings): a child's groups derived from its parent's and its
sibling's equal the groups computed from its rows, and only the smaller sibling is computed."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sqlanon.model.stats import ClassStats, FrequencyGroups
from sqlanon.mondrian.siblings import Kin, Level, groups_with_siblings
from sqlanon.mondrian.split import Children


def brute_groups(codes, label, value, pid_of_row, pid, attr):
    """Groups of pairs (pid[i], attr[i]) counted row by row: n, label counts, integer moments."""
    out = []
    for i, (p, a) in enumerate(zip(pid.tolist(), attr.tolist())):
        rows = np.flatnonzero(pid_of_row == p)
        for c in sorted(set(codes[rows, a].tolist())):
            r = rows[codes[rows, a] == c]
            out.append((i, c, len(r), np.bincount(label[r], minlength=3), (len(r), value[r].sum(), (value[r] ** 2).sum())))
    if not out:
        return FrequencyGroups(np.zeros(0, np.int64), np.zeros(0, np.int32),
                               ClassStats(np.zeros(0, np.int64), (np.zeros((0, 3), np.int64),), (np.zeros((0, 3), np.int64),)))
    return FrequencyGroups(np.array([o[0] for o in out], np.int64), np.array([o[1] for o in out], np.int32),
                           ClassStats(np.array([o[2] for o in out], np.int64), (np.array([o[3] for o in out]),),
                                      (np.array([o[4] for o in out], np.int64),)))


def same(a: FrequencyGroups, b: FrequencyGroups) -> None:
    np.testing.assert_array_equal(a.part, b.part)
    np.testing.assert_array_equal(a.code, b.code)
    np.testing.assert_array_equal(a.stats.n, b.stats.n)
    np.testing.assert_array_equal(a.stats.counts[0], b.stats.counts[0])
    np.testing.assert_array_equal(a.stats.moments[0], b.stats.moments[0])


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(20, 200), st.integers(1, 4))
def test_derived_groups_equal_computed_groups(seed, rows, parents):
    rng = np.random.default_rng(seed)
    d = 3
    codes = rng.integers(0, [4, 12, 30], size=(rows, d))
    label, value = rng.integers(0, 3, rows), rng.integers(-50, 50, rows)
    parent_of_row = rng.integers(1, parents + 1, rows)
    ppid = np.unique(parent_of_row)
    all_attr = np.tile(np.arange(d), len(ppid))
    before = Level.of(d, np.repeat(ppid, d), all_attr,
                      brute_groups(codes, label, value, parent_of_row, np.repeat(ppid, d), all_attr))
    # each parent splits in two on a random QI at a random code (children may be empty)
    chosen = rng.integers(0, d, len(ppid))
    cut = np.array([rng.integers(0, 30) for _ in ppid])
    child_pid = 100 + np.arange(2 * len(ppid))
    parent_idx = np.repeat(np.arange(len(ppid)), 2)
    side = np.tile([0, 1], len(ppid))
    pid_of_row = np.zeros(rows, np.int64)
    count = np.zeros(len(child_pid), np.int64)
    for j, p in enumerate(ppid):
        mine = parent_of_row == p
        right = codes[:, chosen[j]] > cut[j]
        pid_of_row[mine & ~right], pid_of_row[mine & right] = child_pid[2 * j], child_pid[2 * j + 1]
        count[2 * j], count[2 * j + 1] = (mine & ~right).sum(), (mine & right).sum()
    kids = Children(parent_idx, np.where(side == 0, 0, cut[parent_idx] + 1), np.where(side == 0, cut[parent_idx], 29),
                    np.full(len(parent_idx), -1), count, np.zeros(len(parent_idx), dtype=bool))
    kin = Kin.of(ppid, chosen, kids, child_pid)
    live = child_pid[count > 0]
    # the children ask for a random subset of their QIs
    ask = rng.random((len(live), d)) < 0.7
    pid, attr = np.repeat(live, d)[ask.ravel()], np.tile(np.arange(d), len(live))[ask.ravel()]
    computed_pairs = []

    def compute(p, a):
        computed_pairs.append(len(p))
        return brute_groups(codes, label, value, pid_of_row, p, a)

    groups, level = groups_with_siblings(pid, attr, d, kin, before, np.sort(live), compute)
    same(groups, brute_groups(codes, label, value, pid_of_row, pid, attr))
    # the next level's memory holds correct groups for every pair it knows
    for i, key in enumerate(level.key.tolist()):
        same(level.pairs(np.array([level.pair[i]])), brute_groups(codes, label, value, pid_of_row,
                                                                  np.array([key // d]), np.array([key % d])))
    # pairs on the split QI are never computed; of two siblings' pairs on another QI, only one
    parent = kin.parent[kin.at(pid)]
    on_split = attr == chosen[np.searchsorted(ppid, parent)]
    families = {(int(p), int(a)) for p, a in zip(parent[~on_split], attr[~on_split])}
    assert sum(computed_pairs) == len(families)
