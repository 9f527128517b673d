"""What a partitioning produces, whatever the algorithm: partitions as arrays of code boxes
(:class:`Boxes`), the final ones gathered (:class:`Leaves`) into :class:`Regions`, the progress
reported to the caller (:class:`Progress`), the partition id of a suppressed row, and how a
Mondrian partition was computed (:class:`Partitioning`).

Mondrian (:mod:`sqlanon.mondrian`) and the single-dimensional searches (:mod:`sqlanon.singledim`:
a grid is a guillotine tiling) both hand their result over as :class:`Regions`, which the
publication (:mod:`sqlanon.publish`) turns into rules and a view.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..engine.base import joined
from .domain import Visibility

#: The working table's ``pid`` of a row the recoding suppresses (no region has that id;
#: :mod:`sqlanon.publish.suppression`).
SUPPRESSED_PID = -1


@dataclass
class Boxes:
    """Partitions as arrays: id, size, per-QI code box ``[lo, hi]`` and hierarchy node, and the
    rows each may still suppress (``budget``: the local suppression budget, see
    :mod:`sqlanon.mondrian.split`; 0 without ``suppression=``)."""

    pid: np.ndarray
    n: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    node: np.ndarray
    budget: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.budget is None:
            self.budget = np.zeros(len(self.pid), dtype=np.int64)

    def take(self, idx: np.ndarray) -> Boxes:
        return Boxes(self.pid[idx], self.n[idx], self.lo[idx], self.hi[idx], self.node[idx], self.budget[idx])

    @classmethod
    def concat(cls, parts: Sequence[Boxes]) -> Boxes:
        return cls(*(np.concatenate([getattr(p, f) for p in parts]) for f in _BOX_FIELDS))

    def __len__(self) -> int:
        return len(self.pid)


@dataclass
class Leaves:
    """Final partitions (the regions) with the extents of their rows (-1 when empty)."""

    boxes: list[Boxes] = field(default_factory=list)
    cmin: list[np.ndarray] = field(default_factory=list)
    cmax: list[np.ndarray] = field(default_factory=list)
    in_sql: list[np.ndarray] = field(default_factory=list)
    suppressed: list[np.ndarray] = field(default_factory=list)

    def add(self, boxes: Boxes, cmin: np.ndarray, cmax: np.ndarray, in_sql: bool = False,
            suppressed: bool | np.ndarray = False) -> None:
        """Record final partitions; ``in_sql``: their rows carry the leaf id in the working table;
        ``suppressed``: suppressed leaves (recorded as empty regions: their rows get no region).

        The codes and node ids are kept as int32 (a code is below 2^31: :attr:`Domain.code_type`
        is at most a 32-bit integer), half of int64: 727K leaves at 100M rows are 0.13 GB less
        while the rules are made, at the run's peak."""
        self.boxes.append(Boxes(boxes.pid, boxes.n, *(_codes(a) for a in (boxes.lo, boxes.hi, boxes.node)),
                                boxes.budget))
        self.cmin.append(_codes(cmin))
        self.cmax.append(_codes(cmax))
        self.in_sql.append(np.full(len(boxes), in_sql))
        self.suppressed.append(np.broadcast_to(np.asarray(suppressed, dtype=bool), (len(boxes),)).copy())

    def add_suppressed(self, boxes: Boxes, in_sql: bool = False) -> None:
        """Record suppressed leaves: regions of the rules without rows (the rows they had are
        published suppressed, :mod:`sqlanon.publish.suppression`)."""
        none = np.full((len(boxes), boxes.lo.shape[1]), -1, dtype=np.int64)
        empty = Boxes(boxes.pid, np.zeros(len(boxes), np.int64), boxes.lo, boxes.hi, boxes.node)
        self.add(empty, none, none, in_sql, True)

    def collect(self) -> Regions:
        """Every leaf recorded, as one :class:`Regions`, which then stands for the parts (so the
        leaves are not held twice: 727K leaves at 100M rows took 280 MB each time). Each
        array is joined and its parts let go before the next is joined, so the parts and the
        whole are never held at once either (the largest array, 52 MB at 100M, is)."""
        parts = [{**{f: getattr(b, f) for f in _BOX_FIELDS}, "cmin": cmin, "cmax": cmax, "in_sql": in_sql,
                  "suppressed": dropped}
                 for b, cmin, cmax, in_sql, dropped in zip(self.boxes, self.cmin, self.cmax, self.in_sql, self.suppressed)]
        self.boxes, self.cmin, self.cmax, self.in_sql, self.suppressed = [], [], [], [], []
        whole = joined(parts, [*_BOX_FIELDS, "cmin", "cmax", "in_sql", "suppressed"])
        out = Regions(Boxes(*(whole[f] for f in _BOX_FIELDS)), whole["cmin"], whole["cmax"], whole["in_sql"],
                      whole["suppressed"])
        self.boxes, self.cmin, self.cmax = [out.boxes], [out.cmin], [out.cmax]
        self.in_sql, self.suppressed = [out.in_sql], [out.suppressed]
        return out


def _codes(a: np.ndarray) -> np.ndarray:
    """A leaf's codes (or node ids, -1 for none) as int32 (:meth:`Leaves.add`)."""
    return a.astype(np.int32, copy=False)


#: The arrays of a :class:`Boxes`, in its fields' order.
_BOX_FIELDS = ("pid", "n", "lo", "hi", "node", "budget")


