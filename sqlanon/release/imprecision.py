"""Imprecision of selections over a release (KDD 2006, Section 3.4, equation 6), in SQL.

A multidimensional recoding divides the domain into regions; evaluated over the published view
``V`` a selection ``Pr`` can only return whole regions. Following LeFevre, DeWitt & Ramakrishnan
it returns every region that *overlaps* the query region, so

    imprecision(Pr) = |Pr(V)| - |Pr(T)|

where ``|Pr(T)|`` counts the rows of the source table ``T`` that satisfy ``Pr`` and ``|Pr(V)|``
the rows of the regions that overlap it. Overlap is judged on what is *published* (the issue's
definition): a region's box is its published ``[q_min, q_max]`` per ordered QI and its published
hierarchy node per hierarchical QI. A region overlaps a query box ``B`` iff it overlaps ``B`` on
every QI ``B`` constrains; it is returned for a selection iff it overlaps *any* of the
selection's boxes (each region counted once, so overlapping boxes of one selection do not count
a region twice):

* ordered QI, query ``Range(low, high)``: ``q_max >= low`` (``>`` for an open bound) and
  ``q_min <= high`` (``<``). NULL sorts first: a region holding NULLs publishes ``q_min`` NULL,
  which reads as "from the bottom of the domain", so it overlaps every ``high``; a region of
  only NULLs (``q_max`` NULL) overlaps no range;
* ordered QI, query ``IS NULL``: the region holds NULLs (``q_min`` is NULL);
* an ordered QI published as its cut points (``published="domain"``,
  :mod:`sqlanon.publish.bounds`): the region is ``q_min < v <= q_max`` with a NULL end
  unbounded, so it overlaps ``Range(low, high)`` iff ``q_max`` is NULL or ``>= low`` (``>``) and
  ``q_min`` is NULL or ``< high``; ``IS NULL`` as above (an open lower end may hold NULLs);
* hierarchical QI, query leaf set ``L`` (:class:`~sqlanon.model.selection.Members`): the published
  node has a leaf in ``L`` (the NULL leaf, when the column has NULLs, is a leaf under the root).

Since a row satisfying ``Pr`` lies in a region that overlaps it, the imprecision is never negative
for an unchanged source. Both counts are computed by the database: ``|Pr(V)|`` as
``sum(size) FILTER (WHERE <overlap>)`` over the rules relation ``<view>_rules`` (one statement
for all predicates), ``|Pr(T)|`` as ``count(*) FILTER (WHERE <predicate>)`` over the source
(one scan for all predicates). Region sizes are those of the release; if the source changed
since, the two counts refer to different data (re-run the release).

Predicates are parsed by :func:`sqlanon.model.selection.parse_selection` (nothing from their text is
executed); they need not be the selections the release was trained on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from sqlglot import exp

from ..engine import engine_for
from ..engine import sqlgen as g
from ..engine.base import Engine
from ..engine.calls import serialized
from ..engine.catalog import find_source, source_of
from ..errors import InputError, UnknownColumnError, did_you_mean
from ..model.qi import QI
from ..model.selection import (
    IsNull,
    Members,
    Range,
    Selection,
    literal,
    parse_selection,
)
from ..publish.manifest import Manifest
from .regions import load_release

NodeOverlap = Callable[[QI, np.ndarray], exp.Expression]


@dataclass(frozen=True)
class PredicateImprecision:
    """One predicate's figures: ``imprecision = returned - true``."""

    text: str
    returned: int  # |Pr(V)|: rows of the regions whose published box overlaps the predicate
    true: int  # |Pr(T)|: rows of the source that satisfy it
    imprecision: int
    selection: Selection = field(repr=False, compare=False)


@dataclass(frozen=True)
class Imprecision:
    """Imprecision of a list of predicates over one release.

    Attributes:
        view: the release's view.
        predicates: one :class:`PredicateImprecision` per predicate, in the order given.
        returned, true, total: sums over the predicates of ``returned``, ``true`` and
            ``imprecision`` (``total`` is the workload's total imprecision).
    """

    view: str
    predicates: tuple[PredicateImprecision, ...]

    @property
    def returned(self) -> int:
        return sum(p.returned for p in self.predicates)

    @property
    def true(self) -> int:
        return sum(p.true for p in self.predicates)

    @property
    def total(self) -> int:
        return sum(p.imprecision for p in self.predicates)

    def to_frame(self) -> pd.DataFrame:
        """One row per predicate: ``predicate``, ``returned``, ``true``, ``imprecision``."""
        return pd.DataFrame(
            {"predicate": [p.text for p in self.predicates],
             "returned": [p.returned for p in self.predicates],
             "true": [p.true for p in self.predicates],
             "imprecision": [p.imprecision for p in self.predicates]},
            columns=["predicate", "returned", "true", "imprecision"])


