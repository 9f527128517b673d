"""The working table and the statements the SQL-pushed levels run over it.

The working table holds one row per source row: ``rid`` (row id), ``pid`` (partition id),
``qhash`` (hash of the QI values, for the live view; only when the release has a key, see
:func:`row_columns`), ``q0..`` (QI codes), ``k0..`` (codes of the
class columns: class labels, categorical sensitive attributes) and ``t0..`` (numeric targets and
numeric sensitive attributes, centered). Per tree level, over all open partitions at once:

* :func:`extents_query` — count, min and max code of every QI per partition (``GROUP BY pid``),
  and for label-only criteria each partition's label counts (to find the settled ones);
* :func:`groups_query` — the frequency groups of (partition, QI) pairs: counts per value plus
  exactly the statistics the constraints and the criterion need (AV, AVC, AVS, moments), in one
  statement (one ``GROUP BY pair, value`` per QI asked for, ``UNION ALL``);
* :func:`advance` — at most two statements giving each row its child's id: the rows of children
  still larger than ``memory_rows`` stay in the working table, the others move to the table of
  finished rows (:func:`repartition` rewrites the whole table in one);
* :func:`batch_query` — the rows of one in-memory batch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from sqlglot import exp

from ..engine import sqlgen as g
from ..engine.base import Engine
from ..model.stats import ClassStats, FrequencyGroups, StatColumn
from .split import Children


def row_columns(hashed: bool) -> list[str]:
    """The columns naming a working-table row and its partition: ``rid``, ``pid`` and, when
    ``hashed`` (the release has a key: its live view compares the fingerprint), ``qhash``. A
    keyless release has no such column: a temp table stores a constant uncompressed, and at
    100M rows 8 bytes a row more cost 0.56 GiB of spilled working table and 0.9 GiB more in
    each sort of it."""
    return ["rid", "pid", "qhash"] if hashed else ["rid", "pid"]


class Layout:
    """Column names of the working table for d QIs and the statistic columns (``hashed``: it
    has ``qhash``, :func:`row_columns`)."""

    def __init__(
        self, d: int, class_stats: Sequence[StatColumn], numeric_stats: Sequence[StatColumn], labels: Sequence[int] = (),
        hashed: bool = True,
    ) -> None:
        self.hashed = hashed
        self.q = [f"q{i}" for i in range(d)]
        self.k = [f"k{j}" for j in range(len(class_stats))]
        self.t = [f"t{j}" for j in range(len(numeric_stats))]
        self.class_stats = tuple(class_stats)
        self.numeric_stats = tuple(numeric_stats)
        #: class columns whose counts per partition the extents carry (a label-only criterion's
        #: labels: partitions pure in them are settled, see :func:`sqlanon.mondrian.split.settled`)
        self.labels = tuple(labels)

    @property
    def carried(self) -> list[str]:
        """Columns every rewrite of the working table carries along."""
        return [*row_columns(self.hashed), *self.q, *self.k, *self.t]


def extents_query(work: str, pids: np.ndarray, layout: Layout) -> exp.Expression:
    """Rows, smallest and largest code of every QI per partition; and each partition's rows per
    value of the ``layout.labels`` (``k{j}_{value}``), so that partitions pure in their labels
    are known before any frequency group is computed."""
    aggs = [g.alias(exp.Count(this=exp.Star()), "n")]
    for c in layout.q:
        aggs += [g.alias(exp.Min(this=g.col(c)), f"min_{c}"), g.alias(exp.Max(this=g.col(c)), f"max_{c}")]
    for j in layout.labels:
        aggs += _value_counts(layout.k[j], layout.class_stats[j])
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
    columns = [g.ident("pid"), g.ident("part"), g.ident("a")]
    return exp.Values(expressions=rows, alias=exp.TableAlias(this=g.ident("c"), columns=columns))


def attr_value(selector: exp.Expression, q: list[str], alias: str) -> exp.Expression:
    """``CASE selector WHEN 0 THEN alias.q0 ... END``: each pair's own QI."""
    return g.case_on(selector, {i: g.col(c, alias) for i, c in enumerate(q)})


