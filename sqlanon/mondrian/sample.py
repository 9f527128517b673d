"""Rothko-S: grow the partition tree on a sample, repartition once, prune the splits made in error.

LeFevre & DeWitt, Scalable Anonymization Algorithms for Large Data Sets (TR 1590), Section 3. A
partition larger than the sample budget (``sample_rows``) goes through a *round*:

1. **Sample** — a seeded simple random sample of ``n = sample_rows`` of its ``N`` rows
   (:meth:`sqlanon.engine.base.Engine.sample`: the rows with the smallest seeded hash of their
   row id, the same rows on every engine and every run), drawn by :func:`draw` in one filtered
   scan, with no sort of the partition's rows in the database.
2. **Optimistic growth** — the in-memory Mondrian (:meth:`Partitioner.run_memory`, the one split
   decision of :mod:`sqlanon.mondrian.split`) runs on the sample with each constraint replaced by
   its hypothesis test (:mod:`sqlanon.mondrian.hypotheses`): a split is made where the tests say
   it will hold on the full partition. The criterion (Median, InfoGain, Regression, Targets,
   Selections) ranks splits on the sample as it would on the data. Growth stops at a sample
   partition whose population fits the budget with the same confidence
   (:func:`~sqlanon.mondrian.hypotheses.fit_threshold`): its rows are finished after the
   repartition by the exact in-memory Mondrian on the full data, which decides better than the
   sample could, and the tree the data walks stays about ``log2(N / sample_rows)`` levels deep
   instead of ``log2(N / k)`` (the TR, Section 3: "the algorithm may repartition the data while
   there still exist high-confidence allowable splits"). At 100M Agrawal rows with a 1.9M-row
   sample that is 7 levels instead of 21, and each level is a join over every row.
3. **Repartition** — one rewrite of the working table gives every row its sample leaf (the
   tree's splits as a small relation, joined once per tree level in one statement), clustered by
   leaf. The first round reads the encoding's view over the source
   (:func:`~sqlanon.mondrian.encode.reads_work_as_view`), so its rewrite encodes, walks and sorts
   in one statement: the encoded rows are not written on their own first.
4. **Statistics** — one ``GROUP BY leaf`` over the rewritten table sums each leaf's real
   statistics (rows, sensitive counts, moments).
5. **Pruning** — with the real statistics summed up the tree, a leaf that breaks a constraint
   merges the whole subtree of its parent (TR 3, "Pruning Phase"), bottom-up until every leaf
   holds; the number of tree nodes so removed is reported (the TR's Figure 28 counts). When
   pruning removed nodes, the rewrite is made again with the pruned tree. (The TR rewrites once,
   after pruning, from statistics gathered by a scan that assigns the rows to leaves. Here the
   rewrite comes first: the statistics are then a scan of the clustered table instead of a second
   walk of the tree -- 1.5 s against 6.5 s at 100M rows -- and pruning is rare at scale: the
   benchmark runs at 10M and 100M rows prune nothing.)

Leaves still larger than ``sample_rows`` get a round of their own; the others are finished by the
exact in-memory Mondrian (:func:`sqlanon.mondrian.builder.finish_in_memory`), exactly as
``strategy="levels"`` finishes them. A partition whose round keeps no split (the tests could not
reject at its root, or pruning undid them all) is where the TR's Rothko-S stops with a potentially
non-minimal partitioning (Section 3.2); here it is handed to Rothko-T instead, as the TR's footnote
9 suggests (:meth:`Partitioner.run_sql` until its partitions fit the budget). So every final leaf
is settled by an exact decision on its full data: the result is minimal (distance 0) and, since
every constraint is checked on the real statistics before a leaf is kept, satisfies the
requirement — the fail-closed verification of the published view only confirms it. A partition
that fits the budget is never sampled, so with ``sample_rows`` at least the table's rows the
result equals ``strategy="levels"``'s.

Passes (the TR's I/O model, Section 4, counted over the working table): a round reads the data
four times (sample, the rewrite's walk and sort, statistics) and writes it twice (the sort's runs
and the rewritten table), whatever the tree's depth, and reads and writes it twice more when
pruning removed nodes; a SQL level of Rothko-T reads it twice (extents, frequency groups) and
writes it once; the in-memory finish reads it once.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
from sqlglot import exp

from ..engine import sqlgen as g
from ..engine.base import HASH_BITS, Engine
from ..errors import InputError
from ..model.partition import Boxes, Partitioning
from ..model.stats import ClassStats, first_of_run
from .builder import Batch, Partitioner
from .hypotheses import fit_threshold, sample_constraints
from .levels import Layout, attr_value, groups_from_result, stat_aggregates
from .split import Children
from .suppression import share_down

STRATEGIES = ("auto", "levels", "sample")

#: ``strategy="auto"`` samples when the table has more than this many times ``memory_rows`` rows:
#: Rothko-T then needs at least ``log2(AUTO_FACTOR)`` SQL levels, two reads and a write each, plus
#: the finish's read, while a sample round costs four reads and two writes (TR 1590, Section 4) ...
AUTO_FACTOR = 8
#: ... and at least this many rows: below, a pass costs less than a round's fixed work (the
#: sample's top-N, the tree's joins), and ``memory_rows`` keeps not changing the result.
AUTO_MIN_ROWS = 10_000_000


@dataclass(frozen=True)
class SampleOptions:
    """How a run partitions: ``strategy`` (``"levels"`` or ``"sample"``, already chosen),
    ``sample_rows`` (the sample budget), ``confidence`` (``1 - alpha`` of the tests) and ``seed``."""

    strategy: str
    sample_rows: int
    confidence: float
    seed: int


def check_options(strategy: object, sample_rows: object, confidence: object, seed: object) -> None:
    """Refuse bad ``strategy``/``sample_rows``/``confidence``/``seed`` before any work."""
    if strategy not in STRATEGIES:
        raise InputError(f"strategy must be one of {', '.join(map(repr, STRATEGIES))}, got {strategy!r}")
    if sample_rows is not None and (isinstance(sample_rows, bool) or not isinstance(sample_rows, int) or sample_rows < 1):
        raise InputError(f"sample_rows must be a positive integer (rows of a sample), got {sample_rows!r}")
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0 < confidence < 1:
        raise InputError(f"confidence must be a number strictly between 0 and 1, got {confidence!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**31:
        raise InputError(f"seed must be an integer in [0, 2^31), got {seed!r}")


def choose(strategy: str, rows: int, memory_rows: int, sample_rows: int | None, confidence: float,
           seed: int, distributed: bool = False) -> SampleOptions:
    """Resolve ``"auto"`` (:func:`auto_samples`). ``sample_rows`` defaults to ``memory_rows`` (at
    least 1)."""
    budget = sample_rows if sample_rows is not None else max(memory_rows, 1)
    if strategy == "auto":
        strategy = "sample" if auto_samples(rows, memory_rows, distributed) else "levels"
    return SampleOptions(strategy, budget, float(confidence), seed)


def auto_samples(rows: int, memory_rows: int, distributed: bool) -> bool:
    """Whether ``"auto"`` picks Rothko-S (with ``memory_rows=0``, everything in SQL, never):

    * on a single machine, when the table has more than ``AUTO_FACTOR`` times the memory
      budget's rows, so Rothko-T would need at least ``log2(AUTO_FACTOR)`` SQL levels and more
      passes than a round, and at least ``AUTO_MIN_ROWS`` rows (below, a pass costs less than a
      round's fixed work);
    * on a distributed engine (Spark), whenever the table has more rows than one in-memory
      finish holds (``memory_rows``), i.e. wherever Rothko-T would need SQL levels: there a
      statement costs a job's fixed work however small (0.1-0.5 s, seconds on a loaded
      machine) and a level a pass, while a round's statements and passes are a fixed number
      whatever the tree's depth, and the executors finish every leaf in one statement (TR 1590,
      Section 3: sample on the driver, repartition once, finish on the workers). A table that
      fits ``memory_rows`` takes the same path (and rules) as on a single machine.
    """
    if memory_rows <= 0:
        return False
    if distributed:
        return rows > memory_rows
    return rows > AUTO_FACTOR * memory_rows and rows >= AUTO_MIN_ROWS


class Outcome:
    """What the partitioning did, counted as it runs (:meth:`add`); :meth:`settled` is the
    result, a :class:`~sqlanon.model.partition.Partitioning`."""

    def __init__(self, strategy: str) -> None:
        self.counted = Partitioning(strategy)

    def add(self, **counts: int) -> None:
        """Add to the counts named (the fields of :class:`Partitioning`)."""
        self.counted = dataclasses.replace(self.counted, **{k: getattr(self.counted, k) + v for k, v in counts.items()})

    def add_levels(self, levels: int) -> None:
        """Rothko-T's SQL levels: extents and frequency groups read, the table rewritten."""
        self.add(scans=2 * levels, writes=levels)

    def settled(self, at_root_before: Mapping[str, float] | None = None,
                at_root: Mapping[str, float] | None = None) -> Partitioning:
        return dataclasses.replace(self.counted, at_root=at_root, at_root_before=at_root_before)


