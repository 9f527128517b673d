"""Learning from regions: each published row as a point in 2d dimensions (KDD 2006, Section 5).

A multidimensional recoding publishes every row as a d-dimensional box (its equivalence class).
LeFevre, DeWitt & Ramakrishnan (*Workload-Aware Anonymization*, KDD 2006, "learning from
regions") observe that such a box is uniquely a point in 2d dimensions -- its lower and upper
corner on each QI -- so standard learners can be trained on the anonymized data unchanged.
:func:`regions` computes that point, in SQL, for every row of a release's view (or of another
relation with the same published columns, such as a test table recoded later with the same
rules). Per QI ``q`` the point has two coordinates, ``q__lo`` and ``q__hi``:

* **numeric QIs**: the published ``q_min`` / ``q_max`` as DOUBLE;
* **dates**: days since 1970-01-01 (BIGINT); **timestamps** (with or without time zone):
  seconds since the epoch, with the fraction (DOUBLE, DuckDB's ``epoch``);
* **text, booleans, enums** (ordered without a hierarchy): the value's rank (DOUBLE) in the sorted
  set of every bound ``q_min``/``q_max`` of the release's non-empty regions, from 0. A value of
  the relation that is not one of those bounds (possible only for a relation not recoded by
  this release) gets the half rank between its neighbours (``-0.5`` below the first);
* **hierarchical QIs**: the leaf-code interval ``[leaf_lo, leaf_hi]`` (BIGINT) of the row's node
  in the hierarchy's DFS pre-order, as reloaded from the release (with the NULL leaf first,
  code 0, when the column has NULLs): an ordinal encoding in which a node is the span of its
  leaves and a leaf ``v`` is ``[code(v), code(v)]``. The node is the rules' ``q_node`` of the
  row's ``eq_class`` (so the relation needs ``eq_class`` when the release has a hierarchical
  QI); labels are not looked up, as one label may name several nodes. A row of a table recoded
  by :func:`sqlanon.apply` that no rule could place, or a suppressed row of a live view
  (``eq_class`` NULL, label the root's), is fully generalized: the root's interval
  ``[0, leaves - 1]``.

A NULL bound stays NULL (``q_min`` is NULL when the class holds NULLs of ``q``); a suppressed
row of a view and an unplaced row of an applied table have the fully generalized coordinates. Non-QI columns and ``eq_class`` are
carried along unchanged, in the relation's column order, each QI's pair in place of its
published columns.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from sqlglot import exp

from ..engine import check_connection, engine_for
from ..engine import sqlgen as g
from ..engine.base import Engine, Name
from ..engine.calls import serialized
from ..errors import (
    InputError,
    ObjectExistsError,
    UnknownColumnError,
    UnknownTableError,
    did_you_mean,
)
from ..model.hierarchy import Hierarchy
from ..model.qi import QI
from ..publish import manifest
from ..publish.manifest import Manifest
from ..request.checks import check_bool, check_free

_DOUBLE = exp.DataType.build("DOUBLE")
_BIGINT = exp.DataType.build("BIGINT")


@serialized
def regions(
    con: Any,
    release: Any,
    *,
    table: str | None = None,
    name: str | None = None,
    replace: bool = False,
    as_frame: bool = False,
) -> Any:
    """Each row of a release's view (or of ``table``) as a point in 2d dimensions.

    Args:
        con: the DuckDB or PostgreSQL (psycopg) connection holding the release.
        release: a :class:`sqlanon.Release`, or the name of a release's view (or rules
            relation); the release is reloaded from the database (:func:`sqlanon.publish.manifest.read`).
        table: another table or view with the release's published columns (``q_min``/``q_max``
            per ordered QI, the label column per hierarchical QI, and ``eq_class`` if there is a
            hierarchical QI); default: the release's view.
        name: create a VIEW of this name (in the current schema) and return the name.
        replace: with ``name``, overwrite an existing table or view of that name (never the
            release's own objects or the relation read).
        as_frame: return a pandas DataFrame (after creating the view, if ``name`` is given).

    Returns:
        ``as_frame``: a DataFrame; else ``name``: the view's name; else, on DuckDB, a lazy
        ``duckdb.DuckDBPyRelation`` over the same query (``.df()``, ``.fetchall()``, or
        ``con.sql(...)`` on top of it), and on other engines a DataFrame.

    Raises:
        InputError: not a release; ``UnknownTableError`` / ``UnknownColumnError`` for a
            ``table`` that is missing or lacks published columns; ``ObjectExistsError`` when
            ``name`` is taken (and ``replace`` is False), is one of the release's objects or
            the relation read, or an output column collides with a carried column.
    """
    engine = engine_for(con)
    replace = check_bool("replace", replace)
    m = load_release(con, release)
    ref, columns = resolve_relation(engine, table if table is not None else m.ref(m.view))
    query, _ = points_query(engine, m, ref, columns, own_view=table is None)
    if name is not None:
        _create_view(engine, m, name, query, replace, relation=table if table is not None else m.view)
        if not as_frame:
            return name
    if as_frame or not hasattr(engine, "relation"):
        return engine.fetch_frame(query)
    return engine.relation(query)


# -- shared with sqlanon.metrics ---------------------------------------------------------------
def load_release(con: Any, release: Any) -> Manifest:
    """The manifest of a :class:`~sqlanon.Release` (read where it was created), of a release
    named by its view, or a :class:`~sqlanon.publish.manifest.Manifest` as it is (already read: reading
    it again by name could find another schema's release of the same name)."""
    check_connection(con)
    if isinstance(release, Manifest):
        return release
    view = getattr(release, "view", release)
    if not isinstance(view, str) or not view:
        raise InputError(f"release must be a sqlanon.Release or the name of a release's view, got {release!r}")
    return manifest.read(con, view, location=getattr(release, "_location", None))


def resolve_relation(engine: Engine, name: str | exp.Table) -> tuple[exp.Table, list[tuple[str, str]]]:
    """A table or view by name, bound as the engine binds it in SQL (:meth:`Engine.find`), or
    by an exact reference such as :meth:`Manifest.ref` gives, and its ``(column, type)`` list."""
    if isinstance(name, exp.Table):
        parts = (name.catalog, name.db, name.name)
        label = ".".join(p for p in parts if p)  # for the error message
        found = next((o for o in engine.objects() if (o.catalog, o.schema, o.name) == parts), None) \
            if name.catalog else engine.find(label)
    elif not isinstance(name, str) or not name:
        raise InputError(f"table must be a non-empty string, got {name!r}")
    else:
        label, found = name, engine.find(name)
    if found is None:
        known = {o.name for o in engine.objects()}
        raise UnknownTableError(f"no table or view named {label!r}." + did_you_mean(label, known))
    return found.ref, engine.describe(exp.select("*").from_(found.ref))


def hierarchy_nodes(h: Hierarchy, alias: str) -> exp.Values:
    """``(VALUES ...) AS alias(node, leaf_lo, leaf_hi, leaves)``: every node of ``h`` (DFS
    pre-order id) with its leaf-code interval and leaf count, as literals."""
    lo, hi = h.leaf_lo.astype(np.int64), h.leaf_hi.astype(np.int64)
    rows = [exp.Tuple(expressions=[g.lit(int(i)), g.lit(int(lo[i])), g.lit(int(hi[i])), g.lit(int(hi[i] - lo[i] + 1))])
            for i in range(h.n_nodes)]
    return exp.Values(expressions=rows, alias=exp.TableAlias(
        this=g.ident(alias), columns=[g.ident(c) for c in ("node", "leaf_lo", "leaf_hi", "leaves")]))


def published_bounds(m: Manifest, qi: QI) -> exp.Union:
    """The distinct bound values (``q_min`` and ``q_max``) of the release's non-empty regions,
    as one column ``v`` (NULL included; callers drop it)."""
    rules = m.ref(m.rules)

    def side(column: str) -> exp.Select:
        return (exp.select(g.alias(g.col(column), "v")).from_(rules.copy())
                .where(exp.GT(this=g.col(m.size_column), expression=g.lit(0))))

    return exp.union(side(f"{qi.name}_min"), side(f"{qi.name}_max"), distinct=True)


def derived(query: exp.Expression, alias: str) -> exp.Subquery:
    """``(query) AS alias``."""
    return exp.Subquery(this=query.copy(), alias=exp.TableAlias(this=g.ident(alias)))


def qi_columns(qi: QI) -> tuple[str, ...]:
    """The columns that stand for a QI in a published relation."""
    return (qi.name,) if qi.kind == "hierarchy" else (f"{qi.name}_min", f"{qi.name}_max")


# -- the query ---------------------------------------------------------------------------------
def points_query(
    engine: Engine, m: Manifest, ref: exp.Table, columns: Sequence[tuple[str, str]], *, own_view: bool
) -> tuple[exp.Select, list[str]]:
    """``SELECT`` of the 2d-dimensional points over relation ``ref``; also the output columns."""
    names = [c for c, _ in columns]
    available = set(names)
    hierarchical = [q for q in m.qis if q.kind == "hierarchy"]
    needed = [c for q in m.qis for c in qi_columns(q)] + ([m.class_column] if hierarchical else [])
    missing = [c for c in needed if c not in available]
    if missing:
        why = f" ({m.class_column!r} locates the node of hierarchical QIs)" if m.class_column in missing else ""
        raise UnknownColumnError(
            f"the relation lacks the published column(s) {missing} of release {m.view!r}{why}."
            + did_you_mean(missing[0], names))

    x = "x"
    query = exp.select().from_(exp.alias_(ref.copy(), g.ident(x), table=True))
    if hierarchical:
        query = query.join(
            exp.alias_(m.ref(m.rules), g.ident("r"), table=True),
            on=exp.EQ(this=g.col(m.region_column, "r"), expression=g.col(m.class_column, x)), join_type="left")
    point: dict[str, tuple[exp.Expression, exp.Expression]] = {}
    for i, qi in enumerate(m.qis):
        lo_col, hi_col = qi_columns(qi)[0], qi_columns(qi)[-1]
        if qi.kind == "hierarchy":
            alias = f"h{i}"
            # A row without a class whose label is the root's is fully generalized (a suppressed
            # row of the view, an unplaced row of a table recoded by sqlanon.apply): the root's
            # interval.
            h = m.hierarchies[qi.name]
            generalized = exp.Case().when(exp.and_(
                exp.Is(this=g.col(m.class_column, x), expression=exp.Null()),
                exp.EQ(this=g.col(qi.name, x), expression=g.lit(h.labels[0]))), g.lit(0))
            node = exp.Coalesce(this=g.col(f"{qi.name}_node", "r"), expressions=[generalized])
            query = query.join(hierarchy_nodes(h, alias), join_type="left",
                               on=exp.EQ(this=g.col("node", alias), expression=node))
            point[qi.name] = (exp.Cast(this=g.col("leaf_lo", alias), to=_BIGINT),
                              exp.Cast(this=g.col("leaf_hi", alias), to=_BIGINT))
        elif qi.kind == "ordinal":
            # derived tables, not CTEs: a CTE name would shadow a relation of the same name
            ranks = _half_ranks(m, qi, None if own_view else ref)
            for side, column in (("a", lo_col), ("b", hi_col)):
                query = query.join(
                    derived(ranks, f"{side}{i}"), join_type="left",
                    on=exp.EQ(this=g.col("v", f"{side}{i}"), expression=g.col(column, x)))
            point[qi.name] = (g.col("r", f"a{i}"), g.col("r", f"b{i}"))
        else:
            point[qi.name] = (coordinate(engine, qi, g.col(lo_col, x)), coordinate(engine, qi, g.col(hi_col, x)))

    owner = {c: q for q in m.qis for c in qi_columns(q)}
    select: list[exp.Expression] = []
    out: list[str] = []
    for column in names:
        qi = owner.get(column)
        if qi is None:
            select.append(g.alias(g.col(column, x), column))
            out.append(column)
        elif column == qi_columns(qi)[0]:
            lo, hi = point[qi.name]
            select += [g.alias(lo, f"{qi.name}__lo"), g.alias(hi, f"{qi.name}__hi")]
            out += [f"{qi.name}__lo", f"{qi.name}__hi"]
    seen: dict[str, str] = {}
    for c in out:
        if c.lower() in seen:
            raise ObjectExistsError(
                f"the output would have duplicate columns {c!r} and {seen[c.lower()]!r} (names are "
                "case-insensitive): a column of the relation collides with a QI's __lo/__hi pair")
        seen[c.lower()] = c
    return query.select(*select, copy=False), out


def coordinate(engine: Engine, qi: QI, value: exp.Expression) -> exp.Expression:
    """A published bound of a numeric or temporal QI as a number (see the module docstring)."""
    t = qi.data_type.upper()
    if qi.kind == "numeric":
        return exp.Cast(this=value, to=_DOUBLE)
    if t == "DATE":
        return exp.Cast(this=exp.Sub(this=value, expression=exp.Cast(this=g.lit("1970-01-01"),
                                                                      to=exp.DataType.build("DATE"))), to=_BIGINT)
    return exp.Div(this=exp.Cast(this=engine.epoch_us(value, qi.data_type), to=_DOUBLE), expression=g.lit(1_000_000.0))


def _half_ranks(m: Manifest, qi: QI, other: exp.Table | None) -> exp.Select:
    """``(v, r)``: rank ``r`` (DOUBLE) of each bound value of the release, and the half rank of
    each value of ``other`` (a relation other than the release's view) that is not a bound."""
    bound = exp.select(g.col("v"), g.alias(g.lit(1), "b")).from_(
        derived(published_bounds(m, qi), "p"))
    parts: exp.Expression = bound
    if other is not None:
        for column in qi_columns(qi):
            parts = exp.union(parts, exp.select(g.alias(g.col(column), "v"), g.alias(g.lit(0), "b"))
                              .from_(other.copy()), distinct=False)
    merged = (exp.select(g.col("v"), g.alias(exp.Max(this=g.col("b")), "b"))
              .from_(derived(parts, "u"))
              .where(exp.Not(this=exp.Is(this=g.col("v"), expression=exp.Null())))
              .group_by(g.col("v")))
    running = exp.Window(this=exp.Sum(this=g.col("b")), order=exp.Order(expressions=[exp.Ordered(this=g.col("v"))]),
                         spec=exp.WindowSpec(kind="ROWS", start="UNBOUNDED", start_side="PRECEDING",
                                             end="CURRENT ROW"))
    counted = exp.select(g.col("v"), g.col("b"), g.alias(running, "c")).from_(
        derived(merged, "w"))
    rank = exp.Case().when(exp.EQ(this=g.col("b"), expression=g.lit(1)),
                           exp.Sub(this=g.col("c"), expression=g.lit(1))).else_(
        exp.Sub(this=g.col("c"), expression=g.lit(0.5)))
    return exp.select(g.col("v"), g.alias(exp.Cast(this=rank, to=_DOUBLE), "r")).from_(
        derived(counted, "k"))


def _create_view(engine: Engine, m: Manifest, name: str, query: exp.Select, replace: bool, relation: str) -> None:
    if not isinstance(name, str) or not name:
        raise InputError(f"name must be a non-empty string, got {name!r}")
    engine.check_names([Name(name, "view", "the regions' view", "choose a shorter name=")])
    engine.check_writable(f"the view {name!r}")
    protected = {n.lower() for n in (m.view, m.rules, m.rowmap, m.hierarchies_table, m.source, relation) if n}
    if name.lower() in protected:
        raise ObjectExistsError(f"{name!r} is an object of release {m.view!r} (or its source, or the "
                                "relation read); choose another name")
    existing = check_free(engine, name, replace)
    with engine.transaction():
        for found, kind in existing:
            engine.execute(g.drop(found, kind.upper()))
        engine.execute(g.create_view(name, query))
