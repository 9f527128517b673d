"""The recoding as relations: the rules (one row per region), the row map, the published view.

Rules relation ``<view>_rules`` — one row per region (leaf of the partition tree, TR 1590
Section 2.2: each root-to-leaf path is a rule), regions numbered by their box so the numbering
does not depend on how the partition was computed:

* ``region`` (the class column of the view) and ``size`` (rows in it; 0 for a hierarchy node no
  row falls into, kept so the rules cover the domain) -- named ``region_1``/``size_1``, ... when
  a hierarchical QI is called ``region`` or ``size`` (the manifest records the names);
* per ordered QI ``q``: published ``q_min``/``q_max`` (by default the smallest and largest value
  of the region's rows; NULL sorts first, so ``q_min`` is NULL when the region holds NULLs; with
  ``published="domain"`` or ``"hierarchy"`` the box's cut points or a hierarchy interval, and for
  an empty region its box: :mod:`sqlanon.publish.bounds`) and the
  region's box in the domain: ``q_lo`` < value <= ``q_hi`` (NULL = unbounded) plus ``q_null``
  (NULL values fall in this region); a NULL-only region has ``q_lo = q_hi`` (empty range);
* per hierarchical QI ``q``: published ``q`` (the node label) and ``q_node`` (node id in the
  hierarchy's DFS pre-order).

Row map ``<view>_rowmap``, for a source with a key: ``(key0.., region, rhash)`` for each source
row: its key, its region, and the hash of its QI and constraint columns at release time. The
live view (:mod:`sqlanon.publish.view`) joins the source to it on the key *and* the hash, and
enforces the requirement at query time. A source without a key is published as a snapshot: the
row map then holds the rows the run read, their non-QI columns and their class, and the view
joins it to the rules (:func:`sqlanon.publish.view.snapshot_view`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from sqlglot import exp

from ..engine import sqlgen as g
from ..engine.base import Engine
from ..model.domain import Domain
from ..model.manifest_format import ROWMAP_HASH, ROWMAP_REGION, rowmap_key
from ..model.partition import Regions, RowLeaves
from ..request.spec import Spec
from .bounds import Shown, empty_marker, region_bounds, shown_codes
from .view import LiveView, live_view, snapshot_view


def number_regions(lo: np.ndarray) -> np.ndarray:
    """Region order: by box lower corner ``lo`` (QI order). Boxes are disjoint, so corners are unique."""
    return np.lexsort(lo.T[::-1])


def rules_columns(spec: Spec) -> list[str]:
    """Every column of the rules relation, in order."""
    out = spec.outputs
    return [out.region_column, out.size_column] + [c for qi in spec.qis for c in qi.published + qi.box_columns]


def printable_boxes(spec: Spec, domains: Sequence[Domain], regions: Regions
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[Shown | None]]:
    """``(lo, hi, kept, shown)``: the regions' boxes with the edges of every ordered QI moved off
    the codes the release may not print (:class:`~sqlanon.publish.bounds.Shown`: codes only
    suppressed rows hold; under ``"domain"`` a smallest value fewer than k rows hold), which
    leaves are regions of the rules (``kept``: a box left without a code is none; it had no
    published row), and each QI's printable codes (None for a hierarchical QI). Without
    suppression and such a value, the boxes as they are."""
    boxes = regions.boxes
    lo, hi = boxes.lo.astype(np.int64), boxes.hi.astype(np.int64)
    kept = np.ones(len(boxes), dtype=bool)
    shown: list[Shown | None] = []
    for i, d in enumerate(domains):
        if not d.qi.ordered:
            shown.append(None)
            continue
        null_only = bool((np.maximum(lo[:, i], d.first_value) > hi[:, i]).any())
        s = shown_codes(d, i, regions.visibility, spec.k, lo[:, i], hi[:, i], null_only)
        lo[:, i], hi[:, i] = s.box(lo[:, i], hi[:, i])
        kept &= lo[:, i] <= hi[:, i]
        shown.append(s)
    if (boxes.n[~kept] > 0).any():
        raise AssertionError("a region with published rows lost its box")  # Shown.cut passes no published code
    return lo, hi, kept, shown


@dataclass(frozen=True)
class LeafMap:
    """Every leaf's region in the row map: the temp table ``(pid, mapped, sql, ...)`` that
    :func:`rowmap_query` joins (``mapped``: the leaf's region, :data:`SUPPRESSED_REGION` for a
    leaf whose rows have none: a suppressed leaf, or one that is no region,
    :func:`printable_boxes`), and the same ``pid`` and ``mapped`` as arrays."""

    table: str
    pid: np.ndarray
    mapped: np.ndarray


def create_rules(engine: Engine, spec: Spec, domains: Sequence[Domain], regions: Regions) -> LeafMap:
    """Create the rules table; return every leaf's region in the row map (:class:`LeafMap`).

    One upload (the leaves: their row map columns and, for the regions, the code columns of the
    rules) and one statement per lookup group (:func:`lookup_groups`; one unless the engine
    splits the lookups), whatever the number of regions."""
    lo_all, hi_all, kept, shown = printable_boxes(spec, domains, regions)
    boxes = regions.boxes.take(kept.nonzero()[0]) if not kept.all() else regions.boxes
    cmin, cmax = (regions.cmin, regions.cmax) if kept.all() else (regions.cmin[kept], regions.cmax[kept])
    lo_all, hi_all = lo_all[kept], hi_all[kept]
    order = number_regions(lo_all)
    numbered = np.empty(len(order), dtype=np.int64)
    numbered[order] = np.arange(len(order))
    region = np.full(len(kept), SUPPRESSED_REGION, dtype=np.int64)
    region[kept] = numbered
    columns: dict[str, np.ndarray] = {"region": numbered, "size": boxes.n}
    casts: set[int] = set()  # ordered QIs whose published bounds are uploaded as text
    for i, d in enumerate(domains):
        lo, hi = lo_all[:, i], hi_all[:, i]
        if d.qi.ordered:
            first = d.first_value
            start = np.maximum(lo, first)  # the box's first non-NULL code
            empty = start > hi  # the box holds only NULL
            kind, low, high = region_bounds(d, lo, hi, cmin[:, i], cmax[:, i], boxes.n, shown[i])
            if kind == "text":  # published="hierarchy": interval bounds, cast to the column's type below
                casts.add(i)
            else:
                low, high = low.astype(d.code_type), high.astype(d.code_type)
            columns[f"c{i}_min"], columns[f"c{i}_max"] = low, high
            mark = empty_marker(d, hi, shown[i])
            # narrow (Domain.code_type): the 36 code columns of nine QIs are held together until
            # uploaded, 0.2 GB as int64 at 100M rows
            columns[f"c{i}_lo"] = np.where(empty, mark, np.where(start - 1 >= first, start - 1, -1)).astype(d.code_type)
            columns[f"c{i}_hi"] = np.where(empty, mark, np.where(hi < d.size - 1, hi, -1)).astype(d.code_type)
            columns[f"c{i}_null"] = lo == 0  # NULL sorts first, also for later rows
        else:
            h = d.qi.hierarchy
            assert h is not None
            node = boxes.node[:, i]
            columns[f"c{i}_label"] = np.array([h.labels[x] for x in node], dtype=object)
            columns[f"c{i}_node"] = node
    looked_up = {i: [part for part in ("min", "max", "lo", "hi") if not (i in casts and part in ("min", "max"))]
                 for i, d in enumerate(domains) if d.qi.ordered}
    # the values of the QIs this process coded (Domain.values) go up with the leaves: no lookup
    here = {i: parts for i, parts in looked_up.items() if domains[i].values is not None}
    types: dict[str, str] = {}
    for i, parts in here.items():
        for part in parts:
            columns[f"v{i}_{part}"], columns[f"n{i}_{part}"] = values_here(domains[i], columns[f"c{i}_{part}"])
            types[f"v{i}_{part}"] = domains[i].qi.data_type
    used = {i: len(np.unique(np.concatenate([columns[f"c{i}_{part}"] for part in parts])))
            for i, parts in looked_up.items() if i not in here}
    direct = {i: domains[i].size <= max(DIRECT_LOOKUP, 2 * n) for i, n in used.items()}  # no semi-join first
    sizes = {i: (domains[i].size if direct[i] else used[i]) * len(looked_up[i]) for i in used}
    leafmap = leaf_columns(regions, region, kept, columns)
    pid, mapped = leafmap["pid"], leafmap["mapped"]
    leaves = engine.upload("leafmap", leafmap, types=types)
    del columns, leafmap  # in the engine now (0.26 GB at 100M rows): not held through the lookups below

    # Codes -> values through the domain tables, so published values keep their source types
    # (:func:`_looked_up`). An engine that holds every join's hash table of a statement at once
    # (Engine.split_lookups) adds the bounds of a few QIs per statement.
    groups = lookup_groups(sizes, LOOKUP_ROWS if engine.split_lookups else None) or [[]]
    regions_only = exp.GTE(this=g.col("region", "r"), expression=g.lit(0))
    step = leaves
    for n, group in enumerate(groups):
        looked = _looked_up(engine, domains, leaves, step, group, looked_up, sizes, direct)
        if step == leaves:
            looked = looked.where(regions_only.copy(), copy=False)
        if n == len(groups) - 1:
            break
        name = engine.temp_name(f"rules{group[0]}")
        engine.execute(g.create_table_as(name, looked))
        if step != leaves:
            engine.drop_temp(step)
        step = name
    select = [g.alias(g.col("region"), spec.outputs.region_column), g.alias(g.col("size"), spec.outputs.size_column)]
    for i, d in enumerate(domains):
        qi = d.qi
        if not qi.ordered:
            select += [g.alias(exp.Cast(this=g.col(f"c{i}_label"), to=exp.DataType.build("VARCHAR")), qi.name),
                       g.alias(g.col(f"c{i}_node"), f"{qi.name}_node")]
            continue
        for part in ("min", "max", "lo", "hi"):
            value = (g.col(f"v{i}_{part}") if part in looked_up[i] else
                     exp.Cast(this=g.col(f"c{i}_{part}"), to=exp.DataType.build(qi.data_type, dialect="duckdb")))
            if i in here and part in here[i]:  # NULL where the lookup would have found no code
                value = exp.Case().when(g.col(f"n{i}_{part}"), exp.Null()).else_(value)
            select.append(g.alias(value, f"{qi.name}_{part}"))
        select.append(g.alias(g.col(f"c{i}_null"), f"{qi.name}_null"))
    ordered = exp.select(*[g.col(c) for c in rules_columns(spec)]).from_(
        exp.Subquery(this=exp.select(*select).from_(exp.Subquery(this=looked, alias=exp.TableAlias(this=g.ident("r")))),
                     alias=exp.TableAlias(this=g.ident("x")))
    )
    if engine.sorts_written:  # Engine.sorts_written
        ordered = ordered.order_by(g.col(spec.outputs.region_column))
    engine.execute(g.create_table_as(spec.outputs.rules, ordered, temporary=False))
    if step != leaves:
        engine.drop_temp(step)
    return LeafMap(leaves, pid, mapped)


def values_here(d: Domain, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(values, null)``: the values of ``codes`` of a QI whose values this process holds
    (:attr:`Domain.values <sqlanon.model.domain.Domain.values>`), as a ``LEFT JOIN`` with its
    code table ``(v, code)`` would give them -- NULL (``null``) for a code the table has not:
    NULL's code 0, an open edge's -1. ``values`` holds the first value there (any value of the
    type: the rules print NULL)."""
    assert d.values is not None
    at = np.asarray(codes, dtype=np.int64) - d.first_value
    null = (at < 0) | (at >= len(d.values))
    if not len(d.values):
        return np.zeros(len(at), dtype=d.values.dtype), null
    return d.values[np.where(null, 0, at)], null