def groups_query(engine: Engine, work: str, pids: np.ndarray, attr: np.ndarray, layout: Layout) -> exp.Expression:
    """Frequency groups ``GROUP BY pair, value`` with the needed statistics, in one statement.

    One ``GROUP BY`` per QI asked for, over the rows of the partitions that ask for it (joined to
    the pairs of that QI, which gives each group its pair), glued by ``UNION ALL``. (A single
    ``GROUP BY`` of every row joined to all its pairs, picking each pair's QI with a ``CASE``,
    feeds the aggregate the rows times the QIs asked for; measured on 10M Agrawal rows with all
    nine QIs, the per-QI form took about half the time.) Groups come back unordered; see
    :func:`groups_from_result`.

    Class columns become one ``count(*) FILTER (WHERE k = code)`` per code but the first (the
    AVC/AVS groups, pivoted): every row has exactly one code, so the first code's count is
    ``n`` minus the others' — exactly, and one aggregate fewer per class column (half of a
    binary label's). Numeric columns give ``count`` (only if the column has NULLs; else it is
    ``n``), ``sum`` and ``sum of squares`` of their centered values, summed as integers (cast
    back to BIGINT) when exact.
    """
    aggs = stat_aggregates(layout)
    many = len(pids) > 256
    pairs = candidates(engine, pids, attr) if many else None
    branches = []
    for j in np.unique(attr).tolist():
        if many:  # the uploaded pairs, this QI's only
            on = exp.and_(exp.EQ(this=g.col("pid", "w"), expression=g.col("pid", "c")),
                          exp.EQ(this=g.col("a", "c"), expression=g.lit(j)))
            source = pairs
        else:
            mine = (attr == j).nonzero()[0]
            source = exp.Values(
                expressions=[exp.Tuple(expressions=[g.lit(int(pids[i])), g.lit(int(i))]) for i in mine],
                alias=exp.TableAlias(this=g.ident("c"), columns=[g.ident("pid"), g.ident("part")]))
            on = exp.EQ(this=g.col("pid", "w"), expression=g.col("pid", "c"))
        value = g.col(layout.q[j], "w")
        branches.append(
            exp.select(g.alias(g.col("part", "c"), "part"), g.alias(value, "v"), *aggs)
            .from_(exp.alias_(g.table(work), g.ident("w"), table=True))
            .join(source, on=on)
            .group_by(g.col("part", "c"), value)
        )
    query = branches[0]
    for branch in branches[1:]:
        query = exp.union(query, branch, distinct=False)
    return query


def stat_aggregates(layout: Layout, alias: str = "w") -> list[exp.Expression]:
    """The aggregates of a group's statistics (see :func:`groups_query`) over rows aliased
    ``alias``: ``n``, each class column's counts but the first code's, each numeric column's
    moments; :func:`groups_from_result` reads them back."""
    aggs: list[exp.Expression] = [g.alias(exp.Count(this=exp.Star()), "n")]
    for c, stat in zip(layout.k, layout.class_stats):
        aggs += _value_counts(c, stat, first=1)
    for c, stat in zip(layout.t, layout.numeric_stats):
        square = exp.Mul(this=g.col(c, alias), expression=g.col(c, alias))
        # A group of only NULLs sums to NULL: make it 0, like the numpy path.
        sums = [exp.Coalesce(this=exp.Sum(this=g.col(c, alias)), expressions=[g.lit(0)]),
                exp.Coalesce(this=exp.Sum(this=square), expressions=[g.lit(0)])]
        if stat.exact:
            sums = [exp.Cast(this=s, to=exp.DataType.build("BIGINT")) for s in sums]
        if stat.nulls:  # without NULLs the count is n (one aggregate fewer)
            aggs.append(g.alias(exp.Count(this=g.col(c, alias)), f"{c}_n"))
        aggs += [g.alias(sums[0], f"{c}_s1"), g.alias(sums[1], f"{c}_s2")]
    return aggs


def _value_counts(column: str, stat: StatColumn, first: int = 0) -> list[exp.Expression]:
    """``count(*) FILTER (WHERE column = i) AS column_i`` for the codes i >= ``first`` of a
    class column."""
    return [g.alias(exp.Filter(this=exp.Count(this=exp.Star()),
                               expression=exp.Where(this=exp.EQ(this=g.col(column), expression=g.lit(i)))), f"{column}_{i}")
            for i in range(first, stat.size)]


