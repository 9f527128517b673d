"""The partition loop: Rothko-T in SQL while partitions are large, numpy once they fit in memory.

LeFevre & DeWitt, Scalable Anonymization Algorithms for Large Data Sets (TR 1590), Section 2:
partitions are grown breadth-first from frequency groups the database computes, the data is
repartitioned level by level, and once a partition fits in memory it is fetched once and the
recursion finishes in memory. Here:

* SQL level (partitions with more than ``memory_rows`` rows): one statement computes the extents
  (count, min and max code of every QI) of all open partitions, one statement per fallback round
  computes the AV groups of each partition's candidate attribute, and one statement rewrites the
  working table with the children's partition ids. O(1) statements per level, never one per
  partition.
* In-memory levels: the same steps over numpy arrays, vectorized across all partitions of a
  batch (rows kept contiguous per partition and sorted by the split attribute, so children are
  contiguous runs).

Both call :func:`sqlanon.split.choose_splits` with the same frequency groups and the criterion's
attribute ranking, so the partition does not depend on ``memory_rows``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from sqlglot import exp

from . import sqlgen as g
from .constraints import Constraint
from .criteria import Median
from .domain import Domain
from .engine import Engine
from .split import Children, choose_splits
from .stats import FrequencyGroups

log = logging.getLogger("sqlanon")


@dataclass
class Boxes:
    """Partitions as arrays: id, size, per-QI code box ``[lo, hi]`` and hierarchy node."""

    pid: np.ndarray
    n: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    node: np.ndarray

    def take(self, idx: np.ndarray) -> Boxes:
        return Boxes(self.pid[idx], self.n[idx], self.lo[idx], self.hi[idx], self.node[idx])

    @classmethod
    def concat(cls, parts: Sequence[Boxes]) -> Boxes:
        return cls(*(np.concatenate([getattr(p, f) for p in parts]) for f in ("pid", "n", "lo", "hi", "node")))

    def __len__(self) -> int:
        return len(self.pid)


@dataclass
class Leaves:
    """Final partitions (the regions) with the extents of their rows (-1 when empty)."""

    boxes: list[Boxes] = field(default_factory=list)
    cmin: list[np.ndarray] = field(default_factory=list)
    cmax: list[np.ndarray] = field(default_factory=list)
    in_sql: list[np.ndarray] = field(default_factory=list)

    def add(self, boxes: Boxes, cmin: np.ndarray, cmax: np.ndarray, in_sql: bool = False) -> None:
        """Record final partitions; ``in_sql``: their rows carry the leaf id in the working table."""
        self.boxes.append(boxes)
        self.cmin.append(cmin)
        self.cmax.append(cmax)
        self.in_sql.append(np.full(len(boxes), in_sql))

    def collect(self) -> Regions:
        return Regions(Boxes.concat(self.boxes), np.concatenate(self.cmin), np.concatenate(self.cmax),
                       np.concatenate(self.in_sql))


@dataclass(frozen=True)
class Regions:
    """The result of partitioning: every leaf's box, the code extents of its rows (-1 when
    empty), and whether its rows still carry the leaf id in the SQL working table."""

    boxes: Boxes
    cmin: np.ndarray
    cmax: np.ndarray
    in_sql: np.ndarray


@dataclass
class Progress:
    """What the loop reports to the caller's callback after each level."""

    phase: str
    level: int
    open_partitions: int
    rows_finished: int
    elapsed: float


