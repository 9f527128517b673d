"""The release report, written for a reader who is not an anonymization expert (a board, a data
protection officer) first and for the analyst after: a summary card (whether the requirement
holds, rows, classes, suppressed rows, re-identification risk before and after, the detail each
QI gave up), a preview of the published rows, what each QI became, the class-size histogram with
k marked, per-QI generalization, the requirement in detail, risk, privacy measures, imprecision
per selection, timings, the SQL objects, and every metric with its meaning folded at the end --
as HTML (one self-contained file, plots as inline SVG), Markdown or JSON.

Everything is read from the database, so a report can be made in a later session from the view's
name: the release is reloaded with :func:`sqlanon.publish.manifest.read`, the figures come from
:func:`sqlanon.release.metrics.metrics`, and the requirement recorded in the manifest is re-checked on the
published view with :func:`sqlanon.publish.verify.verify` (independently of the partitioning code). Only
the timings need the :class:`~sqlanon.Release` object: the manifest does not record them.

Generalization widths: the normalized width of a cell is its NCP cell loss (``0`` for an
ungeneralized value, ``1`` for the whole domain; :mod:`sqlanon.release.metrics`), so ``ncp[q]`` is the
mean of the distribution shown, over the rows. Rows are counted in eleven buckets: exactly 0,
then ``(0, 0.1]``, ..., ``(0.9, 1]``; suppressed rows lose 1 and fall in the last bucket.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from sqlglot import exp

from ..engine import engine_for
from ..engine import sqlgen as g
from ..engine.base import Engine
from ..engine.calls import serialized
from ..engine.catalog import Source
from ..errors import InputError
from ..model.criteria import Criterion, Selections
from ..model.partition import describe_partitioning
from ..model.privacy import PrivacyModel, beyond_k
from ..publish.manifest import Manifest
from ..publish.verify import Verification, verify_source
from .imprecision import imprecision
from .measures import Measures, measures
from .metrics import Metrics, metrics, ncp_query
from .plots import BLUE, ORANGE, esc, number, shade, svg_before_after, svg_columns, svg_rows
from .regions import derived, load_release, qi_columns, resolve_relation
from .risk import Risk, risk

FORMATS = ("html", "markdown", "json")
#: Buckets of normalized generalization width (NCP cell loss): exactly 0, then tenths.
WIDTH_BUCKETS = ("0",) + tuple(f"({i / 10:g}, {(i + 1) / 10:g}]" for i in range(10))
#: At most this many bars in the class-size histogram.
MAX_BINS = 24

@dataclass(frozen=True)
class SqlObject:
    """A database object of the release: its role, name, kind (view or table) and row count."""

    role: str
    name: str
    kind: str
    rows: int


@dataclass(frozen=True)
class ReleaseReport:
    """What a report shows (see :func:`collect`); :meth:`as_dict` is the JSON document.

    Attributes:
        view, source, materialized: the release (a view of a snapshot when ``materialized``).
        qis: ``(name, kind, type)`` per QI.
        k, constraints, criterion: the requirement and the criterion, as in the manifest.
        verification: the requirement re-checked on the published view now.
        unchecked: recorded constraints without a record (sqlanon 0.1 releases), hence not re-checked.
        criterion_object: the recorded criterion (None for a sqlanon 0.1 release).
        metrics: :func:`sqlanon.release.metrics.metrics` of the release.
        class_sizes: ``(size, classes)`` for every class size present, ascending.
        widths: per QI, rows in each of :data:`WIDTH_BUCKETS`.
        selections: ``(predicate, returned, true, imprecision)`` per selection asked for
            (:func:`sqlanon.release.imprecision.imprecision`).
        timings, elapsed, statements: from the Release object (None when given a view name).
        objects: the release's SQL objects with their row counts.
        generated: when the report was made (UTC, ISO 8601).
        key: the columns a live view finds source rows by (None: a view of a snapshot).
        text_ordered: the text QIs without a hierarchy, cut in text order (code points: a range
            ``A41..A42`` takes in ``A410``; :attr:`sqlanon.model.qi.QI.ordered_by_text`).
    """

    view: str
    source: str
    materialized: bool
    qis: tuple[tuple[str, str, str], ...]
    k: int
    constraints: tuple[str, ...]
    criterion: str
    verification: Verification
    unchecked: tuple[str, ...]
    metrics: Metrics
    class_sizes: tuple[tuple[int, int], ...]
    widths: Mapping[str, tuple[int, ...]]
    selections: tuple[tuple[str, int, int, int], ...]
    timings: Mapping[str, float] | None
    elapsed: float | None
    statements: int | None
    objects: tuple[SqlObject, ...]
    generated: str
    key: tuple[str, ...] | None = None  # a live view's key; None for a view of a snapshot
    criterion_object: Criterion | None = None  # the recorded criterion (None: a release of sqlanon 0.1)
    partitioning: Mapping[str, Any] | None = None  # how the partition was computed (sqlanon.model.partition.PARTITIONING_FIELDS)
    measures: Measures | None = None  # pycanon's measures of the view (sqlanon.release.measures)
    risk_before: Risk | None = None  # re-identification risk of the source on the QIs (None: unreadable now)
    risk_after: Risk | None = None  # ... and of the release (its classes)
    preview: tuple[tuple[str, ...], tuple[tuple[Any, ...], ...]] = ((), ())  # columns, first rows of the view
    bands: Mapping[str, tuple[int, tuple[tuple[str, int], ...]]] | None = None  # per QI: values, most common
    text_ordered: tuple[str, ...] = ()  # text QIs without a hierarchy, ordered by their text

    @property
    def holds(self) -> bool:
        """The requirement holds on the view now (every recorded constraint re-checked)."""
        return self.verification.ok and not self.unchecked

    def as_dict(self) -> dict[str, Any]:
        """The report as a JSON-serializable dict; ``metrics`` is exactly ``metrics.as_dict()``."""
        v = self.verification
        return {
            "sqlanon_report": 1,
            "generated": self.generated,
            "release": {"view": self.view, "source": self.source, "materialized": self.materialized,
                        "key": None if self.key is None else list(self.key), "publication": publication(self),
                        "qid": [{"name": n, "kind": kind, "type": t} for n, kind, t in self.qis],
                        "ordered_by_text": list(self.text_ordered)},
            "requirement": {"k": self.k, "constraints": list(self.constraints), "criterion": self.criterion},
            "verification": {"holds": self.holds, **asdict(v), "unchecked": list(self.unchecked)},
            "metrics": self.metrics.as_dict(),
            "class_sizes": {
                "distribution": [[size, count] for size, count in self.class_sizes],
                "histogram": [{"lo": lo, "hi": hi, "classes": c, "rows": r}
                              for lo, hi, c, r in class_size_bins(self.class_sizes)],
            },
            "generalization": {q: {"ncp": self.metrics.ncp.get(q), "rows_by_width": dict(zip(WIDTH_BUCKETS, rows))}
                               for q, rows in self.widths.items()},
            "selections": [{"predicate": p, "returned": r, "true": t, "imprecision": i}
                           for p, r, t, i in self.selections],
            "timings": None if self.timings is None else
            {"elapsed": self.elapsed, "statements": self.statements, "steps": dict(self.timings)},
            "objects": [asdict(o) for o in self.objects],
            "partitioning": None if self.partitioning is None else dict(self.partitioning),
            "measures": None if self.measures is None else asdict(self.measures),
            "risk": {"before": _risk_dict(self.risk_before), "after": _risk_dict(self.risk_after),
                     "threshold": RISK_THRESHOLD},
            "published_values": {q: {"distinct": n, "most_common": [[label, rows] for label, rows in top]}
                                 for q, (n, top) in (self.bands or {}).items()},
            "preview": {"columns": list(self.preview[0]), "rows": [[_jsonable(v) for v in row] for row in self.preview[1]]},
        }


#: The report's records-at-risk threshold (ARX's default highest acceptable risk is 0.2 too).
RISK_THRESHOLD = 0.2


def _jsonable(value: Any) -> Any:
    """A preview cell for JSON: numbers, text and NULL as they are, anything else (dates,
    decimals) as its text."""
    return value if value is None or isinstance(value, (bool, int, float, str)) else str(value)


def _risk_dict(r: Risk | None) -> dict[str, Any] | None:
    if r is None:
        return None
    return {"rows": r.rows, "suppressed": r.suppressed, "classes": r.classes,
            "highest": r.highest, "average": r.average, "unique": r.unique, "at_risk": r.at_risk(RISK_THRESHOLD)}


@serialized
def report(
    con: Any,
    release: Any,
    *,
    format: str = "html",
    targets: Sequence[str] | None = None,
    numeric_targets: Sequence[str] | None = None,
    sensitive: Sequence[str] | None = None,
    selections: Sequence[str] | None = None,
) -> str:
    """The report of a release as HTML, Markdown or JSON text.

    Args:
        con: the DuckDB or PostgreSQL (psycopg) connection holding the release (only read).
        release: a :class:`sqlanon.Release`, or the name of a release's view.
        format: ``"html"`` (one self-contained file, plots as inline SVG), ``"markdown"``
            (readable in a terminal) or ``"json"`` (:meth:`ReleaseReport.as_dict`).
        targets, numeric_targets, sensitive: columns for the metrics, as in
            :func:`sqlanon.metrics`; None (the default) takes the release's own workload from its
            manifest (the criterion's targets, the constrained sensitive columns).
        selections: predicates whose imprecision is reported
            (:func:`sqlanon.release.imprecision.imprecision`); None (the default) takes the release's own
            selections (the workload it was anonymized for), ``()`` none.

    Raises:
        InputError: unknown format, not a release, bad columns (as :func:`sqlanon.metrics`).
    """
    if format not in FORMATS:
        raise InputError(f"format must be one of {', '.join(FORMATS)}, got {format!r}")
    data = collect(con, release, targets=targets, numeric_targets=numeric_targets, sensitive=sensitive,
                   selections=selections)
    return render(data, format)


def render(data: ReleaseReport, format: str) -> str:
    """``data`` as ``"html"``, ``"markdown"`` or ``"json"`` text."""
    if format == "json":
        return json.dumps(data.as_dict(), indent=2, ensure_ascii=False) + "\n"
    if format == "markdown":
        return render_markdown(data)
    if format == "html":
        return render_html(data)
    raise InputError(f"format must be one of {', '.join(FORMATS)}, got {format!r}")


def collect(
    con: Any,
    release: Any,
    *,
    targets: Sequence[str] | None = None,
    numeric_targets: Sequence[str] | None = None,
    sensitive: Sequence[str] | None = None,
    selections: Sequence[str] | None = None,
) -> ReleaseReport:
    """Compute everything a report shows, in SQL (arguments as for :func:`report`)."""
    if isinstance(selections, str):
        raise InputError(f"selections must be a list of predicates, got the string {selections!r}")
    if selections is not None and (isinstance(selections, (bytes, Mapping)) or not isinstance(selections, Iterable)):
        raise InputError(f"selections must be a list of predicates, got {type(selections).__name__} {selections!r}")
    engine = engine_for(con)
    engine.check_environment()  # Spark: the executors' Python imports this sqlanon
    m = load_release(con, release)
    # selections first: a predicate that does not parse fails before the heavier queries
    imprecise = _imprecision(con, m, m.selections if selections is None else selections)
    rebuilt, unchecked = recorded_constraints(m)
    workload = release_workload(m)
    figures = metrics(
        con, m,  # the manifest as read: by name again, another schema's release could answer
        targets=workload["targets"] if targets is None else targets,
        numeric_targets=workload["numeric_targets"] if numeric_targets is None else numeric_targets,
        sensitive=workload["sensitive"] if sensitive is None else sensitive,
    )
    view_ref, columns = resolve_relation(engine, m.ref(m.view))
    published = Source(m.catalog or "", m.schema or "", m.view, "view", tuple(columns), -1)
    checked = verify_source(engine, published, m.qid, m.k, class_column=m.class_column,
                            constraints=rebuilt)
    timings = getattr(release, "timings", None)
    hierarchies = {c.reference_column: c.value_hierarchy for c in rebuilt if c.value_hierarchy is not None}
    return ReleaseReport(
        view=m.view, source=m.source, materialized=m.materialized, key=m.key,
        # the kind, and how an ordered QI's bounds are published when not its own data (issue 19)
        qis=tuple((q.name, q.kind if q.bounds == "data" else f"{q.kind}, published: {q.bounds}", q.data_type)
                  for q in m.qis),
        k=m.k, constraints=m.constraints, criterion=m.criterion, criterion_object=m.criterion_object,
        verification=checked, unchecked=unchecked, metrics=figures,
        class_sizes=_class_sizes(engine, view_ref, m.class_column),
        widths=_widths(engine, m, view_ref, figures.suppressed),
        selections=imprecise,
        timings=None if timings is None else dict(timings),
        elapsed=getattr(release, "elapsed", None) if timings is not None else None,
        statements=getattr(release, "statements", None) if timings is not None else None,
        objects=_objects(engine, m, figures.rows),
        generated=_dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat(),
        partitioning=_partitioning(release),
        measures=measures(con, m, sensitive=workload["sensitive"] if sensitive is None else sensitive,
                          hierarchies=hierarchies),
        risk_before=_source_risk(con, m), risk_after=risk(con, m),
        preview=_preview(engine, view_ref, m.class_column, [c for c, _ in columns]),
        bands={q.name: _published_values(engine, q, view_ref) for q in m.qis},
        text_ordered=tuple(q.name for q in m.qis if q.ordered_by_text),
    )


def _source_risk(con: Any, m: Manifest) -> Risk | None:
    """The source's risk on the release's QIs (raw values), or None when it cannot be read now
    (dropped, renamed, or its QI columns changed)."""
    name = m.source if m.source_relation is None else ".".join(p for p in m.source_relation[1:] if p)
    try:
        return risk(con, name, qid=list(m.qid))
    except InputError:
        return None


# -- what the manifest records -----------------------------------------------------------------
def recorded_constraints(m: Manifest) -> tuple[list[PrivacyModel], tuple[str, ...]]:
    """The release's constraints other than its k-anonymity (checked separately) as objects to
    verify, from the manifest's records; and the ``describe()`` texts of those this version
    cannot read back (a newer kind; or a release of sqlanon 0.1, which recorded only texts),
    which are reported unchecked."""
    return beyond_k(m.constraint_objects, m.k), m.unknown_constraints


def release_workload(m: Manifest) -> dict[str, list[str]]:
    """The release's own workload columns, from the manifest's records: the criterion's class
    and numeric targets (inside Selection Mondrian, its ``then`` criterion's) and the sensitive
    columns of its constraints. A format-1 manifest has no criterion record: no targets."""
    criterion = m.criterion_object
    if isinstance(criterion, Selections):
        criterion = criterion.then
    sensitive = [s for c in recorded_constraints(m)[0] for s in c.class_columns + c.numeric_columns]
    return {"targets": list(dict.fromkeys(criterion.class_columns)) if criterion else [],
            "numeric_targets": list(dict.fromkeys(criterion.numeric_columns)) if criterion else [],
            "sensitive": list(dict.fromkeys(sensitive))}


# -- queries -----------------------------------------------------------------------------------
def _class_sizes(engine: Engine, view_ref: exp.Table, class_column: str) -> tuple[tuple[int, int], ...]:
    """``(size, classes)`` per distinct class size: at most ~sqrt(2N) rows come back."""
    sizes = (exp.select(g.alias(exp.Count(this=exp.Star()), "n")).from_(view_ref.copy())
             .where(exp.Not(this=exp.Is(this=g.col(class_column), expression=exp.Null())))
             .group_by(g.col(class_column)))
    query = (exp.select(g.col("n"), exp.Count(this=exp.Star())).from_(derived(sizes, "c"))
             .group_by(g.col("n")).order_by(g.col("n")))
    return tuple((int(n), int(c)) for n, c in engine.fetch_rows(query))


#: Rows of the view shown in the report's preview, and published values listed per QI.
PREVIEW_ROWS = 8
TOP_VALUES = 6


def _preview(engine: Engine, view_ref: exp.Table, class_column: str,
             columns: Sequence[str]) -> tuple[tuple[str, ...], tuple[tuple[Any, ...], ...]]:
    """The first :data:`PREVIEW_ROWS` rows of the view in class order (suppressed rows last),
    ties broken by every column so that every engine shows the same rows."""
    order = [class_column, *(c for c in columns if c != class_column)]
    query = (exp.select(*(g.col(c) for c in columns)).from_(view_ref.copy())
             .order_by(*(exp.Ordered(this=g.col(c), nulls_first=False) for c in order)).limit(PREVIEW_ROWS))
    columns, rows = engine.fetch_described(query)
    return tuple(columns), tuple(tuple(row) for row in rows)


#: Aliases of :func:`_published_values`' counts, apart from any QI's published column names.
ROWS, GROUPS = "__sqlanon_rows", "__sqlanon_groups"


def _published_values(engine: Engine, qi: Any, view_ref: exp.Table) -> tuple[int, tuple[tuple[str, int], ...]]:
    """What a QI became: how many distinct published values (ranges or hierarchy nodes) the view
    holds, and the :data:`TOP_VALUES` most common with their rows, in one statement."""
    columns = [g.col(c) for c in qi_columns(qi)]
    groups = (exp.select(*columns, g.alias(exp.Count(this=exp.Star()), ROWS)).from_(view_ref.copy())
              .group_by(*(c.copy() for c in columns)))
    total = exp.Window(this=exp.Count(this=exp.Star()))
    query = (exp.select(*(g.col(c.name, "v") for c in columns), g.col(ROWS, "v"), g.alias(total, GROUPS))
             .from_(derived(groups, "v"))
             .order_by(exp.Ordered(this=g.col(ROWS, "v"), desc=True),
                       *(exp.Ordered(this=g.col(c.name, "v"), nulls_first=False) for c in columns))
             .limit(TOP_VALUES))
    rows = engine.fetch_rows(query)
    if not rows:
        return 0, ()
    width = len(columns)
    return int(rows[0][-1]), tuple((_value_label(qi, row[:width]), int(row[width])) for row in rows)


def _value_label(qi: Any, values: Sequence[Any]) -> str:
    """A published value in words: a node label, or a range read by the QI's published mode."""
    if len(values) == 1:
        return "suppressed (any value)" if values[0] is None else str(values[0])
    lo, hi = (None if v is None else number(v) if isinstance(v, (int, float)) else str(v) for v in values)
    if qi.bounds == "domain":
        if lo is None and hi is None:
            return "any value"
        return f"up to {hi}" if lo is None else f"above {lo}" if hi is None else f"above {lo}, up to {hi}"
    if lo is None and hi is None:
        return "suppressed (any value)"
    if lo is None:
        return f"NULL .. {hi}"
    return lo if lo == hi else f"{lo} .. {hi}"


def _widths(engine: Engine, m: Manifest, view_ref: exp.Table, suppressed: int) -> dict[str, tuple[int, ...]]:
    """Rows per :data:`WIDTH_BUCKETS` bucket, per QI, in one statement.

    Reuses the NCP query of :mod:`sqlanon.release.metrics`, whose select list is
    ``sum(c.n * loss_q)`` per QI: the per-class ``loss_q`` is taken out of it and bucketed."""
    ncp = ncp_query(engine, m, view_ref)
    # Alias(Sum(Mul(c.n, loss))) per QI first (then the at_root sums)
    losses = [e.this.this.expression for e in ncp.expressions[:len(m.qis)]]
    per_class = ncp.copy()
    per_class.set("expressions", [g.alias(g.col("n", "c"), "n")] + [
        g.alias(_bucket(loss.copy()), f"w{i}") for i, loss in enumerate(losses)])
    counts = [
        exp.Coalesce(this=exp.Filter(this=exp.Sum(this=g.col("n")), expression=exp.Where(
            this=exp.EQ(this=g.col(f"w{i}"), expression=g.lit(b)))), expressions=[g.lit(0)])
        for i in range(len(losses)) for b in range(len(WIDTH_BUCKETS))]
    row = engine.fetch_rows(exp.select(*counts).from_(derived(per_class, "p")))[0]
    out: dict[str, tuple[int, ...]] = {}
    for i, qi in enumerate(m.qis):
        rows = [int(x) for x in row[i * len(WIDTH_BUCKETS):(i + 1) * len(WIDTH_BUCKETS)]]
        rows[-1] += suppressed  # a suppressed row loses the whole domain
        out[qi.name] = tuple(rows)
    return out


def _bucket(loss: exp.Expression) -> exp.Expression:
    """0 for a loss of 0 (or NULL: no node, counted as no loss like the NCP sum does), else the
    tenth it falls in, 1..10; the 1e-9 keeps 0.3 = 3/10 in bucket 3 despite rounding."""
    value = exp.Coalesce(this=loss, expressions=[g.lit(0.0)])
    tenth = exp.Ceil(this=exp.Sub(this=exp.Mul(this=value.copy(), expression=g.lit(10.0)), expression=g.lit(1e-9)))
    return (exp.Case().when(exp.LTE(this=value.copy(), expression=g.lit(0.0)), g.lit(0))
            .when(exp.GTE(this=value.copy(), expression=g.lit(1.0)), g.lit(10))
            .else_(exp.Cast(this=tenth, to=exp.DataType.build("INTEGER"))))


def _objects(engine: Engine, m: Manifest, view_rows: int) -> tuple[SqlObject, ...]:
    # a release made before 2026-11-26 without a key published a table and no row map
    out = [SqlObject("published", m.view, "table" if m.rowmap is None else "view", view_rows)]
    rows = "snapshot" if m.materialized else "row map"
    for role, name in (("rules", m.rules), (rows, m.rowmap), ("hierarchies", m.hierarchies_table)):
        if name:
            ref, _ = resolve_relation(engine, m.ref(name))
            out.append(SqlObject(role, name, "table", int(engine.scalar(exp.select(exp.Count(this=exp.Star())).from_(ref)))))
    return tuple(out)


def _imprecision(con: Any, m: Manifest, predicates: Sequence[str]) -> tuple[tuple[str, int, int, int], ...]:
    """Per selection ``(predicate, |Pr(V)|, |Pr(T)|, imprecision)`` from
    :func:`sqlanon.release.imprecision.imprecision` (KDD 2006, Section 3.4: the rows of the published
    regions that overlap the predicate, the rows it selects in the source, the difference)."""
    if not predicates:
        return ()
    result = imprecision(con, m, list(predicates))
    return tuple((p.text, p.returned, p.true, p.imprecision) for p in result.predicates)


def class_size_bins(sizes: Sequence[tuple[int, int]], max_bins: int = MAX_BINS) -> list[tuple[int, int, int, int]]:
    """``(lo, hi, classes, rows)`` bins (inclusive integer bounds) over a ``(size, classes)``
    distribution: one per size when the range is short, else equal widths, or -- when the
    largest class is over 16 times the smallest -- geometric widths so the tail stays visible."""
    if not sizes:
        return []
    low, high = sizes[0][0], sizes[-1][0]
    if high - low < max_bins:
        edges = list(range(low, high + 2))
    elif high > 16 * low:
        ratio = (high / low) ** (1 / max_bins)
        edges = sorted({low, *(math.ceil(low * ratio ** i) for i in range(1, max_bins)), high + 1})
    else:
        step = math.ceil((high - low + 1) / max_bins)
        edges = list(range(low, high + 1, step)) + [high + 1]
        edges = sorted(set(edges))
    bins = []
    for lo, hi in zip(edges, edges[1:]):
        inside = [(s, c) for s, c in sizes if lo <= s < hi]
        bins.append((lo, hi - 1, sum(c for _, c in inside), sum(s * c for s, c in inside)))
    return bins


# -- shared text -------------------------------------------------------------------------------
def _requirements(r: ReleaseReport) -> list[tuple[str, str, bool | None]]:
    """``(requirement, achieved, holds)`` rows: k-anonymity, each constraint, each unchecked one."""
    v = r.verification
    achieved = f"smallest class {v.k_achieved:,} ({v.classes:,} classes, {v.rows:,} rows)"
    if v.unplaced:
        achieved += f"; {v.unplaced:,} rows suppressed (fully generalized, no class)"
    if v.leaked:
        achieved += f"; {v.leaked:,} of them not fully generalized"
    # Suppressed rows of a release form no class (they are checked against the root instead).
    rows: list[tuple[str, str, bool | None]] = [
        (f"k-anonymity(k={r.k})", achieved, v.violating == 0 and v.ok)]
    for c in v.checks:
        worst = f"worst class {number(c.achieved)}" + (f" ({c.measure})" if c.measure else "")
        rows.append((c.constraint, worst + (f"; {c.violating:,} classes fail" if not c.ok else ""), c.ok))
    rows += [(f"QID {', '.join(q.qid)} (k={q.k})",
              f"smallest group {q.achieved:,}" + (f"; {q.violating:,} groups below k" if not q.ok else ""), q.ok)
             for q in v.qids]
    rows += [(text, "not re-checked: not a constraint this version can rebuild", None) for text in r.unchecked]
    return rows


def _criterion(r: ReleaseReport, code) -> str:
    """The criterion for people: Selection Mondrian's predicates listed rather than as a repr."""
    c = r.criterion_object
    if isinstance(c, Selections):
        listed = ", ".join(code(p) for p in c.predicates)
        return f"Selection Mondrian (KDD 2006, Section 3.4) over {listed}, then {code(c.then.describe())}"
    return code(r.criterion)


def text_order_note(r: ReleaseReport, code: Callable[[str], str]) -> str:
    """The line naming the text QIs that were ordered by their text (empty when none)."""
    if not r.text_ordered:
        return ""
    listed = ", ".join(code(q) for q in r.text_ordered)
    return (f"Ordered by their text (no hierarchy): {listed}. Their ranges follow text order (code points; on "
            f"PostgreSQL the column's collation), so a range {code('A41')}..{code('A42')} also takes in "
            f"{code('A410')}; a hierarchy (sqlanon.hierarchies) groups "
            "categories and codes as they are meant.")


def _verdict(r: ReleaseReport) -> str:
    if r.holds:
        return "HOLDS"
    return "FAILS" if not r.verification.ok else "NOT FULLY CHECKED"


_MEANING = {
    "k": "the required smallest class size",
    "rows": "rows of the view (N)",
    "suppressed": ("rows without a class (suppressed by the recoding, new, changed, or in a class that no longer meets "
                   "the requirement; QIs fully generalized)"),
    "classes": "equivalence classes",
    "k_achieved": "the smallest class",
    "avg_class_size": "(N - suppressed) / classes",
    "c_avg": "avg_class_size / k (LeFevre et al., ICDE 2006)",
    "dm": "discernibility: sum of squared class sizes + suppressed x N (Bayardo & Agrawal)",
    "aecs": "ARX's average class size: N / (classes + 1 if any row is suppressed)",
    "precision": "ARX's Precision of a full-domain release: mean over QIs of level / height (suppressed: 1)",
    "at_root": "share of rows generalized to the whole domain (root or full range; suppressed rows included)",
    "at_root_before": "the same share without suppression (the request without it, recorded at release)",
    "ncp": "mean normalized width of the QI's published values, 0..1 (NCP)",
    "gcp": "mean NCP over the QIs (GCP)",
    "lm": "Iyengar's loss metric LM: the sum of NCP over the QIs",
    "cm": "Iyengar's CM: share of rows suppressed or not of their class's majority label",
    "cond_entropy": "H(label | class) in bits",
    "entropy": "H(label) in bits",
    "rmse": "RMSE of predicting the target by its class mean",
    "l_distinct": "fewest distinct sensitive values in a class",
    "l_entropy": "smallest exp(entropy) of the sensitive values in a class",
    "min_variance": "smallest variance of the sensitive value in a class",
}


def _metric_rows(m: Metrics) -> list[tuple[str, str, str]]:
    """``(metric, value, meaning)``; per-column metrics as ``metric[column]``."""
    rows = []
    for key, value in m.as_dict().items():
        if key in ("view", "qid"):
            continue
        if key == "at_root" and not (m.suppressed or m.at_root_before):  # what suppression bought: shown with it
            continue
        if isinstance(value, dict):
            rows += [(f"{key}[{column}]", number(v), _MEANING.get(key, "")) for column, v in value.items()]
        else:
            rows.append((key, number(value), _MEANING.get(key, "")))
    return rows


MEASURES_NOTE = ("What pycanon measures, computed in SQL from the view (one GROUP BY of class x sensitive "
                 "value; sqlanon.release.measures): the whole view's distribution, suppressed rows included, is "
                 "the reference of t-closeness, delta-disclosure and beta-likeness.")
RISK_NOTE = ("Prosecutor model (sqlanon.release.risk): a record's risk is 1 / its class size; the source is "
             "grouped on its raw QI values, the release on its classes (suppressed rows left out). Records at "
             f"risk: risk above {RISK_THRESHOLD:g}.")


def _measure_table(r: ReleaseReport) -> tuple[list[str], list[list[str]]]:
    """``measure`` rows, one column per sensitive column (k alone without one)."""
    m = r.measures
    if m is None:
        return ["measure", "value"], []
    columns = list(m.sensitive)
    rows = [["k (smallest class)", *([number(m.k)] * max(len(columns), 1))]]
    for label, field in (("distinct l-diversity", "l_distinct"), ("entropy l (exp of min entropy)", "l_entropy"),
                         ("recursive (c,l): c", "recursive_c"), ("recursive (c,l): l", "recursive_l"),
                         ("t-closeness, equal distance", "t_equal"), ("t-closeness, ordered distance", "t_ordered"),
                         ("t-closeness, hierarchical distance", "t_hierarchical"),
                         ("delta-disclosure", "delta"), ("beta-likeness, basic", "beta_basic"),
                         ("beta-likeness, enhanced", "beta_enhanced")):
        values = [getattr(c, field) for c in columns]
        if values and any(v is not None for v in values):
            rows.append([label, *("-" if v is None else number(v) for v in values)])
    return ["measure", *([c.column for c in columns] or ["value"])], rows


def _risk_table(r: ReleaseReport) -> tuple[list[str], list[list[str]]]:
    """Prosecutor risk, source (before) and release (after)."""
    def cells(x: Risk | None, field: str) -> str:
        if x is None:
            return "source not readable"
        value = x.at_risk(RISK_THRESHOLD) if field == "at_risk" else getattr(x, field)
        return number(value)

    rows = [[label, cells(r.risk_before, f), cells(r.risk_after, f)] for label, f in (
        ("records", "rows"), ("classes", "classes"), ("highest risk (1 / smallest class)", "highest"),
        ("average risk (classes / records)", "average"), ("unique records (share)", "unique"),
        (f"records at risk (share, risk > {RISK_THRESHOLD:g})", "at_risk"))]
    return ["prosecutor", "before (source)", "after (release)"], rows


def _median_size(sizes: Sequence[tuple[int, int]]) -> int | None:
    total = sum(c for _, c in sizes)
    seen = 0
    for size, count in sizes:
        seen += count
        if 2 * seen >= total:
            return size
    return None


def _size_summary(r: ReleaseReport) -> str:
    if not r.class_sizes:
        return "no classes"
    return (f"{r.metrics.classes:,} classes; k = {r.k}; smallest {r.class_sizes[0][0]:,}, median "
            f"{_median_size(r.class_sizes):,}, mean {number(r.metrics.avg_class_size)}, largest {r.class_sizes[-1][0]:,}")


def _bin_label(lo: int, hi: int) -> str:
    return f"{lo:,}" if lo == hi else f"{lo:,}-{hi:,}"


# -- Markdown ----------------------------------------------------------------------------------
def _md(text: Any) -> str:
    """A table cell: pipes escaped, one line."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _md_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(_md(h) for h in header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(_md(c) for c in row) + " |" for row in rows] + [""]


def _text_bar(value: float, top: float, width: int = 40) -> str:
    eighths = round(8 * width * value / top) if top > 0 else 0
    return "█" * (eighths // 8) + ("", "▏", "▎", "▍", "▌", "▋", "▊", "▉")[eighths % 8]


def publication(r: ReleaseReport) -> str:
    """What kind of relation the release is, and what it does when the source changes."""
    if r.materialized:
        return ("a view of a snapshot of the source as it was (the source had no key): it does not follow "
                "later changes of the source")
    return (f"a live view over the source, rows found by the key ({', '.join(r.key or ())}); it enforces the "
            "requirement each time it is read: new or changed rows, and classes that no longer qualify, "
            "are suppressed (fully generalized, class NULL)")


def suppression_lines(r: ReleaseReport) -> list[str]:
    """One line per reason rows of the view are suppressed now."""
    return [f"{rows} row(s) in {classes} class(es): {reason}" if classes else f"{rows} row(s): {reason}"
            for reason, rows, classes in r.verification.suppressed]


def render_markdown(r: ReleaseReport) -> str:
    """The report as Markdown; plots as text bar charts in code blocks."""
    m = r.metrics
    kind = "view of a snapshot" if r.materialized else "live view"
    out = [f"# sqlanon release report: `{r.view}`", "",
           f"Source `{r.source}`, published as a {kind}; QIs: "
           + ", ".join(f"`{n}` ({kind_})" for n, kind_, _ in r.qis) + f". Generated {r.generated}.", "",
           *([text_order_note(r, lambda t: f"`{t}`"), ""] if r.text_ordered else []),
           f"## Summary: {_verdict(r)}", "", _summary_sentence(r), ""]
    out += _md_table([label for label, _ in _tiles(r)], [[value for _, value in _tiles(r)]])
    labels, before, after = _risk_pairs(r)
    out += _md_table(["re-identification risk", "before (source)", "after (release)"],
                     [(label, "not readable" if b is None else f"{b:.1%}", "not readable" if a is None else f"{a:.1%}")
                      for label, b, a in zip(labels, before, after)])
    out += _md_table(["QI", "detail given up (0% exact, 100% fully generalized)"],
                     [(f"`{q}`", f"{lost:.0%} {_text_bar(lost, 1.0, 20)}") for q, lost in _utility_rows(r)])
    preview_cols, preview_rows = r.preview
    if preview_cols:
        out += ["## What an analyst sees: the first published rows", ""]
        out += _md_table(preview_cols, [[_cell(v) for v in row] for row in preview_rows])
    if r.bands:
        out += ["## What each QI became", ""]
        out += _md_table(["QI", "kind", "published values", "most common (rows)"],
                         [(f"`{q}`", kind_, number(r.bands[q][0]),
                           "; ".join(f"{label} ({rows:,})" for label, rows in r.bands[q][1]))
                          for q, kind_, _ in r.qis if q in r.bands])
    out += [f"## Requirement: {_verdict(r)}", ""]
    out += _md_table(["requirement", "achieved", "holds"],
                     [(req, ach, "not checked" if ok is None else number(ok)) for req, ach, ok in _requirements(r)])
    out += [f"Criterion: {_criterion(r, lambda t: f'`{t}`')}. Re-checked now on the published view "
            "with `sqlanon.verify`.", "", f"Published as {publication(r)}.", ""]
    if r.verification.suppressed:
        out += ["Suppressed now:", ""] + [f"* {line}" for line in suppression_lines(r)] + [""]
    out += ["## Privacy measures", "", MEASURES_NOTE, ""]
    out += _md_table(*_measure_table(r))
    out += ["## Re-identification risk", "", RISK_NOTE, ""]
    out += _md_table(*_risk_table(r))
    out += ["## Equivalence-class sizes", "", _size_summary(r) + ".", ""]
    bins = class_size_bins(r.class_sizes)
    if bins:
        top = max(c for _, _, c, _ in bins)
        width = max(len(_bin_label(lo, hi)) for lo, hi, _, _ in bins)
        out += ["```", f"{'size':>{width}}  classes (k = {r.k:,})"]
        out += [f"{_bin_label(lo, hi):>{width}}  {_text_bar(c, top)} {c:,}" for lo, hi, c, _ in bins] + ["```", ""]
    out += ["## Generalization per QI", "",
            "Rows by normalized width of their QI value (NCP cell loss: 0 exact, 1 the whole domain); "
            "NCP is the mean.", ""]
    out += _md_table(["QI", "kind", "NCP", *WIDTH_BUCKETS],
                     [(q, kind_, number(m.ncp.get(q)), *(number(x) for x in r.widths[q])) for q, kind_, _ in r.qis])
    if r.selections:
        out += ["## Imprecision per selection", ""]
        out += ["Rows returned by the published regions that overlap the selection, rows it selects in the "
                "source, and the difference (KDD 2006, Section 3.4).", ""]
        out += _md_table(["selection", "returned", "true", "imprecision"],
                         [(f"`{p}`", number(ret), number(t), number(i)) for p, ret, t, i in r.selections])
    out += ["## Timings", ""]
    if r.timings is None:
        out += ["Not recorded: the report was made from the view's name; timings are known only to the "
                "`Release` object that `anonymize` returned.", ""]
    else:
        out += _md_table(["step", "seconds"], [*((s, number(t)) for s, t in r.timings.items()),
                                               ("total (elapsed)", number(r.elapsed))])
        out += [f"{number(r.statements)} SQL statements.", ""]
    if r.partitioning is not None:
        out += [f"Partitioning: {describe_partitioning(r.partitioning)}.", ""]
    out += ["## SQL objects", ""]
    out += _md_table(["role", "name", "kind", "rows"], [(o.role, f"`{o.name}`", o.kind, number(o.rows)) for o in r.objects])
    out += ["## All metrics", ""]
    out += _md_table(["metric", "value", "meaning"], _metric_rows(m))
    return "\n".join(out)


# -- HTML and SVG ------------------------------------------------------------------------------
_CSS = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:#1f2328;
margin:0;background:#f6f8fa}main{max-width:1080px;margin:0 auto;padding:24px 32px;background:#fff}
h1{font-size:24px;margin:0 0 4px}h1 code{font-size:20px}h2{font-size:19px;margin:28px 0 8px;border-bottom:1px solid #d0d7de;
padding-bottom:4px}p.sub{color:#59636e;margin:0 0 16px}code{font:13px ui-monospace,Menlo,Consolas,monospace;
background:#eff1f3;padding:1px 4px;border-radius:4px}table{border-collapse:collapse;margin:6px 0 10px}
th,td{border:1px solid #d0d7de;padding:4px 10px;text-align:left;vertical-align:top}th{background:#f6f8fa}
td.n{text-align:right;font-variant-numeric:tabular-nums}.verdict{display:inline-block;padding:6px 14px;
border-radius:6px;font-weight:700;color:#fff;margin:4px 0 10px}.ok{background:#1a7f37}.bad{background:#cf222e}
.part{background:#9a6700}.cols{display:flex;gap:28px;flex-wrap:wrap;align-items:flex-start}
svg{display:block;margin:6px 0}svg text{font:12px system-ui,sans-serif;fill:#1f2328}
.card{border:1px solid #d0d7de;border-radius:10px;padding:12px 20px;margin:12px 0 8px;background:#fbfcfd}
.card h3{font-size:15px;margin:10px 0 4px}.tiles{display:flex;gap:14px;flex-wrap:wrap;margin:8px 0}
.tile{border:1px solid #d0d7de;border-radius:8px;padding:8px 14px;min-width:150px;background:#fff}
.tile .big{font-size:22px;font-weight:700}.meter{width:140px;height:12px;background:#eff1f3;border-radius:3px}
.meter span{display:block;height:12px;background:#4c78a8;border-radius:3px}details summary{cursor:pointer;margin:6px 0}
"""
#: Column headers for :data:`WIDTH_BUCKETS` (the HTML table is narrow).
_SHORT_BUCKETS = ("0",) + tuple(f"≤{(i + 1) / 10:g}" for i in range(10))


def _html_table(header: Sequence[str], rows: Sequence[Sequence[Any]], numeric: Sequence[int] = ()) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f'<td class="n">{esc(c)}</td>' if i in numeric else f"<td>{c}</td>"
                                    for i, c in enumerate(row)) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _svg_widths(r: ReleaseReport) -> str:
    """Per QI: a 100% stacked bar of rows by width bucket, and the NCP as a bar and a number."""
    label_w, bar_w, gap, ncp_w, row_h = 170, 560, 30, 160, 30
    w = label_w + bar_w + gap + ncp_w + 90
    h = row_h * len(r.qis) + 70
    title = "Rows by normalized generalization width, per QI"
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" role="img" '
             f'aria-label="{esc(title)}"><title>{esc(title)}</title>',
             f'<text x="{label_w}" y="14">share of rows by width (0 = exact value, 1 = whole domain)</text>'
             f'<text x="{label_w + bar_w + gap}" y="14">NCP (mean width)</text>']
    for i, (q, _kind, _) in enumerate(r.qis):
        y = 24 + i * row_h
        rows = r.widths[q]
        total = sum(rows) or 1
        x = float(label_w)
        name = q if len(q) <= 20 else q[:19] + "…"
        parts.append(f'<text x="{label_w - 8}" y="{y + 19}" text-anchor="end">{esc(name)}</text>')
        for b, n in enumerate(rows):
            seg = bar_w * n / total
            if n:
                parts.append(f'<rect class="bar" x="{x:.2f}" y="{y + 4}" width="{seg:.2f}" height="{row_h - 8}" '
                             f'fill="{shade(b)}"><title>{esc(q)}: {n:,} rows with width {WIDTH_BUCKETS[b]}'
                             f'</title></rect>')
            x += seg
        ncp = r.metrics.ncp.get(q) or 0.0
        nx = label_w + bar_w + gap
        parts.append(f'<rect x="{nx}" y="{y + 4}" width="{ncp_w}" height="{row_h - 8}" fill="#eff1f3"/>'
                     f'<rect class="bar" x="{nx}" y="{y + 4}" width="{ncp_w * min(ncp, 1):.1f}" height="{row_h - 8}" '
                     f'fill="{BLUE}"><title>NCP {esc(q)}: {number(ncp)}</title></rect>'
                     f'<text x="{nx + ncp_w + 6}" y="{y + 19}">{number(r.metrics.ncp.get(q))}</text>')
    # the colour scale: one cell per bucket, the bucket bounds beneath
    legend_y = 24 + len(r.qis) * row_h + 10
    cell = bar_w / len(WIDTH_BUCKETS)
    parts.append(f'<text x="{label_w - 8}" y="{legend_y + 12}" text-anchor="end">width</text>')
    for b in range(len(WIDTH_BUCKETS)):
        lx = label_w + b * cell
        parts.append(f'<rect x="{lx:.1f}" y="{legend_y}" width="{cell:.1f}" height="14" fill="{shade(b)}"/>')
        mark = "0" if b == 0 else f"{b / 10:g}"
        parts.append(f'<text x="{lx + (cell / 2 if b == 0 else cell):.1f}" y="{legend_y + 30}" '
                     f'text-anchor="middle">{mark}</text>')
    return "".join(parts) + "</svg>"