@serialized
def imprecision(con: Any, release: Any, predicates: str | Sequence[str]) -> Imprecision:
    """Imprecision ``|Pr(V)| - |Pr(T)|`` of each predicate over a release, computed in SQL.

    Args:
        con: the DuckDB or PostgreSQL (psycopg) connection holding the release and its source.
        release: a :class:`sqlanon.Release` or the name of a release's view; reloaded from the
            database (:func:`sqlanon.publish.manifest.read`).
        predicates: one SQL predicate over the QIs, or several (see
            :func:`sqlanon.model.selection.parse_selection` for what is accepted).

    Returns:
        :class:`Imprecision` (per predicate and totals; ``.to_frame()``).

    Raises:
        SelectionError: a predicate that is not a union of boxes over the QIs (before any query).
        InputError: not a release; ``UnknownTableError`` if the source is gone.
    """
    if isinstance(predicates, (bytes, Mapping)) or not isinstance(predicates, (str, Iterable)):
        raise InputError(f"predicates must be an SQL string or a list of them, got {type(predicates).__name__} "
                         f"{predicates!r}")
    m = load_release(con, release)
    texts = [predicates] if isinstance(predicates, str) else list(predicates)
    for t in texts:
        if not isinstance(t, str):
            raise InputError(f"predicates must be SQL strings, got {t!r}")
    qis = m.qis
    selections = [parse_selection(t, qis) for t in texts]
    if not selections:
        return Imprecision(m.view, ())
    engine = engine_for(con)
    returned = engine.fetch_rows(returned_query(m, selections))[0]
    true = engine.fetch_rows(true_query(engine, m, selections))[0]
    rows = []
    for sel, r, t in zip(selections, returned, true):
        r, t = int(r or 0), int(t or 0)
        rows.append(PredicateImprecision(sel.text, r, t, r - t, sel))
    return Imprecision(m.view, tuple(rows))


# -- queries -----------------------------------------------------------------------------------
def returned_query(m: Manifest, selections: Sequence[Selection]) -> exp.Select:
    """``SELECT sum(size) FILTER (WHERE <overlap_i>) ...`` over the rules: ``|Pr_i(V)|``."""
    aggregates = [
        g.alias(exp.Filter(this=exp.Sum(this=g.col(m.size_column)),
                           expression=exp.Where(this=overlap_predicate(s, g.col, rules_node_overlap))), f"r{i}")
        for i, s in enumerate(selections)
    ]
    return exp.select(*aggregates).from_(m.ref(m.rules))


def true_query(engine: Engine, m: Manifest, selections: Sequence[Selection]) -> exp.Select:
    """``SELECT count(*) FILTER (WHERE <predicate_i>) ...`` over the source: ``|Pr_i(T)|``."""
    ref = source_ref(engine, m)
    aggregates = [
        g.alias(exp.Filter(this=exp.Count(this=exp.Star()), expression=exp.Where(this=s.predicate(g.col))), f"t{i}")
        for i, s in enumerate(selections)
    ]
    return exp.select(*aggregates).from_(ref)


def source_ref(engine: Engine, m: Manifest) -> exp.Table:
    """The release's source (table, view, or files) as recorded in its manifest, checked to
    still have the QI columns."""
    objects = engine.objects()
    # The manifest names the source without its schema. A release made in a schema (SET schema)
    # from a source there sits next to it, so a source of that name in the release's schema is
    # taken first: another schema's release of the same name, from its own source, must not read
    # this one's. Otherwise the lookup anonymize() used (current schema, temp, unique elsewhere).
    beside = [o for o in objects if (o[0], o[1]) == (m.catalog, m.schema) and o[2] == m.source]
    source = source_of(engine, beside[0], count=False) if beside else find_source(engine, objects, m.source, count=False)
    missing = [q.name for q in m.qis if q.name not in source.column_names]
    if missing:
        raise UnknownColumnError(
            f"the source {m.source!r} of release {m.view!r} no longer has QI column {missing[0]!r}."
            + did_you_mean(missing[0], source.column_names))
    return source.ref