class Partitioner:
    """Owns the partition ids and runs both loops with one criterion and set of constraints."""

    def __init__(
        self,
        domains: Sequence[Domain],
        constraints: Sequence[Constraint],
        criterion: Median,
        progress: Callable[[Progress], None] | None = None,
    ) -> None:
        self.domains = tuple(domains)
        self.constraints = tuple(constraints)
        self.criterion = criterion
        self.leaves = Leaves()
        self.next_pid = 1
        self.progress = progress
        self.started = time.perf_counter()
        self.rows_finished = 0
        self.levels = 0

    @property
    def d(self) -> int:
        return len(self.domains)

    @property
    def min_size(self) -> int:
        """The fewest rows any constraint lets a non-empty class have."""
        return max(c.min_size for c in self.constraints)

    def root(self, n: int) -> Boxes:
        d = self.d
        hi = np.array([dom.size - 1 for dom in self.domains], dtype=np.int64)
        node = np.array([-1 if dom.num is not None else 0 for dom in self.domains], dtype=np.int64)
        return Boxes(np.zeros(1, np.int64), np.array([n], np.int64), np.zeros((1, d), np.int64), hi[None, :], node[None, :])

    # -- the shared decision step ----------------------------------------------------------------
    def decide(
        self, parts: Boxes, cmin: np.ndarray, cmax: np.ndarray, groups_for: Callable[[np.ndarray, np.ndarray], FrequencyGroups]
    ) -> tuple[np.ndarray, np.ndarray, Children]:
        """Try each partition's candidates in ranked order until one has an allowable split.

        ``groups_for(idx, attr)`` returns the AV groups of attribute ``attr[i]`` for partition
        ``idx[i]`` (from SQL or numpy). Returns ``(split, attr, children)`` where ``children.parent``
        indexes ``parts``.
        """
        # A cut of an ordered QI leaves two non-empty children of at least min_size rows each,
        # so smaller partitions need no statistics for it (hierarchy children may be empty).
        ordered = np.array([d.num is not None for d in self.domains], dtype=bool)
        small = parts.n < 2 * self.min_size
        order = self.criterion.rank(cmin, cmax, parts.node, self.domains, exclude=small[:, None] & ordered[None, :])
        P = len(parts)
        pending = np.ones(P, dtype=bool)
        chosen = np.full(P, -1, dtype=np.int64)
        found: list[Children] = []
        for r in range(self.d):
            idx = (pending & (order[:, r] >= 0)).nonzero()[0]
            if len(idx) == 0:
                break
            attr = order[idx, r]
            groups = groups_for(idx, attr)
            ok, kids = choose_splits(
                attr, parts.lo[idx, attr], parts.hi[idx, attr], parts.node[idx, attr],
                groups, self.domains, self.constraints, self.criterion,
            )
            pending[idx[ok]] = False
            chosen[idx[ok]] = attr[ok]
            found.append(Children(idx[kids.parent], kids.lo, kids.hi, kids.node, kids.count))
        return ~pending, chosen, Children.concat(found)

    def children_boxes(self, parts: Boxes, chosen: np.ndarray, kids: Children) -> Boxes:
        """Boxes of the children: the parent's box with the split attribute's interval replaced."""
        c = len(kids.parent)
        attr = chosen[kids.parent]
        rows = np.arange(c)
        lo, hi, node = parts.lo[kids.parent].copy(), parts.hi[kids.parent].copy(), parts.node[kids.parent].copy()
        lo[rows, attr], hi[rows, attr], node[rows, attr] = kids.lo, kids.hi, kids.node
        pid = np.arange(self.next_pid, self.next_pid + c, dtype=np.int64)
        self.next_pid += c
        boxes = Boxes(pid, kids.count.astype(np.int64), lo, hi, node)
        empty = kids.count == 0
        if empty.any():
            none = np.full((int(empty.sum()), self.d), -1, dtype=np.int64)
            self.leaves.add(boxes.take(empty.nonzero()[0]), none, none)
        return boxes

    def _report(self, phase: str, open_partitions: int) -> None:
        self.levels += 1
        p = Progress(phase, self.levels, open_partitions, self.rows_finished, time.perf_counter() - self.started)
        log.info("%s level %d: %d open partitions, %d rows finished, %.2fs", p.phase, p.level,
                 p.open_partitions, p.rows_finished, p.elapsed)
        if self.progress:
            self.progress(p)

    # -- SQL-pushed levels ---------------------------------------------------------------------
    def run_sql(self, engine: Engine, work: str, open_: Boxes, memory_rows: int) -> tuple[str, Boxes]:
        """Split partitions larger than ``memory_rows`` in SQL, level by level.

        Returns the (rewritten) working table and the partitions left for the in-memory finish.
        """
        q = [f"q{i}" for i in range(self.d)]
        while True:
            big = open_.n > memory_rows
            if not big.any():
                return work, open_
            parts, rest = open_.take(big.nonzero()[0]), open_.take((~big).nonzero()[0])
            stats = engine.fetch(_extents_query(work, parts.pid, q))
            at = np.searchsorted(stats["pid"], parts.pid)  # stats come back sorted by pid
            cmin = np.column_stack([stats[f"min_{c}"][at] for c in q]).astype(np.int64)
            cmax = np.column_stack([stats[f"max_{c}"][at] for c in q]).astype(np.int64)

            def groups_for(idx: np.ndarray, attr: np.ndarray) -> FrequencyGroups:
                res = engine.fetch(_av_query(engine, work, parts.pid[idx], attr, q))
                return FrequencyGroups(res["part"].astype(np.int64), res["v"].astype(np.int32), res["n"].astype(np.int64))

            split, chosen, kids = self.decide(parts, cmin, cmax, groups_for)
            done = (~split).nonzero()[0]
            self.leaves.add(parts.take(done), cmin[done], cmax[done], in_sql=True)
            self.rows_finished += int(parts.n[done].sum())
            children = self.children_boxes(parts, chosen, kids)
            live = children.n > 0
            open_ = Boxes.concat([rest, children.take(live.nonzero()[0])])
            if live.any():
                # Before the in-memory finish, store the rows clustered by partition id so that
                # each batch's fetch reads only its own row groups (zone maps), not the table.
                last = not (open_.n > memory_rows).any()
                work = _repartition(engine, work, kids, chosen, parts.pid, children.pid, live, q, cluster=last)
            self._report("sql", len(open_))

    # -- in-memory levels ----------------------------------------------------------------------
    def run_memory(self, X: np.ndarray, seg: Boxes) -> tuple[np.ndarray, np.ndarray]:
        """Finish the partitions ``seg`` whose rows are ``X`` (sorted by partition, in ``seg`` order).

        Returns ``(row_index, pid)``: the leaf of every row, by its position in ``X``.
        """
        # Column-major: per-partition min/max and the gathers stream through one column at a
        # time (measured 2-3x faster than row-major for both).
        XT = np.ascontiguousarray(np.asarray(X, dtype=np.int32).T)
        row = np.arange(XT.shape[1], dtype=np.int64)
        out_row: list[np.ndarray] = []
        out_pid: list[np.ndarray] = []
        while len(seg):
            M = XT.shape[1]
            starts = np.cumsum(seg.n) - seg.n
            cmin = np.minimum.reduceat(XT, starts, axis=1).T.astype(np.int64)
            cmax = np.maximum.reduceat(XT, starts, axis=1).T.astype(np.int64)
            seg_of_row = np.repeat(np.arange(len(seg)), seg.n)
            # Row positions of the next level: each partition's block, sorted by the code of the
            # attribute it was last tried on — for the partitions that split, the split
            # attribute, so that their children are contiguous runs.
            arranged = np.arange(M, dtype=np.int64)

            def groups_for(idx: np.ndarray, attr: np.ndarray) -> FrequencyGroups:
                nonlocal arranged
                everyone = len(idx) == len(seg)
                if everyone:
                    rows, local = np.arange(M, dtype=np.int64), seg_of_row
                else:
                    selected = np.zeros(len(seg), dtype=bool)
                    selected[idx] = True
                    rows = selected[seg_of_row].nonzero()[0]
                    local = (np.cumsum(selected) - 1)[seg_of_row[rows]]
                flat = attr[local]  # each row's attribute, then its flat index in XT (in place:
                flat *= M  # these arrays are as long as the batch, so temporaries are costly)
                flat += rows
                order, groups = sort_and_group(local, XT.ravel()[flat])
                if everyone:
                    arranged = order
                else:
                    arranged[rows] = rows[order]
                return groups

            split, chosen, kids = self.decide(seg, cmin, cmax, groups_for)
            done = (~split).nonzero()[0]
            self.leaves.add(seg.take(done), cmin[done], cmax[done])
            finished = ~split[seg_of_row]
            out_row.append(row[finished])
            out_pid.append(seg.pid[seg_of_row[finished]])
            self.rows_finished += int(finished.sum())
            children = self.children_boxes(seg, chosen, kids)
            nxt = arranged[~finished]  # one gather per level: compacts and reorders
            XT, row = np.take(XT, nxt, axis=1), np.take(row, nxt)
            seg = children.take((children.n > 0).nonzero()[0])
            self._report("memory", len(seg))
        if not out_row:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        return np.concatenate(out_row), np.concatenate(out_pid)


