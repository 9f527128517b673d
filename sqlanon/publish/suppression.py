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
5. **Counting.** :class:`sqlanon.Release` (``suppressed``), :func:`sqlanon.metrics`
   (``suppressed``: a suppressed cell loses 1 in NCP/LM, a suppressed row counts in CM and
   costs N in DM) and :func:`sqlanon.report` count them.

A recoding that suppresses rows says how many it may in its request (``suppression=``);
:attr:`Spec.suppression_limit <sqlanon.request.spec.Spec.suppression_limit>` is the one place
that reads it.
"""

from __future__ import annotations

from sqlglot import exp

from ..engine import sqlgen as g
from ..model.partition import SUPPRESSED_PID
from .view import SUPPRESSED

#: Why a live view's row is suppressed when the recoding suppressed it.
REASON = SUPPRESSED


def rowmap_rows(work: str, hashed: bool) -> exp.Select:
    """``(rid, region NULL[, qhash])`` of every row the recoding suppressed (``hashed``: the
    working table has ``qhash``, a keyed release's)."""
    null = g.alias(exp.Cast(this=exp.Null(), to=exp.DataType.build("BIGINT")), "region")
    return (exp.select(g.col("rid", "x"), null, *([g.col("qhash", "x")] if hashed else []))
            .from_(exp.alias_(g.table(work), g.ident("x"), table=True))
            .where(exp.EQ(this=g.col("pid", "x"), expression=g.lit(SUPPRESSED_PID))))
