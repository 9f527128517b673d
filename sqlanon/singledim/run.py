"""A single-dimensional recoding against the database: compress, refine, place the rows.

1. One ``GROUP BY`` over the working table's QI codes, class counts as columns
   (``count(*) FILTER (WHERE k0 = c)``), fetched to numpy: the compressed table of TKDE 2007,
   Section 4.1 -- every later statistic is computed from it in memory (:mod:`.tdr`).
2. :func:`sqlanon.singledim.tdr.refine` finds the cuts.
3. The cuts become regions (:mod:`.cuts`); one statement gives every row its region by joining
   the working table to the compressed vectors' regions on the codes. The result has the
   shape Mondrian's SQL levels leave (``rid, pid[, qhash]``), so :func:`sqlanon.publish.pipeline.publish_release`
   publishes it unchanged.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sqlglot import exp

from ..engine import sqlgen as g
from ..engine.base import Engine
from ..model.domain import Domain, Visibility
from ..model.partition import SUPPRESSED_PID, Progress
from ..model.privacy import beyond_k
from ..model.stats import StatColumn
from ..request.algorithm import Partitioned, Prepared
from ..request.spec import Spec
from .cuts import cells, disclosure_hierarchy, disclosure_nodes
from .genetic import Column, Genetic
from .lattice import Lattice, Node
from .tdr import Attribute, Requirement, refine


@dataclass(frozen=True)
class Outcome:
    """What a single-dimensional search found, for the :class:`~sqlanon.Release`.

    Attributes:
        search: ``"tdr"``, ``"genetic"`` or ``"optimal"``.
        complete: False when a budget stopped the search (TDR, GA): valid, but not finished.
        refinements: TDR's refinements performed (None for the other searches).
        metric, score: the metric minimized and its value for the release (None for TDR).
        levels: the full-domain node, ``{qi: level}`` (``"optimal"`` only).
        suppressed: rows the recoding suppresses.
        evaluated: lattice nodes whose classes were computed, or GA fitness evaluations.
    """

    search: str
    complete: bool
    refinements: int | None = None
    metric: str | None = None
    score: float | None = None
    levels: dict[str, int] | None = None
    suppressed: int = 0
    evaluated: int | None = None

    def summary(self, suppressed: int) -> list[tuple[str, str]]:
        """``(label, text)`` lines for the command line's summary (``suppressed``: verified)."""
        if self.search == "tdr":
            return [("recoding", f"single-dimensional, {self.refinements} refinements")]
        found = ("levels " + ", ".join(f"{q}={v}" for q, v in (self.levels or {}).items())
                 if self.search == "optimal" else "genetic algorithm")
        return [("recoding", f"single-dimensional, {found}; {self.metric} = {self.score:.6g}, "
                             f"{self.evaluated:,} {'nodes' if self.search == 'optimal' else 'evaluations'}"),
                ("suppressed", f"{suppressed:,} rows (fully generalized, class NULL; verified)")]

    def partitioning(self) -> None:
        """A single-dimensional search has no multidimensional partitioning to report."""
        return None


def compress(engine: Engine, spec: Spec, work: str) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """``(codes (G, d), counts (G, m), sensitive)``: one row per distinct QI code vector, with its
    rows per class of the target (one column of rows without a target) and, per sensitive column
    a constraint judges (l-diversity, search="optimal"), its rows per value code (G, V)."""
    d = len(spec.qis)
    query = compress_query(spec, work)
    res = engine.fetch(query)
    codes = np.column_stack([res[f"q{i}"].astype(np.int64) for i in range(d)]) if d else np.zeros((0, 0), np.int64)
    names = [c.alias_or_name for c in query.expressions[d:]]

    def block(prefix: str) -> np.ndarray:
        return np.column_stack([res[c].astype(np.int64) for c in names if c.startswith(prefix)])

    sensitive = {stat.name: block(f"s{j}_") for j, stat in _sensitive_stats(spec)}
    return codes, block("y"), sensitive


def _sensitive_stats(spec: Spec) -> list[tuple[int, StatColumn]]:
    """The workload's class columns the constraints judge, with their index ``j`` (the working
    table's value code column ``k{j}``, :mod:`sqlanon.mondrian.encode`)."""
    judged = {c for con in spec.workload.constraints for c in con.class_columns}
    return [(j, stat) for j, stat in enumerate(spec.workload.class_stats) if stat.name in judged]