@dataclass(frozen=True)
class Regions:
    """The result of partitioning: every leaf's box, the code extents of its rows (-1 when
    empty), and whether its rows still carry the leaf id in the SQL working table."""

    boxes: Boxes
    cmin: np.ndarray
    cmax: np.ndarray
    in_sql: np.ndarray
    suppressed: np.ndarray | None = None  # leaves whose rows are suppressed (no region)
    # what the published rows hold, for the printable bounds (sqlanon.publish.bounds.Shown):
    # set by a single-dimensional search, else found at publication
    visibility: Visibility | None = None


@dataclass(frozen=True)
class RowLeaves:
    """Every row's leaf as an in-memory finish of rows held in this process left them
    (:func:`sqlanon.mondrian.builder.finish_in_memory` with ``held``): ``rid``, ``pid`` (and
    ``qhash`` for a keyed release) as arrays, in the order the rows were fetched. Not uploaded:
    the publication writes the row map from them (:func:`sqlanon.publish.rules.publish_held`),
    or uploads them where a statement must join them (:func:`sqlanon.publish.rules.assignment_table`)."""

    columns: Mapping[str, np.ndarray]

    def regions(self, pid: np.ndarray, region: np.ndarray) -> np.ndarray:
        """Each row's ``region[j]`` where ``pid[j]`` is its leaf (every row's leaf is in ``pid``):
        a table indexed by leaf id when the ids span at most four per row (one scatter and one
        gather), else a binary search in the sorted ids."""
        rows = np.asarray(self.columns["pid"], dtype=np.int64)
        if not len(rows):
            return np.zeros(0, dtype=np.int64)
        low, high = int(pid.min()), int(pid.max())
        if high - low < 4 * len(rows) + 1024:
            table = np.empty(high - low + 1, dtype=np.int64)
            table[pid - low] = region
            return table[rows - low]
        order = np.argsort(pid)
        return region[order[np.searchsorted(pid, rows, sorter=order)]]


@dataclass
class Progress:
    """What the loop reports to the caller's callback after each level, and the pipeline when the
    run first compiles kernels (phase ``"compile"``, :mod:`sqlanon.compilation`)."""

    phase: str
    level: int
    open_partitions: int
    rows_finished: int
    elapsed: float
    best: float | None = None  # the single-dimensional searches: the best metric so far
    message: str | None = None  # what the phase is doing, in words ("compiling kernels, first use only")


@dataclass(frozen=True)
class Partitioning:
    """How a Mondrian partition was computed (:attr:`sqlanon.Release.outcome`; counted by
    :class:`sqlanon.mondrian.sample.Outcome`).

    Attributes:
        strategy: ``"levels"`` (Rothko-T and the in-memory finish) or ``"sample"`` (Rothko-S).
        rounds: Rothko-S's sample rounds.
        scans, writes: reads and writes of the working table by the partitioning (TR 1590's I/O
            model: a SQL level reads twice and writes once, a sample round reads three times and
            writes once, the in-memory finish reads once).
        pruned: tree nodes undone by pruning.
        rescued: partitions whose round kept no split, handed to Rothko-T.
        distance_from_minimal: leaves that might still have an allowable split (TR 1590,
            Figure 28's measure; 0: every leaf is settled by an exact decision).
        at_root, at_root_before: with ``suppression=``: per QI, the share of rows generalized to
            the whole domain, with suppression and without it (the same request without
            suppression: read off the run's own tree when one depth-first finish grew it, else
            partitioned once more; :mod:`sqlanon.mondrian.run`).
    """

    strategy: str
    rounds: int = 0
    scans: int = 0
    writes: int = 0
    pruned: int = 0
    rescued: int = 0
    distance_from_minimal: int = 0
    at_root: Mapping[str, float] | None = None
    at_root_before: Mapping[str, float] | None = None

    def partitioning(self) -> dict[str, object]:
        """The :data:`PARTITIONING_FIELDS` (reports)."""
        return {"strategy": self.strategy, "sample_rounds": self.rounds, "scans": self.scans,
                "writes": self.writes, "pruned": self.pruned, "rescued": self.rescued,
                "distance_from_minimal": self.distance_from_minimal}

    def describe(self) -> str:
        return describe_partitioning(self.partitioning())

    def summary(self, suppressed: int) -> list[tuple[str, str]]:
        """``(label, text)`` lines for the command line's summary (``suppressed``: verified)."""
        out = []
        if self.at_root is not None and self.at_root_before is not None:  # with suppression=
            out.append(("suppressed", f"{suppressed:,} rows (fully generalized, class NULL; verified)"))
            out.append(("at the root", ", ".join(f"{q} {self.at_root_before[q]:.1%} -> {v:.1%}"
                                                 for q, v in self.at_root.items())
                        + " of rows (without -> with suppression)"))
        return out + [("partitioning", self.describe())]


#: The Release fields that say how the partition was computed, in order.
PARTITIONING_FIELDS = ("strategy", "sample_rounds", "scans", "writes", "pruned", "rescued", "distance_from_minimal")


def describe_partitioning(fields: Mapping[str, object]) -> str:
    """One line for reports and the CLI: what the partitioning did (:data:`PARTITIONING_FIELDS`)."""
    passes = f"{fields['scans']} reads and {fields['writes']} writes of the working table"
    if fields["strategy"] != "sample":
        return f"levels (Rothko-T): {passes}"
    return (f"sample (Rothko-S): {fields['sample_rounds']} sample round(s), {passes}, {fields['pruned']} tree "
            f"node(s) pruned, {fields['rescued']} partition(s) handed to Rothko-T, distance from minimal "
            f"{fields['distance_from_minimal']}")
