"""Independent verification of a published relation, in SQL.

It reads only the relation being checked (never the partitioning state), so it checks a release
made by sqlanon, by an older version of it, or by any other tool.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from .. import display
from ..engine import engine_for
from ..engine import sqlgen as g
from ..engine.base import Engine
from ..engine.calls import serialized
from ..engine.catalog import Source, find_source, free_name
from ..errors import InputError, UnknownColumnError, did_you_mean
from ..model.privacy import BAD, VALUE, KAnonymity, PrivacyModel, beyond_k, check_models
from ..model.qi import QI
from ..request.checks import check_int, check_qid
from . import manifest
from .manifest import Manifest
from .view import PLACED, RECODED, SUPPRESSED, released_rows, root_bounds, status


@dataclass(frozen=True)
class Verification:
    """The outcome of :func:`verify`.

    Attributes:
        ok: every check holds -- every equivalence class holds at least ``k`` rows, and the
            rest :meth:`failures` names (``ok`` is ``not failures()``).
        k: the requirement checked.
        k_achieved: size of the smallest equivalence class (0 for an empty relation).
        classes: number of equivalence classes.
        rows: rows in the relation.
        violating: classes smaller than ``k``.
        columns: the columns that define the classes.
        unplaced: rows whose class column is NULL (0 without a class column). For a sqlanon
            release these are its *suppressed* rows: they do not form a class, and ``ok``
            requires instead that each is fully generalized (``leaked`` counts those that are
            not) and that they are within the release's suppression limit. For any other
            relation they fail the check.
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
        exposed: values the release prints (:func:`exposed_values`) that only suppressed rows
            hold, or under ``published="domain"`` a smallest or largest value fewer than k
            published rows hold; ``ok`` requires none. Checked for a live release view (its rows
            matched to the source by key) and, at publication, for a snapshot's.
        class_column: the class column checked: the one given, or for a sqlanon release the
            one its manifest records (None: rows grouped on their QI columns alone).
        release: the relation was checked as a sqlanon release (its manifest names it and the
            class column is the release's): suppressed rows judged as above.
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
    exposed: int = 0
    class_column: str | None = None
    release: bool = False

    def failures(self) -> tuple[str, ...]:
        """The checks that fail, by name (empty exactly when ``ok``): k-anonymity (a class below
        k; rows without a class outside a release; no rows at all), a release's suppressed rows
        not fully generalized or beyond its limit, values only suppressed rows hold printed,
        each constraint, each QID. The command line prints these and exits with ``ok``'s status."""
        out: list[str] = []
        unplaced = self.unplaced and not self.release  # a release's are its suppressed rows
        empty = not self.classes and not (self.release and self.unplaced)
        if self.violating or unplaced or empty:
            out.append(KAnonymity(self.k).describe())
        if self.leaked:
            out.append("suppressed rows fully generalized")
        if self.suppression_limit is not None and self.recoded > self.suppression_limit:
            out.append(f"suppression limit ({self.suppression_limit:,} rows)")
        if self.exposed:
            out.append(f"no value held only by suppressed rows or fewer than k rows printed ({self.exposed:,} printed)")
        out += [c.constraint for c in self.checks if not c.ok]
        out += [f"QID {', '.join(q.qid)} k={q.k}" for q in self.qids if not q.ok]
        return tuple(out)

    def requirement(self) -> str:
        """What was checked, in words: k-anonymity, each further constraint, each QID."""
        return " and ".join([KAnonymity(self.k).describe(), *(c.constraint for c in self.checks),
                          *(f"QID {', '.join(q.qid)} k={q.k}" for q in self.qids)])

    def _facts(self, detail: bool = False) -> list[tuple[str, Any]]:
        """What a repr shows (:mod:`sqlanon.display`); ``detail``: the card's rows too
        (classes below k, each constraint's worst class, each QID, the columns)."""
        facts: list[tuple[str, Any]] = [("smallest class", f"{self.k_achieved:,} (k = {self.k:,})"),
                                        ("classes", self.classes), ("rows", self.rows)]
        if detail:
            facts.append(("classes below k", self.violating))
        if self.unplaced or self.release:
            facts.append(("suppressed" if self.release else "rows without a class", self.unplaced))
        if not self.ok:
            facts.append(("fails:", "; ".join(self.failures())))
        if detail:
            facts += [(c.constraint, f"worst class {display.number(c.achieved)}" + (f" ({c.measure})" if c.measure else "")
                       + (f"; {c.violating:,} classes fail" if not c.ok else "")) for c in self.checks]
            facts += [(f"QID {', '.join(q.qid)} (k = {q.k})", f"smallest group {q.achieved:,}"
                       + (f"; {q.violating:,} groups below k" if not q.ok else "")) for q in self.qids]
            facts.append(("columns", display.names(self.columns)))
        return facts

    def __repr__(self) -> str:
        return display.text("Verification", self.requirement(), self._facts(), self.ok)

    def _repr_html_(self) -> str:
        return display.card("Verification", self.requirement(), self._facts(detail=True), self.ok)

    @property
    def recoded(self) -> int:
        """Rows of a release suppressed by its recoding (what ``suppression_limit`` bounds): a
        live view's rows suppressed "by the recoding", a snapshot's rows without a class."""
        if not self.release:
            return 0
        if self.suppressed:
            return sum(n for reason, n, _ in self.suppressed if reason == SUPPRESSED)
        return self.unplaced


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
    """One privacy model verified on the published relation: ``achieved`` is the worst class's
    value of the model's measure (``measure``: distinct values, l = e^entropy, x1/(xl+...+xm),
    variance, an EMD, ...; NaN without classes) and ``violating`` the classes that fail."""

    constraint: str
    ok: bool
    achieved: float
    violating: int
    measure: str = ""


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
    constraints: Sequence[PrivacyModel] = (),
    qids: Sequence[tuple[Sequence[str], int]] | None = None,
) -> Verification:
    """Check k-anonymity of ``relation`` over the QIs, in one SQL statement.

    Args:
        con: a DuckDB or PostgreSQL (psycopg) connection.
        relation: table or view to check (e.g. ``release.view``).
        qid: the quasi-identifiers; a QI published as a range may be named by its base name
            (``age`` stands for ``age_min`` and ``age_max``).
        k: the requirement.
        class_column: the class column (``eq_class`` of a release). Default: for a sqlanon
            release (its manifest names the relation), the class column its manifest records;
            for any other relation, none. Rows where it is NULL are counted as ``unplaced``: for
            a release checked with its own class column they are its suppressed rows, which
            form no class and must each be fully generalized and within the release's
            suppression limit; for any other relation (or another column) they fail the check.
        constraints: further privacy models to check per class (``DistinctLDiversity``,
            ``EntropyLDiversity``, ``RecursiveCLDiversity``, ``VarianceDiversity``,
            ``TCloseness``, ``DeltaDisclosure``, ``BetaLikeness``: for the last three the whole
            relation's distribution, suppressed rows included, is the reference), each with its
            own SQL statement over the relation (the model's per-class measure).
        qids: further ``(columns, k)`` pairs (several QIDs, each with its own k): each checked
            by its own statement grouping the relation on that QID's columns. Default: those a
            single-dimensional release recorded in its manifest.

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
    constraints = check_models(constraints)
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
    constraints: Sequence[PrivacyModel] = (),
    qids: Sequence[tuple[Sequence[str], int]] | None = None,
    just_published: bool = False,
) -> Verification:
    """:func:`verify` of a relation already found (``source.ref`` and ``source.column_names``
    are used), with the arguments already checked.

    ``just_published``: ``source`` is the live view this run has just created from its
    release's manifest (:func:`sqlanon.publish.pipeline.verified`). Its exposed values are then
    counted only when some of its rows are suppressed or a QI is published ``"domain"``
    (:func:`sqlanon.publish.pipeline.may_expose`, as for a keyless release): a value is exposed
    only when a row the recoding suppressed holds it, and such a row is a row of the view
    without a class, which the class sizes counted; without either the count is 0 whatever the
    data, and its statement (the view, the source and the rules stacked and grouped: 6-9 Spark
    jobs at 3,000 rows) is not run."""
    columns = class_columns(source.column_names, qid)
    release, class_column = release_of(engine, source, class_column)
    shape = None if release is None else (release.qis, release.ref(release.rules), release.size_column)
    query = class_sizes_query(source.ref, columns, k, class_column, shape)
    classes, smallest, total, violating, unplaced, suppressed, leaked = engine.fetch_rows(query)[0]
    suppressed_rows, leaked = int(suppressed or 0), int(leaked or 0)
    checked: exp.Expression = source.ref
    placed: exp.Expression | None = None
    reasons: tuple[tuple[str, int, int], ...] = ()
    if release is not None:  # suppressed rows are no class: the models judge the others
        assert class_column is not None
        placed = exp.Not(this=exp.Is(this=g.col(class_column), expression=exp.Null()))
        checked = exp.Subquery(this=exp.select(exp.Star()).from_(source.ref).where(placed))
        live = release.live_view()
        if live is not None and suppressed_rows:
            reasons = tuple((str(r), int(n), int(c)) for r, n, c in engine.fetch_rows(status(engine, live)))
    checks = tuple(_check(engine, source, columns, c, placed) for c in beyond_k(constraints, k))
    if qids is None and release is not None:
        qids = release.qids
    per_qid = tuple(_check_qid(engine, source, checked, tuple(c), n) for c, n in (qids or ()))
    unplaced = int(unplaced or 0) + suppressed_rows
    live = release.live_view() if release is not None else None
    if live is not None and just_published and not unplaced \
            and not any(q.ordered and q.bounds == "domain" for q in release.qis):
        live = None  # nothing to count (just_published)
    exposed = (exposed_values(engine, released_rows(engine, live), release.qis, release.ref(release.rules),
                              source.ref, release.k) if live is not None else 0)
    limit = release.suppression_limit if release is not None else None
    result = Verification(
        ok=False,  # below: ok is not failures()
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
        exposed=exposed,
        class_column=class_column,
        release=release is not None,
    )
    return dataclasses.replace(result, ok=not result.failures())


def _check_qid(engine: Engine, source: Source, checked: exp.Expression, qid: tuple[str, ...], k: int) -> QIDCheck:
    """``<QID, k>``: the placed rows grouped on the QID's published columns (one statement)."""
    columns = class_columns(source.column_names, qid)
    classes, smallest, _, violating, *_ = engine.fetch_rows(class_sizes_query(checked, columns, k))[0]
    return QIDCheck(qid, k, not int(violating or 0), int(smallest or 0), int(violating or 0))


