"""Outlier suppression for Mondrian (``anonymize(..., suppression=f)``, issue 19 part 1).

ARX's suppression limit, made *local* so that the decision is the same in the SQL levels and in
the in-memory batches (which run independently, even on Spark executors), whatever
``memory_rows`` is:

* **The budget.** The root may suppress ``B = floor(f x N)`` rows. Every partition carries the
  rows it may still suppress (``Boxes.budget``, through :meth:`Partitioner.run_sql`, the batches
  of :func:`finish_in_memory` and :meth:`Partitioner.run_memory`). A split that suppresses ``s``
  rows of a partition with budget ``b`` leaves ``L = b - s`` to its kept children
  (:func:`sqlanon.mondrian.builder.share_budget`): in proportion to their rows ``n_i``, each
  capped at ``n_i - m`` (``m`` the fewest rows a class satisfying the constraints has: every
  split keeps a passing child, so a subtree of ``n_i`` rows can never suppress more) with the
  excess handed to the siblings (water-filling), and rounded by largest remainders (Hamilton:
  the floors, then the units left one each to the largest remainders ``L n_i mod N``, ties by
  child order). Suppressed and empty children get 0. So the children receive
  ``min(L, sum of caps)``: nothing is lost to rounding, and nothing goes where it provably
  cannot be spent. Exact integer arithmetic: the SQL levels and the in-memory batches agree.
* **What a partition leaves unspent is not passed on.** A partition that stops splitting with
  budget left cannot hand it to a sibling: siblings are decided at the same level, in the SQL
  levels or in different in-memory batches (on Spark, different executors) that never see each
  other's outcome, so any hand-over would depend on ``memory_rows`` and the batching, or need a
  second, sequential pass. The caps above are the part of it that is decidable from the tree
  alone (a child too small to spend its share). The total suppressed never exceeds ``B``.
* **A suppressing split** (:func:`sqlanon.mondrian.split.evaluate`): a hierarchy node into its
  children, or an ordered QI's binary cut, whose children that break the constraints -- any
  of them: k, l-diversity, ... -- hold together at most ``b`` rows while at least one child
  satisfies them, and whose *gain* is positive. The failing children become suppressed leaves.
* **The gain** (:func:`sqlanon.mondrian.split.suppression_gain`), from the information loss of
  Xu et al. (KDD 2006, NCP) and ARX: a row's normalized width on a QI is 0 for one value and 1
  for the whole domain (ordered: ``(num(max) - num(min)) / span``; hierarchical:
  ``(leaves(node) - 1) / (leaves(root) - 1)``). The gain is the drop in the partition's rows'
  summed width: the kept children's rows narrow on the split QI ``a``
  (``sum_kept n_i (w_a - w_a(child i))``), and each suppressed row widens to 1 on every QI
  (``s x sum_j (1 - w_j)``, the partition's *slack*). The children's widths on the other QIs
  are not known before they are split (they never grow), so this is the gain the split
  guarantees, a lower bound; a split without positive gain is never taken (trimming a row that
  barely narrows the class costs more width than it saves).
* **The budget buys splits first, then the most gain per row.** A partition first looks for an
  ordinary split (today's decision, unchanged, so ``suppression=0`` gives exactly the rules
  without it); only a partition with none on any QI may suppress, and it takes the suppressing
  split with the fewest suppressed rows per unit of gain, ties broken by the criterion's usual
  order (rank order for Median; key, rank, balance, cut for the workload criteria), then the
  most balanced cut and the lowest. ``cost = s / gain`` is element-wise float64 arithmetic on
  the same frequency groups and partition extents in the SQL levels and in memory, so the
  choice is the same in both. An ordered cut thus trims an outlier off (a far value narrows the
  kept rows a lot) rather than the nearest row.
* **Publication** (:mod:`sqlanon.publish.suppression`): a suppressed leaf is a region of the
  rules without rows; its rows get no region in the row map, so they are published with every
  QI fully generalized and ``eq_class`` NULL, are no class, and are counted and verified
  (at most ``B``) like the single-dimensional searches' suppressed rows.

:func:`root_shares` measures what suppression buys: per QI, the share of rows published
generalized to the whole domain; :func:`baseline` partitions once more without suppression
for the "before" figures of :class:`sqlanon.Release` (``at_root_before``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sqlglot import exp

from ..engine import sqlgen as g
from ..engine.base import Engine
from ..model.domain import Domain
from ..model.partition import Regions
from .builder import Partitioner, finish_in_memory


def root_shares(regions: Regions, domains: Sequence[Domain], rows: int) -> dict[str, float]:
    """Per QI, the share of the ``rows`` rows whose class is generalized to the whole domain:
    a hierarchical QI at the root node, an ordered QI whose class spans the smallest to the
    largest code of the table (the data bounds). Suppressed rows (the rows no leaf holds) count."""
    boxes = regions.boxes
    kept = boxes.n > 0
    if regions.suppressed is not None:
        kept &= ~regions.suppressed
    n = boxes.n[kept]
    suppressed = rows - int(n.sum())
    out = {}
    for j, d in enumerate(domains):
        if d.num is None:  # hierarchical: the root node is 0
            whole = boxes.node[kept, j] == 0
        else:
            lo, hi = regions.cmin[kept, j], regions.cmax[kept, j]
            whole = (lo == lo.min()) & (hi == hi.max()) if len(lo) else np.zeros(0, dtype=bool)
        out[d.qi.name] = (int(n[whole].sum()) + suppressed) / rows if rows else 0.0
    return out


def baseline(engine: Engine, partitioner: Partitioner, work: str, rows: int, memory_rows: int) -> Regions:
    """The regions of the same request without suppression (nothing published), partitioned
    by a fresh ``partitioner`` from a copy of the working table ``work`` (left as it is)."""
    copy = engine.temp_name("baseline")
    engine.execute(g.create_table_as(copy, exp.select(exp.Star()).from_(g.table(work))))
    work, open_ = partitioner.run_sql(engine, copy, partitioner.root(rows), memory_rows)
    finish_in_memory(engine, partitioner, work, open_, memory_rows, purpose="baseline")
    return partitioner.leaves.collect()
