"""Frequency groups: the per-partition statistics every split decision is made from.

An AV group (Rothko-T, LeFevre & DeWitt TR 1590, Section 2) is ``SELECT pid, a, count(*) ...
GROUP BY pid, a``: for each open partition, the distinct values of attribute ``a`` with their
counts. The SQL-pushed loop gets it from DuckDB, the in-memory loop from numpy; both hand the
same :class:`FrequencyGroups` to :func:`sqlanon.split.choose_splits`, so the decision cannot
depend on where the work ran.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class FrequencyGroups:
    """AV groups of one candidate attribute per partition.

    Rows are sorted by ``(part, code)``; ``part`` indexes the partitions being decided
    (0..P-1), ``code`` is the attribute's value code and ``count`` its number of rows.
    """

    part: np.ndarray
    code: np.ndarray
    count: np.ndarray

    @classmethod
    def from_sorted(cls, part: np.ndarray, code: np.ndarray) -> FrequencyGroups:
        """Groups of rows already sorted by ``(part, code)`` (run-length encoding)."""
        if len(part) == 0:
            return cls(part.astype(np.int64), code.astype(np.int32), np.zeros(0, np.int64))
        change = np.empty(len(part), dtype=bool)
        change[0] = True
        np.not_equal(part[1:], part[:-1], out=change[1:])
        change[1:] |= code[1:] != code[:-1]
        starts = np.flatnonzero(change)
        counts = np.diff(np.append(starts, len(part)))
        return cls(part[starts].astype(np.int64), code[starts].astype(np.int32), counts.astype(np.int64))

    def totals(self, parts: int) -> np.ndarray:
        """Rows per partition."""
        out = np.zeros(parts, dtype=np.int64)
        starts = first_of_run(self.part)
        if len(starts):
            out[self.part[starts]] = np.add.reduceat(self.count, starts)
        return out

    def cumulative(self) -> np.ndarray:
        """Rows with code <= this group's code in the same partition (segmented cumsum)."""
        total = np.cumsum(self.count)
        first = first_of_run(self.part)
        before = (total - self.count)[first]  # rows of earlier partitions
        return total - np.repeat(before, run_lengths(first, len(self.part)))

    def is_last(self) -> np.ndarray:
        """True for the largest code of each partition (no cut can follow it)."""
        last = np.ones(len(self.part), dtype=bool)
        last[:-1] = self.part[1:] != self.part[:-1]
        return last


def first_of_run(keys: np.ndarray) -> np.ndarray:
    """Indices where a run of equal keys starts (``keys`` sorted)."""
    if len(keys) == 0:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))


def run_lengths(starts: np.ndarray, total: int) -> np.ndarray:
    """Lengths of the runs starting at ``starts`` in an array of length ``total``."""
    return np.diff(np.append(starts, total))