class _Grower(Partitioner):
    """The in-memory Mondrian on a sample that also records the tree: per level, each child's
    parent id, the split QI, the child's code interval on it and its box. A sample partition of
    at most ``fits`` rows is not split: its population fits the budget (:func:`_grow`)."""

    def __init__(self, *args, fits: int, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fits = fits
        self.edges: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, Boxes]] = []

    def decide(self, parts: Boxes, cmin: np.ndarray, cmax: np.ndarray, groups_for: Callable,
               settled: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, Children, np.ndarray]:
        grow = parts.n > self.fits
        if grow.all():
            return super().decide(parts, cmin, cmax, groups_for, settled)
        # the others are decided alone, as they would be (every decision is its partition's own)
        idx = grow.nonzero()[0]
        split, attr, kids, pair = super().decide(parts.take(idx), cmin[idx], cmax[idx],
                                                 lambda i, a: groups_for(idx[i], a),
                                                 None if settled is None else settled[idx])
        P = len(parts)
        out_split, out_attr, out_pair = np.zeros(P, bool), np.full(P, -1, np.int64), np.full(P, -1, np.int64)
        out_split[idx], out_attr[idx], out_pair[idx] = split, attr, pair
        kids = Children(idx[kids.parent], kids.lo, kids.hi, kids.node, kids.count, kids.suppressed)
        return out_split, out_attr, kids, out_pair

    def children_boxes(self, parts, chosen, kids):
        boxes = super().children_boxes(parts, chosen, kids)
        self.edges.append((parts.pid[kids.parent], chosen[kids.parent], kids.lo, kids.hi, boxes))
        return boxes