def value_counts_from_result(res: dict[str, np.ndarray], layout: Layout, j: int, at: np.ndarray) -> np.ndarray:
    """The (K, values) counts of class column ``j`` fetched by :func:`extents_query`, rows ``at``."""
    c, stat = layout.k[j], layout.class_stats[j]
    return np.column_stack([res[f"{c}_{i}"][at] for i in range(stat.size)]).astype(np.int64)


def groups_from_result(res: dict[str, np.ndarray], layout: Layout) -> FrequencyGroups:
    """The fetched :func:`groups_query` result as :class:`FrequencyGroups`: sorted by
    ``(part, v)`` here (one packed integer sort, cheaper than an ``ORDER BY``), the first
    code's count of each class column restored as ``n`` minus the others'."""
    part = res["part"].astype(np.int64)
    v = res["v"].astype(np.int64)
    order = sort_by_pair(part, v)
    n = res["n"].astype(np.int64)[order]
    counts = []
    for c, stat in zip(layout.k, layout.class_stats):
        m = np.empty((len(n), stat.size), dtype=np.int64, order="F")  # column-major, like the numpy path's
        m[:, 0] = n
        for i in range(1, stat.size):
            m[:, i] = res[f"{c}_{i}"][order]
            m[:, 0] -= m[:, i]
        counts.append(m)
    moments = tuple(
        np.column_stack([res[f"{c}_n"][order] if stat.nulls else n, res[f"{c}_s1"][order], res[f"{c}_s2"][order]])
        .astype(np.int64 if stat.exact else np.float64)
        for c, stat in zip(layout.t, layout.numeric_stats)
    )
    return FrequencyGroups(part[order], v[order].astype(np.int32), ClassStats(n, tuple(counts), moments))


def sort_by_pair(part: np.ndarray, value: np.ndarray) -> np.ndarray:
    """The permutation sorting rows by ``(part, value)`` (non-negative integers, each pair once):
    one ``np.sort`` of packed int64 keys when they fit, else a ``lexsort``."""
    n = len(part)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    bits_row = max(int(n - 1).bit_length(), 1)
    bits_val = max(int(value.max()).bit_length(), 1)
    bits_part = max(int(part.max()).bit_length(), 1)
    if bits_row + bits_val + bits_part > 63:
        return np.lexsort((value, part))
    key = part << (bits_val + bits_row)
    key |= value << bits_row
    key |= np.arange(n, dtype=np.int64)
    key.sort()
    return key & ((1 << bits_row) - 1)


def _children_join(
    engine: Engine, kids: Children, chosen: np.ndarray, parent_pids: np.ndarray, child_pids: np.ndarray,
    live: np.ndarray, layout: Layout, extra: dict[str, np.ndarray] | None = None,
) -> tuple[str, exp.Expression, list[exp.Expression]]:
    """Upload the level's splits (``s``: parent pid, attribute, child's code interval, child pid,
    and ``extra`` columns) and return the table, the condition joining a working-table row
    ``w`` to its child, and the working table's columns with ``pid`` replaced by the child's."""
    splits = engine.upload(
        f"splits{engine.statements}",
        {
            "pid": parent_pids[kids.parent[live]],
            "a": chosen[kids.parent[live]],
            "lo": kids.lo[live],
            "hi": kids.hi[live],
            "child": child_pids[live],
            **(extra or {}),
        },
    )
    value = attr_value(g.col("a", "s"), layout.q, "w")
    on = exp.and_(
        exp.EQ(this=g.col("pid", "w"), expression=g.col("pid", "s")),
        exp.Between(this=value, low=g.col("lo", "s"), high=g.col("hi", "s")),
    )
    new_pid = exp.Coalesce(this=g.col("child", "s"), expressions=[g.col("pid", "w")])
    return splits, on, [g.alias(new_pid, "pid") if c == "pid" else g.col(c, "w") for c in layout.carried]