# -- overlap -----------------------------------------------------------------------------------
def overlap_predicate(selection: Selection, published: Callable[[str], exp.Expression],
                      node_overlap: NodeOverlap) -> exp.Expression:
    """Whether a region's published box overlaps any box of ``selection`` (see the module
    docstring), as a boolean over published columns.

    Args:
        selection: the parsed selection.
        published: gives the expression of a published column by name (``age_min``, ``age_max``).
        node_overlap: for a hierarchical QI and the ids of the hierarchy nodes whose leaves meet
            the query's leaves (DFS pre-order, possibly empty), the expression testing that the
            region's node is one of them.
    """
    if not selection.boxes:
        return exp.false()
    boxes = []
    for box in selection.boxes:
        parts = [condition_overlap(c, published, node_overlap) for c in box.conditions]
        boxes.append(exp.and_(*parts, copy=False) if parts else exp.true())
    return exp.or_(*boxes, copy=False) if len(boxes) > 1 else boxes[0]


def condition_overlap(c: Range | IsNull | Members, published: Callable[[str], exp.Expression],
                      node_overlap: NodeOverlap) -> exp.Expression:
    """One condition's overlap test on the published columns of its QI."""
    if isinstance(c, Members):
        return node_overlap(c.qi, overlapping_nodes(c))
    q_min, q_max = published(f"{c.name}_min"), published(f"{c.name}_max")
    if isinstance(c, IsNull):
        return exp.Is(this=q_min, expression=exp.Null())
    if c.qi.unbounded_ends:
        return _domain_overlap(c, q_min, q_max)
    parts: list[exp.Expression] = []
    if c.low is None:  # a region of only NULLs (q_max NULL) holds no value of any range
        parts.append(exp.Not(this=exp.Is(this=q_max, expression=exp.Null())))
    else:
        op = exp.GTE if c.low.closed else exp.GT
        parts.append(op(this=q_max, expression=literal(c.qi, c.low.value)))
    if c.high is not None:  # a NULL q_min (the region holds NULLs) reads as the domain's bottom
        op = exp.LTE if c.high.closed else exp.LT
        parts.append(exp.or_(exp.Is(this=q_min.copy(), expression=exp.Null()),
                             op(this=q_min, expression=literal(c.qi, c.high.value)), copy=False))
    return exp.and_(*parts, copy=False) if len(parts) > 1 else parts[0]


def _domain_overlap(c: Range, q_min: exp.Expression, q_max: exp.Expression) -> exp.Expression:
    """Overlap of ``Range(low, high)`` with a box published as its cut points
    (``published="domain"``): the region is ``q_min < v <= q_max``, a NULL end unbounded. It
    overlaps iff ``q_max >= low`` (``>`` for an open bound) and ``q_min < high`` (for either kind
    of bound: ``q_min`` itself is outside the region)."""
    parts: list[exp.Expression] = []
    if c.low is not None:
        op = exp.GTE if c.low.closed else exp.GT
        parts.append(exp.or_(exp.Is(this=q_max.copy(), expression=exp.Null()),
                             op(this=q_max, expression=literal(c.qi, c.low.value)), copy=False))
    if c.high is not None:
        parts.append(exp.or_(exp.Is(this=q_min.copy(), expression=exp.Null()),
                             exp.LT(this=q_min, expression=literal(c.qi, c.high.value)), copy=False))
    if not parts:
        return exp.true()
    return exp.and_(*parts, copy=False) if len(parts) > 1 else parts[0]


def overlapping_nodes(c: Members) -> np.ndarray:
    """Ids (DFS pre-order) of the hierarchy nodes with at least one leaf in ``c``."""
    h = c.qi.hierarchy
    assert h is not None
    codes = c.leaf_codes()
    if not len(codes):
        return np.zeros(0, dtype=np.int64)
    lo, hi = h.leaf_lo.astype(np.int64), h.leaf_hi.astype(np.int64)
    first = np.searchsorted(codes, lo)  # the first member code >= the node's first leaf
    has = first < len(codes)
    has[has] = codes[first[has]] <= hi[has]
    return np.nonzero(has)[0].astype(np.int64)


def rules_node_overlap(qi: QI, nodes: np.ndarray) -> exp.Expression:
    """On the rules relation: ``q_node IN (nodes)``."""
    if not len(nodes):
        return exp.false()
    return exp.In(this=g.col(f"{qi.name}_node"), expressions=[g.lit(int(n)) for n in nodes])
