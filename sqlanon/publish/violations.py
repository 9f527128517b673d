"""Which equivalence classes break a requirement, and by how much: the per-class side of verify.

:func:`sqlanon.verify` answers *whether* a relation meets k-anonymity and each constraint (and
how many classes fail). This module names the failing classes, worst first, with the value of
the measure the constraint bounds, so that a DBA sees *which* rows to look at:

each privacy model's per-class measure (its ``measure``; the worst is its smallest or largest
value, its ``worst``): rows for k-anonymity, distinct values, l = e^entropy, x1/(xl+...+xm),
variance, the EMD from the whole relation, max |log2(p/q)|, max (p-q)/q
(:mod:`sqlanon.model.privacy`).

It is the one per-class statement :func:`sqlanon.verify`, the live view and :func:`sqlanon.apply`
judge classes with (:meth:`~sqlanon.model.privacy.PrivacyModel.per_class`), so the verdicts are
the same; here the classes are listed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from ..engine import engine_for
from ..engine import sqlgen as g
from ..engine.catalog import find_source
from ..errors import UnknownColumnError, did_you_mean
from ..model.privacy import BAD, SIZE, VALUE, PrivacyModel, check_models
from .verify import class_columns, release_of


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
    con: Any, relation: str, qid: Sequence[str], constraint: PrivacyModel, limit: int = 20, *,
    class_column: str | None = None,
) -> Violations:
    """The classes of ``relation`` over the QIs that break ``constraint``, worst first.

    Args:
        con: a DuckDB or PostgreSQL (psycopg) connection.
        relation: table or view (or files), as for :func:`sqlanon.verify`.
        qid: the QIs; ``age`` stands for ``age_min``/``age_max`` when the relation has those.
        constraint: a privacy model (:class:`~sqlanon.KAnonymity`, a diversity model, ...).
        limit: at most this many classes are listed (all are counted).
        class_column: as for :func:`sqlanon.verify`: a sqlanon release's suppressed rows (its
            class column NULL) form no class, so none of its classes lists them.

    Raises:
        InputError: (and subclasses) unknown relation or column, or not a constraint.
    """
    engine = engine_for(con)
    (constraint,) = check_models([constraint], "violations()")
    source = find_source(engine, engine.objects(), relation, count=False)
    columns = class_columns(source.column_names, qid)
    for name in constraint.class_columns + constraint.numeric_columns:
        if name not in source.column_names:
            raise UnknownColumnError(f"no column {name!r} to check {constraint.describe()}."
                                     + did_you_mean(name, source.column_names))
    release, class_column = release_of(engine, source, class_column)
    placed = (exp.Not(this=exp.Is(this=g.col(class_column), expression=exp.Null())) if release is not None
              else None)
    per = exp.Subquery(this=constraint.per_class(source.ref, columns, where=placed),
                       alias=exp.TableAlias(this=g.ident("c")))
    highest = constraint.worst == "max"
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
    return Violations(constraint.describe(), constraint.measure, None if worst is None else float(worst),
                      int(bad_count or 0), tuple(listed))
