"""The working table and the statements the SQL-pushed levels run over it.

The working table holds one row per source row: ``rid`` (row id), ``pid`` (partition id),
``qhash`` (hash of the QI values, for the live view), ``q0..`` (QI codes), ``k0..`` (codes of the
class columns: class labels, categorical sensitive attributes) and ``t0..`` (numeric targets and
numeric sensitive attributes, centered). Per tree level, over all open partitions at once:

* :func:`extents_query` — count, min and max code of every QI per partition (``GROUP BY pid``);
* :func:`groups_query` — the frequency groups of (partition, QI) pairs: counts per value plus
  exactly the statistics the constraints and the criterion need (AV, AVC, AVS, moments), in one
  ``GROUP BY pair, value``;
* :func:`repartition` — one ``CREATE TABLE AS`` giving each row its child's id;
* :func:`batch_query` — the rows of one in-memory batch.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sqlglot import exp

from . import sqlgen as g
from .engine import Engine
from .split import Children
from .stats import ClassStats, FrequencyGroups, StatColumn


class Layout:
    """Column names of the working table for d QIs and the statistic columns."""

    def __init__(self, d: int, class_stats: Sequence[StatColumn], numeric_stats: Sequence[StatColumn]) -> None:
        self.q = [f"q{i}" for i in range(d)]
        self.k = [f"k{j}" for j in range(len(class_stats))]
        self.t = [f"t{j}" for j in range(len(numeric_stats))]
        self.class_stats = tuple(class_stats)
        self.numeric_stats = tuple(numeric_stats)

    @property
    def carried(self) -> list[str]:
        """Columns every rewrite of the working table carries along."""
        return ["rid", "pid", "qhash", *self.q, *self.k, *self.t]


def extents_query(work: str, pids: np.ndarray, layout: Layout) -> exp.Expression:
    aggs = [g.alias(exp.Count(this=exp.Star()), "n")]
    for c in layout.q:
        aggs += [g.alias(exp.Min(this=g.col(c)), f"min_{c}"), g.alias(exp.Max(this=g.col(c)), f"max_{c}")]
    query = exp.select(g.col("pid"), *aggs).from_(g.table(work)).group_by(g.col("pid")).order_by(g.col("pid"))
    return query.where(g.in_list(g.col("pid"), pids.tolist())) if len(pids) < 1000 else query


def candidates(engine: Engine, pids: np.ndarray, attr: np.ndarray) -> exp.Expression:
    """A relation ``(pid, part, a)``: partition id, index of the pair, the pair's QI.

    Inline VALUES for a few pairs; an uploaded temp table for many (rendering thousands of
    literals costs more than the upload).
    """
    if len(pids) > 256:
        name = engine.upload("candidates", {"pid": pids, "part": np.arange(len(pids)), "a": attr})
        return exp.alias_(g.table(name), g.ident("c"), table=True)
    rows = [exp.Tuple(expressions=[g.lit(int(p)), g.lit(i), g.lit(int(a))]) for i, (p, a) in enumerate(zip(pids, attr))]
    return exp.Values(expressions=rows, alias=exp.TableAlias(this=g.ident("c"), columns=[g.ident("pid"), g.ident("part"), g.ident("a")]))


def attr_value(selector: exp.Expression, q: list[str], alias: str) -> exp.Expression:
    """``CASE selector WHEN 0 THEN alias.q0 ... END``: each pair's own QI."""
    return g.case_on(selector, {i: g.col(c, alias) for i, c in enumerate(q)})