def _k_mark(bins: Sequence[tuple[int, int, int, int]], k: int) -> tuple[float, str]:
    """Where k falls on the class-size histogram's slots (see :func:`svg_columns`)."""
    for i, (lo, hi, _, _) in enumerate(bins):
        if hi >= k:
            return (float(i) if lo >= k else i + (k - lo) / (hi - lo + 1)), f"k = {k:,}"
    return float(len(bins)), f"k = {k:,}"


def _summary_sentence(r: ReleaseReport) -> str:
    """The verdict in plain words."""
    v = r.verification
    if r.holds:
        extra = " and every further privacy requirement" if v.checks or v.qids else ""
        return (f"Every published group holds at least {r.k:,} people (the smallest holds {v.k_achieved:,}){extra}: "
                "re-checked now on the published view, it holds.")
    if not v.ok:
        return "The requirement does NOT hold on the published view now: see the requirement table below."
    return "Some recorded requirements could not be re-checked by this version: see the requirement table below."


def _risk_pairs(r: ReleaseReport) -> tuple[list[str], list[float | None], list[float | None]]:
    """The risk picture's rows: highest and average risk, unique records, records at risk."""
    def of(x: Risk | None, field: str) -> float | None:
        if x is None:
            return None
        return x.at_risk(RISK_THRESHOLD) if field == "at_risk" else float(getattr(x, field))

    fields = (("highest risk of a record", "highest"), ("average risk", "average"),
              ("records unique on their QIs", "unique"), (f"records at risk (> {RISK_THRESHOLD:.0%})", "at_risk"))
    return ([label for label, _ in fields], [of(r.risk_before, f) for _, f in fields],
            [of(r.risk_after, f) for _, f in fields])


