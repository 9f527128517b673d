"""Which equivalence classes break a requirement, and by how much: the per-class side of verify.

:func:`sqlanon.verify` answers *whether* a relation meets k-anonymity and each constraint (and
how many classes fail). This module names the failing classes, worst first, with the value of
the measure the constraint bounds, so that a DBA sees *which* rows to look at:

=============================  =====================================  ====================  =====
constraint                     measure per class                      fails when            worst
=============================  =====================================  ====================  =====
k-anonymity(k)                 rows                                   rows < k              min
distinct l-diversity(s, l)     distinct values of s (NULL is one)     value < l             min
entropy l-diversity(s, l)      l = e^H, H the entropy of s (nats)     H < ln l - tol        min
recursive (c,l)-diversity      x_1 / (x_l + ... + x_m), counts of s   not x_1 < c * tail    max
variance diversity(s, v)       population variance of s (NULLs out)   variance < v (1-tol)  min
=============================  =====================================  ====================  =====

The verdicts are those of :mod:`sqlanon.publish.verify` (same grouping -- NULLs group together -- and the
same tolerance, :data:`sqlanon.model.constraints.TOLERANCE`), computed here per class so the classes can
be listed. :func:`sqlanon.apply` uses :func:`per_class_query` to find the classes it suppresses.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

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
from .class_checks import BAD, SIZE, VALUE, per_class_query
from ..engine import engine_for
from ..errors import UnknownColumnError, did_you_mean
from ..engine.catalog import find_source
from .verify import class_columns

#: What the measure of each constraint kind is, for listings.
MEASURES: dict[type, str] = {
    KAnonymity: "rows",
    DistinctLDiversity: "distinct values",
    EntropyLDiversity: "l = e^entropy",
    RecursiveCLDiversity: "x1/(xl+...+xm)",
    VarianceDiversity: "variance",
    TCloseness: "EMD from the whole relation",
}


@dataclass(frozen=True)
class ClassViolation:
    """One class that breaks a constraint: its size, its value of the constraint's measure, and
    its class columns' values (``{column: value}``)."""

    size: int
    value: float
    key: Mapping[str, Any]


@dataclass(frozen=True)
class Violations:
    """The classes of a relation that break one constraint.

    Attributes:
        constraint: the constraint, as ``describe()`` writes it.
        measure: what :attr:`ClassViolation.value` and ``worst`` measure (see the module table).
        worst: the worst value over *all* classes (the achieved value; None without classes).
        violating: how many classes break the constraint.
        classes: the violating classes, worst first (ties: smallest first, then by the class
            columns, NULLs first), at most ``limit`` of them.
    """

    constraint: str
    measure: str
    worst: float | None
    violating: int
    classes: tuple[ClassViolation, ...]


def violations(
    con: Any, relation: str, qid: Sequence[str], constraint: Constraint, limit: int = 20,
) -> Violations:
    """The classes of ``relation`` over the QIs that break ``constraint``, worst first.

    Args:
        con: a DuckDB or PostgreSQL (psycopg) connection.
        relation: table or view (or files), as for :func:`sqlanon.verify`.
        qid: the QIs; ``age`` stands for ``age_min``/``age_max`` when the relation has those.
        constraint: :class:`~sqlanon.KAnonymity` or one of the diversity constraints.
        limit: at most this many classes are listed (all are counted).

    Raises:
        InputError: (and subclasses) unknown relation or column, or not a constraint.
    """
    engine = engine_for(con)
    source = find_source(engine, engine.objects(), relation, count=False)
    columns = class_columns(source.column_names, qid)
    for name in constraint.class_columns + constraint.numeric_columns:
        if name not in source.column_names:
            raise UnknownColumnError(f"no column {name!r} to check {constraint.describe()}."
                                     + did_you_mean(name, source.column_names))
    per = exp.Subquery(this=per_class_query(source.ref, columns, constraint), alias=exp.TableAlias(this=g.ident("c")))
    highest = isinstance(constraint, (RecursiveCLDiversity, TCloseness))  # a larger ratio / distance is worse
    worst_of = exp.Max if highest else exp.Min
    bad_count, worst = engine.fetch_rows(exp.select(
        exp.Filter(this=exp.Count(this=exp.Star()), expression=exp.Where(this=g.col(BAD))),
        worst_of(this=g.col(VALUE)),
    ).from_(per.copy()))[0]
    listed: list[ClassViolation] = []
    if bad_count:
        order = [exp.Ordered(this=g.col(VALUE), desc=highest), exp.Ordered(this=g.col(SIZE))]
        order += [exp.Ordered(this=g.col(c), nulls_first=True) for c in columns]
        query = (exp.select(*[g.col(c) for c in columns], g.col(SIZE), g.col(VALUE)).from_(per)
                 .where(g.col(BAD)).order_by(*order).limit(limit))
        listed = [ClassViolation(int(row[-2]), float(row[-1]), dict(zip(columns, row[:-2])))
                  for row in engine.fetch_rows(query)]
    return Violations(constraint.describe(), MEASURES[type(constraint)], None if worst is None else float(worst),
                      int(bad_count or 0), tuple(listed))