def leaf_columns(regions: Regions, region: np.ndarray, kept: np.ndarray, columns: dict[str, np.ndarray]
                 ) -> dict[str, np.ndarray]:
    """The leaves' table: per leaf its ``pid``, its ``region`` in the row map
    (:data:`SUPPRESSED_REGION`: its rows have none), whether its rows carry it in the working
    table (``sql``), and -- for a leaf that is a region (``region`` not negative, or a suppressed
    leaf's box, which the rules keep) -- the rules' code columns ``columns`` (by region; filler
    elsewhere: those rows are never read)."""
    full = len(kept)
    mapped = region if regions.suppressed is None else np.where(regions.suppressed, SUPPRESSED_REGION, region)
    out: dict[str, np.ndarray] = {"pid": regions.boxes.pid, "mapped": mapped, "sql": regions.in_sql}
    where = kept.nonzero()[0]
    for name, values in columns.items():
        if len(values) == full:
            out[name] = values
            continue
        spread = np.zeros(full, dtype=values.dtype) if values.dtype != object else np.full(full, None, dtype=object)
        if name == "region":
            spread[:] = SUPPRESSED_REGION
        spread[where] = values
        out[name] = spread
    return out


def _looked_up(engine: Engine, domains: Sequence[Domain], leaves: str, step: str, group: Sequence[int],
               looked_up: dict[int, list[str]], sizes: dict[int, int], direct: dict[int, bool]) -> exp.Select:
    """``step``'s rows with the values of the codes of ``group``'s QIs, one lookup per part
    (``sizes``: the rows a QI's lookups read). A domain of at most :data:`DIRECT_LOOKUP` codes
    (or at most twice the codes the regions use: ``direct``) is looked up as it is; a larger one
    (a value per row) only through its codes some region uses (a semi-join with the leaves).
    Subqueries, not common table expressions: Spark inlines those without the join hints of
    their references."""
    query = exp.select(exp.Column(this=exp.Star(), table=g.ident("r"))).from_(
        exp.alias_(g.table(step), g.ident("r"), table=True))
    lookups: list[tuple[str, int]] = []  # (alias, rows) of each code table joined
    for i in group:
        parts = looked_up[i]
        domain = domains[i]
        assert domain.table is not None, "a QI without a code table prints its held values (values_here)"
        rows = sizes[i] // len(parts)
        if direct[i]:
            used: exp.Expression = g.table(domain.table)
        else:
            codes: exp.Query = exp.select(g.col(f"c{i}_{parts[0]}")).from_(g.table(leaves))
            for part in parts[1:]:
                codes = exp.union(codes, exp.select(g.col(f"c{i}_{part}")).from_(g.table(leaves)), distinct=False)
            used = exp.Subquery(this=exp.select(g.col("code"), g.col("v")).from_(g.table(domain.table)).where(
                g.col("code").isin(query=codes)))
        for part in parts:
            alias = f"d{i}{part}"
            lookups.append((alias, rows))
            joined = (exp.alias_(used.copy(), g.ident(alias), table=True) if isinstance(used, exp.Table)
                      else exp.Subquery(this=used.this.copy(), alias=exp.TableAlias(this=g.ident(alias))))
            query = query.join(
                joined,
                on=exp.EQ(this=g.col("code", alias), expression=g.col(f"c{i}_{part}", "r")),
                join_type="left",
                copy=False,
            ).select(g.alias(g.col("v", alias), f"v{i}_{part}"), copy=False)
    return engine.broadcast(query, lookups)