def sort_and_group(group: np.ndarray, value: np.ndarray) -> tuple[np.ndarray, FrequencyGroups]:
    """Sort rows by ``(group, value)`` (``group`` is already non-decreasing) and count the runs.

    Returns the permutation and the frequency groups. Ties may come in any order (nothing
    downstream depends on the order of equal codes). When group, value and row index fit in 63
    bits they are packed into one int64 key, sorted in place (``ndarray.sort`` is SIMD-
    accelerated, several times faster than ``argsort``), and the groups are read off the sorted
    key itself; otherwise ``argsort``.
    """
    n = len(group)
    if n == 0:
        return np.zeros(0, dtype=np.int64), FrequencyGroups.from_sorted(group, value)
    bits_row = max(int(n - 1).bit_length(), 1)
    bits_val = max(int(value.max()).bit_length(), 1)
    bits_grp = max(int(group[-1]).bit_length(), 1)
    if bits_row + bits_val + bits_grp > 63:
        order = np.argsort((group.astype(np.int64) << 32) | value.astype(np.int64))
        return order, FrequencyGroups.from_sorted(group[order], value[order])
    key = group.astype(np.int64)  # built in place: the batch-sized temporaries dominate
    key <<= bits_val
    np.bitwise_or(key, value, out=key, casting="unsafe")
    key <<= bits_row
    key += np.arange(n, dtype=np.int64)
    key.sort()
    order = key & ((1 << bits_row) - 1)
    key >>= bits_row  # now (group, value), sorted
    starts = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
    heads = key[starts]
    counts = np.diff(np.append(starts, n))
    groups = FrequencyGroups(heads >> bits_val, (heads & ((1 << bits_val) - 1)).astype(np.int32), counts)
    return order, groups


