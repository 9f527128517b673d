"""The partition loop: Rothko-T in SQL while partitions are large, numpy once they fit in memory.

LeFevre & DeWitt, Scalable Anonymization Algorithms for Large Data Sets (TR 1590), Section 2:
partitions are grown breadth-first from frequency groups the database computes, the data is
repartitioned level by level, and once a partition fits in memory it is fetched once and the
recursion finishes in memory. Here:

* SQL level (partitions with more than ``memory_rows`` rows): one statement computes the extents
  (count, min and max code of every QI) of all open partitions, one statement per fallback round
  computes the AV groups of each partition's candidate attribute, and one or two statements give
  the rows their children's partition ids — rows of children that leave the SQL levels move to a
  table of their own, so the working table holds only the rows still split in SQL. O(1)
  statements per level, never one per partition.
* In-memory levels: the same steps over numpy arrays, vectorized across all partitions of a
  batch (rows kept contiguous per partition and sorted by the split attribute, so children are
  contiguous runs).

Both call :func:`sqlanon.mondrian.split.evaluate` with the same frequency groups and the criterion's
attribute ranking, so the partition does not depend on ``memory_rows``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from sqlglot import exp

from ..engine.base import Engine
from ..model import kernels
from ..model.criteria import Criterion, Targets, rank
from ..model.domain import Domain
from ..model.parallel import return_free_memory, run_all, small_pages
from ..model.partition import Boxes, Leaves, Progress, RowLeaves
from ..model.privacy import Constraint
from ..model.stats import ClassStats, FrequencyGroups, StatColumn, first_of_run, group_stats, sort_and_group
from .compiled import median_finish, workload_finish
from .levels import (
    Layout,
    advance,
    batch_query,
    extents_query,
    groups_from_result,
    groups_query,
    repartition,
    row_columns,
    value_counts_from_result,
)
from .siblings import Kin, Level, groups_with_siblings, merge_levels
from .split import Children, Evaluation, can_settle, children, evaluate, settled
from .split import _passes as passes
from .suppression import Untrimmed, share_budget, slack, suppressing, untrimmed

log = logging.getLogger("sqlanon")


class Partitioner:
    """Owns the partition ids and runs both loops with one criterion and set of constraints."""

    def __init__(
        self,
        domains: Sequence[Domain],
        constraints: Sequence[Constraint],
        criterion: Criterion,
        progress: Callable[[Progress], None] | None = None,
        stat_columns: Sequence[StatColumn] = (),
        threads: int = 1,
        hashed: bool = True,
    ) -> None:
        self.domains = tuple(domains)
        self.hashed = hashed  # the working table has qhash (levels.row_columns)
        self.stat_columns = tuple(stat_columns)
        self.class_stats = tuple(c for c in self.stat_columns if c.kind == "class")
        self.numeric_stats = tuple(c for c in self.stat_columns if c.kind == "numeric")
        self._class_index = {c.name: i for i, c in enumerate(self.class_stats)}
        self._numeric_index = {c.name: i for i, c in enumerate(self.numeric_stats)}
        self.constraints = tuple(constraints)
        self.criterion = criterion
        self.leaves = Leaves()
        # the suppressing splits of the depth-first finishes, for the run without suppression
        # (suppression.untrimmed; taken over from the forks that finish in this process)
        self.untrimmed: list[Untrimmed] = []
        self.next_pid = 1
        self.progress = progress
        self.started = time.perf_counter()
        self.rows_finished = 0
        self.levels = 0
        self.threads = threads  # for the in-memory levels' independent pieces (see parallel)
        # Count frequency groups into bins where that is cheaper than sorting (see _layer); one
        # QI at a time (Median) sorts: the layer asked is usually the one split, whose rows
        # must be sorted anyway.
        self.counting = not criterion.one_at_a_time
        # Keep one attribute list per QI (rows sorted by code within each partition) through the
        # in-memory levels where every candidate QI is judged at every level: a list is carried
        # through a split in one pass instead of sorting rows per QI per level (see _lists).
        self.lists = not criterion.one_at_a_time and _LISTS

    @property
    def d(self) -> int:
        return len(self.domains)

    def fork(self, *, first_pid: int | None = None, local: bool = True) -> Partitioner:
        """A partitioner of the same requirement with no leaves, numbering new partitions from
        ``first_pid``. ``local=False``: for another process (no progress callback, one thread
        per task)."""
        out = Partitioner(self.domains, self.constraints, self.criterion, self.progress if local else None,
                          self.stat_columns, self.threads if local else 1, self.hashed)
        out.next_pid = self.next_pid if first_pid is None else first_pid
        out.started, out.rows_finished, out.levels = self.started, self.rows_finished, self.levels
        return out

    def absorb(self, worker: Partitioner) -> None:
        """Take over the progress counters of a fork that finished a batch in this process, and
        the suppressing splits of its depth-first finishes (:attr:`untrimmed`)."""
        self.rows_finished, self.levels = worker.rows_finished, worker.levels
        self.untrimmed += worker.untrimmed
        worker.untrimmed = []

    def leaf_table(self) -> dict[str, np.ndarray]:
        """The leaves as integer columns (:func:`leaf_columns`), to travel between processes:
        ids, counts and flags int64, codes and node ids :attr:`Domain.code_type` (:meth:`add_leaves`
        makes them int32 again)."""
        if self.leaves.boxes:
            leaves = self.leaves.collect()
            boxes, cmin, cmax, dropped = leaves.boxes, leaves.cmin, leaves.cmax, leaves.suppressed
        else:
            boxes = self.root(0).take(np.zeros(0, np.int64))
            cmin = cmax = boxes.lo
            dropped = np.zeros(0, dtype=bool)
        out = {"pid": boxes.pid, "n": boxes.n, "suppressed": dropped.astype(np.int64)}
        # codes and node ids narrow: the batches' leaves are held until the last batch is done
        # (0.28 GB as int64 at 100M rows, at the run's peak)
        for part, values in (("lo", boxes.lo), ("hi", boxes.hi), ("node", boxes.node), ("cmin", cmin), ("cmax", cmax)):
            out.update({f"{part}{i}": values[:, i].astype(d.code_type) for i, d in enumerate(self.domains)})
        return out

    def add_leaves(self, table: dict[str, np.ndarray]) -> None:
        """Record leaves given as :meth:`leaf_table` columns (finished in memory). ``table`` is
        emptied as its columns become the leaves' matrices (not held twice)."""
        d = self.d

        def matrix(part: str) -> np.ndarray:
            columns = [table.pop(f"{part}{i}") for i in range(d)]
            return np.column_stack(columns).astype(np.int32, copy=False).reshape(-1, d)

        boxes = Boxes(table["pid"].astype(np.int64), table["n"].astype(np.int64), matrix("lo"), matrix("hi"), matrix("node"))
        self.leaves.add(boxes, matrix("cmin"), matrix("cmax"), suppressed=table["suppressed"].astype(bool))

    @property
    def min_size(self) -> int:
        """The fewest rows any constraint lets a non-empty class have."""
        return max(c.min_size for c in self.constraints)

    def root(self, n: int, budget: int = 0) -> Boxes:
        """The root partition of ``n`` rows, which may suppress ``budget`` of them."""
        d = self.d
        hi = np.array([dom.size - 1 for dom in self.domains], dtype=np.int64)
        node = np.array([-1 if dom.num is not None else 0 for dom in self.domains], dtype=np.int64)
        return Boxes(np.zeros(1, np.int64), np.array([n], np.int64), np.zeros((1, d), np.int64), hi[None, :], node[None, :],
                     np.array([budget], np.int64))

    # -- the shared decision step ----------------------------------------------------------------
    def decide(
        self, parts: Boxes, cmin: np.ndarray, cmax: np.ndarray,
        groups_for: Callable[[np.ndarray, np.ndarray], FrequencyGroups],
        settled: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray, Children, np.ndarray]:
        """Choose each partition's split from the frequency groups of its candidate QIs.

        ``groups_for(idx, attr)`` returns the frequency groups of the pairs (partition ``idx[i]``,
        QI ``attr[i]``), from SQL or numpy; pairs come in layers (a new layer starts where ``idx``
        stops increasing), each partition at most once per layer. Median asks for one QI per
        partition at a time, in normalized-range order, until one has an allowable split; the
        other criteria ask for all candidate QIs at once and take the best split overall —
        except in ``settled`` partitions (:func:`sqlanon.mondrian.split.settled`: every split scores
        alike, so the best split is the Median choice), which are asked like Median's.

        Returns ``(split, attr, children, pair)``: which partitions split, on which QI, their
        children (``parent`` indexes ``parts``) and the index of the chosen pair among all pairs
        asked for in this call (-1 if none), so that the in-memory loop can keep the row order
        that pair's statistics produced.

        Suppression (partitions with ``parts.budget > 0``; :mod:`sqlanon.mondrian.suppression`): the
        budget buys splits first. Under Median a hierarchical QI's suppressing split is its QI's
        allowable split (the small children of a node no longer block it, as a suppression limit
        lets ARX accept a generalization level): the first QI in rank order with an ordinary
        split, or a hierarchical one with a suppressing split, is taken. Any other suppressing
        split is taken only by a partition none of whose QIs has one of those; among them, the
        fewest suppressed rows per unit of gain (``Evaluation.cost``), ties by the criterion's
        usual order (rank; key, rank, balance, cut). A partition asked one QI at a time (Median,
        settled partitions) therefore keeps such a split aside while later QIs are asked, and
        takes it only when none of them has an allowable split. The partitions' slack (what a
        suppressed row costs, :func:`~sqlanon.mondrian.suppression.slack`) comes from ``cmin``,
        ``cmax`` and their nodes.
        """
        # A cut of an ordered QI leaves two non-empty children of at least min_size rows each,
        # so smaller partitions need no statistics for it (hierarchy children may be empty).
        ordered = np.array([d.num is not None for d in self.domains], dtype=bool)
        # (A partition with a suppression budget may still trim a failing side off: it keeps them.)
        small = (parts.n < 2 * self.min_size) & (parts.budget == 0)
        order = rank(cmin, cmax, parts.node, self.domains, exclude=small[:, None] & ordered[None, :])
        P = len(parts)
        chosen_pair = np.full(P, -1, dtype=np.int64)
        chosen_attr = np.full(P, -1, dtype=np.int64)
        found: list[Children] = []
        asked = 0
        one = self.criterion.one_at_a_time
        spending = bool((parts.budget > 0).any())
        spare = slack(cmin, cmax, parts.node, self.domains) if spending else None
        # a partition asked one QI at a time keeps its best suppressing split here meanwhile
        aside_cost = np.full(P, np.inf)
        aside_pair = np.full(P, -1, dtype=np.int64)
        aside_attr = np.full(P, -1, dtype=np.int64)
        aside: list[tuple[np.ndarray, Children]] = []  # (pair index of each child's parent, children)
        for r in range(self.d if one or settled is not None else 1):
            if one or r > 0:  # the r-th QI in rank order of partitions without an allowable split yet
                ask = (chosen_pair < 0) & (order[:, r] >= 0)
                idx = (ask if one else ask & settled).nonzero()[0]
                pos = np.full(len(idx), r)
            else:  # every candidate QI of every partition, layer by layer (rank order) ...
                ask = order >= 0
                if settled is not None:  # ... but a settled partition's first one only
                    ask[settled, 1:] = False
                idx, pos = ask.T.nonzero()[::-1]
            if len(idx) == 0:
                break
            attr = order[idx, pos]
            groups = groups_for(idx, attr)
            ev = evaluate(attr, parts.node[idx, attr], groups, self.domains, self.constraints, self.criterion, self,
                          self.threads)
            if spending:
                ev = suppressing(ev, attr, parts.node[idx, attr], groups, self.domains, self.constraints, self,
                                 parts.budget[idx], spare[idx])
            pick = self._pick(idx, pos, ev, P)
            lost = ev.suppress[pick]
            kids = children(
                pick, np.where(self._median(ev, pick), ev.median_cut[pick], ev.cut[pick]),
                np.where(self._median(ev, pick), ev.median_left[pick], ev.left[pick]),
                attr, parts.lo[idx, attr], parts.hi[idx, attr], parts.node[idx, attr], groups, self.domains,
                ev.drop[pick] if spending else None, lost > 0 if spending else None, self._passes,
            )
            kids = Children(idx[pick][kids.parent], kids.lo, kids.hi, kids.node, kids.count, kids.suppressed)
            # a suppressing split seen one QI at a time waits until every QI has been asked --
            # under Median, except a hierarchical QI's, which takes its QI's place in rank order
            if one:
                waits = (lost > 0) & ordered[attr[pick]]
            elif settled is not None:  # unsettled partitions saw every QI at once: their pick is final
                waits = (lost > 0) & settled[idx[pick]]
            else:
                waits = np.zeros(len(pick), dtype=bool)
            final = ~waits
            chosen_pair[idx[pick[final]]] = asked + pick[final]
            chosen_attr[idx[pick[final]]] = attr[pick[final]]
            keep = final[np.searchsorted(idx[pick], kids.parent)] if len(pick) else np.zeros(0, bool)
            found.append(_take_children(kids, keep))
            if waits.any():
                w = pick[waits]
                better = ev.cost[w] < aside_cost[idx[w]]  # ties: the earlier QI in rank order
                w = w[better]
                aside_cost[idx[w]], aside_pair[idx[w]], aside_attr[idx[w]] = ev.cost[w], asked + w, attr[w]
                pair_of = np.full(P, -1, dtype=np.int64)
                pair_of[idx[w]] = asked + w
                mine = pair_of[kids.parent] >= 0
                aside.append((pair_of[kids.parent[mine]], _take_children(kids, mine)))
            asked += len(idx)
        late = (chosen_pair < 0) & (aside_pair >= 0)
        if late.any():  # partitions whose only splits suppress: their best one
            chosen_pair[late], chosen_attr[late] = aside_pair[late], aside_attr[late]
            for pair_of_kid, kids in aside:
                found.append(_take_children(kids, late[kids.parent] & (aside_pair[kids.parent] == pair_of_kid)))
        return chosen_pair >= 0, chosen_attr, Children.concat(found), chosen_pair

    def _passes(self, stats: ClassStats) -> np.ndarray:
        """Which of ``stats`` satisfy every constraint (the failing children a suppressing split drops)."""
        return passes(self.constraints, stats, self)

    def _median(self, ev: Evaluation, pick: np.ndarray) -> np.ndarray:
        """Whether each picked pair is split the Median way (Median, or a gain below min_gain)."""
        if self.criterion.one_at_a_time:
            return np.ones(len(pick), dtype=bool)
        return self.criterion.weak(ev.gain[pick])

    def _pick(self, idx: np.ndarray, pos: np.ndarray, ev: Evaluation, P: int) -> np.ndarray:
        """Per partition, the pair (index into ``idx``) whose split is taken, in partition order.

        Median: the first allowable pair in rank order. Other criteria: the lowest normalized
        impurity, ties by rank, balance and cut; a partition whose best gain is below
        ``min_gain`` takes the Median choice instead.
        """
        ok = ev.allowed.nonzero()[0]
        if self.criterion.one_at_a_time or len(ok) == 0:
            return ok
        keys = ev.key[ok].T[::-1]  # lexsort: the last key is the primary one
        # an ordinary split (cost 0) before any suppressing one, then the fewest suppressed per gain
        best = ok[np.lexsort((ev.cut[ok], ev.balance[ok], pos[ok], *keys, ev.cost[ok], idx[ok]))]
        best = best[first_of_run(idx[best])]
        weak = self.criterion.weak(ev.gain[best])
        if weak.any():
            median = ok[np.lexsort((ev.median_cut[ok], ev.median_balance[ok], pos[ok], ev.cost[ok], idx[ok]))]
            median = median[first_of_run(idx[median])]
            best = np.where(weak, median, best)  # both are in partition order
        return best

    # -- the statistics layout (constraints and criteria look columns up by name) --------------
    def counts(self, stats: ClassStats, column: str) -> np.ndarray:
        return stats.counts[self._class_index[column]]

    def moments(self, stats: ClassStats, column: str) -> np.ndarray:
        return stats.moments[self._numeric_index[column]]

    def children_boxes(self, parts: Boxes, chosen: np.ndarray, kids: Children) -> Boxes:
        """Boxes of the children: the parent's box with the split attribute's interval replaced."""
        c = len(kids.parent)
        attr = chosen[kids.parent]
        rows = np.arange(c)
        lo, hi, node = parts.lo[kids.parent].copy(), parts.hi[kids.parent].copy(), parts.node[kids.parent].copy()
        lo[rows, attr], hi[rows, attr], node[rows, attr] = kids.lo, kids.hi, kids.node
        pid = np.arange(self.next_pid, self.next_pid + c, dtype=np.int64)
        self.next_pid += c
        boxes = Boxes(pid, kids.count.astype(np.int64), lo, hi, node, share_budget(parts, kids, self.min_size))
        empty = kids.count == 0
        if empty.any():
            none = np.full((int(empty.sum()), self.d), -1, dtype=np.int64)
            self.leaves.add(boxes.take(empty.nonzero()[0]), none, none)
        return boxes

    def _suppress(self, children: Boxes, kids: Children, in_sql: bool = False) -> np.ndarray:
        """Record the suppressed children as suppressed leaves; returns which children go on
        (non-empty and not suppressed)."""
        dropped = kids.suppressed.astype(bool)
        if dropped.any():
            self.leaves.add_suppressed(children.take(dropped.nonzero()[0]), in_sql)
            self.rows_finished += int(children.n[dropped].sum())
        return (children.n > 0) & ~dropped

    def _report(self, phase: str, open_partitions: int) -> None:
        self.levels += 1
        p = Progress(phase, self.levels, open_partitions, self.rows_finished, time.perf_counter() - self.started)
        log.info("%s level %d: %d open partitions, %d rows finished, %.2fs", p.phase, p.level,
                 p.open_partitions, p.rows_finished, p.elapsed)
        if self.progress:
            self.progress(p)

    # -- SQL-pushed levels ---------------------------------------------------------------------
    @property
    def layout(self) -> Layout:
        labels = [self._class_index[c] for c in self.criterion.class_columns] if can_settle(self.criterion) else []
        return Layout(self.d, self.class_stats, self.numeric_stats, labels, self.hashed)

    def run_sql(self, engine: Engine, work: str, open_: Boxes, memory_rows: int) -> tuple[str, Boxes]:
        """Split partitions larger than ``memory_rows`` in SQL, level by level.

        Returns the (rewritten) working table and the partitions left for the in-memory finish.
        """
        layout = self.layout
        finished: str | None = None  # rows that left the SQL levels (see working.advance)
        kin: Kin | None = None  # the open partitions' parents' splits, and ...
        before: Level | None = None  # ... the groups the last level computed (see siblings)
        while True:
            big = open_.n > memory_rows
            if not big.any():
                return (finished or work), open_
            parts, rest = open_.take(big.nonzero()[0]), open_.take((~big).nonzero()[0])
            stats = engine.fetch(extents_query(work, parts.pid, layout))
            at = np.searchsorted(stats["pid"], parts.pid)  # stats come back sorted by pid
            cmin = np.column_stack([stats[f"min_{c}"][at] for c in layout.q]).astype(np.int64)
            cmax = np.column_stack([stats[f"max_{c}"][at] for c in layout.q]).astype(np.int64)
            settled_parts = None
            if layout.labels:
                counts = {j: value_counts_from_result(stats, layout, j, at) for j in layout.labels}
                settled_parts = self._settled_from(parts.n, counts)

            def compute(pid: np.ndarray, attr: np.ndarray) -> FrequencyGroups:
                return groups_from_result(engine.fetch(groups_query(engine, work, pid, attr, layout)), layout)

            computed: list[Level] = []

            def groups_for(idx: np.ndarray, attr: np.ndarray) -> FrequencyGroups:
                if self.criterion.one_at_a_time:  # one QI per partition: little to share with siblings
                    return compute(parts.pid[idx], attr)
                groups, level = groups_with_siblings(parts.pid[idx], attr, self.d, kin, before, here, compute)
                computed.append(level)
                return groups

            here = np.sort(parts.pid)
            split, chosen, kids, _ = self.decide(parts, cmin, cmax, groups_for, settled_parts)
            before = merge_levels(computed, self.d)
            done = (~split).nonzero()[0]
            self.leaves.add(parts.take(done), cmin[done], cmax[done], in_sql=True)
            self.rows_finished += int(parts.n[done].sum())
            children = self.children_boxes(parts, chosen, kids)
            kin = Kin.of(parts.pid, chosen, kids, children.pid)
            live = children.n > 0  # rows move to every non-empty child, suppressed ones too
            going = self._suppress(children, kids, in_sql=True)  # suppressed: leaves, rows leave the SQL levels
            open_ = Boxes.concat([rest, children.take(going.nonzero()[0])])
            if live.any() or finished is not None:
                moved, finished = advance(engine, work, finished, kids, chosen, parts.pid, children.pid, live,
                                          (children.n > memory_rows) & going, len(done) > 0, layout,
                                          rewrite=repartition)
                work = moved if moved is not None else work
            self._report("sql", len(open_))

    # -- in-memory levels ----------------------------------------------------------------------
    def run_memory(self, batch: Batch, seg: Boxes) -> tuple[np.ndarray, np.ndarray]:
        """Finish the partitions ``seg`` of a fetched batch (rows sorted by partition, in ``seg``
        order). Returns ``(row_index, pid)``: the leaf of every row, by its position in the batch.

        Median under k-anonymity and the privacy models that have a compiled face, over ordered
        QIs (with or without a suppression budget), takes the depth-first compiled finish of
        :mod:`sqlanon.mondrian.compiled.median_finish`; InfoGain,
        Regression and Targets that of :mod:`sqlanon.mondrian.compiled.workload_finish` (where its
        ``applies`` holds): the same partitions, ids and leaves, several times faster.
        """
        if self.depth_first_applies(seg) and int(seg.n.sum()) == batch.rows:
            if self.median_finish_applies(seg):
                return self._depth_first(median_finish.finish(batch.codes, seg.n, self.domains, self.min_size,
                                                              self.threads, batch.disposable,
                                                              *self._model_values(batch), budget=seg.budget), seg)
            return self._depth_first(self._workload_finish(batch, seg), seg)
        batch = batch.copy()
        row = np.arange(batch.rows, dtype=np.int64)
        out_row: list[np.ndarray] = []
        out_pid: list[np.ndarray] = []
        lists: np.ndarray | None = None
        while len(seg):
            M = batch.rows
            XT = batch.codes
            starts = np.cumsum(seg.n) - seg.n
            cmin = np.minimum.reduceat(XT, starts, axis=1).T.astype(np.int64)
            cmax = np.maximum.reduceat(XT, starts, axis=1).T.astype(np.int64)
            seg_of_row = np.repeat(np.arange(len(seg)), seg.n)
            if self.lists and lists is None:
                lists = self._lists(batch, seg_of_row)
            # Sorted row orders computed for the statistics, one per layer of pairs; the chosen
            # pair's order becomes the next level's row order, so children are contiguous runs.
            layers: list[tuple[int, int, np.ndarray, np.ndarray]] = []
            asked = 0

            def groups_for(idx: np.ndarray, attr: np.ndarray) -> FrequencyGroups:
                nonlocal asked
                cuts = np.flatnonzero(np.diff(idx) <= 0) + 1  # a new layer where idx stops increasing
                bounds = list(zip(np.concatenate(([0], cuts)).tolist(), np.concatenate((cuts, [len(idx)])).tolist()))
                # Each layer's groups are computed alone, so the layers may run on several threads.
                done = run_all(lambda b: self._layer(
                    batch, seg_of_row, len(seg), idx[b[0]:b[1]], attr[b[0]:b[1]], M,
                    cmin[idx[b[0]:b[1]], attr[b[0]:b[1]]], cmax[idx[b[0]:b[1]], attr[b[0]:b[1]]], lists),
                    bounds, self.threads)
                out = []
                for (lo, hi), (rows, ordered_rows, groups) in zip(bounds, done):
                    if lists is None:  # else the lists give the next level's order
                        layers.append((asked + lo, asked + hi, rows, ordered_rows))
                    out.append(FrequencyGroups(groups.part + lo, groups.code, groups.stats))
                asked += len(idx)
                return FrequencyGroups.concat(out, self.threads)

            split, chosen, kids, pair = self.decide(seg, cmin, cmax, groups_for, self._settled(batch, seg, seg_of_row))
            finished = ~split[seg_of_row]
            if lists is not None:  # each split partition's rows in its chosen QI's list order
                stay = (~finished).nonzero()[0]
                nxt = lists[chosen[seg_of_row[stay]], stay]
            else:
                nxt = self._arranged(batch, seg_of_row, len(seg), layers, pair, chosen, M)[~finished]
            done = (~split).nonzero()[0]
            self.leaves.add(seg.take(done), cmin[done], cmax[done])
            out_row.append(row[finished])
            out_pid.append(seg.pid[seg_of_row[finished]])
            self.rows_finished += int(finished.sum())
            children = self.children_boxes(seg, chosen, kids)
            going = self._suppress(children, kids)
            nonempty = children.take((children.n > 0).nonzero()[0])
            if len(nonempty) > int(going.sum()):  # rows of suppressed children finish here
                dropped = np.repeat(~going[children.n > 0], nonempty.n)  # nxt holds the children's runs in order
                out_row.append(row[nxt[dropped]])
                out_pid.append(np.repeat(nonempty.pid, nonempty.n)[dropped])
                nxt = nxt[~dropped]
            # one gather per level: compacts and reorders, so children are contiguous runs
            batch, row = batch.take(nxt, self.threads), np.take(row, nxt)
            seg = children.take(going.nonzero()[0])
            if lists is not None and len(seg):
                lists = self._follow(lists, nxt, seg, M)
            self._report("memory", len(seg))
        if not out_row:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        return np.concatenate(out_row), np.concatenate(out_pid)

    def depth_first_applies(self, seg: Boxes) -> bool:
        """Whether :meth:`run_memory` finishes the partitions ``seg`` (all of a batch's rows) by a
        depth-first compiled finish (median_finish or workload_finish), not level by level."""
        return (type(self) is Partitioner and len(seg) > 0 and bool((seg.n > 0).all())
                and (self.median_finish_applies(seg) or (_WORKLOAD_FINISH and self._workload_finish_applies(seg))))

    def median_finish_applies(self, seg: Boxes) -> bool:
        """Whether :mod:`sqlanon.mondrian.compiled.median_finish` finishes this batch (its codes are then
        best fetched row-major: a split moves whole rows)."""
        return _MEDIAN_FINISH and median_finish.applies(self.criterion, self.constraints, self.domains, seg.budget,
                                                        self._exact, int(seg.n.max(initial=0)))

    def _exact(self, column: str) -> bool:
        """Whether numeric ``column``'s moments are summed as integers."""
        i = self._numeric_index.get(column)
        return i is not None and self.numeric_stats[i].exact

    def _model_values(self, batch: Batch) -> tuple[list, dict[str, np.ndarray], dict[str, int]]:
        """What the depth-first finish needs to judge the privacy models: their compiled faces,
        the columns they read (by name, the batch's arrays) and the class columns' sizes."""
        faces = median_finish.faces(self.constraints, self._exact) or []
        values: dict[str, np.ndarray] = {}
        sizes: dict[str, int] = {}
        for f in faces:
            if f.numeric:
                values[f.column] = batch.numbers[self._numeric_index[f.column]]
            else:
                i = self._class_index[f.column]
                values[f.column], sizes[f.column] = batch.classes[i], self.class_stats[i].size
        return faces, values, sizes

    def _workload_finish_applies(self, seg: Boxes) -> bool:
        """Whether :mod:`sqlanon.mondrian.compiled.workload_finish` finishes this batch."""
        exact = [self.numeric_stats[self._numeric_index[c]].exact for c in self.criterion.numeric_columns]
        return workload_finish.applies(self.criterion, self.constraints, self.domains, seg.budget, exact,
                                       int(seg.n.max()), self._exact)

    def _workload_finish(self, batch: Batch, seg: Boxes) -> dict[str, np.ndarray]:
        """The node table of :func:`sqlanon.mondrian.compiled.workload_finish.finish` for this batch."""
        c = self.criterion
        classes = [self._class_index[name] for name in c.class_columns]
        return workload_finish.finish(
            batch.codes, seg.n, self.domains, self.min_size, [batch.classes[j] for j in classes],
            [self.class_stats[j].size for j in classes],
            [batch.numbers[self._numeric_index[name]] for name in c.numeric_columns],
            isinstance(c, Targets), c.min_gain, self.threads, batch.disposable, *self._model_values(batch),
            budget=seg.budget)

    def _depth_first(self, nodes: dict[str, np.ndarray], seg: Boxes) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`run_memory` from the node table of a depth-first finish (median_finish,
        workload_finish): the leaves recorded, ids given out and progress reported as the
        level-by-level loop does. A suppressed leaf (``nodes["suppressed"]``) is recorded and
        counted as the levels do when its parent splits: in the level above its own, before
        the leaves of its level, as an empty region whose rows are finished (suppressed)."""
        R = len(seg)
        pid = median_finish.number(nodes, self.next_pid)
        pid[:R] = seg.pid
        self.next_pid += len(pid) - R
        lo, hi = median_finish.boxes(nodes, seg.lo, seg.hi)
        depth, n = nodes["depth"], nodes["n"]
        gone = nodes.get("suppressed", np.zeros(len(pid), dtype=bool))
        leaf = (nodes["attr"] < 0).nonzero()[0]
        leaf = leaf[np.lexsort((pid[leaf], ~gone[leaf], depth[leaf]))]  # the order the levels record them in
        root = np.zeros(len(pid), dtype=np.int64)  # each node's root: its QIs' hierarchy nodes
        for level in range(1, int(depth.max()) + 1):
            at = (depth == level).nonzero()[0]
            root[at] = root[nodes["parent"][at]] if level > 1 else nodes["parent"][at]
        root[:R] = np.arange(R)
        dropped = gone[leaf]
        if dropped.any():  # the run without suppression: this tree with its suppressing splits undone
            self.untrimmed.append(untrimmed(nodes["parent"], depth, n, nodes["cmin"], nodes["cmax"], gone, pid, leaf,
                                            seg.node[root]))
        none = np.full((len(leaf), self.d), -1, dtype=np.int64)
        self.leaves.add(Boxes(pid[leaf], np.where(dropped, 0, n[leaf]), lo[leaf], hi[leaf], seg.node[root[leaf]],
                              np.where(dropped, 0, nodes["budget"][leaf]) if "budget" in nodes else None),
                        np.where(dropped[:, None], none, nodes["cmin"][leaf]),
                        np.where(dropped[:, None], none, nodes["cmax"][leaf]), suppressed=dropped)
        # suppressed rows finish in their parent's level
        finished = np.bincount(depth[leaf] - dropped, weights=n[leaf], minlength=int(depth.max()) + 1).astype(np.int64)
        made = np.bincount(depth[~gone], minlength=int(depth.max()) + 2)
        for level in range(int(depth.max()) + 1):  # one report per level, as run_memory's loop
            self.rows_finished += int(finished[level])
            self._report("memory", int(made[level + 1]))
        return nodes["row"], pid[nodes["leaf"]]

    def _arranged(self, batch: Batch, seg_of_row: np.ndarray, S: int, layers: list, pair: np.ndarray,
                  chosen: np.ndarray, M: int) -> np.ndarray:
        """The batch rows in the next level's order without attribute lists: each split
        partition's rows as its chosen pair's layer sorted them (sorted afterwards when that layer
        was counted without a sort)."""
        arranged = np.arange(M, dtype=np.int64)
        unordered = np.zeros(S, dtype=bool)  # chosen from a layer counted without a sort
        for i, (first, last, rows, ordered_rows) in enumerate(layers):
            mine = (pair >= first) & (pair < last)
            if ordered_rows is None:
                unordered |= mine
            elif i == 0 and len(rows) == M:  # a first layer of every partition: take it whole
                arranged = ordered_rows
            elif mine.any():
                arranged[rows[mine[seg_of_row[rows]]]] = ordered_rows[mine[seg_of_row[ordered_rows]]]
        if unordered.any():
            self._arrange(batch, seg_of_row, S, unordered.nonzero()[0], chosen, arranged, M)
        return arranged

    def _lists(self, batch: Batch, seg_of_row: np.ndarray) -> np.ndarray:
        """SLIQ's attribute lists (Mehta, Agrawal & Rissanen, EDBT 1996): (d, M), row ``j`` the
        batch rows partition by partition, each partition's sorted by QI ``j``'s code — one sort
        per QI for the whole finish; :meth:`_follow` carries them through every level's splits."""
        lists = np.empty((self.d, batch.rows), dtype=np.int64)

        def one(j: int) -> None:
            lists[j] = sort_and_group(seg_of_row, batch.codes[j])[0]

        run_all(one, range(self.d), self.threads)
        return lists

    def _follow(self, lists: np.ndarray, nxt: np.ndarray, seg: Boxes, M: int) -> np.ndarray:
        """The attribute lists of the next level: ``nxt`` the old position of each new one,
        ``seg`` the next level's partitions (:func:`sqlanon.model.kernels.follow_list`)."""
        dest = np.full(M, -1, dtype=np.int64)
        dest[nxt] = np.repeat(np.arange(len(seg), dtype=np.int64) << 32, seg.n) | np.arange(len(nxt))
        starts_new = np.cumsum(seg.n) - seg.n
        out = np.empty((self.d, len(nxt)), dtype=np.int64)
        run_all(lambda j: kernels.follow_list(lists[j], dest, starts_new, out[j]), range(self.d), self.threads)
        return out

    def _settled(self, batch: Batch, seg: Boxes, seg_of_row: np.ndarray) -> np.ndarray | None:
        """The batch's partitions in which every split scores alike (:func:`sqlanon.mondrian.split.settled`),
        from their label counts: one ``bincount`` per label over the batch."""
        if not can_settle(self.criterion):
            return None
        S = len(seg)
        counts = {}
        for label in self.criterion.class_columns:
            j = self._class_index[label]
            size = self.class_stats[j].size
            counts[j] = np.bincount(seg_of_row * size + batch.classes[j], minlength=S * size).reshape(S, size)
        return self._settled_from(seg.n, counts)

    def _settled_from(self, n: np.ndarray, counts: dict[int, np.ndarray]) -> np.ndarray | None:
        """:func:`sqlanon.mondrian.split.settled` of partitions with ``n`` rows and ``counts[j]`` (P, values)
        rows per value of label ``j``; the other class columns are never read (placeholders)."""
        stats = ClassStats(n, tuple(
            counts[j] if j in counts else np.broadcast_to(np.zeros((1, c.size), np.int64), (len(n), c.size))
            for j, c in enumerate(self.class_stats)
        ), ())
        return settled(self.criterion, stats, self)

    def _layer(self, batch: Batch, seg_of_row: np.ndarray, S: int, idx: np.ndarray, attr: np.ndarray, M: int,
               lo: np.ndarray, hi: np.ndarray, lists: np.ndarray | None = None):
        """Frequency groups of one layer of pairs (each partition at most once), in numpy.

        ``lo``, ``hi``: each pair's smallest and largest code present. Returns ``(rows,
        ordered_rows, groups)``: the batch rows of the layer's partitions, the same rows sorted by
        (partition, code) or None, and the groups.

        When the pairs' code ranges together are no wider than ``_BINS_PER_ROW`` times the rows,
        the groups are counted into one bin per (pair, code) — ``bincount`` and ``add.at``, a
        pass over the rows, no sort (typically 20-40x cheaper; most QIs of real tables have few
        distinct values per partition) — and no row order comes out: the rows of a pair chosen
        from this layer are sorted afterwards (:meth:`_arrange`). Otherwise the rows are sorted
        by (partition, code) and the groups read off the runs. Both give the same groups: the
        same counts and integer sums; floating-point sums are added in a different order.
        """
        rows, local = _rows_of(seg_of_row, S, idx, M)
        width = hi - lo + 1
        if self.counting and int(width.sum()) <= _BINS_PER_ROW * len(rows):
            values = kernels.codes_of_pairs(batch.codes, attr, local, rows)
            return rows, None, self._counted(batch, rows, local, values, lo, width)
        if lists is not None:  # the rows in each pair's list order: sorted without a sort
            ordered_rows = kernels.codes_of_pairs(lists, attr, local, rows)
            part, code, starts = _runs(local, kernels.codes_of_pairs(batch.codes, attr, local, ordered_rows))
        else:
            order, part, code, starts = sort_and_group(local, kernels.codes_of_pairs(batch.codes, attr, local, rows))
            ordered_rows = order if len(rows) == M else rows[order]  # rows is 0..M-1 when whole
        n = np.diff(np.append(starts, len(ordered_rows)))
        if not self.stat_columns:  # Median under k-anonymity: counts are all it needs
            return rows, ordered_rows, FrequencyGroups(part, code, ClassStats(n))
        counts, moments = group_stats(
            ordered_rows, starts, batch.classes, [c.size for c in self.class_stats], batch.numbers)
        return rows, ordered_rows, FrequencyGroups(part, code, ClassStats(n, counts, moments))

    def _counted(self, batch: Batch, rows: np.ndarray, local: np.ndarray, values: np.ndarray, lo: np.ndarray,
                 width: np.ndarray) -> FrequencyGroups:
        """The groups of :meth:`_layer` counted into bins: pair ``i`` owns bins
        ``offset[i] .. offset[i] + width[i] - 1``, one per code from ``lo[i]``."""
        offset = np.cumsum(width) - width
        b, per_bin = kernels.bins_of_rows(local, values, offset - lo, int(width.sum()))
        present = np.flatnonzero(per_bin)
        part = np.searchsorted(offset, present, side="right") - 1
        code = (present - offset[part] + lo[part]).astype(np.int32)
        n = per_bin[present]
        if not self.stat_columns:
            return FrequencyGroups(part, code, ClassStats(n))
        G = len(present)
        group_of_bin = np.zeros(len(per_bin), dtype=np.int64)
        group_of_bin[present] = np.arange(G)
        # class counts column-major (value-major bins), like group_stats
        counts = tuple(kernels.counts_of_groups(k, rows, b, group_of_bin, G, c.size).T
                       for k, c in zip(batch.classes, self.class_stats))
        moments = tuple(kernels.moments_of_groups(v, rows, b, group_of_bin, G) for v in batch.numbers)
        return FrequencyGroups(part, code, ClassStats(n, counts, moments))

    def _arrange(self, batch: Batch, seg_of_row: np.ndarray, S: int, which: np.ndarray, attr: np.ndarray,
                 arranged: np.ndarray, M: int) -> None:
        """Sort the rows of partitions ``which`` by (partition, code of ``attr``) into their
        places in ``arranged`` — what the sorting path of :meth:`_layer` would have given."""
        rows, local = _rows_of(seg_of_row, S, which, M)
        order = sort_and_group(local, kernels.codes_of_pairs(batch.codes, attr[which], local, rows))[0]
        arranged[rows] = rows[order]