def compress_query(spec: Spec, work: str) -> exp.Select:
    """The compressed table (TKDE 2007, Section 4.1): ``q0.., y0..`` grouped by the codes, the
    target's class counts ``y{c}`` (``count(*) FILTER (WHERE k_j = c)``, ``j`` its class column)
    and each judged sensitive column's value counts ``s{j}_{c}`` the same way."""
    d = len(spec.qis)
    keys = [g.col(f"q{i}") for i in range(d)]
    star = exp.Count(this=exp.Star())

    def per_value(j: int, size: int, prefix: str) -> list[exp.Expression]:
        return [g.alias(exp.Filter(this=star.copy(), expression=exp.Where(
            this=exp.EQ(this=g.col(f"k{j}"), expression=g.lit(c)))), f"{prefix}{c}") for c in range(size)]

    stats = spec.workload.class_stats
    if spec.single is not None and spec.single.target is not None:
        j = [s.name for s in stats].index(spec.single.target)
        counts = per_value(j, stats[j].size, "y")
    else:
        counts = [g.alias(star, "y0")]
    for j, stat in _sensitive_stats(spec):
        counts += per_value(j, stat.size, f"s{j}_")
    return exp.select(*[g.alias(k, f"q{i}") for i, k in enumerate(keys)], *counts).from_(g.table(work)).group_by(
        *[k.copy() for k in keys])


def attributes(spec: Spec, domains: tuple[Domain, ...]) -> list[Attribute]:
    """The QIs as TDR sees them: intervals (ordered), hierarchies, or ``⊥``-suppressed columns."""
    assert spec.single is not None
    out = []
    for d in domains:
        if d.qi.name in spec.single.suppressed:
            out.append(Attribute("suppression", d.size))
        elif d.qi.ordered:
            out.append(Attribute("interval", d.size, position=d.num))
        else:
            out.append(Attribute("hierarchy", d.size, d.qi.hierarchy))
    return out


def run_tdr(run: Prepared, max_steps: int | None, max_seconds: float | None) -> Partitioned:
    """Top-down refinement (:mod:`.tdr`): compress, refine, place every row (module docstring);
    ``progress`` hears of every refinement (phase ``"refine"``, ``level`` the refinements so far).
    A categorical QI without a hierarchy (``⊥``-suppressed) is published through the hierarchy of
    what was disclosed, so the spec and the domains returned carry it."""
    engine, spec, domains, work, progress = run.engine, run.spec, run.domains, run.work, run.progress
    plan = spec.single
    assert plan is not None
    codes, y, _ = compress(engine, spec, work)
    attrs = attributes(spec, domains)
    names = [q.name for q in spec.qis]
    reqs = [Requirement(tuple(names.index(c) for c in columns), k) for columns, k in plan.qids]
    rows = int(y.sum())

    def step(n: int, elapsed: float) -> None:
        if progress is not None:
            progress(Progress("refine", n, 0, rows, elapsed))

    result = refine(codes, y, attrs, reqs, labelled=plan.target is not None, use_score=plan.use_score,
                    max_steps=max_steps, max_seconds=max_seconds, on_step=step)
    values = result.values.copy()
    qis, new_domains = list(spec.qis), list(domains)
    for j, a in enumerate(attrs):  # publish a ⊥-suppressed QI through the hierarchy of what was disclosed
        if a.kind != "suppression":
            continue
        old = spec.qis[j].hierarchy
        assert old is not None
        h, code = disclosure_hierarchy(old.leaves, result.labels[j] >= 0)
        values[:, j] = disclosure_nodes(h, code, result.labels[j])[codes[:, j]]
        qis[j] = dataclasses.replace(spec.qis[j], hierarchy=h)
        new_domains[j] = dataclasses.replace(domains[j], qi=qis[j])
        attrs[j] = Attribute("hierarchy", a.size, h)
    found = cells(values, y.sum(axis=1), attrs, result.ends)
    placed = place(engine, work, result.labels, codes, found.pid, spec.hashed)
    outcome = Outcome("tdr", result.complete, refinements=len(result.steps))
    stopped = () if result.complete else (
        f"the refinement budget (max_steps/max_seconds) stopped top-down refinement after {len(result.steps)} "
        f"refinements: the release is valid, and coarser than a full run",)
    run.lap("refine")
    regions = dataclasses.replace(found.regions, visibility=visibility(codes, y.sum(axis=1), np.ones(len(codes), bool)))
    return Partitioned(dataclasses.replace(spec, qis=tuple(qis)), tuple(new_domains), regions, placed, None,
                       outcome, stopped)


