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

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlglot import exp

from ..engine import sqlgen as g
from ..model.constraints import (
    Constraint,
    DistinctLDiversity,
    EntropyLDiversity,
    KAnonymity,
    RecursiveCLDiversity,
    TCloseness,
    VarianceDiversity,
)
from ..model.closeness import DISTANCES, Ground, leaves_of
from ..model.hierarchy import hierarchy_from
from ..model.criteria import INDICATOR, Criterion, InfoGain, Median, Regression, Score, Selections, Targets
from ..engine.base import Engine
from ..errors import HierarchyError, InputError, UnknownColumnError, UnsupportedTypeError, did_you_mean
from ..model.qi import QI, classify
from ..model.selection import QueryBox, parse_selection
from ..model.stats import ClassStats, StatColumn
from .checks import check_int, check_number


_INTEGER = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER")

#: The constraint classes ``constraints=`` accepts (k-anonymity with ``k`` applies anyway).
CONSTRAINT_TYPES = (KAnonymity, DistinctLDiversity, EntropyLDiversity, RecursiveCLDiversity, VarianceDiversity,
                    TCloseness)


@dataclass(frozen=True)
class Workload:
    """The validated requirement and workload of a request."""

    constraints: tuple[Constraint, ...]
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
    constraints: Sequence[Constraint] = (),
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
    chosen: list[Constraint] = [KAnonymity(k)]
    if (l is None) != (not sensitive_list):
        raise InputError("sensitive= and l= go together: l-diversity needs both (entropy l-diversity "
                         "by default; pass constraints=[...] for the other variants)")
    for s in sensitive_list:
        chosen.append(EntropyLDiversity(s, _number("l", l, minimum=1.0)))
    chosen += check_constraints(constraints, "privacy")
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
    chosen = [bind_closeness(engine, source_ref, c) if isinstance(c, TCloseness) else c for c in chosen]
    workload = Workload(tuple(chosen), criterion, stat_columns)
    _check_whole_table(engine, source_ref, workload)
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


def check_constraints(constraints: Any, label: str = "constraints") -> list[Constraint]:
    """``constraints`` (the keyword ``label``: ``privacy=`` of :func:`sqlanon.anonymize`,
    ``constraints=`` of :func:`sqlanon.verify`) as a list of checked constraint objects, or an
    :class:`InputError` naming the accepted types.

    None means none; a single constraint object is taken as a list of one. Numpy numbers in a
    constraint (``DistinctLDiversity("d", np.int64(3))``) become Python numbers, as the
    constraint's text goes into the manifest.
    """
    if constraints is None:
        return []
    if isinstance(constraints, CONSTRAINT_TYPES):
        constraints = [constraints]
    accepted = ", ".join(t.__name__ for t in CONSTRAINT_TYPES)
    if isinstance(constraints, (str, bytes, Mapping)) or not isinstance(constraints, Iterable):
        raise InputError(f"{label}= takes a list of sqlanon constraint objects ({accepted}), got "
                         f"{type(constraints).__name__} {constraints!r}")
    out = []
    for c in constraints:
        if not isinstance(c, CONSTRAINT_TYPES):
            raise InputError(f"{label}= takes sqlanon constraint objects ({accepted}), got "
                             f"{type(c).__name__} {c!r}")
        out.append(_check_constraint(c))
    return out


def _check_constraint(c: Constraint) -> Constraint:
    """The constraint with its parameters checked, numpy numbers made Python numbers."""
    if isinstance(c, KAnonymity):
        return dataclasses.replace(c, k=_count(c, "k"))
    if not isinstance(c.sensitive, str) or not c.sensitive:
        raise InputError(f"{type(c).__name__} needs the sensitive column's name, got {c.sensitive!r}")
    if isinstance(c, (DistinctLDiversity, RecursiveCLDiversity)):
        c = dataclasses.replace(c, l=_count(c, "l"))
    if isinstance(c, EntropyLDiversity):
        _number("EntropyLDiversity l", c.l, 1.0)
        c = dataclasses.replace(c, l=_plain(c.l))
    if isinstance(c, RecursiveCLDiversity):
        _number("RecursiveCLDiversity c", c.c, 1e-300)
        c = dataclasses.replace(c, c=_plain(c.c))
    if isinstance(c, VarianceDiversity):
        _number("VarianceDiversity v", c.v, 0.0)
        c = dataclasses.replace(c, v=_plain(c.v))
    if isinstance(c, TCloseness):
        _number("TCloseness t", c.t, 0.0)
        if c.distance not in DISTANCES:
            raise InputError(f"TCloseness distance must be one of {list(DISTANCES)}, got {c.distance!r}")
        if (c.distance == "hierarchical") != (c.hierarchy is not None):
            raise InputError("TCloseness takes a hierarchy= exactly when distance='hierarchical' (the hierarchy "
                             f"over the sensitive values gives the ground distance), got distance={c.distance!r}, "
                             f"hierarchy={c.hierarchy!r}")
        hierarchy = hierarchy_from(c.hierarchy) if c.hierarchy is not None else None
        c = dataclasses.replace(c, t=_plain(c.t), hierarchy=hierarchy, ground=None)
    return c


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


def bind_closeness(engine: Engine, source_ref: exp.Expression, c: TCloseness) -> TCloseness:
    """``c`` measuring against the whole table's distribution of its column (one GROUP BY)."""
    texts, counts = value_counts(engine, source_ref, c.sensitive)
    if c.distance != "hierarchical":
        return c.bound(Ground.of(c.distance, counts))
    h = c.hierarchy
    if None in texts:
        h = h.with_null_leaf()
    leaves = leaves_of(h, texts)
    missing = [t for t, code in zip(texts, leaves) if code < 0]
    if missing:
        shown = ", ".join(repr(v) for v in missing[:20])
        raise HierarchyError(f"the t-closeness hierarchy for {c.sensitive!r} misses {len(missing)} value(s) present "
                             f"in the data: {shown}. Every value, as the database writes it as text, must be a leaf.")
    return c.bound(Ground.of("hierarchical", counts, h, leaves))


def _count(c: Constraint, name: str) -> int:
    """An integer parameter (>= 1) of a constraint, as a Python int."""

    value = getattr(c, name)
    try:
        return check_int(name, value, 1)
    except InputError:
        raise InputError(f"{type(c).__name__} needs an integer {name} >= 1, got {value!r}") from None


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python number it holds (its text is ``3``, not ``np.int64(3)``)."""
    return value.item() if isinstance(value, np.generic) else value


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


def _check_whole_table(engine: Engine, source_ref: exp.Table, workload: Workload) -> None:
    """Every constraint must hold for the whole table, or no partition can satisfy it. Only the
    columns a constraint reads are counted: a criterion's target is read when the run
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
            exp.Count(this=g.col(stat.name)), exp.Sum(this=centered), exp.Sum(this=exp.Mul(this=centered.copy(), expression=centered.copy()))
        ).from_(source_ref))[0]
        moments.append(np.array([[n or 0, s1 or 0.0, s2 or 0.0]], dtype=np.float64))
    total = int(engine.scalar(exp.select(exp.Count(this=exp.Star())).from_(source_ref)))
    root = ClassStats(np.array([total]), tuple(counts), tuple(moments))
    for c in workload.constraints:
        if not c.allowed(root, workload)[0]:
            raise InputError(f"the whole table does not satisfy {c.describe()}, so no anonymization can: "
                             f"relax the requirement")
