"""Rows a recoding suppresses, published as DESIGN.md says: "with every QI fully generalized and
``eq_class`` NULL, everywhere". One mechanism for every recoding (the single-dimensional
searches now, Mondrian's ``suppression=`` next):

1. **Marking.** The recoding hands :func:`sqlanon.publish.pipeline.publish_release` its working
   table ``(rid, pid[, qhash])``; a row it suppresses has ``pid =`` :data:`SUPPRESSED_PID` (no
   region has that id). Its regions (the rules) cover the domain as always; a suppressed class
   is simply no region's rows.
2. **Row map.** :func:`rowmap_rows` adds those rows with region NULL (the row map otherwise
   joins rows to regions, which would drop them).
3. **Publication.** The live view already shows a row without a region fully generalized with
   class NULL (:mod:`sqlanon.publish.view`): a hierarchical QI its root label, an ordered QI the
   bounds of the whole release; its status names them :data:`REASON`. The snapshot's view does
   the same (:func:`sqlanon.publish.view.generalized`).
4. **Verification.** :func:`sqlanon.verify` counts a release's rows with class NULL as
   suppressed and each must be fully generalized (else "leaked"); the publication check
   (:func:`sqlanon.publish.pipeline.verified`) also requires at most
   :attr:`Spec.suppression_limit <sqlanon.request.spec.Spec.suppression_limit>` of them -- the
   request's limit, a fraction of the rows, rounded down -- and k of every other class.
5. **Counting.** :class:`sqlanon.Release` (``suppressed``; ``suppression``: allowed against
   used, :class:`Suppression`), :func:`sqlanon.metrics`
   (``suppressed``: a suppressed cell loses 1 in NCP/LM, a suppressed row counts in CM and
   costs N in DM) and :func:`sqlanon.report` count them.

A recoding that suppresses rows says how many it may in its request (``suppression=``);
:attr:`Spec.suppression_limit <sqlanon.request.spec.Spec.suppression_limit>` is the one place
that reads it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sqlglot import exp

from ..engine import sqlgen as g
from ..engine.base import Engine
from ..model.domain import Domain, Visibility
from ..model.partition import SUPPRESSED_PID, Regions
from ..request.spec import Spec
from .view import SUPPRESSED

#: Why a live view's row is suppressed when the recoding suppressed it.
REASON = SUPPRESSED


@dataclass(frozen=True)
class Suppression:
    """A release's suppression limit against what the recoding used (:class:`sqlanon.Release`'s
    ``suppression``).

    Attributes:
        fraction: the request's ``suppression=``.
        allowed: the most rows it may suppress, ``floor(fraction x N)``
            (:attr:`Spec.suppression_limit <sqlanon.request.spec.Spec.suppression_limit>`).
        used: the rows it suppressed (verified on the published relation: class NULL, fully
            generalized).
    """

    fraction: float
    allowed: int
    used: int

    @property
    def unused(self) -> int:
        """The rows the limit allowed but the recoding did not suppress."""
        return self.allowed - self.used

    def describe(self) -> str:
        share = f"{self.used / self.allowed:.0%}" if self.allowed else "-"
        return f"{self.used:,} of {self.allowed:,} rows allowed ({share} used; suppression={self.fraction:g})"


def rowmap_rows(work: str, hashed: bool) -> exp.Select:
    """``(rid, region NULL[, qhash])`` of every row the recoding suppressed (``hashed``: the
    working table has ``qhash``, a keyed release's)."""
    null = g.alias(exp.Cast(this=exp.Null(), to=exp.DataType.build("BIGINT")), "region")
    return (exp.select(g.col("rid", "x"), null, *([g.col("qhash", "x")] if hashed else []))
            .from_(exp.alias_(g.table(work), g.ident("x"), table=True))
            .where(exp.EQ(this=g.col("pid", "x"), expression=g.lit(SUPPRESSED_PID))))


def visibility(engine: Engine, spec: Spec, domains: Sequence[Domain], regions: Regions, work: str,
               memory: str | None, source: exp.Table) -> Visibility:
    """What the published rows of a Mondrian release hold (:class:`~sqlanon.model.domain.Visibility`,
    for :class:`sqlanon.publish.bounds.Shown`): the codes only the rows of suppressed leaves hold
    -- one statement over those rows (at most ``spec.suppression_limit`` of them, kept in a temp table)
    and the working table's rows sharing their codes -- and the published rows at a code,
    counted when asked (from the working table less the suppressed rows; without them from the
    source, through the code table: the working table may be gone)."""
    ordered = [i for i, d in enumerate(domains) if d.qi.ordered]
    hidden = [np.zeros(0, np.int64) for _ in domains]
    held: str | None = None
    dropped = regions.suppressed if regions.suppressed is not None else np.zeros(len(regions.boxes), dtype=bool)
    if dropped.any() and ordered:
        pids = engine.upload("dropped", {"pid": regions.boxes.pid[dropped], "sql": regions.in_sql[dropped]})
        codes = [g.col(f"q{i}", "w") for i in ordered]
        s = exp.alias_(g.table(pids), g.ident("s"), table=True)
        w = exp.alias_(g.table(work), g.ident("w"), table=True)
        rows: exp.Query = exp.select(g.col("rid", "w"), *codes).from_(w).join(
            s, on=exp.and_(exp.EQ(this=g.col("pid", "s"), expression=g.col("pid", "w")), g.col("sql", "s")))
        if memory:
            rows = exp.union(rows, exp.select(g.col("rid", "w"), *[c.copy() for c in codes])
                             .from_(exp.alias_(g.table(memory), g.ident("m"), table=True))
                             .join(s.copy(), on=exp.EQ(this=g.col("pid", "s"), expression=g.col("pid", "m")))
                             .join(w.copy(), on=exp.EQ(this=g.col("rid", "w"), expression=g.col("rid", "m"))),
                             distinct=False)
        held = engine.temp_name("held")
        engine.execute(g.create_table_as(held, rows))
        engine.drop_temp(pids)
        parts = []
        for i in ordered:
            q = g.col(f"q{i}")
            mine = (exp.select(g.alias(q, "code"), g.alias(exp.Count(this=exp.Star()), "n")).from_(g.table(held))
                    .group_by(q.copy()))
            every = (exp.select(g.alias(q.copy(), "code"), g.alias(exp.Count(this=exp.Star()), "n")).from_(g.table(work))
                     .where(q.copy().isin(query=exp.select(q.copy()).from_(g.table(held)))).group_by(q.copy()))
            parts.append(exp.select(g.alias(g.lit(i), "q"), g.col("code", "x"))
                         .from_(exp.Subquery(this=mine, alias=exp.TableAlias(this=g.ident("x"))))
                         .join(exp.Subquery(this=every, alias=exp.TableAlias(this=g.ident("y"))),
                               on=exp.EQ(this=g.col("code", "x"), expression=g.col("code", "y")))
                         .where(exp.EQ(this=g.col("n", "x"), expression=g.col("n", "y"))))
        union: exp.Query = parts[0]
        for part in parts[1:]:
            union = exp.union(union, part, distinct=False)
        found = engine.fetch(union)
        q, code = np.asarray(found["q"], dtype=np.int64), np.asarray(found["code"], dtype=np.int64)
        for i in ordered:
            hidden[i] = np.sort(code[q == i])

    def count(i: int, code: int) -> int:
        star = g.alias(exp.Count(this=exp.Star()), "n")
        if held is None:
            value = exp.select(g.col("v")).from_(g.table(domains[i].table)).where(
                exp.EQ(this=g.col("code"), expression=g.lit(code)))
            query = exp.select(star).from_(source.copy()).where(
                exp.EQ(this=g.col(domains[i].qi.name), expression=exp.Subquery(this=value)))
            return int(engine.fetch_rows(query)[0][0])
        at = exp.EQ(this=g.col(f"q{i}"), expression=g.lit(code))
        every = exp.select(star.copy()).from_(g.table(work)).where(at)
        less = exp.select(star.copy()).from_(g.table(held)).where(at.copy())
        return int(engine.fetch_rows(every)[0][0]) - int(engine.fetch_rows(less)[0][0])

    return Visibility(tuple(hidden), count)