def run_optimal(run: Prepared, metric: str) -> Partitioned:
    """The optimal full-domain node (:mod:`.lattice`) minimizing ``metric``, its classes as
    regions, the rows placed: a class below k or failing an l-diversity constraint is suppressed
    (its rows get :data:`SUPPRESSED_PID`); ``progress`` hears of the lattice's nodes (phase
    ``"lattice"``, ``level`` the nodes checked, ``best`` the best metric so far). The spec
    returned records the node (the manifest's ``levels``: :func:`sqlanon.metrics`' Precision)."""
    engine, spec, work, progress = run.engine, run.spec, run.work, run.progress
    plan = spec.single
    assert plan is not None
    codes, y, sensitive = compress(engine, spec, work)
    hierarchies = [q.hierarchy for q in spec.qis]
    assert all(h is not None for h in hierarchies)
    judged = beyond_k(spec.workload.constraints, spec.k)  # k: spec.k
    lattice = Lattice(codes, y, hierarchies, sensitive, judged)  # type: ignore[arg-type]
    rows = lattice.total
    started = time.perf_counter()

    def report(checked: int, best: Node | None) -> None:
        if progress is not None:
            progress(Progress("lattice", checked, 0, rows, time.perf_counter() - started,
                              None if best is None else best.value))

    found = lattice.search(metric, spec.k, spec.suppression_limit, report)
    best = found.best
    # the top node (every QI at its root) is one class of all rows: >= k, and the workload checked
    # that the whole table satisfies every constraint
    assert best is not None
    values = lattice.generalized(best.levels)
    table, member = lattice.table(best.levels)
    kept = lattice.kept(table, spec.k)[member]
    attrs = [Attribute("hierarchy", h.n_leaves, h) for h in hierarchies]  # type: ignore[union-attr]
    pid = np.full(len(codes), SUPPRESSED_PID, dtype=np.int64)
    placed_cells = cells(values[kept], lattice.bottom.n[kept], attrs, [None] * len(attrs))
    pid[kept] = placed_cells.pid
    labels = [np.asarray(h.leaf_node, dtype=np.int64) for h in hierarchies]  # type: ignore[union-attr]
    for j, level in enumerate(best.levels):
        for _ in range(level):
            labels[j] = lattice.up[j][labels[j]]
    placed = place(engine, work, labels, codes, pid, spec.hashed)
    outcome = Outcome("optimal", True, metric=metric, score=best.value,
                      levels={q.name: int(v) for q, v in zip(spec.qis, best.levels)}, suppressed=best.suppressed,
                      evaluated=found.checked)
    run.lap("refine")
    spec = dataclasses.replace(spec, single=dataclasses.replace(plan, levels=tuple(int(v) for v in best.levels)))
    regions = dataclasses.replace(placed_cells.regions, visibility=visibility(codes, lattice.bottom.n, kept))
    return Partitioned(spec, run.domains, regions, placed, None, outcome)


def visibility(codes: np.ndarray, rows: np.ndarray, kept: np.ndarray) -> Visibility:
    """What the published rows hold (:class:`~sqlanon.model.domain.Visibility`), from the
    compressed table: ``codes`` (G, d) with ``rows`` each, ``kept`` the published ones (the
    others are suppressed). A QI's hidden codes are those only suppressed compressed rows hold."""
    hidden = tuple(np.setdiff1d(np.unique(codes[~kept, j]), codes[kept, j]) for j in range(codes.shape[1]))

    def count(i: int, code: int) -> int:
        return int(rows[kept & (codes[:, i] == code)].sum())

    return Visibility(hidden, count)