def release_of(engine: Engine, source: Source, class_column: str | None) -> tuple[Manifest | None, str | None]:
    """``(manifest, class column)`` to check ``source`` with: for the published relation of a
    sqlanon release, its manifest and -- unless another column is named -- the class column it
    records; a named column that is not the release's makes it a plain relation (its NULLs are
    no suppressed rows: fail closed). ``(None, class_column)`` for any other relation.

    Raises:
        UnknownColumnError: ``class_column`` names no column of ``source``.
    """
    if class_column is not None and class_column not in source.column_names:
        raise UnknownColumnError(f"no column {class_column!r}." + did_you_mean(class_column, source.column_names))
    release = _release(engine, source)
    if release is None or release.class_column not in source.column_names:
        return None, class_column
    if class_column is not None and class_column != release.class_column:
        return None, class_column
    return release, release.class_column


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


def _check(engine: Engine, source: Source, columns: tuple[str, ...], c: PrivacyModel,
           placed: exp.Expression | None) -> Check:
    """Verify one privacy model on every class of the relation (``placed``: which of its rows
    form classes; all do when None), in one statement over the model's per-class measure
    (``sql/check_classes.sql``)."""
    for column in c.class_columns + c.numeric_columns:
        if column not in source.column_names:
            raise UnknownColumnError(f"no column {column!r} to check {c.describe()}."
                                     + did_you_mean(column, source.column_names))
    per = exp.Subquery(this=c.per_class(source.ref, columns, where=placed), alias=exp.TableAlias(this=g.ident("p")))
    worst = (exp.Max if c.worst == "max" else exp.Min)(this=g.col(VALUE))
    classes, achieved, bad = engine.fetch_rows(g.template("check_classes", per_class=per, worst=worst,
                                                          bad=g.col(BAD)))[0]
    if not classes:  # every row suppressed: no class to violate anything
        return Check(c.describe(), True, math.nan, 0, c.measure)
    return Check(c.describe(), not bad, float(achieved if achieved is not None else math.nan), int(bad or 0),
                 c.measure)


