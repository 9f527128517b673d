"""Mondrian's suppression limit (``anonymize(..., suppression=f)``): the local budget, the
suppressing splits and their gain, in one place. :mod:`sqlanon.mondrian.builder` (both loops)
and :mod:`sqlanon.mondrian.sample` (Rothko-S) call it; Median's compiled depth-first finish
(:mod:`sqlanon.mondrian.compiled.median_finish`: ``_trim``, ``_trim_models``, ``_shares``) states the same
rule in compiled loops, operation by operation, and ``tests/mondrian/test_suppression_compiled.py`` holds
the two to identical partitions; so does the workload criteria's compiled finish
(:mod:`sqlanon.mondrian.compiled.workload_finish` with :mod:`sqlanon.mondrian.compiled.workload_trim`,
``tests/mondrian/test_workload_suppression_compiled.py``).

ARX's suppression limit, made *local* so that the decision is the same in the SQL levels and in
the in-memory batches (which run independently, even on Spark executors), whatever
``memory_rows`` is:

* **The budget.** The root may suppress ``B = floor(f x N)`` rows. Every partition carries the
  rows it may still suppress (``Boxes.budget``, through :meth:`Partitioner.run_sql`, the batches
  of :func:`finish_in_memory` and :meth:`Partitioner.run_memory`). A split that suppresses ``s``
  rows of a partition with budget ``b`` leaves ``L = b - s`` to its kept children
  (:func:`share_budget`): in proportion to their rows ``n_i``, each capped at ``n_i - m`` (``m``
  the fewest rows a class satisfying the constraints has: every split keeps a passing child, so
  a subtree of ``n_i`` rows can never suppress more) with the excess handed to the siblings
  (water-filling), and rounded by largest remainders (Hamilton: the floors, then the units left
  one each to the largest remainders ``L n_i mod N``, ties by child order). Suppressed and empty
  children get 0. So the children receive ``min(L, sum of caps)``: nothing is lost to rounding,
  and nothing goes where it provably cannot be spent. Exact integer arithmetic: the SQL levels,
  the in-memory batches and the compiled finish agree. The total suppressed never exceeds ``B``.
* **What a partition leaves unspent is not passed to its later siblings** (decided, issue 52).
  A hand-over needs the earlier siblings' subtrees *finished*: their unspent budget is known only
  then. Rothko-T splits large partitions breadth-first in SQL, so a partition is decided there
  while its earlier siblings' subtrees are still open; the in-memory batches (a partition's
  children may land in different batches, on Spark on different executors) never see each
  other's outcome; and which partitions share a batch, or are split in SQL at all, is what
  ``memory_rows`` decides. Any hand-over between siblings in the same batch would therefore make
  the release depend on ``memory_rows`` (and on the batching). A hand-over independent of it
  needs a sequential order over the whole tree: every partition without an ordinary split
  deferred, in the SQL levels and in every batch, until all earlier siblings' subtrees are done
  -- depth-first over the whole table, without the batches' (and Spark's) independence -- or a
  second pass over the finished leaves. Neither is done. The part of a hand-over decidable from
  the tree alone is done: the caps above (a child too small to spend its share passes it on).
* **A suppressing split** (:func:`suppressing`): a hierarchy node into its children, or an
  ordered QI's binary cut, whose children that break the constraints -- any of them: k,
  l-diversity, ... -- hold together at most ``b`` rows while at least one child satisfies them,
  and whose *gain* is positive. The failing children become suppressed leaves.
* **The gain** (:func:`suppression_gain`), from the information loss of Xu et al. (KDD 2006,
  NCP) and ARX: a row's normalized width on a QI (:func:`widths`) is 0 for one value and 1 for
  the whole domain (ordered: ``(num(max) - num(min)) / span``; hierarchical:
  ``(leaves(node) - 1) / (leaves(root) - 1)``). The gain is the drop in the partition's rows'
  summed width: the kept children's rows narrow on the split QI ``a``
  (``sum_kept n_i (w_a - w_a(child i))``), and each suppressed row widens to 1 on every QI
  (``s x sum_j (1 - w_j)``, the partition's *slack*, :func:`slack`). The children's widths on
  the other QIs are not known before they are split (they never grow), so this is the gain the
  split guarantees, a lower bound; a split without positive gain is never taken (trimming a row
  that barely narrows the class costs more width than it saves).
* **The budget buys splits first, then the most gain per row.** A partition first looks for an
  ordinary split (today's decision, unchanged, so ``suppression=0`` gives exactly the rules
  without it); only a partition with none on any QI may suppress, and it takes the suppressing
  split with the fewest suppressed rows per unit of gain, ties broken by the criterion's usual
  order (rank order for Median; key, rank, balance, cut for the workload criteria), then the
  most balanced cut and the lowest. ``cost = s / gain`` is element-wise float64 arithmetic on
  the same frequency groups and partition extents in the SQL levels, in memory and in the
  compiled finish, so the choice is the same in all. An ordered cut thus trims an outlier off
  (a far value narrows the kept rows a lot) rather than the nearest row.
* **Under Median, a hierarchy node's small children no longer block it** (issue 52). A
  hierarchical split makes one child per child node, and any child of fewer than k rows
  refuses it however large the partition: on CUP (k=50) ZIP's root has a child ``1****`` of 49
  rows, so ZIP never split at all and the other QIs cut the table into classes all published
  at ZIP ``*`` (80% of the rows with AGE, GENDER, INCOME and STATE as QIs). An ordered QI's
  cut is refused only near the leaves. So under Median a hierarchical QI's suppressing split
  (above: its failing children within the budget, a passing child, positive gain) *is* its
  QI's allowable split: the first QI in rank order with an ordinary split, or a hierarchical
  one with a suppressing split, is taken (:meth:`~sqlanon.mondrian.builder.Partitioner.decide`).
  This is the suppression threshold of Samarati (*Protecting Respondents' Identities in
  Microdata Release*, TKDE 2001: ``MaxSup``) that ARX's suppression limit implements (Prasser &
  Kohlmayer 2015): a generalization is acceptable when the records of its classes smaller than
  k fit the limit, and those records are suppressed -- here the generalization is one hierarchy
  level further down, within one partition, against its local budget. The decision
  reads the partition's own frequency groups and budget only, so it is the same in the SQL
  levels, the in-memory batches and every engine, whatever ``memory_rows`` is (hierarchical
  QIs always finish level by level: the compiled finishes take ordered QIs only). The
  workload criteria rank splits by the impurity of their children, which a suppressing split
  does not score, so they keep the rule above.
* **Rothko-S** (:mod:`sqlanon.mondrian.sample`): the tree grown on a sample makes ordinary
  splits only (a hypothesis test cannot promise that a sample's failing side holds at most the
  budget's rows of the population); once the round's tree is pruned on the real statistics, the
  round root's budget is shared down its kept splits with :func:`share_budget` on the real row
  counts (:func:`share_down`), and each leaf spends its share in the exact finish (Rothko-T's
  levels, the in-memory finish). So the total stays within ``B``, and with ``rows`` at least the
  table's rows the release equals Rothko-T's.
* **Publication** (:mod:`sqlanon.publish.suppression`): a suppressed leaf is a region of the
  rules without rows; its rows get no region in the row map, so they are published with every
  QI fully generalized and ``eq_class`` NULL, are no class, and are counted and verified
  (at most ``B``) like the single-dimensional searches' suppressed rows;
  :class:`sqlanon.Release` reports the rows allowed and used (``suppression``).

:func:`root_shares` measures what suppression buys: per QI, the share of rows published
generalized to the whole domain; the "before" figures of :class:`sqlanon.Release` are the same
request's without suppression: read off the run's own tree with its suppressing splits undone
when one depth-first finish grew it (:func:`untrimmed`, :func:`shares_untrimmed`), else
partitioned once more (:func:`sqlanon.mondrian.run.baseline`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..model.domain import Domain
from ..model.partition import Boxes, Regions
from ..model.privacy import Constraint
from ..model.stats import FrequencyGroups, Layout, Running, first_of_run
from .split import Children, Evaluation, _best, _passes, _positions, _runs


def suppressing(ev: Evaluation, attr: np.ndarray, node: np.ndarray, groups: FrequencyGroups,
                domains: Sequence[Domain], constraints: Sequence[Constraint], layout: Layout,
                budget: np.ndarray, slack: np.ndarray) -> Evaluation:
    """``ev`` (:func:`sqlanon.mondrian.split.evaluate` of the pairs ``attr``/``node`` from
    ``groups``) with the suppressing split of every pair that has no ordinary split and a
    ``budget`` (Q,) > 0 (:func:`_spend`); ``slack`` (Q,) is the pair's partition's :func:`slack`."""
    spend = ~ev.allowed & (budget > 0)  # only pairs without an ordinary split may suppress
    if not spend.any():
        return ev
    out = {f: getattr(ev, f).copy() for f in Evaluation.__dataclass_fields__}
    _spend(groups, attr, node, domains, spend, budget, slack, groups.totals(len(attr)), constraints, layout, out)
    return Evaluation(**out)


def widths(cmin: np.ndarray, cmax: np.ndarray, node: np.ndarray, domains: Sequence[Domain]) -> np.ndarray:
    """(P, d) normalized widths of P partitions, the information loss of Iyengar (KDD 2002) and
    Xu et al. (KDD 2006, NCP; ARX's "loss"): 0 for a single value, 1 for the whole domain.

    Ordered QI: ``(num(cmax) - num(cmin)) / (num(last) - num(0))`` (0 when the column has one
    position); hierarchical QI: ``(leaves(node) - 1) / (leaves(root) - 1)`` (0 when the
    hierarchy is one leaf). ``cmin``/``cmax`` are the partitions' smallest and largest codes,
    ``node`` their nodes; all (P, d). Element-wise float64 arithmetic, the same in every path.
    """
    w = np.zeros(cmin.shape, dtype=np.float64)
    for j, d in enumerate(domains):
        if d.num is not None:
            span = d.num[-1] - d.num[0]
            if span > 0:
                w[:, j] = (d.num[cmax[:, j]] - d.num[cmin[:, j]]) / span
        else:
            h = d.qi.hierarchy
            assert h is not None
            if h.n_leaves > 1:
                nodes = node[:, j]
                w[:, j] = (h.leaf_hi[nodes].astype(np.int64) - h.leaf_lo[nodes]) / (h.n_leaves - 1)
    return w


def slack(cmin: np.ndarray, cmax: np.ndarray, node: np.ndarray, domains: Sequence[Domain]) -> np.ndarray:
    """(P,) what suppressing one row of each partition costs: ``sum_j (1 - w_j)`` over the QIs in
    their order (:func:`widths`), the widths a suppressed row (published fully generalized, width
    1 on every QI) gives up. Summed one QI at a time, left to right, so the float result is the
    same in the SQL levels and in memory."""
    w = widths(cmin, cmax, node, domains)
    out = np.zeros(len(w))
    for j in range(w.shape[1]):
        out = out + (1.0 - w[:, j])
    return out


def suppression_gain(removed: np.ndarray, lost: np.ndarray, slack: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(gain, cost)`` of suppressing splits: ``gain = removed - lost x slack`` and
    ``cost = lost / gain`` (meaningful where ``gain > 0``, +inf elsewhere).

    The gain is the drop of the partition's rows' summed normalized width (NCP, Xu et al. 2006;
    ARX's loss) that the split guarantees: before, ``n`` rows at the partition's widths ``w_j``;
    after, each kept child's rows at its own width on the split QI ``a`` and (at most) the
    partition's on the others, and the ``lost`` suppressed rows at width 1 on every QI. So
    ``gain = sum_kept n_i (w_a - w_a(child i)) - lost x sum_j (1 - w_j)``; ``removed`` is the
    first term and ``slack`` the second's sum (:func:`slack`). The children's widths on the other
    QIs are not known before they are split (they are never wider), so this is a lower bound of
    the real gain. Element-wise float64, evaluated the same way in the SQL levels and in memory.
    """
    gain = removed - lost * slack
    with np.errstate(divide="ignore", invalid="ignore"):
        cost = np.where(gain > 0, lost / np.where(gain > 0, gain, 1.0), np.inf)
    return gain, cost


def _spend(groups, attr, node, domains, spend, budget, slack, total, constraints, layout, out) -> None:
    """The suppressing split of the pairs ``spend`` (no ordinary split, budget > 0), into ``out``.

    Ordered QI: every cut (both sides non-empty) where exactly one side fails the constraints,
    holds at most the budget, and the gain (:func:`suppression_gain`: the kept side's rows times
    the width it sheds, ``(num(cmax) - num(cmin)) / span`` of the partition minus the kept
    side's, less the suppressed rows' slack) is positive; the pair's choice is the smallest
    suppressed rows per gain, then the smallest ``|2 L - n|``, then the lowest cut. Hierarchical
    QI: the node's children, when the non-empty ones that fail hold at most the budget, at least
    one passes, and the gain (``sum_kept n_i (leaves(node) - leaves(child i)) / (leaves(root) - 1)``
    less the slack) is positive.
    """
    in_spend = spend[groups.part]
    hierarchical = np.array([d.num is None for d in domains], dtype=bool)[attr[groups.part]]
    for j in np.unique(attr[groups.part[in_spend & ~hierarchical]]):
        num = domains[j].num
        span = num[-1] - num[0]
        idx = (in_spend & (attr[groups.part] == j)).nonzero()[0]
        sub = FrequencyGroups(groups.part[idx], groups.code[idx], groups.stats.take(idx))
        running = Running(sub)
        judged = _positions(layout, total, constraints)
        running.prepare(*judged)
        part = sub.part
        code = sub.code.astype(np.int64)
        last = np.append(part[1:] != part[:-1], True)  # a pair's last group: its right side is empty
        starts = first_of_run(part)
        first_code = np.repeat(code[starts], np.diff(np.append(starts, len(part))))  # the pair's cmin
        last_code = np.repeat(code[last], np.diff(np.append(starts, len(part))))  # and cmax
        g = (~last).nonzero()[0]
        if len(g) == 0:
            continue
        left = running.left(g, *judged)
        right = Running.right(total, part[g], left)
        ok_l, ok_r = _passes(constraints, left, layout), _passes(constraints, right, layout)
        nl = left.n
        nr = total.n[part[g]] - nl
        b = budget[part[g]]
        drop_left = ~ok_l & ok_r & (nl <= b)
        drop_right = ok_l & ~ok_r & (nr <= b)
        cand = (drop_left | drop_right).nonzero()[0]
        if len(cand) == 0:
            continue
        p, gc, dl = part[g[cand]], g[cand], drop_left[cand]
        lost = np.where(dl, nl[cand], nr[cand])
        kept = total.n[p] - lost
        # the kept side's codes: [next code, cmax] when the left side goes, [cmin, cut] otherwise
        kept_lo = np.where(dl, code[gc + 1], first_code[gc])
        kept_hi = np.where(dl, last_code[gc], code[gc])
        if span > 0:
            w_part = (num[last_code[gc]] - num[first_code[gc]]) / span
            w_kept = (num[kept_hi] - num[kept_lo]) / span
        else:
            w_part = w_kept = np.zeros(len(cand))
        gain, cost = suppression_gain(kept * (w_part - w_kept), lost, slack[p])
        good = gain > 0
        if not good.any():
            continue
        p, gc, dl, lost, cost = p[good], gc[good], dl[good], lost[good], cost[good]
        nlc = nl[cand[good]]
        balance = np.abs(2 * nlc - total.n[p])
        best = _best(p, (cost, balance, code[gc]))
        q = p[best]
        out["allowed"][q] = True
        out["cut"][q] = out["median_cut"][q] = code[gc[best]]
        out["left"][q] = out["median_left"][q] = nlc[best]
        out["balance"][q] = out["median_balance"][q] = balance[best]
        out["suppress"][q] = lost[best]
        out["drop"][q] = np.where(dl[best], 1, 2)
        out["cost"][q] = cost[best]
        out["key"][q], out["gain"][q] = 0.0, 0.0
    for j in np.unique(attr[groups.part[in_spend & hierarchical]]):
        h = domains[j].qi.hierarchy
        _, run_part, run_child, stats = _runs(groups, in_spend & hierarchical & (attr[groups.part] == j), node, h)
        if len(run_part) == 0 or h.n_leaves < 2:
            continue
        ok = _passes(constraints, stats, layout)
        P = len(node)
        lost = np.bincount(run_part, weights=np.where(ok, 0, stats.n), minlength=P).astype(np.int64)
        passing = np.bincount(run_part, weights=ok, minlength=P) > 0
        # sum over the kept children of n_i (leaves(node) - leaves(child)): an exact integer
        leaves = h.leaf_hi.astype(np.int64) - h.leaf_lo + 1
        shed = np.where(ok, stats.n * (leaves[node[run_part]] - leaves[run_child]), 0)
        removed = np.zeros(P, dtype=np.int64)
        np.add.at(removed, run_part, shed)
        q = (spend & passing & (lost <= budget) & (lost > 0)).nonzero()[0]
        q = q[np.isin(q, run_part)]
        gain, cost = suppression_gain(removed[q] / (h.n_leaves - 1), lost[q], slack[q])
        q, cost = q[gain > 0], cost[gain > 0]
        out["allowed"][q] = True
        out["cut"][q] = out["median_cut"][q] = -1
        out["suppress"][q] = lost[q]
        out["cost"][q] = cost
        out["key"][q], out["gain"][q] = 0.0, 0.0



def share_budget(parts: Boxes, kids: Children, least: int = 1) -> np.ndarray:
    """Each child's suppression budget (the module docstring).

    A parent with budget ``b`` whose split suppresses ``s`` rows (its suppressed children's)
    leaves ``L = b - s`` to its kept (non-suppressed, non-empty) children ``i`` of ``n_i`` rows:

    1. **Caps.** A child can never suppress more than ``c_i = n_i - least`` rows in its subtree
       (``least``: the fewest rows a class satisfying the constraints has; every split keeps a
       passing child), so what would go beyond is handed to its siblings: the children whose
       proportional share ``L' n_i / N'`` exceeds ``c_i`` get ``c_i``, and ``L'`` (what is left)
       is shared among the others (``N'`` their rows), repeated until no share exceeds its cap
       (water-filling; each round caps at least one more child).
    2. **Largest remainders** (Hamilton) among the uncapped children: ``floor(L' n_i / N')`` each,
       then the ``L' - sum floor`` units left one each to the children with the largest
       remainders ``L' n_i mod N'``, ties by child order (the order of ``kids``). No unit goes
       to a child with remainder 0, so no child passes its cap.

    Suppressed and empty children get 0. The children of a parent get ``min(L, sum c_i)`` in
    all: nothing is lost to rounding. Exact integer arithmetic, vectorized over all parents, so
    the SQL levels and the in-memory batches agree exactly.
    """
    c = len(kids.parent)
    out = np.zeros(c, dtype=np.int64)
    b = parts.budget[kids.parent]
    if c == 0 or not (b > 0).any():
        return out
    P = len(parts)
    par = kids.parent
    dropped = kids.suppressed.astype(bool)
    n = kids.count.astype(np.int64)
    lost = np.bincount(par, weights=np.where(dropped, n, 0), minlength=P).astype(np.int64)
    left = parts.budget - lost  # (P,)
    assert (left[par] >= 0).all(), "a split suppressed more rows than its partition's budget"
    eligible = ~dropped & (n > 0) & (left[par] > 0)
    cap = np.where(eligible, np.maximum(n - least, 0), 0)
    capped = eligible & (cap == 0)
    while True:
        free = eligible & ~capped
        rows = np.bincount(par, weights=np.where(free, n, 0), minlength=P).astype(np.int64)
        rest = left - np.bincount(par, weights=np.where(capped, cap, 0), minlength=P).astype(np.int64)
        over = free & (rest[par] * n > cap * rows[par])
        if not over.any():
            break
        capped |= over
    out[capped] = cap[capped]
    free = free.nonzero()[0]
    if len(free):
        p = par[free]
        share = rest[p] * n[free]
        floor, remainder = share // rows[p], share % rows[p]
        units = rest - np.bincount(p, weights=floor, minlength=P).astype(np.int64)  # (P,) left over
        order = np.lexsort((free, -remainder, p))  # per parent: largest remainder, then child order
        f, q = free[order], p[order]
        starts = first_of_run(q)
        place = np.arange(len(q)) - np.repeat(starts, np.diff(np.append(starts, len(q))))
        out[f] = floor[order] + (place < units[q])
    return out



def root_shares(regions: Regions, domains: Sequence[Domain], rows: int) -> dict[str, float]:
    """Per QI, the share of the ``rows`` rows whose class is generalized to the whole domain:
    a hierarchical QI at the root node, an ordered QI whose class spans the smallest to the
    largest code of the table (the data bounds). Suppressed rows (the rows no leaf holds) count."""
    boxes = regions.boxes
    kept = boxes.n > 0
    if regions.suppressed is not None:
        kept &= ~regions.suppressed
    return _shares(boxes.n[kept], boxes.node[kept], regions.cmin[kept], regions.cmax[kept], domains, rows)


def _shares(n: np.ndarray, node: np.ndarray, cmin: np.ndarray, cmax: np.ndarray, domains: Sequence[Domain],
            rows: int) -> dict[str, float]:
    """:func:`root_shares` of the classes of ``n`` rows with hierarchy nodes ``node`` and code
    extents ``cmin``/``cmax`` ((C, d) each); the ``rows`` no class holds count as suppressed."""
    suppressed = rows - int(n.sum())
    out = {}
    for j, d in enumerate(domains):
        if d.num is None:  # hierarchical: the root node is 0
            whole = node[:, j] == 0
        else:
            lo, hi = cmin[:, j], cmax[:, j]
            whole = (lo == lo.min()) & (hi == hi.max()) if len(lo) else np.zeros(0, dtype=bool)
        out[d.qi.name] = (int(n[whole].sum()) + suppressed) / rows if rows else 0.0
    return out


@dataclass(frozen=True)
class Untrimmed:
    """What a depth-first node table (:mod:`sqlanon.mondrian.compiled`) tells of the same
    request without suppression (:func:`untrimmed`): the ids of its leaves under a suppressing
    split (``below``; every suppressed leaf is) and the topmost partitions that took one (``n``
    rows, hierarchy ``node``, code extents ``cmin``/``cmax``; (T,) and (T, d))."""

    below: np.ndarray
    n: np.ndarray
    node: np.ndarray
    cmin: np.ndarray
    cmax: np.ndarray


def untrimmed(parent: np.ndarray, depth: np.ndarray, n: np.ndarray, cmin: np.ndarray, cmax: np.ndarray,
              suppressed: np.ndarray, pid: np.ndarray, leaf: np.ndarray, node: np.ndarray) -> Untrimmed:
    """The :class:`Untrimmed` of a depth-first finish's node table (``parent``, ``depth`` (roots
    0), ``n``, ``cmin``/``cmax`` the extents of every node's rows, ``suppressed`` leaves; ``pid``
    the nodes' ids, ``leaf`` the leaves' indices, ``node`` each node's hierarchy nodes).

    Why the request without suppression is this tree with every topmost suppressing split not
    taken (the split partition a leaf): a partition suppresses only when it has no ordinary
    split on any QI (the module docstring; the compiled finishes take ordered QIs only, so the
    hierarchical exception under Median never arises in them), and the ordinary decision reads
    the partition's rows alone, never its budget. So every partition above a suppressing split
    holds the same rows and makes the same split in both runs, and a partition that suppresses
    has no split at all without a budget: it is a leaf there."""
    trims = np.zeros(len(parent), dtype=bool)
    trims[parent[suppressed]] = True
    under = np.zeros(len(parent), dtype=bool)  # a suppressing split above (not at) the node
    for level in range(1, int(depth.max(initial=0)) + 1):
        at = (depth == level).nonzero()[0]
        up = parent[at]
        under[at] = under[up] | trims[up]
    top = (trims & ~under).nonzero()[0]
    below = leaf[under[leaf]]
    return Untrimmed(pid[below].astype(np.int64), n[top].astype(np.int64), node[top], cmin[top], cmax[top])


def shares_untrimmed(regions: Regions, untrims: Sequence[Untrimmed], domains: Sequence[Domain],
                     rows: int) -> dict[str, float]:
    """:func:`root_shares` of the same request without suppression, from the run's ``regions``
    and the :class:`Untrimmed` of the node tables that made every suppressing split: its leaves
    are the run's leaves under no suppressing split and the topmost partitions that took one
    (:func:`untrimmed`). Raises AssertionError when a suppressed leaf is under none of them (a
    suppressing split made elsewhere: the caller must partition the baseline instead)."""
    below = np.concatenate([u.below for u in untrims]) if untrims else np.zeros(0, np.int64)
    out = np.isin(regions.boxes.pid, below)
    dropped = regions.suppressed if regions.suppressed is not None else np.zeros(len(out), dtype=bool)
    if (dropped & ~out).any():
        raise AssertionError("a suppressing split made outside the depth-first finish: no baseline from the run")
    keep = ~out & (regions.boxes.n > 0)
    d = len(domains)

    def stacked(mine: np.ndarray, part: str) -> np.ndarray:
        return np.concatenate([mine[keep].astype(np.int64)]
                              + [getattr(u, part).astype(np.int64).reshape(-1, d) for u in untrims])

    n = np.concatenate([regions.boxes.n[keep].astype(np.int64)] + [u.n for u in untrims])
    return _shares(n, stacked(regions.boxes.node, "node"), stacked(regions.cmin, "cmin"),
                   stacked(regions.cmax, "cmax"), domains, rows)


def share_down(parent: np.ndarray, depth: np.ndarray, lo: np.ndarray, n: np.ndarray, keep: np.ndarray,
               budget: np.ndarray, least: int) -> np.ndarray:
    """Every node's budget in a tree of ordinary splits (Rothko-S's round, after pruning):
    the roots' ``budget``, and down every split kept, :func:`share_budget` of the parent's
    among its children on their real rows ``n``. ``parent`` (-1 for a root), ``depth``, ``lo``
    (a child's interval start, which orders siblings), ``keep`` (the nodes still in the tree:
    a kept child's siblings are all kept) index the tree's nodes; ``least`` as
    :func:`share_budget`'s. Nodes not kept get 0."""
    out = np.where(parent < 0, budget, 0).astype(np.int64)
    for d in range(1, int(depth.max(initial=0)) + 1):
        i = (keep & (depth == d)).nonzero()[0]
        if not len(i):
            continue
        i = i[np.lexsort((lo[i], parent[i]))]  # siblings together, by interval (child order)
        p, at = np.unique(parent[i], return_inverse=True)
        zeros = np.zeros((len(p), 1), np.int64)
        parts = Boxes(p, n[p], zeros, zeros, zeros, out[p])
        none = np.zeros(len(i), np.int64)
        out[i] = share_budget(parts, Children(at.astype(np.int64), none, none, none, n[i], np.zeros(len(i), bool)),
                              least)
    return out
