"""Independent verification of a published relation, in SQL.

It reads only the relation being checked (never the partitioning state), so it checks a release
made by sqlanon, by an older version of it, or by any other tool.
"""

from __future__ import annotations

from typing import Any

from collections.abc import Sequence
from dataclasses import dataclass

import math

from sqlglot import exp

from ..engine import sqlgen as g
from ..model.constraints import (
    TOLERANCE,
    Constraint,
    DistinctLDiversity,
    EntropyLDiversity,
    KAnonymity,
    RecursiveCLDiversity,
    TCloseness,
    VarianceDiversity,
)
from . import manifest
from .class_checks import BAD, VALUE, per_class_query
from ..engine.base import Engine
from ..engine.calls import serialized
from ..engine import engine_for
from ..errors import InputError, UnknownColumnError, did_you_mean
from .manifest import Manifest
from ..model.qi import QI
from ..request.checks import check_int, check_qid
from ..engine.catalog import Source, find_source
from .view import SUPPRESSED, root_bounds, status
from ..request.workload import check_constraints


@dataclass(frozen=True)
class Verification:
    """The outcome of :func:`verify`.

    Attributes:
        ok: every equivalence class holds at least ``k`` rows.
        k: the requirement checked.
        k_achieved: size of the smallest equivalence class (0 for an empty relation).
        classes: number of equivalence classes.
        rows: rows in the relation.
        violating: classes smaller than ``k``.
        columns: the columns that define the classes.
        unplaced: rows whose ``class_column`` is NULL (0 when no class column was named). For
            a sqlanon release these are its *suppressed* rows: they do not form a class, and
            ``ok`` requires instead that each is fully generalized (``leaked`` counts those that
            are not). For any other relation they fail the check.
        checks: one :class:`Check` per further constraint verified.
        suppressed: for a live release view, ``(reason, rows, classes)`` per reason its rows are
            suppressed now: new, changed or duplicate-key rows, classes below k, classes that
            violate a constraint (the view enforces the requirement when it is read).
        leaked: suppressed rows of a release whose QI columns are not fully generalized.
        qids: one :class:`QIDCheck` per ``<QID, k>`` pair checked (several QIDs, TKDE 2007
            Definition 1: each QID's groups over its own published columns).
        suppression_limit: for a release that records it, the most rows its recoding may
            suppress (:mod:`sqlanon.publish.suppression`); ``ok`` then also requires that the
            rows the recoding suppressed -- a snapshot's rows without a class, a live view's
            rows suppressed "by the recoding" -- are at most that many.
    """

    ok: bool
    k: int
    k_achieved: int
    classes: int
    rows: int
    violating: int
    columns: tuple[str, ...]
    unplaced: int = 0
    checks: tuple[Check, ...] = ()
    suppressed: tuple[tuple[str, int, int], ...] = ()
    leaked: int = 0
    qids: tuple[QIDCheck, ...] = ()
    suppression_limit: int | None = None


@dataclass(frozen=True)
class QIDCheck:
    """One ``<QID, k>`` verified on the published relation: the rows (suppressed ones apart)
    grouped on the QID's published columns, the smallest group and the groups below ``k``."""

    qid: tuple[str, ...]
    k: int
    ok: bool
    achieved: int
    violating: int


@dataclass(frozen=True)
class Check:
    """One constraint verified on the published relation: ``achieved`` is the worst class's
    value of the constrained measure (distinct values, entropy l = e^H, variance, or for
    recursive (c,l) the number of violating classes) and ``violating`` the classes that fail."""

    constraint: str
    ok: bool
    achieved: float
    violating: int


def class_columns(columns: Sequence[str], qid: Sequence[str]) -> tuple[str, ...]:
    """The columns standing for each QI: the column itself, or its ``_min``/``_max`` pair."""
    available = set(columns)
    out: list[str] = []
    for name in qid:
        if name in available:
            out.append(name)
        elif f"{name}_min" in available and f"{name}_max" in available:
            out += [f"{name}_min", f"{name}_max"]
        else:
            raise UnknownColumnError(
                f"the relation has neither a column {name!r} nor {name + '_min'!r}/{name + '_max'!r}."
                + did_you_mean(name, columns)
            )
    return tuple(out)