#: A domain of at most this many codes is joined whole by the rules' lookups (no semi-join with
#: the codes the regions use first: on Spark that is one more broadcast per lookup).
DIRECT_LOOKUP = 10_000


#: The most rows the lookups of one rules statement read, on an engine that holds every join's
#: hash table of a statement at once (:attr:`Engine.split_lookups`). The 36 lookups of nine QIs
#: in one statement ran out of memory at 10M rows (76K regions) under DuckDB's
#: ``memory_limit='300MB'``; at 1M rows (7K regions) they are 0.25M rows, and nine statements took
#: 0.15 s where one takes 0.04 s.
LOOKUP_ROWS = 1_000_000


def lookup_groups(rows: dict[int, int], most: int | None) -> list[list[int]]:
    """The QIs (keys of ``rows``, in order) of each rules statement: consecutive QIs while the
    lookup rows of a statement (``rows`` per QI) stay at most ``most`` (every QI at least alone);
    all in one statement when ``most`` is None."""
    groups: list[list[int]] = []
    total = 0
    for i, n in rows.items():
        if groups and (most is None or total + n <= most):
            groups[-1].append(i)
            total += n
        else:
            groups.append([i])
            total = n
    return groups


#: The row map's region of a suppressed leaf's rows before NULLIF makes it NULL.
SUPPRESSED_REGION = -1


