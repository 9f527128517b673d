"""The published views: a keyed release's, live and fail-closed while the source changes, and
a keyless release's, of the snapshot the run took.

A release of a source with a key (a declared PRIMARY KEY / UNIQUE key, or ``key=``) is a view
over the source, so analysts always see the current rows -- and the release's requirement must
hold at query time, not only when it was published. Each time the view is read:

1. **matched**: every source row is joined to the row map ``(key0.., region, rhash)`` on its key
   *and* on the hash of its guarded columns (the QIs and every column a constraint judges, e.g.
   the sensitive attribute). A row inserted after the release, or whose QIs or sensitive value
   changed, or -- for a key the database does not enforce -- whose key value now appears twice,
   matches nothing: it has no region.
2. **live**: a region whose matched rows still meet the requirement: at least ``k`` rows and
   every constraint (distinct / entropy / recursive (c,l)-diversity, variance diversity),
   evaluated with the same formulas the partitioner used (:mod:`sqlanon.model.privacy`).
3. every row of a live region is published with the region's bounds and its class id; every
   other row is **suppressed**: class column NULL and every QI fully generalized -- a
   hierarchical QI the hierarchy's root label, an ordered QI the bounds of the whole release
   (the smallest ``q_min`` and largest ``q_max`` of its non-empty regions; ``q_min`` NULL when a
   region holds NULLs, as NULL sorts first). So a class that shrinks below ``k`` or loses its
   diversity through deletes or updates disappears as a whole, and no raw QI value is ever
   shown.

A row the recoding itself suppressed (:mod:`sqlanon.publish.suppression`: its row map region is
NULL) is published the same way, from the start.

A keyless release is a view too, of the snapshot the run took (:func:`snapshot_view`): its rows
joined to the rules, with nothing to re-check, since nothing but the release writes them.

:func:`status` counts the suppressed rows by reason with the same building blocks, for
:func:`sqlanon.verify`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlglot import exp

from ..engine import sqlgen as g
from ..engine.base import Engine
from ..engine.catalog import free_name
from ..model.manifest_format import rowmap_key
from ..model.privacy import BAD, KAnonymity, PrivacyModel, beyond_k
from ..model.qi import QI

#: Why a row of a live view is suppressed (see :func:`status`).
CHANGED = "new, changed or duplicate-key row"
#: ... and when the recoding suppressed it (:data:`sqlanon.publish.suppression.REASON`).
SUPPRESSED = "suppressed by the recoding"


@dataclass(frozen=True)
class LiveView:
    """Everything the live view of a release is built from (from a Spec at publication, or
    from the manifest when verifying later)."""

    source: exp.Table
    columns: tuple[str, ...]  # the source's columns, in order
    qis: tuple[QI, ...]
    key: tuple[str, ...]
    key_declared: bool
    guarded: tuple[str, ...]
    k: int
    constraints: tuple[PrivacyModel, ...]
    rowmap: str | exp.Table  # a name in the current schema, or a qualified reference
    rules: str | exp.Table
    region_column: str
    size_column: str
    class_column: str
    qids: tuple[tuple[tuple[str, ...], int], ...] = ()  # a single-dimensional release's <QID, k> pairs

    @property
    def region_alias(self) -> str:
        """The matched rows' region column: a name none of the source's columns has."""
        return free_name("__sqlanon_region", self.columns)

    @property
    def suppressed_alias(self) -> str:
        """The matched rows' flag: the row map vouches for the row and the recoding suppressed
        it (:mod:`sqlanon.publish.suppression`)."""
        return free_name("__sqlanon_suppressed", self.columns)


def _ref(name: str | exp.Table) -> exp.Table:
    return name.copy() if isinstance(name, exp.Table) else g.table(name)


def _from(name: str | exp.Table, alias: str) -> exp.Expression:
    return exp.alias_(_ref(name), g.ident(alias), table=True)


def _sub(query: exp.Expression, alias: str) -> exp.Subquery:
    return exp.Subquery(this=query, alias=exp.TableAlias(this=g.ident(alias)))


def _matched(engine: Engine, v: LiveView) -> exp.Select:
    """Each source row with its region, or NULL when the row map no longer vouches for it: the
    row map holds no row of its key, or the row's hash differs from the one recorded. (Joined on
    the key alone, the hash compared after: a distributed engine then partitions the rows once,
    by key, for the join and for counting the rows of a key.)"""
    on = exp.and_(*[exp.EQ(this=g.col(rowmap_key(i), "a"), expression=g.col(c, "b")) for i, c in enumerate(v.key)])
    vouched = [exp.EQ(this=g.col("rhash", "a"), expression=engine.row_hash([g.col(c, "b") for c in v.guarded]))]
    if not v.key_declared:  # a key value held twice vouches for neither row
        twice = exp.Window(this=exp.Count(this=exp.Star()),
                           partition_by=[g.col(c, "b") for c in v.key])
        vouched.append(exp.EQ(this=twice, expression=g.lit(1)))
    region = exp.Case().when(exp.and_(*vouched), g.col("region", "a"))
    recoded = exp.Case().when(exp.and_(*[e.copy() for e in vouched],
                                       exp.Is(this=g.col("region", "a"), expression=exp.Null())), exp.true()
                              ).else_(exp.false())
    return (exp.select(*[g.col(c, "b") for c in v.columns], g.alias(region, v.region_alias),
                       g.alias(recoded, v.suppressed_alias))
            .from_(exp.alias_(v.source.copy(), g.ident("b"), table=True))
            .join(_from(v.rowmap, "a"), on=on, join_type="left"))


def _judged(v: LiveView) -> list[tuple[str, str, exp.Select]]:
    """The requirement as ``(reason, cte name, per-class query)``: k first, then every constraint
    of the release, each judging every region of the matched rows (the model's per-class
    measure, :meth:`~sqlanon.model.privacy.PrivacyModel.per_class`: one row per region, ``BAD``
    when it fails)."""
    placed = exp.Not(this=exp.Is(this=g.col(v.region_alias), expression=exp.Null()))
    requirement: list[PrivacyModel] = [KAnonymity(v.k), *beyond_k(v.constraints, v.k)]
    return [(c.reason(), f"c{j}", c.per_class(g.table("matched"), [v.region_alias], where=placed))
            for j, c in enumerate(requirement)]


def _failed(name: str) -> exp.Expression:
    return exp.Coalesce(this=g.col(BAD, name), expressions=[exp.false()])


def _with(query: exp.Select, ctes: list[tuple[str, exp.Expression]]) -> exp.Select:
    for name, body in ctes:
        query = query.with_(g.ident(name), as_=body, copy=False)
    return query


#: Why every row of a live view with several QIDs is suppressed (see :func:`_qids_hold`).
QID_BELOW_K = "a QID group below its k"


def _qids_hold(v: LiveView) -> exp.Select:
    """One row, ``ok``: every ``<QID, k>`` of a single-dimensional release holds on the matched
    rows (grouped on the QID's published columns, read from the rules by region). When one does
    not, the view suppresses every row: a class's rows count in several QIDs' groups, so
    suppressing only some classes could break another QID -- all or nothing stays sound."""
    placed = exp.Not(this=exp.Is(this=g.col(v.region_alias, "m"), expression=exp.Null()))
    qis = {q.name: q for q in v.qis}
    failing: list[exp.Expression] = []
    for columns, k in v.qids:
        keys = [g.col(p, "r") for c in columns for p in qis[c].published]
        groups = (exp.select(g.alias(exp.Count(this=exp.Star()), "n")).from_(_from("matched", "m"))
                  .join(_from(v.rules, "r"), on=exp.EQ(this=g.col(v.region_column, "r"),
                                                        expression=g.col(v.region_alias, "m")))
                  .where(placed.copy()).group_by(*keys))
        failing.append(exp.Subquery(this=exp.select(exp.Count(this=exp.Star())).from_(_sub(groups, "q"))
                                    .where(exp.LT(this=g.col("n"), expression=g.lit(k)))))
    total = failing[0]
    for f in failing[1:]:
        total = exp.Add(this=total, expression=f)
    return exp.select(g.alias(exp.EQ(this=total, expression=g.lit(0)), "ok"))


def live_view(engine: Engine, v: LiveView, regions: int) -> exp.Select:
    """The view's query (module docstring); ``regions``: the rules' rows (at most as many live
    regions: a lookup an engine may broadcast rather than shuffle every row by region)."""
    judged = _judged(v)
    r = v.region_alias
    live = exp.select(g.alias(g.col(r, judged[0][1]), "region")).from_(_from(judged[0][1], judged[0][1]))
    for _, name, _ in judged[1:]:  # every region appears in every judgement (same grouping)
        live = live.join(_from(name, name), on=exp.EQ(this=g.col(r, name), expression=g.col(r, judged[0][1])))
    live = live.where(exp.and_(*[exp.Not(this=_failed(name)) for _, name, _ in judged]))
    if v.qids:
        live = live.join(_from("qids_hold", "h"), join_type="cross").where(g.col("ok", "h"))
    region = g.col("region", "l")
    select = published_columns(v.columns, v.qis, "m", region)
    query = (
        exp.select(*select, g.alias(region, v.class_column))
        .from_(_from("matched", "m"))
        .join(_from("live", "l"), on=exp.EQ(this=region.copy(), expression=g.col(r, "m")), join_type="left")
        .join(_from(v.rules, "r"), on=exp.EQ(this=g.col(v.region_column, "r"), expression=region.copy()), join_type="left")
    )
    query = engine.broadcast(query, [("l", regions)])
    with_ = [("matched", _matched(engine, v)), *[(name, q) for _, name, q in judged],
             *([("qids_hold", _qids_hold(v))] if v.qids else []), ("live", live)]
    root = root_bounds(v.qis, v.rules, v.size_column)
    if root is not None:
        query = query.join(_from("root", "z"), join_type="cross")
        with_.append(("root", root))
    return _with(query, with_)


def snapshot_view(columns: Sequence[str], qis: Sequence[QI], rows: str | exp.Table, rules: str | exp.Table,
                  region_column: str, size_column: str, class_column: str, suppressed: bool) -> exp.Select:
    """The view of a keyless release: each row of its snapshot ``rows`` (the source's columns
    other than the QIs, and the row's region in ``class_column``) with its region's published
    QI columns from ``rules``, in the source's column order (``columns``), then the class::

        SELECT .., r.q_min, r.q_max, .., t.c, .., t.class FROM rows t LEFT JOIN rules r ON r.region = t.class

    With ``suppressed`` a row may have no region (:mod:`sqlanon.publish.suppression`): its QIs
    are published fully generalized, from the release's bounds (:func:`root_bounds`)."""
    region = g.col(class_column, "t")
    select = published_columns(columns, qis, "t", region if suppressed else None)
    query = (exp.select(*select, g.alias(region.copy(), class_column)).from_(_from(rows, "t"))
             .join(_from(rules, "r"), on=exp.EQ(this=g.col(region_column, "r"), expression=region.copy()),
                   join_type="left"))
    root = root_bounds(qis, rules, size_column) if suppressed else None
    if root is not None:
        query = query.join(_sub(root, "z"), join_type="cross")
    return query


def published_columns(columns: Sequence[str], qis: Sequence[QI], rows_alias: str,
                      region: exp.Expression | None) -> list[exp.Expression]:
    """A view's columns in the source's order (``columns``): a non-QI column from the rows
    (``rows_alias``), each QI replaced by its published columns from the rules (alias ``r``) --
    fully generalized (:func:`generalized`, root bounds aliased ``z``) where ``region`` is NULL,
    unless ``region`` is None (every row has a region)."""
    by_name = {q.name: q for q in qis}
    select: list[exp.Expression] = []
    for c in columns:
        q = by_name.get(c)
        if q is None:
            select.append(g.alias(g.col(c, rows_alias), c))
        else:
            select += [g.alias(g.col(p, "r") if region is None else generalized(q, p, region.copy(), "r", "z"), p)
                       for p in q.published]
    return select


def generalized(q: QI, column: str, region: exp.Expression, rules_alias: str, root_alias: str) -> exp.Expression:
    """A published column of QI ``q``: the region's value, or the fully generalized one when the
    row has no region (``region`` NULL): the root label, or the release's bounds (one row
    :func:`sqlanon.publish.view.root_bounds`, aliased ``root_alias``)."""
    root = g.col(column, root_alias) if q.ordered else g.lit(q.root_label)
    return exp.Case().when(exp.Is(this=region, expression=exp.Null()), root).else_(g.col(column, rules_alias))


def root_bounds(qis: Sequence[QI], rules: str | exp.Table, size_column: str) -> exp.Select | None:
    """One row: the fully generalized bounds of every ordered QI (None without ordered QIs),
    over the non-empty regions. Numbers, dates and times and text in one aggregate over the rules
    (:func:`aggregated_bound`; Spark runs every scalar subquery as a job of its own: at 3,000
    rows the verification's two statements ran 15 and 17 jobs with one subquery per bound),
    other types (booleans, enums: PostgreSQL has no MIN/MAX of BOOLEAN) by :func:`root_bound`."""
    ordered = [q for q in qis if q.ordered]
    if not ordered:
        return None
    aggregate = exp.select()  # an aggregate without GROUP BY: one row, of NULLs when no region is non-empty
    query = exp.select()
    for q in ordered:
        low, high = q.published
        if q.kind in ("numeric", "temporal") or q.ordered_by_text:
            aggregate = aggregate.select(
                g.alias(aggregated_bound(low, lowest=True), low),
                g.alias(aggregated_bound(high, lowest=False, unbounded=q.unbounded_ends), high), copy=False)
            bounds: tuple[exp.Expression, exp.Expression] = (g.col(low, "a"), g.col(high, "a"))
        else:
            bounds = (root_bound(rules, size_column, low, lowest=True),
                      root_bound(rules, size_column, high, lowest=False, unbounded=q.unbounded_ends))
        query = query.select(g.alias(bounds[0], low), g.alias(bounds[1], high), copy=False)
    if aggregate.expressions:
        aggregate = aggregate.from_(_ref(rules)).where(exp.GT(this=g.col(size_column), expression=g.lit(0)))
        query = query.from_(exp.Subquery(this=aggregate, alias=exp.TableAlias(this=g.ident("a"))))
    return query


def aggregated_bound(column: str, *, lowest: bool, unbounded: bool = False) -> exp.Expression:
    """:func:`root_bound` as an aggregate of the non-empty regions: ``MIN(column)``, NULL when
    any is NULL (NULL sorts first); ``MAX(column)`` (NULLs ignored; with ``unbounded``, NULL when
    any is NULL). NULL without rows, as the first row of none."""
    value = g.col(column)
    if not lowest and not unbounded:
        return exp.Max(this=value)
    some_null = exp.LT(this=exp.Count(this=value.copy()), expression=exp.Count(this=exp.Star()))
    best = (exp.Min if lowest else exp.Max)(this=value)
    return exp.Case().when(some_null, exp.Null()).else_(best)


def root_bound(rules: str | exp.Table, size_column: str, column: str, *, lowest: bool,
               unbounded: bool = False) -> exp.Subquery:
    """One fully generalized bound over the non-empty regions: the smallest ``column`` (NULL if
    any is NULL: NULL sorts first), or the largest (NULLs ignored; with ``unbounded``, a QI
    published with ``published="domain"``, NULL if any is NULL: NULL is the open end above). The first row in
    order, not MIN/MAX: PostgreSQL has no MIN/MAX of BOOLEAN."""
    order = exp.Ordered(this=g.col(column), desc=not lowest, nulls_first=lowest or unbounded)
    return exp.Subquery(this=exp.select(g.col(column)).from_(_ref(rules))
                        .where(exp.GT(this=g.col(size_column), expression=g.lit(0))).order_by(order).limit(1))


def status(engine: Engine, v: LiveView) -> exp.Select:
    """``(reason, rows, classes)``: the view's suppressed rows by the first reason that applies
    (:data:`CHANGED`, then k, then each constraint in order)."""
    judged = _judged(v)
    r = v.region_alias
    reason = exp.Case().when(g.col(v.suppressed_alias, "m"), g.lit(SUPPRESSED)).when(
        exp.Is(this=g.col(r, "m"), expression=exp.Null()), g.lit(CHANGED))
    for why, name, _ in judged:
        reason = reason.when(_failed(name), g.lit(why))
    if v.qids:
        reason = reason.when(exp.Not(this=g.col("ok", "h")), g.lit(QID_BELOW_K))
    rows = exp.select(g.alias(g.col(r, "m"), "region"), g.alias(reason, "reason")).from_(_from("matched", "m"))
    for _, name, _ in judged:
        rows = rows.join(_from(name, name), on=exp.EQ(this=g.col(r, name), expression=g.col(r, "m")), join_type="left")
    if v.qids:
        rows = rows.join(_from("qids_hold", "h"), join_type="cross")
    query = (exp.select(g.col("reason"), g.alias(exp.Count(this=exp.Star()), "rows"),
                        g.alias(exp.Count(this=exp.Distinct(expressions=[g.col("region")])), "classes"))
             .from_(_sub(rows, "x")).where(exp.Not(this=exp.Is(this=g.col("reason"), expression=exp.Null())))
             .group_by(g.col("reason")).order_by(g.col("reason")))
    return _with(query, [("matched", _matched(engine, v)), *[(name, q) for _, name, q in judged],
                         *([("qids_hold", _qids_hold(v))] if v.qids else [])])


#: The columns :func:`released_rows` adds to the QIs: 1 for a row published in a class, 1 for a
#: row the recoding suppressed (:func:`sqlanon.publish.verify.exposed_values`).
PLACED, RECODED = "__sqlanon_placed", "__sqlanon_recoded"


def released_rows(engine: Engine, v: LiveView) -> exp.Select:
    """Each source row of a live release with its QI values and whether the row map places it
    in a class (:data:`PLACED`) or the recoding suppressed it (:data:`RECODED`), for
    :func:`sqlanon.publish.verify.exposed_values`."""
    placed = exp.Case().when(exp.Not(this=exp.Is(this=g.col(v.region_alias), expression=exp.Null())), g.lit(1)).else_(g.lit(0))
    recoded = exp.Case().when(g.col(v.suppressed_alias), g.lit(1)).else_(g.lit(0))
    return exp.select(*[g.col(q.name) for q in v.qis], g.alias(placed, PLACED), g.alias(recoded, RECODED)).from_(
        _sub(_matched(engine, v), "m"))