@dataclass
class _Forest:
    """The trees grown in one round: nodes in creation order (a parent before its children),
    roots first. ``parent`` indexes nodes (-1 for roots); ``attr``, ``lo``, ``hi``: the split
    that made the node (its QI and code interval on it)."""

    boxes: Boxes
    parent: np.ndarray
    attr: np.ndarray
    lo: np.ndarray
    hi: np.ndarray

    def __post_init__(self) -> None:
        # each node's depth below its root: one vectorized step per tree level
        has = self.parent >= 0
        depth = np.zeros(len(self.parent), dtype=np.int64)
        while True:
            deeper = np.where(has, depth[np.maximum(self.parent, 0)] + 1, 0)
            if np.array_equal(deeper, depth):
                break
            depth = deeper
        self.depth = depth

    @property
    def is_leaf(self) -> np.ndarray:
        out = np.ones(len(self.parent), dtype=bool)
        out[self.parent[self.parent >= 0]] = False
        return out


def run_sample(engine: Engine, partitioner: Partitioner, work: str, rows: int, options: SampleOptions,
               outcome: Outcome, written: Callable[[], None] | None = None, budget: int = 0) -> tuple[str, Boxes]:
    """Rothko-S rounds until every open partition fits ``options.sample_rows``.

    ``budget``: the rows the root may suppress (``suppression=``): the sample grows ordinary
    splits only, and each round shares its roots' budgets down the pruned tree on the real
    row counts (:func:`sqlanon.mondrian.suppression.share_down`), so the open partitions carry
    their budgets into the exact finish.

    Returns the (rewritten) working table — every row carrying its open partition's id, or its
    leaf's for leaves finished in SQL — and the open partitions, for
    :func:`sqlanon.mondrian.builder.finish_in_memory`. Empty leaves are recorded in
    ``partitioner.leaves``; ``outcome`` is updated.

    ``work`` may be the encoding's view over the source
    (:func:`sqlanon.mondrian.encode.reads_work_as_view`): the first round's sample and rewrite
    read it, and the rewrite writes the first table. ``written`` is called once ``work`` has been
    replaced by a table the run wrote: the caller ends the transaction that pinned the source's
    rows for the view (tables the later rounds drop inside it would be kept to its end).
    """
    layout = partitioner.layout
    open_ = partitioner.root(rows, budget)
    encoded = work
    lazy = int(engine.distributed)  # the tree walked in a view (:func:`_repartition`)

    def replaced(new: str) -> str:
        nonlocal written
        if new != encoded and written is not None:
            written()
            written = None
        return new

    while True:
        big = open_.n > options.sample_rows
        if not big.any():
            return work, open_
        parts, rest = open_.take(big.nonzero()[0]), open_.take((~big).nonzero()[0])
        outcome.add(rounds=1)
        forest = _grow(engine, partitioner, work, parts, layout, options)
        outcome.add(scans=len(parts))
        stuck = np.ones(len(parts), dtype=bool)
        grown = forest.parent >= 0
        if grown.any():  # else no sample split at all: nothing to check
            # Rewrite first, with the whole grown tree, then sum each leaf's statistics from the
            # rewritten table (a GROUP BY over its clustered partition ids, not a second walk of
            # the tree: 6.5 s against about 1 s at 100M rows). A distributed engine walks the tree
            # in a view instead (:func:`_repartition`): written only if another round reads it.
            new = _repartition(engine, work, forest, grown, layout, rest.pid)
            stats = _leaf_stats(engine, new, forest, layout)
            outcome.add(scans=2 - lazy, writes=1 - lazy)  # the rewrite (a read and a write) and the statistics' read
            final, stuck, pruned = _prune(partitioner, forest, stats)
            outcome.add(pruned=pruned)
            keep = grown & final.visible
            if pruned:  # rows went to leaves that pruning removed: rewrite again with the pruned tree
                engine.drop_temp(new)
                new = _repartition(engine, work, forest, keep, layout, rest.pid) if keep.any() else None
                outcome.add(scans=int(new is not None and not lazy), writes=int(new is not None and not lazy))
            shares = share_down(forest.parent, forest.depth, forest.lo, final.n, final.visible,
                                forest.boxes.budget, partitioner.min_size)
            leaves = forest.boxes.take(final.leaves)
            leaves = Boxes(leaves.pid, final.n[final.leaves], leaves.lo, leaves.hi, leaves.node, shares[final.leaves])
            leaves = leaves.take((~np.isin(leaves.pid, parts.pid[stuck])).nonzero()[0])
            empty = leaves.n == 0
            if empty.any():
                none = np.full((int(empty.sum()), partitioner.d), -1, dtype=np.int64)
                partitioner.leaves.add(leaves.take(empty.nonzero()[0]), none, none)
            rest = Boxes.concat([rest, leaves.take((~empty).nonzero()[0])])
            if new is not None:
                if lazy and (stuck.any() or (rest.n > options.sample_rows).any()):
                    # another round, or Rothko-T's levels, read it: written once (no sort)
                    view, new = new, engine.create_temp(f"work{engine.statements}",
                                                        exp.select(exp.Star()).from_(g.table(new)))
                    engine.drop_temp(view)
                    outcome.add(scans=1, writes=1)
                    engine.drop_temp(work)
                elif not lazy:
                    engine.drop_temp(work)
                # else ``new`` is a view reading ``work``: both stay to the run's cleanup
                work = replaced(new)
        if stuck.any():  # no split survived: Rothko-T takes these partitions (TR footnote 9)
            outcome.add(rescued=int(stuck.sum()))
            before = partitioner.levels
            work, fitted = partitioner.run_sql(engine, work, parts.take(stuck.nonzero()[0]), options.sample_rows)
            work = replaced(work)
            outcome.add_levels(partitioner.levels - before)
            rest = Boxes.concat([rest, fitted])
        open_ = rest
        partitioner._report("sample", len(open_))