@serialized
def verify(
    con: Any,
    relation: str,
    qid: Sequence[str],
    k: int,
    *,
    class_column: str | None = None,
    constraints: Sequence[Constraint] = (),
    qids: Sequence[tuple[Sequence[str], int]] | None = None,
) -> Verification:
    """Check k-anonymity of ``relation`` over the QIs, in one SQL statement.

    Args:
        con: a DuckDB or PostgreSQL (psycopg) connection.
        relation: table or view to check (e.g. ``release.view``).
        qid: the quasi-identifiers; a QI published as a range may be named by its base name
            (``age`` stands for ``age_min`` and ``age_max``).
        k: the requirement.
        class_column: optionally, the class column (``eq_class`` of a release). Rows where it
            is NULL are counted as ``unplaced``: for a sqlanon release (its manifest names the
            relation) they are its suppressed rows, which form no class and must each be fully
            generalized; for any other relation they fail the check.
        constraints: further constraints to check per class (``DistinctLDiversity``,
            ``EntropyLDiversity``, ``RecursiveCLDiversity``, ``VarianceDiversity``,
            ``TCloseness``: the whole relation's distribution, suppressed rows included, is its
            reference), each with its own SQL statement over the relation.
        qids: further ``(columns, k)`` pairs (several QIDs, each with its own k): each checked
            by its own statement grouping the relation on that QID's columns. Default: those a
            single-dimensional release recorded in its manifest (when ``class_column`` is given).

    Rows are grouped on the QI columns with NULLs grouping together (SQL ``GROUP BY``); without
    a release's class column, rows with identical published values form one class like any
    other.

    Raises:
        InputError: before any query, for a ``con`` that is not a DuckDB or psycopg connection, a ``k`` that
            is not a positive integer (numpy integers are fine), a malformed ``qid``, or
            ``constraints`` that are not sqlanon constraint objects; ``UnknownTableError`` /
            ``UnknownColumnError`` for a missing relation or column.
    """
    engine = engine_for(con)  # checks con first
    try:
        k = check_int("k", k, minimum=1)
    except InputError:
        raise InputError(f"k must be a positive integer, got {k!r}") from None
    qid = check_qid(qid)
    constraints = check_constraints(constraints)
    if class_column is not None and (not isinstance(class_column, str) or not class_column):
        raise InputError(f"class_column must be a column name (or None), got {class_column!r}")
    pairs = None if qids is None else [(tuple(check_qid(c)), check_int("qids k", n, 1)) for c, n in qids]
    source = find_source(engine, engine.objects(), relation, count=False)
    return verify_source(engine, source, qid, k, class_column=class_column, constraints=constraints, qids=pairs)