def reads_sql_rows(memory_assignment: str | RowLeaves | None, regions: Regions) -> bool:
    """Whether :func:`rowmap_query` reads the working table: when some leaf was finished in SQL
    (its rows carry it there) or no row was finished in memory."""
    return memory_assignment is None or bool(regions.in_sql.any())


@dataclass(frozen=True)
class HeldRowMap:
    """The row map of a keyless release held in this process: ``rid`` and ``region`` arrays, one entry
    per row the run read, in the order the rows were fetched (:class:`RowLeaves`). The
    published relation is written from them beside the rows they belong to
    (:meth:`Engine.create_beside <sqlanon.engine.base.Engine.create_beside>`), without the
    upload of every row's leaf and the join with the leaves' table that :func:`rowmap_query`'s
    statement needs."""

    columns: Mapping[str, np.ndarray]


#: What :func:`publish` writes the published relation from: the row map's query, or its arrays.
RowMap = exp.Expression | HeldRowMap


def writes_held(spec: Spec, memory_assignment: str | RowLeaves | None, regions: Regions) -> bool:
    """Whether the row map is written from arrays held here (:class:`HeldRowMap`): for a keyless
    release (a keyed one's row map keeps the key's types: written by :func:`rowmap_query`'s
    statement) whose every row was finished in memory from held rows (:class:`RowLeaves`), none suppressed (the
    suppressed rows' are in the working table, :func:`sqlanon.publish.suppression.rowmap_rows`),
    every leaf's rows have a region, and no QI is published with ``published="domain"`` (whose
    check of the printed ends, :func:`sqlanon.publish.verify.exposed_values`, joins the row map's
    query)."""
    return (isinstance(memory_assignment, RowLeaves) and spec.key is None and not regions.in_sql.any()
            and not spec.suppression_limit
            and (regions.suppressed is None or not regions.suppressed.any())
            and not any(q.ordered and q.bounds == "domain" for q in spec.qis))