def _grow(engine: Engine, partitioner: Partitioner, work: str, parts: Boxes, layout: Layout,
          options: SampleOptions) -> _Forest:
    """Sample each partition and grow its tree under the hypothesis tests; the round's forest."""
    fanout = max([2] + [max(len(c) for c in d.qi.hierarchy.children) for d in partitioner.domains
                        if d.qi.hierarchy is not None])
    edges = []
    for i in range(len(parts)):
        pid, N = int(parts.pid[i]), int(parts.n[i])
        rows = exp.select(*[g.col(c) for c in layout.carried]).from_(g.table(work)).where(
            exp.EQ(this=g.col("pid"), expression=g.lit(pid)))
        res = draw(engine, rows, options.sample_rows, _seed(options.seed, pid), N)
        n = len(res["rid"])
        batch = Batch(
            np.vstack([res[c] for c in layout.q]).astype(np.int32) if layout.q else np.zeros((0, n), np.int32),
            [res[c].astype(np.int64) for c in layout.k],
            [res[c].astype(np.int64 if s.exact else np.float64) for c, s in zip(layout.t, layout.numeric_stats)],
        )
        tests = sample_constraints(partitioner.constraints, N, n, options.confidence, fanout)
        # growth stops where the population surely fits the budget: finished exactly in memory
        fits = fit_threshold(options.sample_rows, N, n, 1.0 - options.confidence)
        grower = _Grower(partitioner.domains, tests, partitioner.criterion, None, partitioner.stat_columns,
                         partitioner.threads, fits=fits)
        grower.next_pid = partitioner.next_pid
        one = parts.take(np.array([i]))
        grower.run_memory(batch, Boxes(one.pid, np.array([n], np.int64), one.lo, one.hi, one.node))
        partitioner.next_pid = grower.next_pid
        edges += grower.edges
    boxes = Boxes.concat([parts] + [e[4] for e in edges])
    parent_pid = np.concatenate([np.full(len(parts), -1, np.int64)] + [e[0] for e in edges])
    order = np.argsort(boxes.pid)
    parent = np.where(parent_pid >= 0, order[np.searchsorted(boxes.pid[order], parent_pid)], -1)
    cat = [np.full(len(parts), -1, np.int64)]
    return _Forest(boxes, parent.astype(np.int64),
                   np.concatenate(cat + [e[1] for e in edges]).astype(np.int64),
                   np.concatenate(cat + [e[2] for e in edges]).astype(np.int64),
                   np.concatenate(cat + [e[3] for e in edges]).astype(np.int64))


