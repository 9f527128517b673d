"""Resolve the privacy requirement and the workload into constraint and criterion objects.

Keyword shortcuts and explicit objects both land here and are validated together, before any
object is written: ``k`` (always), ``sensitive=`` with ``l=`` (entropy l-diversity, the variant
the KDD 2006 paper uses), ``constraints=[...]``, and either ``target=`` (class labels →
InfoGain, numeric targets → Regression, both → :class:`~sqlanon.model.criteria.Targets`) or an
explicit ``criterion=``. The result names the statistic columns (class counts, moments) the
stats statements must compute — exactly the union of what the constraints and the criterion
declare — and the whole table is checked against every constraint first, so a requirement no
partition can meet fails with a clear error instead of a useless release.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlglot import exp

from ..engine import sqlgen as g
from ..engine.base import Engine
from ..errors import InputError, UnknownColumnError, UnsupportedTypeError, did_you_mean
from ..model.criteria import INDICATOR, Criterion, InfoGain, Median, Regression, Score, Selections, Targets
from ..model.privacy import EntropyLDiversity, KAnonymity, PrivacyModel, check_models
from ..model.qi import QI, classify
from ..model.selection import QueryBox, parse_selection
from ..model.stats import ClassStats, StatColumn
from .checks import check_number

_INTEGER = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER")

@dataclass(frozen=True)
class Workload:
    """The validated requirement and workload of a request."""

    constraints: tuple[PrivacyModel, ...]
    criterion: Criterion
    stat_columns: tuple[StatColumn, ...]

    @property
    def class_stats(self) -> tuple[StatColumn, ...]:
        return tuple(c for c in self.stat_columns if c.kind == "class")

    @property
    def numeric_stats(self) -> tuple[StatColumn, ...]:
        return tuple(c for c in self.stat_columns if c.kind == "numeric")

    def counts(self, stats: ClassStats, column: str) -> np.ndarray:
        return stats.counts[[c.name for c in self.class_stats].index(column)]

    def moments(self, stats: ClassStats, column: str) -> np.ndarray:
        return stats.moments[[c.name for c in self.numeric_stats].index(column)]

    @property
    def selections(self) -> tuple[str, ...]:
        """The workload's selection predicates (Selection Mondrian), as given."""
        return self.criterion.predicates if isinstance(self.criterion, Selections) else ()

    def indicator(self, column: str) -> QueryBox | None:
        """The query region a Selection Mondrian statistic column counts (None for a column)."""
        if not isinstance(self.criterion, Selections) or not column.startswith(INDICATOR):
            return None
        return self.criterion.boxes[self.criterion.indicators.index(column)]


def resolve_workload(
    engine: Engine,
    source_ref: exp.Table,
    columns: dict[str, str],
    rows: int,
    qid: Sequence[str],
    k: int,
    *,
    sensitive: str | Sequence[str] | None = None,
    l: float | None = None,
    constraints: Sequence[PrivacyModel] = (),
    target: str | Sequence[str] | None = None,
    criterion: Criterion | None = None,
    selections: str | Sequence[str] | None = None,
    qis: Sequence[QI] = (),
) -> Workload:
    """Build and validate the constraints, the criterion and the statistic columns.

    ``selections`` (with the QIs ``qis`` they are parsed against) make the criterion Selection
    Mondrian, with the criterion ``target=``/``criterion=`` ask for inside the query regions.

    Raises:
        InputError: (or a subclass) naming the problem; nothing has been written.
    """

    sensitive_list = _column_list("sensitive", sensitive)
    target_list = _column_list("target", target)
    chosen: list[PrivacyModel] = [KAnonymity(k)]
    if (l is None) != (not sensitive_list):
        raise InputError("sensitive= and l= go together: l-diversity needs both (entropy l-diversity "
                         "by default; pass constraints=[...] for the other variants)")
    for s in sensitive_list:
        chosen.append(EntropyLDiversity(s, _number("l", l, minimum=1.0)))
    chosen += check_models(constraints, "privacy=")
    if criterion is not None and target_list:
        raise InputError("give either target= or criterion=, not both")
    if criterion is None:
        criterion = _criterion_for(target_list, columns, classify)
    elif not isinstance(criterion, (Median, InfoGain, Regression, Targets, Selections, Score)):  # Score: spec checks
        raise InputError(f"criterion= takes Median(), InfoGain(...), Regression(...), Targets(...) or "
                         f"Selections(...), got {criterion!r}")
    criterion = _with_selections(criterion, selections, qis)
    _number("min_gain", criterion.min_gain, 0.0)  # a dataclass field: anything may be in it

    # Every referenced column exists and plays one role.
    protected = {col for c in chosen for col in c.class_columns + c.numeric_columns}
    targets = {c for c in criterion.class_columns if not c.startswith(INDICATOR)} | set(criterion.numeric_columns)
    for name in sorted(protected | targets):
        if name not in columns:
            raise UnknownColumnError(f"no column {name!r}." + did_you_mean(name, columns))
        if name in qid:
            role = "a target" if name in targets else "a sensitive attribute"
            raise InputError(f"{name!r} is both a QI and {role}: a column can only be one of them")
    both = sorted(protected & targets)
    if both:
        raise InputError(f"{both[0]!r} is both a target and a sensitive attribute (the workload "
                         f"would learn exactly what the privacy requirement hides)")
    numeric = [col for c in chosen for col in c.numeric_columns] + list(criterion.numeric_columns)
    for name in numeric:
        if classify(columns[name]) != "numeric":
            raise UnsupportedTypeError(f"{name!r} has type {columns[name]}; a numeric target or a variance-"
                                       f"diversity attribute must be a number")

    stat_columns = _stat_columns(engine, source_ref, columns, rows, chosen, criterion)
    chosen = [bind_reference(engine, source_ref, c) for c in chosen]
    workload = Workload(tuple(chosen), criterion, stat_columns)
    _check_whole_table(engine, source_ref, rows, workload)
    return workload