def _tiles(r: ReleaseReport) -> list[tuple[str, str]]:
    m, v = r.metrics, r.verification
    share = f" ({m.suppressed / m.rows:.1%})" if m.rows else ""
    return [("rows published", f"{m.rows:,}"), ("groups (classes)", f"{m.classes:,}"),
            ("smallest group", f"{v.k_achieved:,} (k = {r.k:,})"), ("rows suppressed", f"{m.suppressed:,}{share}")]


def _utility_rows(r: ReleaseReport) -> list[tuple[str, float]]:
    """Per QI the share of its detail given up (NCP: 0 exact values, 1 fully generalized)."""
    return [(q, float(r.metrics.ncp.get(q) or 0.0)) for q, _, _ in r.qis]


def _cell(value: Any) -> str:
    return "NULL" if value is None else number(value) if isinstance(value, (int, float)) else str(value)


def render_html(r: ReleaseReport) -> str:
    """The report as one self-contained HTML page (inline CSS and SVG, no scripts, no links): a
    summary card first (verdict, sizes, risk before and after, detail lost per QI), then what
    was published, then the details, the full metrics folded at the end."""
    m = r.metrics
    kind = "view of a snapshot" if r.materialized else "live view"
    verdict = _verdict(r)
    css = {"HOLDS": "ok", "FAILS": "bad"}.get(verdict, "part")
    req_rows = [(f"<code>{esc(req)}</code>", esc(ach), "not re-checked" if ok is None else ("yes" if ok else "<b>no</b>"))
                for req, ach, ok in _requirements(r)]
    labels, before, after = _risk_pairs(r)
    tiles = "".join(f'<div class="tile"><div class="big">{esc(value)}</div><div>{esc(label)}</div></div>'
                    for label, value in _tiles(r))
    utility = "".join(f'<tr><td><code>{esc(q)}</code></td><td class="n">{lost:.0%}</td><td><div class="meter">'
                      f'<span style="width:{100 * min(lost, 1):.1f}%"></span></div></td></tr>'
                      for q, lost in _utility_rows(r))
    s = [f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
         f'<meta name="viewport" content="width=device-width, initial-scale=1">'
         f"<title>sqlanon report: {esc(r.view)}</title><style>{_CSS}</style></head><body><main>",
         f"<h1>sqlanon release report: <code>{esc(r.view)}</code></h1>",
         f'<p class="sub">Source <code>{esc(r.source)}</code>, published as a {kind}; QIs: '
         + ", ".join(f"<code>{esc(n)}</code> ({esc(k)})" for n, k, _ in r.qis)
         + f". Generated {esc(r.generated)}.</p>",
         f'<p id="text-order">{text_order_note(r, lambda t: f"<code>{esc(t)}</code>")}</p>' if r.text_ordered else "",
         f'<section id="summary" class="card"><div class="verdict {css}">{verdict}</div>',
         f"<p>{esc(_summary_sentence(r))}</p>", f'<div class="tiles">{tiles}</div>',
         '<div class="cols"><div><h3>Re-identification risk, before and after</h3>',
         svg_before_after(labels, before, after, "Re-identification risk before and after (prosecutor model)"),
         "</div><div><h3>Detail given up per QI</h3>"
         "<table><thead><tr><th>QI</th><th>lost</th><th>0% = exact values, 100% = fully generalized</th></tr></thead>"
         f"<tbody>{utility}</tbody></table></div></div></section>"]
    preview_cols, preview_rows = r.preview
    if preview_cols:
        s += ['<section id="preview"><h2>What an analyst sees: the first published rows</h2>',
              _html_table(list(preview_cols), [[esc(_cell(v)) for v in row] for row in preview_rows]),
              f"<p>{m.rows:,} rows in all, one per source row; columns other than the QIs are unchanged.</p></section>"]
    if r.bands:
        s += ['<section id="published-values"><h2>What each QI became</h2>',
              "<p>How many different published values (ranges or hierarchy nodes) each QI has now, and the most "
              "common ones with their rows.</p>",
              _html_table(["QI", "kind", "published values", "most common (rows)"],
                          [(f"<code>{esc(q)}</code>", esc(k), number(r.bands[q][0]),
                            "; ".join(f"{esc(label)} ({rows:,})" for label, rows in r.bands[q][1]))
                           for q, k, _ in r.qis if q in r.bands], numeric=(2,)),
              "</section>"]
    s += ['<section id="class-sizes"><h2>Group (equivalence-class) sizes</h2>', f"<p>{esc(_size_summary(r))}.</p>"]
    bins = class_size_bins(r.class_sizes)
    if bins:
        s.append(svg_columns([_bin_label(lo, hi) for lo, hi, _, _ in bins], [c for _, _, c, _ in bins],
                             "Equivalence classes by size", y_label="classes", mark=_k_mark(bins, r.k)))
    s += ["</section>", '<section id="generalization"><h2>Generalization per QI</h2>',
          "<p>Each row's QI value is published as a range or a hierarchy node; its normalized width is the NCP "
          "cell loss (0 the exact value, 1 the whole domain; suppressed rows count 1). NCP is the mean over the rows.</p>",
          _svg_widths(r),
          _html_table(["QI", "kind", "NCP", *_SHORT_BUCKETS],
                      [(f"<code>{esc(q)}</code>", esc(k), number(m.ncp.get(q)), *(number(x) for x in r.widths[q]))
                       for q, k, _ in r.qis], numeric=tuple(range(2, 3 + len(WIDTH_BUCKETS)))),
          "</section>",
          '<section id="requirement"><h2>Requirement</h2>',
          _html_table(["requirement", "achieved", "holds"], req_rows),
          f"<p>Criterion: {_criterion(r, lambda t: f'<code>{esc(t)}</code>')}. Re-checked now on the "
          f"published view with "
          f"<code>sqlanon.verify</code> (independent SQL over the view only).</p>",
          f"<p>Published as {esc(publication(r))}.</p>",
          ("<p>Suppressed now:</p><ul>" + "".join(f"<li>{esc(x)}</li>" for x in suppression_lines(r)) + "</ul>"
           if r.verification.suppressed else ""),
          "</section>",
          '<section id="risk"><h2>Re-identification risk</h2>', f"<p>{esc(RISK_NOTE)}</p>",
          _html_table(list(_risk_table(r)[0]), [[esc(c) for c in row] for row in _risk_table(r)[1]], numeric=(1, 2)),
          "</section>", '<section id="measures"><h2>Privacy measures</h2>', f"<p>{esc(MEASURES_NOTE)}</p>",
          _html_table([esc(h) for h in _measure_table(r)[0]], [[esc(c) for c in row] for row in _measure_table(r)[1]],
                      numeric=tuple(range(1, 1 + len(_measure_table(r)[0])))),
          "</section>"]
    if r.selections:
        s += ['<section id="selections"><h2>Imprecision per selection</h2>',
              "<p>Imprecision = rows returned by the published regions that overlap the selection minus the rows "
              "it selects in the source (KDD 2006, Section 3.4).</p>",
              svg_rows([p for p, *_ in r.selections], [(t, i) for _, _, t, i in r.selections],
                        [f"{t:,} selected + {i:,} extra" + (f" ({i / t:.1%})" if t else "") for _, _, t, i in r.selections],
                        "Rows returned per selection: selected and imprecision", (BLUE, ORANGE), labels_above=True),
              '<p><span style="color:#4c78a8">&#9632;</span> rows the selection selects in the source &nbsp; '
              '<span style="color:#e45756">&#9632;</span> imprecision: further rows of the overlapping regions</p>',
              _html_table(["selection", "returned", "true", "imprecision"],
                          [(f"<code>{esc(p)}</code>", number(ret), number(t), number(i)) for p, ret, t, i in r.selections],
                          numeric=(1, 2, 3)), "</section>"]
    s.append('<section id="timings"><h2>Timings</h2>')
    if r.timings is None:
        s.append("<p>Not recorded: the report was made from the view's name; timings are known only to the "
                 "<code>Release</code> object that <code>anonymize</code> returned.</p>")
    else:
        s += [svg_rows(list(r.timings), [(t,) for t in r.timings.values()], [f"{number(t)} s" for t in r.timings.values()],
                        "Seconds per step"),
              f"<p>Total {number(r.elapsed)} s, {number(r.statements)} SQL statements.</p>"]
    if r.partitioning is not None:
        s.append(f"<p>Partitioning: {esc(describe_partitioning(r.partitioning))}.</p>")
    s += ["</section>", '<section id="objects"><h2>SQL objects</h2>',
          _html_table(["role", "name", "kind", "rows"],
                      [(esc(o.role), f"<code>{esc(o.name)}</code>", esc(o.kind), number(o.rows)) for o in r.objects],
                      numeric=(3,)),
          "</section>",
          '<section id="metrics"><h2>All metrics</h2><details><summary>Every metric, with what it means</summary>',
          _html_table(["metric", "value", "meaning"],
                      [(f"<code>{esc(k)}</code>", v, esc(why)) for k, v, why in _metric_rows(m)], numeric=(1,)),
          "</details></section></main></body></html>\n"]
    return "".join(s)


def _partitioning(release: object) -> dict[str, object] | None:
    """How a Release's partition was computed (its outcome's record; None for a single-
    dimensional release, or a release known only by its view's name)."""
    outcome = getattr(release, "outcome", None)
    return None if outcome is None else outcome.partitioning()