def assignment_table(engine: Engine, memory_assignment: str | RowLeaves | None) -> str | None:
    """The temp table of the rows finished in memory with their leaf: held rows' arrays
    (:class:`RowLeaves`) uploaded, for a statement that joins them."""
    if isinstance(memory_assignment, RowLeaves):
        return engine.upload("leaves0", memory_assignment.columns)
    return memory_assignment


def rowmap_query(
    spec: Spec, work: str, memory_assignment: str | RowLeaves | None, regions: Regions, leaves: LeafMap
) -> RowMap:
    """The row map ``(rid, region, qhash)``: each row's region by the run's row id (``qhash``
    only for a keyed release: a keyless one's working table has none).

    Rows finished in SQL carry their leaf in the working table; rows finished in memory come
    from ``memory_assignment``. Both only join the small table of the leaves (``leaves``, from
    :func:`create_rules`). Not materialized: the published relation is written from it directly.
    Rows finished here from held arrays (:func:`writes_held`) map to their regions here, as a
    :class:`HeldRowMap`.
    """
    if isinstance(memory_assignment, RowLeaves):
        assert writes_held(spec, memory_assignment, regions), "held rows' leaves are uploaded first (assignment_table)"
        region = memory_assignment.regions(leaves.pid, leaves.mapped)
        if (region == SUPPRESSED_REGION).any():  # writes_held: every held row's leaf is a region
            raise AssertionError("a row finished in memory has no region")
        return HeldRowMap({"rid": memory_assignment.columns["rid"], "region": region})
    m = exp.alias_(g.table(leaves.table), g.ident("m"), table=True)
    published = g.alias(exp.Nullif(this=g.col("mapped", "m"), expression=g.lit(SUPPRESSED_REGION)), "region")
    cols = [g.col("rid", "x"), published] + ([g.col("qhash", "x")] if spec.hashed else [])
    in_sql = (
        exp.select(*cols)
        .from_(exp.alias_(g.table(work), g.ident("x"), table=True))
        .join(m, on=exp.and_(exp.EQ(this=g.col("pid", "m"), expression=g.col("pid", "x")), g.col("sql", "m")))
    )
    if not memory_assignment:
        return in_sql
    in_memory = (
        exp.select(*[c.copy() for c in cols])
        .from_(exp.alias_(g.table(memory_assignment), g.ident("x"), table=True))
        .join(m.copy(), on=exp.EQ(this=g.col("pid", "m"), expression=g.col("pid", "x")))
    )
    if not reads_sql_rows(memory_assignment, regions):  # every leaf finished in memory: not read again
        return in_memory
    return exp.union(in_sql, in_memory, distinct=False)