def _take_children(kids: Children, keep: np.ndarray) -> Children:
    return Children(*(getattr(kids, f)[keep] for f in Children.__dataclass_fields__))


def _runs(local: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(part, code, starts)`` of the runs of equal ``(local, values)`` in rows already sorted
    by them: each run's pair, code and first position."""
    change = np.empty(len(local), dtype=bool)
    if len(local):
        change[0] = True
        np.not_equal(values[1:], values[:-1], out=change[1:])
        change[1:] |= local[1:] != local[:-1]
    starts = np.flatnonzero(change)
    return local[starts].astype(np.int64), values[starts].astype(np.int32), starts


def _rows_of(seg_of_row: np.ndarray, S: int, idx: np.ndarray, M: int) -> tuple[np.ndarray, np.ndarray]:
    """The batch rows of partitions ``idx`` (sorted) and each row's position in ``idx``."""
    if len(idx) == S:
        return np.arange(M, dtype=np.int64), seg_of_row
    selected = np.zeros(S, dtype=bool)
    selected[idx] = True
    rows = selected[seg_of_row].nonzero()[0]
    return rows, (np.cumsum(selected) - 1)[seg_of_row[rows]]


#: Counting path of the frequency groups while the bins are at most this many per row.
_BINS_PER_ROW = 2
#: Attribute lists for criteria that judge every QI at every level (tests switch them off).
_LISTS = True
#: The depth-first compiled finish of Median under k-anonymity and privacy models (tests switch it off).
_MEDIAN_FINISH = True
#: The depth-first compiled finish of InfoGain, Regression and Targets under k-anonymity (tests
#: switch it off).
_WORKLOAD_FINISH = True


@dataclass
class Batch:
    """Rows of an in-memory batch: QI codes (d, M) column-major — per-partition min/max and the
    gathers stream through one column at a time, 2-3x faster than row-major — plus the class
    codes and centered numeric values the statistics need."""

    codes: np.ndarray
    classes: list[np.ndarray]
    numbers: list[np.ndarray]
    disposable: bool = False  # the finish may reorder the arrays in place (no one reads them after)

    @property
    def rows(self) -> int:
        return self.codes.shape[1]

    def take(self, idx: np.ndarray, threads: int = 1) -> Batch:
        """The rows ``idx``, in that order (one gather per column, on up to ``threads`` threads)."""
        codes = np.empty((len(self.codes), len(idx)), dtype=self.codes.dtype)
        gathers = [(c, out) for c, out in zip(self.codes, codes)] + [(c, None) for c in (*self.classes, *self.numbers)]
        taken = run_all(lambda g: np.take(g[0], idx, out=g[1]), gathers, threads)[len(codes):]
        return Batch(codes, taken[:len(self.classes)], taken[len(self.classes):])

    def copy(self) -> Batch:
        return Batch(np.ascontiguousarray(self.codes, dtype=np.int32), list(self.classes), list(self.numbers))


def finish_in_memory(
    engine: Engine, partitioner: Partitioner, work: str, open_: Boxes, memory_rows: int, purpose: str = "leaves",
    held: dict[str, np.ndarray] | None = None, assign: bool = True,
) -> str | RowLeaves | None:
    """Finish the remaining partitions in batches of about ``memory_rows`` rows, each by
    :class:`BatchFinish` where the engine keeps the rows (:meth:`Engine.map_groups`: fetched
    into this process one batch at a time, or on Spark's executors), and record their leaves.
    ``held``: the working table's rows, fetched already (:func:`sqlanon.mondrian.encode.code_fetched`),
    when they are one batch: finished without fetching them again (their dict is consumed, the
    arrays are not written). ``assign=False``: only the leaves are wanted (the suppression
    baseline, :func:`sqlanon.mondrian.run.baseline`), the rows' leaves are not uploaded.

    Returns the temp table ``(rid, pid[, qhash])`` (:func:`row_columns`) of the rows finished in
    memory, with their leaf (None if there were none); for ``held`` rows the same columns as
    arrays (:class:`~sqlanon.model.partition.RowLeaves`), not uploaded. ``purpose`` names the engine's temp tables
    (one per run).
    """
    if not len(open_):
        return None
    layout = partitioner.layout
    open_ = open_.take(np.argsort(open_.pid))
    batch_of = (balanced_batches(open_.n, max(memory_rows, 1), engine.workers()) if engine.distributed and held is None
                else _batches(open_.n, max(memory_rows, 1)))
    groups = int(batch_of.max()) + 1
    if held is not None and groups != 1:
        raise AssertionError(f"rows held in memory are one batch, not {groups}")
    # Each batch numbers its new partitions from its own first id: a split makes at most
    # ``fanout`` children, and a batch of n rows splits fewer than n times.
    fanout = max([2] + [d.qi.hierarchy.n_nodes for d in partitioner.domains if d.qi.hierarchy is not None])
    rows_of_batch = np.bincount(batch_of, weights=open_.n, minlength=groups).astype(np.int64)
    first_pid = partitioner.next_pid + np.concatenate(([0], np.cumsum(rows_of_batch * fanout)[:-1]))
    # a keyless release's snapshot joins the rows by ranges of row ids (rid_chunks): stored by range
    cluster = None if layout.hashed else engine.join_rows()
    local = held is not None or not engine.distributed  # run here, not shipped to the executors
    finish = BatchFinish(partitioner.fork(local=local), open_, batch_of, first_pid, layout, cluster)
    if held is not None:
        with small_pages():
            kept, little = finish(0, held)
        leaves = {c: little[c] for c in leaf_columns(partitioner.d)}
        # kept here: the publication writes the row map from the arrays (RowLeaves)
        assignment = RowLeaves({c: kept[c] for c in row_columns(layout.hashed)}) if assign else None
        del kept
    else:
        batches = engine.upload("batches", {"pid": open_.pid, "b": batch_of})
        first = {b: int(open_.pid[batch_of == b][0]) for b in range(groups)}
        last = {b: int(open_.pid[batch_of == b][-1]) for b in range(groups)}

        def rows(b: int | None) -> exp.Expression:
            return batch_query(work, batches, layout, b, first.get(b), last.get(b))

        with small_pages():  # the fetched columns and the batch's arrays are new, large and short-lived
            assignment, leaves = engine.map_groups(rows, groups, finish, row_columns(layout.hashed),
                                                   leaf_columns(partitioner.d), purpose)
        engine.drop_temp(batches)
    return_free_memory()  # what the batches freed, before their leaves become matrices (the run's peak)
    partitioner.next_pid = int(first_pid[-1] + rows_of_batch[-1] * fanout)
    partitioner.add_leaves(leaves)
    partitioner.untrimmed += finish.partitioner.untrimmed  # finished in this process (``local``), else none
    return assignment


def leaf_columns(d: int) -> tuple[str, ...]:
    """The columns of leaves as :meth:`Partitioner.leaf_table` gives them."""
    return ("pid", "n", "suppressed", *(f"{part}{i}" for part in ("lo", "hi", "node", "cmin", "cmax") for i in range(d)))


@dataclass(frozen=True)
class BatchFinish:
    """The in-memory finish of one batch as a pure function of its rows: the same code on every
    engine, run in this process or shipped to Spark's executors (it holds no connection).

    ``partitioner``: a fork of the run's partitioner (no leaves); ``open_``: the partitions left
    for the finish, sorted by id, ``batch_of`` the batch of each and ``first_pid`` the first
    partition id each batch may give out; ``cluster``: give the rows by ranges of that many row
    ids (:func:`by_range`), else in the fetched order."""

    partitioner: Partitioner
    open_: Boxes
    batch_of: np.ndarray
    first_pid: np.ndarray
    layout: Layout
    cluster: int | None = None

    def __call__(self, b: int, res: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """``(rows, leaves)``: each row's leaf ``(rid, pid[, qhash])`` (the types the engine gave)
        and the batch's leaves (:func:`leaf_columns`)."""
        layout = self.layout
        seg = self.open_.take((self.batch_of == b).nonzero()[0])
        # partitions in pid order, like seg (the engine often gives the rows in that order)
        at = res["pid"]
        order = None if (at[1:] >= at[:-1]).all() else np.argsort(at, kind="stable")

        def arranged(c: str) -> np.ndarray:
            return res[c] if order is None else res[c][order]

        columns = [arranged(c) for c in layout.q]
        for c in layout.q:  # let go once stacked (``res`` is consumed; 56 MB at 1.5M rows)
            del res[c]
        batch = Batch(
            interleaved(columns).T if self.partitioner.median_finish_applies(seg) else workload_finish.stacked(columns),
            [arranged(c).astype(np.int64) for c in layout.k],
            [arranged(c).astype(np.int64 if s.exact else np.float64) for c, s in zip(layout.t, layout.numeric_stats)],
            disposable=True,
        )
        del columns
        # Arrays below glibc's mmap threshold come from the heap, whose freed pages stay resident:
        # give them back here (what the fetch's conversion freed) and after the finish (what it
        # freed, before the next fetch). At 100M rows under memory_limit='2GB' the batches are
        # the run's peak; a trim takes a few milliseconds.
        return_free_memory()
        worker = self.partitioner.fork(first_pid=int(self.first_pid[b]))
        rows, pid = worker.run_memory(batch, seg)
        del batch
        self.partitioner.absorb(worker)  # progress counters (in this process; a copy on an executor)
        keep = rows if order is None else order[rows]
        if len(keep) != len(at):  # run_memory finishes every partition, so every row has its leaf
            raise AssertionError(f"the in-memory finish placed {len(keep)} of {len(at)} rows")
        # the leaves in the fetched order (one scatter, not two gathers of rid and qhash), then
        # by range of row ids when the publication joins them so (cluster)
        leaf = np.empty(len(at), dtype=pid.dtype)
        leaf[keep] = pid
        kept = {"rid": res["rid"], "pid": leaf, **({"qhash": res["qhash"]} if layout.hashed else {})}
        order = None if self.cluster is None else by_range(kept["rid"], self.cluster)
        if order is not None:
            kept = {c: v[order] for c, v in kept.items()}
        leaves = worker.leaf_table()
        del worker
        return_free_memory()
        return kept, leaves


def by_range(rid: np.ndarray, most: int) -> np.ndarray | None:
    """The order that lists rows by range of ``most`` row ids (``rid // most``; stable, a radix
    sort), or None when they are in one range (or too many for 16-bit range numbers). The
    in-memory rows of a keyless release are stored so (:class:`BatchFinish`): each statement of
    its snapshot joins one such range (:func:`sqlanon.publish.rules.rid_chunks`), and the zone
    maps of the stored rows then skip the rest. Over temp tables alone (100M rows, ten ranges,
    ``memory_limit='2GB'``) that took the snapshot's statements from 46 s to 31 s; in the whole
    run at 100M no gain has been measured yet (4.1-4.7 s a statement before and after). The
    sort costs 30-50 ms per batch of 1.9M rows."""
    if not len(rid):
        return None
    key = rid // most
    low, high = int(key.min()), int(key.max())
    if low == high or high - low >= 2**16:
        return None
    return np.argsort((key - low).astype(np.uint16), kind="stable")


def interleaved(columns: Sequence[np.ndarray]) -> np.ndarray:
    """The columns side by side as a row-major int32 array ``(M, d)``: the codes of a batch as
    the depth-first finishes work on them (:mod:`sqlanon.mondrian.compiled.median_finish`; ``.T`` is
    the ``(d, M)`` view of :class:`Batch`). Filled a block of rows at a time, so each block
    stays in the CPU caches while every column writes its stripe (column by column over the
    whole array took five times as long at 10M rows x 9 QIs)."""
    M = len(columns[0]) if columns else 0
    out = np.empty((M, len(columns)), dtype=np.int32)
    for start in range(0, M, _FILL_ROWS):
        block = out[start:start + _FILL_ROWS]
        for j, column in enumerate(columns):
            block[:, j] = column[start:start + _FILL_ROWS]
    return out


#: Rows of one block of :func:`interleaved` (9 QIs: 2.3 MiB).
_FILL_ROWS = 65_536


def balanced_batches(n: np.ndarray, limit: int, workers: int) -> np.ndarray:
    """Batch number per partition (sizes ``n``, each at most ``limit``) for ``workers`` that run
    the batches at once (a distributed engine's executor cores, :meth:`Engine.map_groups
    <sqlanon.engine.base.Engine.map_groups>`): the fewest batches that is a multiple of
    ``workers`` with at least ``sum(n) / limit`` of them, filled alike -- the partitions largest
    first, dealt to the batches in snake order (0, 1, ..., G-1, G-1, ..., 0, ...), a few
    thousand rows apart when the partitions are many and small. One more round of ``workers``
    batches whenever the fullest would exceed ``limit``. Every core then finishes the same
    share of the rows: the finish takes as long as the fullest core (the greedy batches of
    :func:`_batches` gave 7 batches of 1.23M-2.0M rows at 10M Agrawal rows, 4.0M rows on one of
    two cores against 5.0M balanced). Which partitions share a batch only changes the ids the
    batches give out, never a decision (each partition is finished on its own)."""
    total = int(n.sum())
    workers = max(workers, 1)
    groups = workers * max(1, -(-total // (limit * workers)))
    order = np.argsort(-n, kind="stable")
    while True:
        round_, at = np.divmod(np.arange(len(n)), groups)
        snake = np.where(round_ % 2 == 0, at, groups - 1 - at)
        out = np.empty(len(n), dtype=np.int64)
        out[order] = snake
        if groups >= len(n) or np.bincount(out, weights=n, minlength=groups).max() <= limit:
            used = np.unique(out)  # numbered 0.. without gaps (fewer partitions than batches)
            return np.searchsorted(used, out)
        groups += workers


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