def groups_query(engine: Engine, work: str, pids: np.ndarray, attr: np.ndarray, layout: Layout) -> exp.Expression:
    """Frequency groups ``GROUP BY pair, value`` with the needed statistics, in one pass.

    Class columns become one ``count(*) FILTER (WHERE k = code)`` per code (the AVC/AVS groups,
    pivoted); numeric columns ``count``, ``sum`` and ``sum of squares`` of their centered values,
    summed as integers (cast back to BIGINT) when exact.
    """
    inner = (
        exp.select(g.alias(g.col("part", "c"), "part"), g.alias(attr_value(g.col("a", "c"), layout.q, "w"), "v"),
                   *[g.col(c, "w") for c in layout.k + layout.t])
        .from_(exp.alias_(g.table(work), g.ident("w"), table=True))
        .join(candidates(engine, pids, attr), on=exp.EQ(this=g.col("pid", "w"), expression=g.col("pid", "c")))
    )
    aggs: list[exp.Expression] = [g.alias(exp.Count(this=exp.Star()), "n")]
    for c, stat in zip(layout.k, layout.class_stats):
        aggs += [g.alias(exp.Filter(this=exp.Count(this=exp.Star()),
                                    expression=exp.Where(this=exp.EQ(this=g.col(c), expression=g.lit(i)))), f"{c}_{i}")
                 for i in range(stat.size)]
    for c, stat in zip(layout.t, layout.numeric_stats):
        square = exp.Mul(this=g.col(c), expression=g.col(c))
        # A group of only NULLs sums to NULL: make it 0, like the numpy path.
        sums = [exp.Coalesce(this=exp.Sum(this=g.col(c)), expressions=[g.lit(0)]),
                exp.Coalesce(this=exp.Sum(this=square), expressions=[g.lit(0)])]
        if stat.exact:
            sums = [exp.Cast(this=s, to=exp.DataType.build("BIGINT")) for s in sums]
        aggs += [g.alias(exp.Count(this=g.col(c)), f"{c}_n"), g.alias(sums[0], f"{c}_s1"), g.alias(sums[1], f"{c}_s2")]
    return (
        exp.select(g.col("part"), g.col("v"), *aggs)
        .from_(exp.Subquery(this=inner, alias=exp.TableAlias(this=g.ident("x"))))
        .group_by(g.col("part"), g.col("v"))
        .order_by(g.col("part"), g.col("v"))
    )


def groups_from_result(res: dict[str, np.ndarray], layout: Layout) -> FrequencyGroups:
    """The fetched :func:`groups_query` result as :class:`FrequencyGroups`."""
    counts = tuple(  # column-major, like the numpy path's
        np.array([res[f"{c}_{i}"] for i in range(stat.size)], dtype=np.int64).reshape(stat.size, len(res["n"])).T
        for c, stat in zip(layout.k, layout.class_stats)
    )
    moments = tuple(
        np.column_stack([res[f"{c}_n"], res[f"{c}_s1"], res[f"{c}_s2"]]).astype(np.int64 if stat.exact else np.float64)
        for c, stat in zip(layout.t, layout.numeric_stats)
    )
    return FrequencyGroups(res["part"].astype(np.int64), res["v"].astype(np.int32),
                           ClassStats(res["n"].astype(np.int64), counts, moments))


def repartition(
    engine: Engine, work: str, kids: Children, chosen: np.ndarray, parent_pids: np.ndarray,
    child_pids: np.ndarray, live: np.ndarray, layout: Layout, cluster: bool = False,
) -> str:
    """Rewrite the working table with the children's ids: one statement for the whole level.

    With ``cluster``, rows are stored ordered by partition id, so that each in-memory batch's
    fetch reads only its own row groups (zone maps) instead of the whole table.
    """
    splits = engine.upload(
        f"splits{engine.statements}",
        {
            "pid": parent_pids[kids.parent[live]],
            "a": chosen[kids.parent[live]],
            "lo": kids.lo[live],
            "hi": kids.hi[live],
            "child": child_pids[live],
        },
    )
    value = attr_value(g.col("a", "s"), layout.q, "w")
    on = exp.and_(
        exp.EQ(this=g.col("pid", "w"), expression=g.col("pid", "s")),
        exp.Between(this=value, low=g.col("lo", "s"), high=g.col("hi", "s")),
    )
    new_pid = exp.Coalesce(this=g.col("child", "s"), expressions=[g.col("pid", "w")])
    select = [g.alias(new_pid, "pid") if c == "pid" else g.col(c, "w") for c in layout.carried]
    query = (
        exp.select(*select)
        .from_(exp.alias_(g.table(work), g.ident("w"), table=True))
        .join(exp.alias_(g.table(splits), g.ident("s"), table=True), on=on, join_type="left")
    )
    if cluster:
        query = query.order_by(g.col("pid"))
    new = engine.temp_name(f"work{engine.statements}")
    engine.execute(g.create_table_as(new, query))
    engine.drop_temp(work)
    engine.drop_temp(splits)
    return new


def batch_query(work: str, batches: str, b: int, first_pid: int, last_pid: int, layout: Layout) -> exp.Expression:
    """The rows of in-memory batch ``b`` (a contiguous range of partition ids)."""
    return (
        exp.select(*[g.col(c, "w") for c in layout.carried])
        .from_(exp.alias_(g.table(work), g.ident("w"), table=True))
        .join(exp.alias_(g.table(batches), g.ident("t"), table=True),
              on=exp.EQ(this=g.col("pid", "w"), expression=g.col("pid", "t")))
        # A range filter the zone maps can use, then the exact membership.
        .where(exp.and_(
            exp.Between(this=g.col("pid", "w"), low=g.lit(first_pid), high=g.lit(last_pid)),
            exp.EQ(this=g.col("b", "t"), expression=g.lit(b)),
        ))
    )