#: The column :func:`draw` fetches each row's :meth:`~sqlanon.engine.base.Engine.seeded_hash` in.
_HASH = "__sqlanon_draw_hash"


def hash_bound(rows: int, total: int) -> int:
    """The seeded hash below which :func:`draw` keeps the rows of a relation of ``total`` rows
    to draw ``rows`` of them: ``floor(2^HASH_BITS r / total)`` with ``r = rows + 10 sqrt(rows) +
    100``, the bound ``r`` of ``total`` uniform hashes fall under on average. The rows that
    pass are binomial(``total``, ``r / total``): fewer than ``rows`` pass ten standard
    deviations below the mean, with odds below 1e-20."""
    return min(2**HASH_BITS - 1, (2**HASH_BITS * int(rows + 10 * math.sqrt(rows) + 100)) // total)


def draw(engine: Engine, relation: exp.Select, rows: int, seed: int, total: int, key: str = "rid"
         ) -> dict[str, np.ndarray]:
    """The rows :meth:`Engine.sample <sqlanon.engine.base.Engine.sample>` draws -- the ``rows``
    rows of ``relation`` (of ``total`` rows) with the smallest seeded hash of ``key``, ties by
    ``key``, in that order -- fetched with one filtered scan and no sort in the database.

    The scan keeps the rows whose hash is at most :func:`hash_bound` (about ``rows + 10
    sqrt(rows) + 100``) and this process picks the ``rows`` smallest ``(hash, key)`` of them.
    Whenever at least ``rows`` rows pass, the ``rows`` smallest hashes are all below the bound,
    so they are exactly the sorted draw's rows; when fewer pass (odds below 1e-20, or a
    ``total`` too large) the sorted draw runs instead. The sorted draw is a top-``rows`` sort of
    every row: on Spark a ``TakeOrderedAndProject`` that took 1,238 s of a 2,815 s release at
    10M rows (2M drawn, a loaded machine); under DuckDB's ``memory_limit='2GB'`` at 100M rows
    it ran out of memory."""
    source = exp.Subquery(this=relation, alias=exp.TableAlias(this=g.ident("drawn")))
    hashed = engine.seeded_hash(g.col(key), seed)
    query = exp.select(exp.Star(), g.alias(hashed, _HASH)).from_(source)
    if rows < total:
        below = exp.LTE(this=hashed.copy(), expression=exp.Cast(this=g.lit(hash_bound(rows, total)),
                                                                to=exp.DataType.build("BIGINT")))
        query = query.where(below, copy=False)
    res = engine.fetch(query)
    h = np.asarray(res.pop(_HASH), dtype=np.int64)
    if len(h) < min(rows, total):  # too few passed the bound: the sorted draw
        return engine.fetch(engine.sample(relation, rows, seed, key))
    order = np.lexsort((np.asarray(res[key], dtype=np.int64), h))[:rows]
    return {c: v[order] for c, v in res.items()}


def _seed(seed: int, pid: int) -> int:
    """The sample seed of partition ``pid``: a fresh draw per partition, so that a later round's
    sample does not reuse the rows that chose the partition's boundaries."""
    return (seed * 1_000_003 + pid * 7_919) % 2**31


def _walk(engine: Engine, work: str, forest: _Forest, keep: np.ndarray, layout: Layout
          ) -> tuple[exp.Select, exp.Expression, str]:
    """``work w`` walked down the tree made of the roots and the nodes ``keep``: one inner hash
    join per level of a binary form of the tree, as :mod:`sqlanon.release.apply` walks a
    release's rules (one equi-join per level with a ``CASE`` picking the child is many times
    faster than joining each level's children by range).

    Every split becomes binary cuts ``code(attr) <= cut``: an ordered split one cut, a split into
    ``m`` hierarchy children (consecutive leaf-code intervals) a chain of ``m - 1`` cuts through
    intermediate nodes (negative ids), a node with one child a step to it; a leaf is a
    pass-through entry (both sides itself), so the rows of shallower leaves stay put. The inner
    joins keep only the rows of the roots.
    Returns the query (no columns yet), the expression of each row's leaf id and the node table
    (to drop)."""
    pid = forest.boxes.pid
    idx = keep.nonzero()[0]
    idx = idx[np.lexsort((forest.lo[idx], forest.parent[idx]))]  # siblings together, by interval
    par = forest.parent[idx]
    starts = first_of_run(par)
    m = np.diff(np.append(starts, len(idx)))
    pos = np.arange(len(idx)) - np.repeat(starts, m)
    last = pos == np.repeat(m - 1, m)
    cuts = (~last).nonzero()[0]  # child j < m - 1 of its parent: the cut after it
    ids = np.where(pos[cuts] == 0, pid[par[cuts]], -(np.arange(len(cuts), dtype=np.int64) + 1))
    after = cuts + 1  # the next sibling: the last one, or the next cut's node
    right = np.where(last[after], pid[idx[np.minimum(after, len(idx) - 1)]],
                     ids[np.minimum(np.arange(len(cuts)) + 1, max(len(cuts) - 1, 0))])
    inner = np.zeros(len(pid), dtype=bool)
    inner[par] = True
    leaf = ((forest.parent < 0) | keep) & ~inner
    only = idx[starts[m == 1]]  # a hierarchy node with one child: a step without a cut
    # pass-through entries: leaves to themselves, a one-child node to its child
    through_node = np.concatenate((pid[leaf], pid[forest.parent[only]]))
    through = np.concatenate((pid[leaf], pid[only]))
    zeros = np.zeros(len(through), np.int64)
    nodes = engine.upload(f"nodes{engine.statements}", {
        "node": np.concatenate((ids, through_node)),
        "a": np.concatenate((forest.attr[idx[cuts]], zeros)),
        "cut": np.concatenate((forest.hi[idx[cuts]], zeros)),
        "l": np.concatenate((pid[idx[cuts]], through)),
        "r": np.concatenate((right, through)),
    })
    # binary depth: child j of a parent is j + 1 cuts below it (the last child m - 1; an only
    # child 1)
    step = np.maximum(np.minimum(pos + 1, np.repeat(m - 1, m)), 1)
    depth = np.zeros(len(pid), dtype=np.int64)
    for d in range(1, int(forest.depth.max()) + 1):
        at = forest.depth[idx] == d
        depth[idx[at]] = depth[par[at]] + step[at]
    query = exp.select().from_(exp.alias_(g.table(work), g.ident("w"), table=True))
    cur: exp.Expression = g.col("pid", "w")
    for level in range(int(depth[leaf].max())):
        n = f"n{level}"
        query = query.join(exp.alias_(g.table(nodes), g.ident(n), table=True), join_type="inner",
                           on=exp.EQ(this=g.col("node", n), expression=cur), copy=False)
        below = exp.LTE(this=attr_value(g.col("a", n), layout.q, "w"), expression=g.col("cut", n))
        cur = exp.Case().when(below, g.col("l", n)).else_(g.col("r", n))
    return query, cur, nodes


def _leaf_stats(engine: Engine, work: str, forest: _Forest, layout: Layout) -> ClassStats:
    """The real statistics of every node of the forest: each leaf's from its rows in ``work``,
    the working table rewritten with the whole grown tree (one ``GROUP BY pid`` over the rows
    of the round's new nodes, whose ids follow every id given out before the round: a range the
    zone maps of the clustered table find), an inner node's the sum of its children's."""
    T = len(forest.parent)
    new = forest.boxes.pid[forest.parent >= 0]
    query = (exp.select(g.alias(g.col("pid", "w"), "part"), g.alias(g.lit(0), "v"), *stat_aggregates(layout))
             .from_(exp.alias_(g.table(work), g.ident("w"), table=True))
             .where(exp.Between(this=g.col("pid", "w"), low=g.lit(int(new.min())), high=g.lit(int(new.max()))))
             .group_by(g.col("pid", "w")))
    groups = groups_from_result(engine.fetch(query), layout)
    order = np.argsort(forest.boxes.pid)
    at = order[np.searchsorted(forest.boxes.pid[order], groups.part)]
    assert (forest.boxes.pid[at] == groups.part).all(), "a row outside the round's forest"
    n = np.zeros(T, np.int64)
    n[at] = groups.stats.n
    counts = []
    for c in groups.stats.counts:
        m = np.zeros((T, c.shape[1]), c.dtype)
        m[at] = c
        counts.append(m)
    moments = []
    for mo in groups.stats.moments:
        m = np.zeros((T, 3), mo.dtype)
        m[at] = mo
        moments.append(m)
    depth = forest.depth
    for d in range(int(depth.max()), 0, -1):  # children into parents, deepest level first
        i = (depth == d).nonzero()[0]
        p = forest.parent[i]
        np.add.at(n, p, n[i])
        for m in (*counts, *moments):
            np.add.at(m, p, m[i])
    return ClassStats(n, tuple(counts), tuple(moments))


@dataclass(frozen=True)
class _Pruned:
    """The forest after pruning: which nodes are still in the tree, the final leaves (indices,
    creation order) and every node's real row count."""

    visible: np.ndarray
    leaves: np.ndarray
    n: np.ndarray


def _prune(partitioner: Partitioner, forest: _Forest, stats: ClassStats) -> tuple[_Pruned, np.ndarray, int]:
    """Merge back every subtree whose leaf breaks a constraint on the real data (TR 3, pruning).

    Bottom-up by depth: a node whose child is a (final) leaf that fails is collapsed — it
    becomes a leaf, its subtree is gone — and is itself judged at the next level up. A root
    never fails (its partition was allowed before the round). Returns the pruned forest, which
    roots collapsed (their round kept no split) and how many nodes pruning removed.
    """
    ok = np.ones(len(stats), dtype=bool)
    for c in partitioner.constraints:
        ok &= c.allowed(stats, partitioner)
    final_leaf = forest.is_leaf.copy()
    collapsed = np.zeros(len(ok), dtype=bool)
    depth = forest.depth
    top = int(depth.max())
    for d in range(top, 0, -1):
        i = (depth == d).nonzero()[0]
        bad = i[final_leaf[i] & ~ok[i]]
        collapsed[forest.parent[bad]] = True
        final_leaf[forest.parent[bad]] = True
    visible = forest.parent < 0
    for d in range(1, top + 1):
        i = (depth == d).nonzero()[0]
        p = forest.parent[i]
        visible[i] = visible[p] & ~collapsed[p]
    roots = (forest.parent < 0).nonzero()[0]
    stuck = collapsed[roots] | forest.is_leaf[roots]
    return _Pruned(visible, (visible & final_leaf).nonzero()[0], stats.n), stuck, int((~visible).sum())


def _repartition(engine: Engine, work: str, forest: _Forest, keep: np.ndarray, layout: Layout,
                 others: np.ndarray) -> str:
    """A rewrite of the working table with every row's leaf (the rows of the round's
    partitions walk the tree made of the roots and the nodes ``keep``, the others are copied),
    clustered by partition id for the in-memory batches (see
    :func:`sqlanon.mondrian.levels.repartition`): one read and one write. ``work`` is left to the
    caller. ``others``: the ids of the other open partitions, whose rows must stay clustered too.

    On a distributed engine (Spark) a temp view of the walk instead, which reads ``work`` (and
    the tree's node table, both left to the run's cleanup): the round's statistics and the
    executors' finish read it in their own passes, and the finish moves every row to its batch
    in its own shuffle, so clustering is no use there, and writing the walk (with Spark's
    sort, a sampling job and a shuffle) cost three passes more at 10M rows.
    :func:`run_sample` writes it (unsorted) only when another round or Rothko-T's levels read it."""
    walked, leaf, nodes = _walk(engine, work, forest, keep, layout)
    walked = walked.select(*[g.alias(leaf, "pid") if c == "pid" else g.col(c, "w") for c in layout.carried],
                           copy=False)
    roots = forest.boxes.pid[forest.parent < 0]  # every root is in the walk's node table
    others_rows = exp.select(*[g.col(c) for c in layout.carried]).from_(g.table(work)).where(
        exp.Not(this=g.in_list(g.col("pid"), roots.tolist())))
    if engine.distributed:
        return engine.create_temp_view(f"walk{engine.statements}", exp.union(walked, others_rows, distinct=False))
    # One statement, the walk feeding the sort: as two (the walk written, then read back sorted)
    # they took 38 s at 100M rows under memory_limit='2GB', as one 30 s. (Sorting by ``rid``
    # within a partition too, so that the row map comes out in id order, took 43 s, more than
    # the publication's per-range statements saved by skipping its blocks.)
    new = engine.temp_name(f"work{engine.statements}")
    engine.execute(g.create_table_as(new, exp.select(exp.Star()).from_(
        exp.Subquery(this=exp.union(walked, others_rows, distinct=False), alias=exp.TableAlias(this=g.ident("x")))
    ).order_by(_cluster_key(engine, np.concatenate((forest.boxes.pid[keep | (forest.parent < 0)], others))))))
    engine.drop_temp(nodes)
    return new


def _cluster_key(engine: Engine, pids: np.ndarray) -> exp.Expression:
    """What the rewrite sorts by: ``pid`` as the narrowest integer from the smallest of ``pids``
    (the ids the rows can carry), clamped to their range -- the same order, on a key the sort
    compares and moves faster (at 100M rows, a one-byte key instead of ``BIGINT`` took the sort
    from 20.6 s to 16.3 s). A row with another id (a leaf finished in SQL, not read by the
    batches) sorts to an end; the clamp keeps the cast from overflowing."""
    lo, hi = int(pids.min()), int(pids.max())
    clamped = (exp.Case().when(exp.LT(this=g.col("pid"), expression=g.lit(lo)), g.lit(0))
               .when(exp.GT(this=g.col("pid"), expression=g.lit(hi)), g.lit(hi - lo))
               .else_(exp.Sub(this=g.col("pid"), expression=g.lit(lo))))
    return exp.Cast(this=clamped, to=exp.DataType.build(engine.code_type(hi - lo + 1), dialect=g.DIALECT))