def _column_list(label: str, value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (bytes, Mapping)) or not isinstance(value, (str, Iterable)):
        raise InputError(f"{label}= takes a column name or a list of them, got {value!r}")
    values = [value] if isinstance(value, str) else list(value)
    if not all(isinstance(v, str) for v in values):
        raise InputError(f"{label}= takes a column name or a list of them, got {value!r}")
    return values


def _number(label: str, value: Any, minimum: float) -> float:

    return check_number(label, value, minimum)


def value_counts(engine: Engine, source_ref: exp.Expression, column: str) -> tuple[list[Any], np.ndarray]:
    """The distinct values of ``column`` (as the database's text, NULL as None) and their row
    counts, in the order of their codes (:func:`sqlanon.mondrian.encode.code_table`: ascending,
    NULL first)."""
    text = exp.Cast(this=g.col(column), to=exp.DataType.build("VARCHAR"))
    query = (exp.select(g.alias(text, "t"), g.alias(exp.Count(this=exp.Star()), "n"))
             .from_(source_ref.copy()).group_by(g.col(column))
             .order_by(exp.Ordered(this=g.col(column), nulls_first=True)))
    rows = engine.fetch_rows(query)
    return [r[0] for r in rows], np.array([int(r[1]) for r in rows], dtype=np.int64)


def bind_reference(engine: Engine, source_ref: exp.Expression, c: PrivacyModel) -> PrivacyModel:
    """``c`` bound to the whole table's distribution of its reference column, if it has one
    (one GROUP BY)."""
    if c.reference_column is None:
        return c
    texts, counts = value_counts(engine, source_ref, c.reference_column)
    return c.with_reference(texts, counts)


def _with_selections(criterion: Criterion, selections: Any, qis: Sequence[QI]) -> Criterion:
    """Selection Mondrian when selections are asked for, with every predicate parsed into
    query regions (errors quote the offending part; nothing of the text is executed)."""
    if selections is not None:
        if isinstance(criterion, Selections):
            raise InputError("give selections either as selections= or inside criterion=Selections(...), not both")
        texts = [selections] if isinstance(selections, str) else selections
        if not isinstance(texts, Sequence) or not all(isinstance(t, str) for t in texts):
            raise InputError(f"selections= takes SQL predicates (strings), got {selections!r}")
        if not texts:
            return criterion
        criterion = Selections(texts, then=criterion)
    if not isinstance(criterion, Selections):
        return criterion
    if not isinstance(criterion.then, (Median, InfoGain, Regression, Targets)):
        raise InputError(f"Selections(then=...) takes Median(), InfoGain(...), Regression(...) or Targets(...), "
                         f"got {criterion.then!r}")
    if not criterion.predicates or not all(isinstance(t, str) for t in criterion.predicates):
        raise InputError(f"Selections(...) takes one or more SQL predicates (strings), got {criterion.predicates!r}")

    parsed_qis = list(qis)
    boxes = [box for text in criterion.predicates for box in parse_selection(text, parsed_qis).boxes]
    return criterion.with_boxes(boxes)


def _criterion_for(targets: list[str], columns: dict[str, str], classify) -> Criterion:
    """target=: numeric columns are regression targets, anything else a class label."""
    if not targets:
        return Median()
    missing = [t for t in targets if t not in columns]
    if missing:
        raise UnknownColumnError(f"no column {missing[0]!r}." + did_you_mean(missing[0], columns))
    numeric = tuple(t for t in targets if classify(columns[t]) == "numeric")
    classes = tuple(t for t in targets if t not in numeric)
    if not numeric:
        return InfoGain(*classes)
    if not classes:
        return Regression(*numeric)
    return Targets(classes=classes, numeric=numeric)