def _extents_query(work: str, pids: np.ndarray, q: list[str]) -> exp.Expression:
    aggs = [g.alias(exp.Count(this=exp.Star()), "n")]
    for c in q:
        aggs += [g.alias(exp.Min(this=g.col(c)), f"min_{c}"), g.alias(exp.Max(this=g.col(c)), f"max_{c}")]
    query = exp.select(g.col("pid"), *aggs).from_(g.table(work)).group_by(g.col("pid")).order_by(g.col("pid"))
    return query.where(g.in_list(g.col("pid"), pids.tolist())) if len(pids) < 1000 else query


def _candidates(engine: Engine, pids: np.ndarray, attr: np.ndarray) -> exp.Expression:
    """A relation ``(pid, part, a)``: partition id, its index in the batch, its attribute.

    Inline VALUES for a few partitions; an uploaded temp table for many (rendering thousands of
    literals costs more than the upload).
    """
    if len(pids) > 256:
        name = engine.upload("candidates", {"pid": pids, "part": np.arange(len(pids)), "a": attr})
        return exp.alias_(g.table(name), g.ident("c"), table=True)
    rows = [exp.Tuple(expressions=[g.lit(int(p)), g.lit(i), g.lit(int(a))]) for i, (p, a) in enumerate(zip(pids, attr))]
    return exp.Values(expressions=rows, alias=exp.TableAlias(this=g.ident("c"), columns=[g.ident("pid"), g.ident("part"), g.ident("a")]))


def _attr_value(selector: exp.Expression, q: list[str], alias: str) -> exp.Expression:
    """``CASE selector WHEN 0 THEN alias.q0 ... END``: each partition's own split attribute."""
    return g.case_on(selector, {i: g.col(c, alias) for i, c in enumerate(q)})


def _av_query(engine: Engine, work: str, pids: np.ndarray, attr: np.ndarray, q: list[str]) -> exp.Expression:
    """AV groups: ``SELECT part, v, count(*) ... GROUP BY part, v`` for each partition's attribute."""
    value = _attr_value(g.col("a", "c"), q, "w")
    inner = (
        exp.select(g.alias(g.col("part", "c"), "part"), g.alias(value, "v"))
        .from_(exp.alias_(g.table(work), g.ident("w"), table=True))
        .join(_candidates(engine, pids, attr), on=exp.EQ(this=g.col("pid", "w"), expression=g.col("pid", "c")))
    )
    return (
        exp.select(g.col("part"), g.col("v"), g.alias(exp.Count(this=exp.Star()), "n"))
        .from_(exp.Subquery(this=inner, alias=exp.TableAlias(this=g.ident("x"))))
        .group_by(g.col("part"), g.col("v"))
        .order_by(g.col("part"), g.col("v"))
    )