def live_plan(spec: Spec) -> LiveView:
    """What the live view of this release is built from."""
    assert spec.key is not None
    out = spec.outputs
    return LiveView(spec.source.ref, spec.source.column_names, spec.qis, spec.key.columns, spec.key.declared,
                    spec.guarded_columns, spec.k, spec.workload.constraints, out.assignment, out.rules,
                    out.region_column, out.size_column, out.class_column,
                    spec.single.qids if spec.single is not None and spec.single.per_qid([q.name for q in spec.qis]) else ())


def publish(engine: Engine, spec: Spec, source: exp.Table, rid: str, rowmap: RowMap, regions: int,
            suppressed: bool = False, ranges: Sequence[tuple[int | None, int | None]] | None = None) -> None:
    """Create the anonymized relation: for a keyed source the persistent row map
    ``(key0.., region, rhash)`` and the live view over the source (:mod:`sqlanon.publish.view`);
    else a snapshot of the rows the run read and a view of it (:func:`_publish_snapshot`).
    ``regions``: the rules' rows; ``suppressed``: the row map may hold rows without a region
    (:mod:`sqlanon.publish.suppression`); ``ranges``: a keyless release's row-id ranges, if the
    caller found them already (:func:`rid_chunks`). A row map held here (:class:`HeldRowMap`)
    is written beside the rows of ``source`` (:func:`_publish_held`)."""
    out = spec.outputs
    if isinstance(rowmap, HeldRowMap):  # writes_held: a keyless release
        _publish_held(engine, spec, source, rid, rowmap)
        return
    if spec.key is None:
        _publish_snapshot(engine, spec, source, rid, rowmap, suppressed, ranges)
        return
    x = exp.Subquery(this=rowmap, alias=exp.TableAlias(this=g.ident("x")))
    if spec.key.direct:  # the run's row id is the key itself
        query = exp.select(g.alias(g.col("rid", "x"), rowmap_key(0))).from_(x)
    else:  # the run read a snapshot numbered by ``rid``: look its key up there
        query = exp.select(*[g.alias(g.col(c, "b"), rowmap_key(i)) for i, c in enumerate(spec.key.columns)]).from_(x).join(
            exp.alias_(source, g.ident("b"), table=True), on=exp.EQ(this=g.col(rid, "b"), expression=g.col("rid", "x")))
    query = query.select(g.alias(g.col("region", "x"), ROWMAP_REGION), g.alias(g.col("qhash", "x"), ROWMAP_HASH),
                         copy=False)
    engine.execute(g.create_table_as(out.assignment, query, temporary=False))
    engine.execute(g.create_view(out.view, live_view(engine, live_plan(spec), regions)))


def _publish_held(engine: Engine, spec: Spec, source: exp.Table, rid: str, rowmap: HeldRowMap) -> None:
    """:func:`_publish_snapshot` from a row map held here: the same snapshot and view, the
    snapshot written in one statement beside the rows of the run's snapshot ``source``, each
    row's class from the arrays by its row id (:meth:`Engine.create_beside
    <sqlanon.engine.base.Engine.create_beside>`), in class order where the engine clusters it
    (:attr:`Engine.clusters_snapshot`)."""
    out = spec.outputs
    qis = {q.name for q in spec.qis}
    select = [g.alias(g.col(name, "b"), name) for name in spec.source.column_names if name not in qis]
    rows = exp.select(*select).from_(exp.alias_(source.copy(), g.ident("b"), table=True))
    engine.create_beside(out.assignment, rows, g.col(rid, "b"), rowmap.columns["rid"],
                         {out.class_column: rowmap.columns["region"]},
                         order=out.class_column if engine.clusters_snapshot else None)
    engine.execute(g.create_view(out.view, snapshot_view(
        spec.source.column_names, spec.qis, out.assignment, out.rules, out.region_column, out.size_column,
        out.class_column, False)))