def _stat_columns(engine, source_ref, columns, rows, constraints, criterion) -> tuple[StatColumn, ...]:
    """The statistic columns, class ones first, in order of first mention; with the class
    columns' sizes and the numeric columns' centers (one aggregate query)."""
    class_names: list[str] = []
    numeric_names: list[str] = []
    for owner in [*constraints, criterion]:
        class_names += [c for c in owner.class_columns if c not in class_names]
        numeric_names += [c for c in owner.numeric_columns if c not in numeric_names]
    indicators = [c for c in class_names if c.startswith(INDICATOR)]  # 0/1: row inside a query region
    class_names = [c for c in class_names if c not in indicators]
    if not class_names and not numeric_names:
        return tuple(StatColumn(c, "class", size=2) for c in indicators)
    aggs: list[exp.Expression] = []
    for name in class_names:
        col = g.col(name)
        aggs += [exp.Count(this=exp.Distinct(expressions=[col])), exp.Count(this=col.copy())]
    for name in numeric_names:
        col = exp.Cast(this=g.col(name), to=exp.DataType.build("DOUBLE"))
        aggs += [exp.Avg(this=col), exp.Min(this=col.copy()), exp.Max(this=col.copy()), exp.Count(this=col.copy())]
    row = engine.fetch_rows(exp.select(*aggs).from_(source_ref))[0]
    out: list[StatColumn] = []
    for i, name in enumerate(class_names):
        distinct, present = row[2 * i], row[2 * i + 1]
        out.append(StatColumn(name, "class", size=int(distinct) + int(present < rows), nulls=present < rows))
    base = 2 * len(class_names)
    for i, name in enumerate(numeric_names):
        mean, lo, hi, present = row[base + 4 * i : base + 4 * i + 4]
        integer = columns[name].upper() in _INTEGER
        center = float(round(mean)) if integer and mean is not None else float_center(mean, lo, hi)
        spread = max(abs((lo or 0) - center), abs((hi or 0) - center)) + 1
        # Integer columns without NULLs are summed as integers when the sums cannot overflow.
        exact = integer and present == rows and spread * spread * max(rows, 1) < 2**62
        out.append(StatColumn(name, "numeric", center=center, exact=exact, nulls=present < rows))
    return tuple(out[: len(class_names)] + [StatColumn(c, "class", size=2) for c in indicators]
                 + out[len(class_names):])


def float_center(mean: float | None, lo: float | None, hi: float | None) -> float:
    """A float column's center: its mean on a grid of 2^-24 of its range (its value when it has
    one). An engine's parallel average varies in its last bits from run to run (its partial sums
    are added in any order); on the grid it does not, so neither do the centered values whose
    sums the splits compare (a change in their last bits can flip a near-tie between two cuts)."""
    if mean is None or lo is None or hi is None:
        return 0.0
    if not hi > lo:
        return float(lo)
    step = 2.0 ** (math.floor(math.log2(hi - lo)) - 24)
    return float(round(mean / step) * step)


def _check_whole_table(engine: Engine, source_ref: exp.Table, rows: int, workload: Workload) -> None:
    """Every constraint must hold for the whole table (of ``rows`` rows, counted already), or no
    partition can satisfy it. Only the columns a constraint reads are counted: a criterion's target is read when the run
    encodes it (at 10M rows a random label's value counts here took 0.13 s)."""
    read = {col for c in workload.constraints for col in c.class_columns + c.numeric_columns}
    counts = []
    for stat in workload.class_stats:
        if stat.name not in read:  # a target or a selection's indicator: no constraint reads these
            counts.append(np.zeros((1, stat.size), dtype=np.int64))
            continue
        vector = np.zeros((1, stat.size), dtype=np.int64)
        found = value_counts(engine, source_ref, stat.name)[1]  # in code order (t-closeness reads it so)
        vector[0, : len(found)] = found
        counts.append(vector)
    moments = []
    for stat in workload.numeric_stats:
        if stat.name not in read:
            moments.append(np.zeros((1, 3), dtype=np.float64))
            continue
        centered = exp.paren(exp.Sub(this=exp.Cast(this=g.col(stat.name), to=exp.DataType.build("DOUBLE")),
                                     expression=g.lit(stat.center)), copy=False)
        n, s1, s2 = engine.fetch_rows(exp.select(
            exp.Count(this=g.col(stat.name)), exp.Sum(this=centered),
            exp.Sum(this=exp.Mul(this=centered.copy(), expression=centered.copy()))
        ).from_(source_ref))[0]
        moments.append(np.array([[n or 0, s1 or 0.0, s2 or 0.0]], dtype=np.float64))
    root = ClassStats(np.array([rows]), tuple(counts), tuple(moments))
    for c in workload.constraints:
        if not c.allowed(root, workload)[0]:
            raise InputError(f"the whole table does not satisfy {c.describe()}, so no anonymization can: "
                             f"relax the requirement")