def repartition(
    engine: Engine, work: str, kids: Children, chosen: np.ndarray, parent_pids: np.ndarray,
    child_pids: np.ndarray, live: np.ndarray, layout: Layout, cluster: bool = False,
) -> str:
    """Rewrite the working table with the children's ids: one statement for the whole level.

    With ``cluster``, rows are stored ordered by partition id, so that each in-memory batch's
    fetch reads only its own row groups (zone maps) instead of the whole table.
    """
    splits, on, select = _children_join(engine, kids, chosen, parent_pids, child_pids, live, layout)
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


def advance(
    engine: Engine, work: str, finished: str | None, kids: Children, chosen: np.ndarray, parent_pids: np.ndarray,
    child_pids: np.ndarray, live: np.ndarray, stay: np.ndarray, leaving: bool, layout: Layout,
    rewrite: Callable[..., str] | None = None,
) -> tuple[str | None, str | None]:
    """Give every row of ``work`` its child's id, keeping in ``work`` only the rows of children
    that stay in SQL (``stay``: still larger than ``memory_rows``) and appending the others —
    rows of smaller children and of partitions that did not split (``leaving``) — to
    ``finished``, clustered by partition id for the in-memory batches.

    The SQL levels then scan only the rows still being split: when a criterion splits unevenly
    (InfoGain peeling small pure regions off a large one) the working table shrinks from level to
    level instead of being rewritten whole. At most two statements per level; returns the new
    ``(work, finished)`` (``work`` None once every row has left). When every row stays, or every
    row leaves at the first level that any does, the table is rewritten whole by ``rewrite``
    (default :func:`repartition`).
    """
    rewrite = rewrite or repartition
    keep = bool((stay & live).any())
    leave = leaving or bool((live & ~stay).any())
    if not leave:  # every row stays: one rewrite of the whole table
        return rewrite(engine, work, kids, chosen, parent_pids, child_pids, live, layout), finished
    if finished is None and not keep:  # the last SQL level: one rewrite, as the whole table
        return None, rewrite(engine, work, kids, chosen, parent_pids, child_pids, live, layout, cluster=True)
    splits, on, select = _children_join(engine, kids, chosen, parent_pids, child_pids, live, layout,
                                        {"stay": stay[live]})
    source = exp.alias_(g.table(work), g.ident("w"), table=True)
    pairs = exp.alias_(g.table(splits), g.ident("s"), table=True)
    query = (
        exp.select(*select).from_(source).join(pairs, on=on, join_type="left")
        .where(exp.Not(this=exp.Coalesce(this=g.col("stay", "s"), expressions=[exp.false()])))
        .order_by(g.col("pid"))
    )
    if finished is None:
        finished = engine.temp_name(f"finished{engine.statements}")
        engine.execute(g.create_table_as(finished, query))
    else:
        engine.execute(exp.insert(query, g.table(finished)))
    new: str | None = None
    if keep:
        new = engine.temp_name(f"work{engine.statements}")
        engine.execute(g.create_table_as(new, exp.select(*select).from_(source).join(pairs, on=on).where(g.col("stay", "s"))))
    engine.drop_temp(work)
    engine.drop_temp(splits)
    return new, finished


def batch_query(work: str, batches: str, layout: Layout, b: int | None, first_pid: int | None,
                last_pid: int | None) -> exp.Expression:
    """The rows of in-memory batch ``b`` (a contiguous range ``first_pid..last_pid`` of partition
    ids), or with ``b`` None the rows of every batch with their batch number as column ``b``."""
    query = (
        exp.select(*[g.col(c, "w") for c in layout.carried])
        .from_(exp.alias_(g.table(work), g.ident("w"), table=True))
        .join(exp.alias_(g.table(batches), g.ident("t"), table=True),
              on=exp.EQ(this=g.col("pid", "w"), expression=g.col("pid", "t")))
    )
    if b is None:
        return query.select(g.col("b", "t"), copy=False)
    # A range filter the zone maps can use, then the exact membership.
    return query.where(exp.and_(
        exp.Between(this=g.col("pid", "w"), low=g.lit(first_pid), high=g.lit(last_pid)),
        exp.EQ(this=g.col("b", "t"), expression=g.lit(b)),
    ))