def _repartition(
    engine: Engine, work: str, kids: Children, chosen: np.ndarray, parent_pids: np.ndarray,
    child_pids: np.ndarray, live: np.ndarray, q: list[str], cluster: bool = False,
) -> str:
    """Rewrite the working table with the children's ids: one statement for the whole level."""
    splits = engine.upload(
        f"splits{engine.statements}",
        {
            "pid": parent_pids[kids.parent[live]],
            "a": chosen[kids.parent[live]],
            "lo": kids.lo[live],
            "hi": kids.hi[live],
            "child": child_pids[live],
        },
    )
    value = _attr_value(g.col("a", "s"), q, "w")
    on = exp.and_(
        exp.EQ(this=g.col("pid", "w"), expression=g.col("pid", "s")),
        exp.Between(this=value, low=g.col("lo", "s"), high=g.col("hi", "s")),
    )
    new_pid = exp.Coalesce(this=g.col("child", "s"), expressions=[g.col("pid", "w")])
    query = (
        exp.select(g.col("rid", "w"), g.alias(new_pid, "pid"), g.col("qhash", "w"), *[g.col(c, "w") for c in q])
        .from_(exp.alias_(g.table(work), g.ident("w"), table=True))
        .join(exp.alias_(g.table(splits), g.ident("s"), table=True), on=on, join_type="left")
    )
    if cluster:
        query = query.order_by(g.col("pid"))
    new = engine.temp_name(f"work{engine.statements}")
    engine.execute(g.create_table_as(new, query))
    engine.drop_temp(work)
    engine.drop_temp(splits)
    return new


def finish_in_memory(
    engine: Engine, partitioner: Partitioner, work: str, open_: Boxes, memory_rows: int
) -> str | None:
    """Fetch the remaining partitions in batches of about ``memory_rows`` rows and finish them.

    Returns the temp table ``(rid, pid, qhash)`` of the rows finished in memory, with their leaf
    (None if there were none).
    """
    if not len(open_):
        return None
    open_ = open_.take(np.argsort(open_.pid))
    batch = _batches(open_.n, max(memory_rows, 1))
    batches = engine.upload("batches", {"pid": open_.pid, "b": batch})
    q = [f"q{i}" for i in range(partitioner.d)]
    assignment: str | None = None
    for b in range(int(batch.max()) + 1):
        seg = open_.take((batch == b).nonzero()[0])
        query = (
            exp.select(g.col("pid", "w"), g.col("rid", "w"), g.col("qhash", "w"), *[g.col(c, "w") for c in q])
            .from_(exp.alias_(g.table(work), g.ident("w"), table=True))
            .join(exp.alias_(g.table(batches), g.ident("t"), table=True),
                  on=exp.EQ(this=g.col("pid", "w"), expression=g.col("pid", "t")))
            # The batch is a contiguous range of ids: a range filter the zone maps can use.
            .where(exp.and_(
                exp.Between(this=g.col("pid", "w"), low=g.lit(int(seg.pid[0])), high=g.lit(int(seg.pid[-1]))),
                exp.EQ(this=g.col("b", "t"), expression=g.lit(b)),
            ))
        )
        res = engine.fetch(query)
        order = np.argsort(res["pid"], kind="stable")  # partitions in pid order, like seg
        X = np.column_stack([res[c][order] for c in q]).astype(np.int32)
        rows, pid = partitioner.run_memory(X, seg)
        keep = order[rows]
        chunk = engine.upload(f"leafchunk{b}", {"rid": res["rid"][keep], "pid": pid, "qhash": res["qhash"][keep]})
        if assignment is None:
            assignment = chunk
        else:
            engine.execute(exp.insert(exp.select("*").from_(g.table(chunk)), g.table(assignment)))
            engine.drop_temp(chunk)
    engine.drop_temp(batches)
    return assignment


def _batches(n: np.ndarray, limit: int) -> np.ndarray:
    """Greedy batch number per partition: consecutive partitions up to ``limit`` rows per batch."""
    out = np.empty(len(n), dtype=np.int64)
    b, filled = 0, 0
    for i, size in enumerate(n.tolist()):
        if filled and filled + size > limit:
            b, filled = b + 1, 0
        out[i] = b
        filled += size
    return out