def _publish_snapshot(engine: Engine, spec: Spec, source: exp.Table, rid: str, rowmap: exp.Expression,
                      suppressed: bool = False, ranges: Sequence[tuple[int | None, int | None]] | None = None,
                      ) -> None:
    """The snapshot of a keyless release: the table ``<view>_rowmap`` of the rows the run read,
    each with its non-QI columns and its region (NULL, when ``suppressed``, for a row without
    one: :mod:`sqlanon.publish.suppression`), and the view that joins it to the rules
    (:func:`sqlanon.publish.view.snapshot_view`). The QIs' published columns are the rules', so
    the snapshot holds the source's other columns and one more: at 100M Agrawal rows it is 5
    columns written where a table of the published rows would be 23 (11 s against 39 s to copy
    them under ``memory_limit='2GB'``). Where the engine clusters it, each statement's rows are
    written in class order."""
    out = spec.outputs
    qis = {q.name for q in spec.qis}
    select = [g.alias(g.col(name, "b"), name) for name in spec.source.column_names if name not in qis]
    select.append(g.alias(g.col("region", "a"), out.class_column))
    # One statement, or one per range of row ids (rid_chunks) that joins only that range's rows
    # of the snapshot and of the row map.
    if ranges is None:
        ranges = rid_chunks(engine, source, rid, spec.source.rows)
    for i, (lo, hi) in enumerate(ranges):
        b: exp.Expression = exp.alias_(source, g.ident("b"), table=True)
        a = rowmap.copy()  # a tree per statement: sqlglot re-parents a node put into another
        if lo is not None:
            b = exp.Subquery(this=exp.select(exp.Star()).from_(source).where(_in_range(g.col(rid), lo, hi)),
                             alias=exp.TableAlias(this=g.ident("b")))
            a = exp.select(exp.Star()).from_(exp.Subquery(this=a, alias=exp.TableAlias(this=g.ident("m")))).where(
                _in_range(g.col("rid"), lo, hi))
        query = exp.select(*[e.copy() for e in select]).from_(b).join(
            exp.Subquery(this=a, alias=exp.TableAlias(this=g.ident("a"))),
            on=exp.EQ(this=g.col("rid", "a"), expression=g.col(rid, "b")), join_type="left")
        if engine.clusters_snapshot:  # a class's rows together (Engine.clusters_snapshot)
            query = query.order_by(g.col("region", "a"))
        engine.execute(g.create_table_as(out.assignment, query, temporary=False) if i == 0 else
                       exp.insert(query, g.table(out.assignment)))
    engine.execute(g.create_view(out.view, snapshot_view(
        spec.source.column_names, spec.qis, out.assignment, out.rules, out.region_column, out.size_column,
        out.class_column, suppressed)))


def _in_range(column: exp.Expression, lo: int, hi: int) -> exp.Expression:
    """``lo <= column AND column < hi``."""
    return exp.and_(exp.GTE(this=column, expression=g.lit(lo)), exp.LT(this=column.copy(), expression=g.lit(hi)))


def rid_chunks(engine: Engine, source: exp.Table, rid: str, counted: int) -> list[tuple[int | None, int | None]]:
    """Row-id ranges ``[lo, hi)`` of the run's snapshot ``source`` to publish one statement
    each: ``[(None, None)]`` (one statement) unless it has more than :meth:`Engine.join_rows`
    rows (``counted``: the source's rows when the request was checked; the snapshot is counted
    only when that is more), else, in ascending order, the ranges ``[r * most, (r + 1) * most)``
    (``most`` = ``join_rows``) that hold rows. Each statement joins at most ``join_rows`` rows,
    and reads only its range's blocks: the snapshot is stored in id order, and the rows
    finished in memory by range (:func:`sqlanon.mondrian.builder.by_range`).

    Only ranges that hold rows, found by one ``GROUP BY id // most`` (as long as the count, min
    and max it replaced): the ids are a table's row numbers, dense but for deleted rows, except
    that DuckDB numbers the rows a transaction appended and has not committed from about 2^55 on (a
    run inside the caller's transaction after an INSERT), where the ranges from the smallest id
    to the largest would be billions."""
    most = engine.join_rows()
    if most is None or counted <= most:
        return [(None, None)]
    bucket = exp.IntDiv(this=g.col(rid), expression=g.lit(most))
    found = engine.fetch(exp.select(g.alias(bucket, "r"), g.alias(exp.Count(this=exp.Star()), "n"))
                         .from_(source).group_by(bucket.copy()))
    buckets, sizes = np.asarray(found["r"], dtype=np.int64), np.asarray(found["n"], dtype=np.int64)
    if int(sizes.sum()) <= most:
        return [(None, None)]
    return [(int(r) * most, (int(r) + 1) * most) for r in np.sort(buckets)]