def place(engine: Engine, work: str, labels: Sequence[np.ndarray], codes: np.ndarray, pid: np.ndarray,
          hashed: bool) -> str:
    """The temp table ``(rid, pid[, qhash])``: every row's region, from its QI codes (``hashed``:
    the working table has ``qhash``, :func:`~sqlanon.mondrian.levels.row_columns`).

    A row's cell is its value on every QI, so the cell gets a number ``sum_j index_j *
    radix_j`` (``index_j``: the value's rank among QI ``j``'s final values, from a small
    ``code -> index`` table per refined QI) and the rows join one small table ``(cell, pid)``:
    a few joins with small build sides instead of a join of every row with every distinct
    code vector. When the numbers would not fit a BIGINT, the rows join the code vectors.
    """
    d = codes.shape[1]
    index = [np.unique(labels[j], return_inverse=True)[1].astype(np.int64) for j in range(d)]
    width = [int(ix.max()) + 1 if len(ix) else 1 for ix in index]
    refined = [j for j in range(d) if width[j] > 1]  # a QI left whole adds nothing to the number
    w = exp.alias_(g.table(work), g.ident("w"), table=True)
    row = [g.col("rid", "w"), g.col("pid", "c")] + ([g.col("qhash", "w")] if hashed else [])
    if math.prod(width[j] for j in refined) < 2**62:
        radix, r = {}, 1
        for j in refined:
            radix[j], r = r, r * width[j]
        cell = np.zeros(len(codes), dtype=np.int64)
        for j in refined:
            cell += index[j][codes[:, j]] * radix[j]
        first = np.unique(cell, return_index=True)[1]
        uploads = [engine.upload("cells", {"cell": cell[first], "pid": pid[first]})]
        number: exp.Expression = g.lit(0)
        query = exp.select(*row).from_(w)
        for j in refined:
            uploads.append(engine.upload(f"index{j}", {"code": np.arange(len(index[j])), "ix": index[j]}))
            query = query.join(exp.alias_(g.table(uploads[-1]), g.ident(f"m{j}"), table=True),
                               on=exp.EQ(this=g.col("code", f"m{j}"), expression=g.col(f"q{j}", "w")), copy=False)
            number = exp.Add(this=number, expression=exp.Mul(this=g.col("ix", f"m{j}"), expression=g.lit(radix[j])))
        query = query.join(exp.alias_(g.table(uploads[0]), g.ident("c"), table=True),
                           on=exp.EQ(this=g.col("cell", "c"), expression=number), copy=False)
    else:
        uploads = [engine.upload("cells", {**{f"q{i}": codes[:, i] for i in range(d)}, "pid": pid})]
        on = exp.and_(*[exp.EQ(this=g.col(f"q{i}", "w"), expression=g.col(f"q{i}", "c")) for i in range(d)])
        query = (exp.select(*row).from_(w)
                 .join(exp.alias_(g.table(uploads[0]), g.ident("c"), table=True), on=on))
    name = engine.temp_name("placed")
    engine.execute(g.create_table_as(name, query))
    for upload in uploads:
        engine.drop_temp(upload)
    return name


def run_genetic(run: Prepared, metric: str, seed: int, iterations: int | None, budget: float | None
                ) -> Partitioned:
    """Iyengar's genetic algorithm (:mod:`.genetic`) minimizing ``metric``, its classes as
    regions, the rows placed: a class below k is suppressed (its rows get
    :data:`SUPPRESSED_PID`). A QI with a hierarchy (or a categorical one without: its flat
    hierarchy) is cut into hierarchy nodes; an ordered QI into intervals of its codes.
    ``progress`` hears of its generations (phase ``"genetic"``, ``best`` the best fitness)."""
    engine, spec, domains, work, progress = run.engine, run.spec, run.domains, run.work, run.progress
    codes, y, _ = compress(engine, spec, work)
    columns = [Column(d.size, d.qi.hierarchy) if not d.qi.ordered else Column(d.size, position=d.num)
               for d in domains]
    rows = int(y.sum())
    ga = Genetic(codes, y, columns, metric, spec.k, spec.suppression_limit)
    started = time.perf_counter()

    def report(iteration: int, best: float) -> None:
        if progress is not None:
            progress(Progress("genetic", iteration, 0, rows, time.perf_counter() - started, best))

    result = ga.run(seed=seed, iterations=iterations, budget=budget, on_generation=report)
    best = result.best
    values = np.column_stack([best.labels[j][codes[:, j]] for j in range(len(columns))])
    n = y.sum(axis=1)
    cls, count = ga.classes(ga.decode(best.bits)[1])
    kept = (np.bincount(cls, weights=n, minlength=count) >= spec.k)[cls]
    attrs = [Attribute("interval", c.size, position=c.position) if c.hierarchy is None
             else Attribute("hierarchy", c.size, c.hierarchy) for c in columns]
    pid = np.full(len(codes), SUPPRESSED_PID, dtype=np.int64)
    found = cells(values[kept], n[kept], attrs, list(best.ends))
    pid[kept] = found.pid
    placed = place(engine, work, list(best.labels), codes, pid, spec.hashed)
    outcome = Outcome("genetic", result.complete, metric=metric, score=best.fitness, suppressed=best.suppressed,
                      evaluated=result.evaluations)
    run.lap("refine")
    regions = dataclasses.replace(found.regions, visibility=visibility(codes, n, kept))
    return Partitioned(spec, domains, regions, placed, None, outcome)
