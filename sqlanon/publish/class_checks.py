"""Each constraint judging every class of a relation, in SQL: one builder shared by the live
view (:mod:`sqlanon.publish.view`), :func:`sqlanon.apply`'s enforcement and the listing of violating
classes (:mod:`sqlanon.publish.violations`), so the three can never disagree.

The verdicts are those of the partitioner (:mod:`sqlanon.model.constraints`) and of
:func:`sqlanon.verify`: classes group on their columns (NULLs together), a NULL sensitive value
is a value of its own, variance leaves NULLs out, and float thresholds allow
:data:`sqlanon.model.constraints.TOLERANCE`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

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
from ..errors import InputError
from .closeness import closeness_query

#: Columns of :func:`per_class_query` besides the class columns (names no relation should use).
SIZE, VALUE, BAD = "__sqlanon_size", "__sqlanon_value", "__sqlanon_bad"
_DOUBLE = exp.DataType.build("DOUBLE")


def per_class_query(
    source: exp.Expression, columns: Sequence[str], constraint: Constraint, where: exp.Expression | None = None,
) -> exp.Select:
    """``SELECT columns, SIZE, VALUE, BAD``: one row per class of ``source`` over ``columns``
    (the rows satisfying ``where``, if given), its size, its measure and whether it fails.

    Raises:
        InputError: ``constraint`` is not one of sqlanon's constraints.
    """
    keys = [g.col(c) for c in columns]
    rows = exp.select(*keys).from_(exp.alias_(source.copy(), g.ident("s"), table=True))
    if where is not None:
        rows = rows.where(where.copy())

    def over(inner: exp.Select, alias: str) -> exp.Subquery:
        return exp.Subquery(this=inner, alias=exp.TableAlias(this=g.ident(alias)))

    size = exp.Count(this=exp.Star())
    if isinstance(constraint, KAnonymity):
        return rows.select(g.alias(size, SIZE), g.alias(exp.Cast(this=size.copy(), to=_DOUBLE), VALUE),
                           g.alias(exp.LT(this=size.copy(), expression=g.lit(constraint.k)), BAD),
                           copy=False).group_by(*[k.copy() for k in keys])
    if isinstance(constraint, VarianceDiversity):
        variance = exp.Coalesce(this=exp.func("var_pop", exp.Cast(this=g.col(constraint.sensitive), to=_DOUBLE)),
                                expressions=[g.lit(0.0)])
        bad = exp.LT(this=variance.copy(), expression=g.lit(float(constraint.v) * (1 - TOLERANCE)))
        return rows.select(g.alias(size, SIZE), g.alias(variance, VALUE), g.alias(bad, BAD),
                           copy=False).group_by(*[k.copy() for k in keys])
    if isinstance(constraint, TCloseness):  # the whole relation's distribution, then each class's EMD
        return closeness_query(source, columns, constraint, where, SIZE, VALUE, BAD)
    if not isinstance(constraint, (DistinctLDiversity, EntropyLDiversity, RecursiveCLDiversity)):
        raise InputError(f"not a sqlanon constraint: {constraint!r}")
    # Counts of each sensitive value per class, ranked, then one row per class (as the
    # check_sensitive template of sqlanon.verify computes them).
    counts = rows.select(g.alias(exp.Count(this=exp.Star()), "n"), copy=False).group_by(
        *[k.copy() for k in keys], g.col(constraint.sensitive))
    rank = exp.Window(this=exp.RowNumber(), partition_by=[k.copy() for k in keys],
                      order=exp.Order(expressions=[exp.Ordered(this=g.col("n"), desc=True)]))
    ranked = exp.select(*[k.copy() for k in keys], g.col("n"), g.alias(rank, "r")).from_(over(counts, "v"))
    n = g.col("n")
    total = exp.Sum(this=n.copy())
    entropy = exp.Sub(this=exp.Ln(this=total.copy()),
                      expression=exp.Div(this=exp.Sum(this=exp.Mul(this=n.copy(), expression=exp.Ln(this=n.copy()))),
                                         expression=total.copy()))
    distinct = exp.Count(this=exp.Star())
    if isinstance(constraint, DistinctLDiversity):
        value: exp.Expression = exp.Cast(this=distinct, to=_DOUBLE)
        bad: exp.Expression = exp.LT(this=distinct.copy(), expression=g.lit(constraint.l))
    elif isinstance(constraint, EntropyLDiversity):
        value = exp.Exp(this=entropy)
        bad = exp.LT(this=entropy.copy(), expression=g.lit(math.log(constraint.l) - TOLERANCE))
    else:
        top = exp.Max(this=n.copy())
        tail = exp.Coalesce(this=exp.Filter(this=exp.Sum(this=n.copy()), expression=exp.Where(
            this=exp.GTE(this=g.col("r"), expression=g.lit(constraint.l)))), expressions=[g.lit(0)])
        infinite = exp.Cast(this=g.lit("inf"), to=_DOUBLE)
        value = exp.Case().when(exp.EQ(this=tail.copy(), expression=g.lit(0)), infinite).else_(
            exp.Div(this=exp.Cast(this=top.copy(), to=_DOUBLE), expression=tail.copy()))
        bad = exp.Not(this=exp.LT(this=top, expression=exp.Mul(this=g.lit(float(constraint.c)), expression=tail)))
    return (exp.select(*[k.copy() for k in keys], g.alias(total, SIZE), g.alias(value, VALUE), g.alias(bad, BAD))
            .from_(over(ranked, "ranked")).group_by(*[k.copy() for k in keys]))