def exposed_values(engine: Engine, rows: exp.Expression, qis: Sequence[QI], rules: exp.Table, view: exp.Expression,
                   k: int) -> int:
    """How many values the release prints that it may not (issue 49): per ordered QI, a value of
    its published bounds (view and rules; not a ``"hierarchy"`` interval, the custodian's) or
    box edges (rules) that only rows the recoding suppressed hold, or -- under ``"domain"`` --
    the smallest or largest published value when fewer than ``k`` published rows hold it (an
    empty range's marker ``q_lo = q_hi`` apart, README's one exception). ``rows``: every row
    of the release with its QI values and the flags :data:`~sqlanon.publish.view.PLACED` and
    :data:`~sqlanon.publish.view.RECODED`. Counted per printed occurrence (a cell of the rules
    or of the view).

    One statement for every QI, reading each relation once, whatever the number of QIs: the
    rows, the view (each row once per side: ``q_min``, ``q_max``) and the rules (once per
    side: ``q_min``, ``q_max``, ``q_lo``, ``q_hi``) are stacked, every ordered QI's value in a
    column of its own, and grouped by ``GROUPING SETS``, one set per QI (in a set the other
    QIs' columns are NULL, and a NULL value is never a printed one); the smallest and largest
    published value of each QI are windows over the groups."""
    ordered = [q for q in qis if q.ordered]
    if not ordered:
        return 0
    taken = [q.name for q in qis] + [p for q in qis for p in q.published] + [c for q in qis for c in q.box_columns]
    xs = [free_name(f"__sqlanon_x{i}", taken) for i in range(len(ordered))]
    us = [free_name(f"__sqlanon_u{i}", taken) for i in range(len(ordered))]  # printed, not as an empty range's marker
    side = g.col("side", "s")
    zero, one = g.lit(0), g.lit(1)

    def sides(n: int) -> exp.Subquery:
        """``n`` rows numbered 0..n-1: a relation cross joined to it is read once, each row n times."""
        numbers: exp.Query = exp.select(g.alias(g.lit(0), "side"))
        for i in range(1, n):
            numbers = exp.union(numbers, exp.select(g.alias(g.lit(i), "side")), distinct=False)
        return exp.Subquery(this=numbers, alias=exp.TableAlias(this=g.ident("s")))

    def pick(columns: Sequence[str | None]) -> exp.Expression:
        """The column of each side (None: NULL)."""
        case = exp.Case()
        for i, c in enumerate(columns):
            if c is not None:
                case = case.when(exp.EQ(this=side.copy(), expression=g.lit(i)), g.col(c, "t"))
        return case if case.args.get("ifs") else exp.Null()

    def stacked(relation: exp.Expression, values: list[exp.Expression], unmarked: list[exp.Expression],
                shown: exp.Expression, hid: exp.Expression, printed: exp.Expression, n_sides: int = 0) -> exp.Select:
        query = exp.select(*[g.alias(v, x) for v, x in zip(values, xs)], *[g.alias(u, n) for u, n in zip(unmarked, us)],
                           g.alias(shown, "shown"), g.alias(hid, "hid"), g.alias(printed, "printed")).from_(relation)
        return query.join(sides(n_sides), join_type="cross") if n_sides else query

    def bounds(q: QI) -> list[str | None]:
        return list(q.published) if q.bounds != "hierarchy" else [None, None]

    def marker(q: QI) -> exp.Expression:  # a box edge of a NULL-only box: the empty range lo = hi
        lo_col, hi_col = q.box_columns[:2]
        return exp.Case().when(exp.and_(exp.GTE(this=side.copy(), expression=g.lit(2)),
                                        exp.EQ(this=g.col(lo_col, "t"), expression=g.col(hi_col, "t"))),
                               zero.copy()).else_(one.copy())

    stack = exp.union(exp.union(
        stacked(exp.Subquery(this=rows.copy(), alias=exp.TableAlias(this=g.ident("t"))),
                [g.col(q.name, "t") for q in ordered], [zero.copy() for _ in ordered],
                g.col(PLACED, "t"), g.col(RECODED, "t"), zero.copy()),
        stacked(exp.alias_(view.copy(), g.ident("t"), table=True), [pick(bounds(q)) for q in ordered],
                [one.copy() for _ in ordered], zero.copy(), zero.copy(), one.copy(), 2), distinct=False),
        stacked(exp.alias_(rules.copy(), g.ident("t"), table=True),
                [pick(bounds(q) + list(q.box_columns[:2])) for q in ordered], [marker(q) for q in ordered],
                zero.copy(), zero.copy(), one.copy(), 4), distinct=False)
    sums = ["shown", "hid", "printed"]
    grouped = (exp.select(*[g.col(x) for x in xs], *[g.alias(exp.Sum(this=g.col(c)), c) for c in us + sums])
               .from_(exp.Subquery(this=stack, alias=exp.TableAlias(this=g.ident("a"))))
               .group_by(exp.GroupingSets(expressions=[exp.Paren(this=g.col(x)) for x in xs])))
    windows: list[exp.Expression] = []
    count = exp.Case()
    for i, (q, x, u) in enumerate(zip(ordered, xs, us)):
        bad: exp.Expression = exp.and_(exp.GT(this=g.col("printed"), expression=zero.copy()),
                                       exp.EQ(this=g.col("shown"), expression=zero.copy()),
                                       exp.GT(this=g.col("hid"), expression=zero.copy()))
        outcome = exp.Case().when(bad, g.col("printed"))
        if q.bounds == "domain":  # its ends: the smallest and largest value a published row holds
            held = exp.Case().when(exp.GT(this=g.col("shown"), expression=zero.copy()), g.col(x))
            ends = [f"__sqlanon_low{i}", f"__sqlanon_high{i}"]
            windows += [g.alias(exp.Window(this=agg(this=held.copy())), end) for agg, end in zip((exp.Min, exp.Max), ends)]
            thin = exp.and_(exp.GT(this=g.col("shown"), expression=zero.copy()),
                            exp.LT(this=g.col("shown"), expression=g.lit(k)),
                            exp.or_(*[exp.EQ(this=g.col(x), expression=g.col(end)) for end in ends]))
            outcome = outcome.when(thin, g.col(u))
        count = count.when(exp.Not(this=exp.Is(this=g.col(x), expression=exp.Null())), outcome.else_(zero.copy()))
    judged = exp.select(exp.Star(), *windows).from_(exp.Subquery(this=grouped, alias=exp.TableAlias(this=g.ident("v"))))
    query = exp.select(exp.Sum(this=count.else_(zero.copy()))).from_(
        exp.Subquery(this=judged, alias=exp.TableAlias(this=g.ident("w"))))
    return int(engine.fetch_rows(query)[0][0] or 0)