def verify_source(
    engine: Engine,
    source: Source,
    qid: Sequence[str],
    k: int,
    *,
    class_column: str | None = None,
    constraints: Sequence[Constraint] = (),
    qids: Sequence[tuple[Sequence[str], int]] | None = None,
) -> Verification:
    """:func:`verify` of a relation already found (``source.ref`` and ``source.column_names``
    are used), with the arguments already checked."""
    columns = class_columns(source.column_names, qid)
    if class_column is not None and class_column not in source.column_names:
        raise UnknownColumnError(f"no column {class_column!r}." + did_you_mean(class_column, source.column_names))
    release = _release(engine, source) if class_column is not None else None
    shape = None if release is None else (release.qis, release.ref(release.rules), release.size_column)
    query = class_sizes_query(source.ref, columns, k, class_column, shape)
    classes, smallest, total, violating, unplaced, suppressed, leaked = engine.fetch_rows(query)[0]
    suppressed_rows, leaked = int(suppressed or 0), int(leaked or 0)
    checked: exp.Expression = source.ref
    reasons: tuple[tuple[str, int, int], ...] = ()
    if release is not None:  # suppressed rows are no class: the constraints judge the others
        assert class_column is not None
        placed = exp.Not(this=exp.Is(this=g.col(class_column), expression=exp.Null()))
        checked = exp.Subquery(this=exp.select(exp.Star()).from_(source.ref).where(placed))
        live = release.live_view()
        if live is not None and suppressed_rows:
            reasons = tuple((str(r), int(n), int(c)) for r, n, c in engine.fetch_rows(status(engine, live)))
    checks = tuple(_closeness(engine, source, columns, c, class_column if release is not None else None)
                   if isinstance(c, TCloseness) else _check(engine, source, checked, columns, c)
                   for c in constraints if not isinstance(c, KAnonymity))
    if qids is None and release is not None:
        qids = release.qids
    per_qid = tuple(_check_qid(engine, source, checked, tuple(c), n) for c, n in (qids or ()))
    unplaced = int(unplaced or 0) + suppressed_rows
    limit = release.suppression_limit if release is not None else None
    recoded = (sum(n for r, n, _ in reasons if r == SUPPRESSED) if release is not None and release.live_view() is not None
               else suppressed_rows)
    return Verification(
        ok=(int(violating or 0) == 0 and (int(classes or 0) > 0 or suppressed_rows > 0) and not leaked
            and (release is not None or not unplaced) and all(c.ok for c in checks) and all(q.ok for q in per_qid)
            and (limit is None or recoded <= limit)),
        k=k,
        k_achieved=int(smallest or 0),
        classes=int(classes or 0),
        rows=int(total or 0) + suppressed_rows,
        violating=int(violating or 0),
        columns=columns,
        unplaced=unplaced,
        checks=checks,
        suppressed=reasons,
        leaked=leaked,
        qids=per_qid,
        suppression_limit=limit,
    )


def _check_qid(engine: Engine, source: Source, checked: exp.Expression, qid: tuple[str, ...], k: int) -> QIDCheck:
    """``<QID, k>``: the placed rows grouped on the QID's published columns (one statement)."""
    columns = class_columns(source.column_names, qid)
    classes, smallest, _, violating, *_ = engine.fetch_rows(class_sizes_query(checked, columns, k))[0]
    return QIDCheck(qid, k, not int(violating or 0), int(smallest or 0), int(violating or 0))


def _release(engine: Engine, source: Source) -> Manifest | None:
    """The manifest of the sqlanon release whose published relation ``source`` is, if any (its
    rules relation is in the same schema)."""
    if source.kind == "file":
        return None
    try:
        m = manifest.read(engine, source.name, location=(source.catalog, source.schema))
    except InputError:
        return None
    return m if m.view.lower() == source.name.lower() else None


def class_sizes_query(relation: exp.Expression, columns: Sequence[str], k: int, class_column: str | None = None,
                      release: tuple[Sequence[QI], exp.Table, str] | None = None) -> exp.Expression:
    """The one statement over ``relation`` (``sql/class_sizes.sql``). For a release
    (``release``: its QIs, rules relation and size column), rows with a NULL class column are
    its suppressed rows: they form no class, and each must be fully generalized -- every QI
    column equal to the root (the hierarchy's root label; for ordered QIs the bounds of the
    whole release, :func:`sqlanon.publish.view.root_bounds`), else it is counted as leaked. For
    any other relation such rows are unplaced."""
    values = [g.alias(g.col(c, "s"), f"v{i}") for i, c in enumerate(columns)]
    value_of = {c: g.col(f"v{i}", "c") for i, c in enumerate(columns)}
    unplaced: exp.Expression = exp.false()
    suppressed: exp.Expression = exp.false()
    leaked: exp.Expression = exp.false()
    root: exp.Expression | None = None
    if class_column is not None and release is None:
        unplaced = exp.Is(this=g.col(class_column, "s"), expression=exp.Null())
    if release is not None:
        assert class_column is not None
        qis, rules, size_column = release
        suppressed = exp.Is(this=g.col(class_column, "s"), expression=exp.Null())
        differs = [exp.NullSafeNEQ(this=value_of[p].copy(), expression=g.col(p, "z") if q.ordered else g.lit(q.root_label))
                   for q in qis for p in q.published]
        leaked = exp.paren(exp.or_(*differs)) if differs else exp.false()
        root = root_bounds(qis, rules, size_column)
    one_row = exp.Subquery(this=root if root is not None else exp.select(g.alias(g.lit(1), "one")))
    groups = [g.col(c, "s") for c in columns] + ([suppressed] if release is not None else [])  # PostgreSQL: no constants
    return g.template("class_sizes", k=g.lit(k), source=relation.copy(), columns=groups,
                      grouped=values, unplaced=unplaced, suppressed=suppressed, leaked=leaked, root=one_row)


def _check(engine: Engine, source, checked: exp.Expression, columns: tuple[str, ...], c: Constraint) -> Check:
    """Verify one diversity constraint on every class of the relation (``checked``: its rows
    that form classes), in SQL."""
    column = (c.class_columns + c.numeric_columns)[0]
    if column not in source.column_names:
        raise UnknownColumnError(f"no column {column!r} to check {c.describe()}." + did_you_mean(column, source.column_names))
    common = {"source": checked, "columns": [g.col(x) for x in columns], "sensitive": g.col(column)}
    if isinstance(c, VarianceDiversity):
        classes, low, bad = engine.fetch_rows(g.template("check_variance", v=g.lit(float(c.v) * (1 - TOLERANCE)), **common))[0]
        if not classes:  # every row suppressed: no class to violate anything
            return Check(c.describe(), True, math.nan, 0)
        return Check(c.describe(), not bad, float(low or 0.0), int(bad or 0))
    l = c.l if isinstance(c, RecursiveCLDiversity) else 1
    factor = float(c.c) if isinstance(c, RecursiveCLDiversity) else 1.0
    classes, distinct, entropy, recursive_bad = engine.fetch_rows(
        g.template("check_sensitive", c=g.lit(factor), l=g.lit(int(l)), **common)
    )[0]
    if not classes:
        return Check(c.describe(), True, math.nan, 0)
    if isinstance(c, DistinctLDiversity):
        return Check(c.describe(), int(distinct or 0) >= c.l, float(distinct or 0), _count_below(engine, common, c))
    if isinstance(c, EntropyLDiversity):
        ok = float(entropy or 0.0) >= math.log(c.l) - TOLERANCE
        return Check(c.describe(), ok, math.exp(float(entropy or 0.0)), 0 if ok else _count_below(engine, common, c))
    return Check(c.describe(), not recursive_bad, float(recursive_bad or 0), int(recursive_bad or 0))


def _closeness(engine: Engine, source: Source, columns: tuple[str, ...], c: TCloseness, class_column: str | None) -> Check:
    """Verify t-closeness on every class (``sql/check_closeness.sql`` over the per-class EMDs of
    :mod:`sqlanon.publish.closeness`): the reference distribution is the whole relation's,
    suppressed rows included; the classes are its rows with a class (all rows without a
    release's class column). ``achieved`` is the largest EMD."""
    if c.sensitive not in source.column_names:
        raise UnknownColumnError(f"no column {c.sensitive!r} to check {c.describe()}."
                                 + did_you_mean(c.sensitive, source.column_names))
    placed = None if class_column is None else exp.Not(this=exp.Is(this=g.col(class_column), expression=exp.Null()))
    per = exp.Subquery(this=per_class_query(source.ref, columns, c, where=placed), alias=exp.TableAlias(this=g.ident("p")))
    classes, worst, bad = engine.fetch_rows(g.template("check_closeness", per_class=per, value=g.col(VALUE),
                                                       bad=g.col(BAD)))[0]
    if not classes:
        return Check(c.describe(), True, math.nan, 0)
    return Check(c.describe(), not bad, float(worst or 0.0), int(bad or 0))


def _count_below(engine: Engine, common: dict, c: Constraint) -> int:
    """Classes failing a distinct or entropy l-diversity requirement (only computed on failure)."""
    per_class = g.template("class_diversity", **common)
    rows = engine.fetch_rows(per_class)
    if isinstance(c, DistinctLDiversity):
        return sum(1 for distinct, _ in rows if distinct < c.l)
    return sum(1 for _, entropy in rows if entropy < math.log(c.l) - TOLERANCE)

