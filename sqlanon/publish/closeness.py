"""t-closeness of every class of a relation, in SQL: the Earth Mover's Distance of each class's
sensitive distribution from the whole relation's (:mod:`sqlanon.model.closeness` states the
formulas; Li, Li & Venkatasubramanian, ICDE 2007).

Independent of the partitioner: it reads only the relation (and, for the hierarchical distance,
the hierarchy given as literals). One ``GROUP BY class, sensitive`` of the relation; window
functions number the classes and the sensitive values (ascending, NULL first: the order the
ordered distance uses) and give the whole relation's share ``q`` of each value -- over *all*
its rows, suppressed or unplaced ones included (the whole table's distribution), while only the
rows satisfying ``where`` form classes. Every class is then crossed with every value (a value
absent from a class has ``p = 0``), ``r = p - q``, and per class:

* equal: ``1/2 sum |r|``;
* ordered: ``sum |running sum of r| / (m - 1)`` (window ``ORDER BY`` the value's rank);
* hierarchical: ``extra`` per (class, node) summed over the leaves below the node, then per
  (class, parent) the positive and negative extras of its children, and
  ``sum height(parent)/H * least(pos, neg)``. A value that is no leaf of the hierarchy makes
  every class fail (the distance cannot be measured: fail closed).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlglot import exp

from ..engine import sqlgen as g
from ..model.closeness import subtree_heights
from ..model.constraints import TOLERANCE, TCloseness
from ..model.hierarchy import Hierarchy, hierarchy_from

_DOUBLE = exp.DataType.build("DOUBLE")


def _sub(query: exp.Expression, alias: str) -> exp.Subquery:
    return exp.Subquery(this=query, alias=exp.TableAlias(this=g.ident(alias)))


def _cte(name: str) -> str:
    """A CTE's name, prefixed so that it never hides a user's relation the query reads."""
    return f"__sqlanon_{name}"


def _double(e: exp.Expression) -> exp.Expression:
    return exp.Cast(this=e, to=_DOUBLE.copy())


def closeness_query(source: exp.Expression, columns: Sequence[str], c: TCloseness, where: exp.Expression | None,
                    size: str, value: str, bad: str) -> exp.Select:
    """``SELECT columns, size, value, bad``: one row per class of ``source`` over ``columns``
    (its rows satisfying ``where``), its size, its EMD and whether it exceeds ``c.t``."""
    keys = [g.col(x) for x in columns]
    s = g.col(c.sensitive)
    placed = exp.Case().when(where.copy(), g.lit(1)).else_(g.lit(0)) if where is not None else g.lit(1)
    cells = (exp.select(*[k.copy() for k in keys], g.alias(s.copy(), "__v"), g.alias(placed, "__placed"),
                        g.alias(exp.Count(this=exp.Star()), "__n"))
             .from_(exp.alias_(source.copy(), g.ident("s"), table=True))
             .group_by(*[k.copy() for k in keys], s.copy(), placed.copy()))
    whole = exp.Window(this=exp.Sum(this=g.col("__n")))
    rank = exp.Window(this=exp.func("dense_rank"), order=exp.Order(expressions=[
        exp.Ordered(this=g.col("__v"), nulls_first=True)]))
    cid = exp.Window(this=exp.func("dense_rank"), order=exp.Order(expressions=[
        exp.Ordered(this=k.copy(), nulls_first=True) for k in keys] or [exp.Ordered(this=g.lit(1))]))
    ranked = exp.select(*[k.copy() for k in keys], g.col("__v"), g.col("__placed"), g.col("__n"),
                        g.alias(rank, "__i"), g.alias(cid, "__cid"), g.alias(whole, "__total")).from_(_sub(cells, "c"))
    # the domain: every value's rank, text, share of the whole relation, and m
    domain = (exp.select(g.col("__i"), g.col("__v"),
                         g.alias(exp.Div(this=_double(exp.Sum(this=g.col("__n"))),
                                         expression=_double(exp.Max(this=g.col("__total")))), "__q"))
              .from_(g.table(_cte("ranked"))).group_by(g.col("__i"), g.col("__v")))
    classes = (exp.select(g.col("__cid"), *[k.copy() for k in keys], g.alias(exp.Sum(this=g.col("__n")), "__size"))
               .from_(g.table(_cte("ranked"))).where(exp.EQ(this=g.col("__placed"), expression=g.lit(1)))
               .group_by(g.col("__cid"), *[k.copy() for k in keys]))
    present = (exp.select(g.col("__cid"), g.col("__i"), g.alias(exp.Sum(this=g.col("__n")), "__n"))
               .from_(g.table(_cte("ranked"))).where(exp.EQ(this=g.col("__placed"), expression=g.lit(1)))
               .group_by(g.col("__cid"), g.col("__i")))
    share = exp.Div(this=_double(exp.Coalesce(this=g.col("__n", "x"), expressions=[g.lit(0)])),
                    expression=_double(g.col("__size", "k")))
    diff = (exp.select(g.col("__cid", "k"), g.col("__i", "d"), g.col("__v", "d"),
                       g.alias(exp.Sub(this=share, expression=g.col("__q", "d")), "__r"))
            .from_(exp.alias_(g.table(_cte("classes")), g.ident("k"), table=True))
            .join(exp.alias_(g.table(_cte("domain")), g.ident("d"), table=True), join_type="cross")
            .join(exp.alias_(g.table(_cte("present")), g.ident("x"), table=True), join_type="left", on=exp.and_(
                exp.EQ(this=g.col("__cid", "x"), expression=g.col("__cid", "k")),
                exp.EQ(this=g.col("__i", "x"), expression=g.col("__i", "d")))))
    ctes = [(_cte("ranked"), ranked), (_cte("domain"), domain), (_cte("classes"), classes),
            (_cte("present"), present), (_cte("diff"), diff)]
    r = g.col("__r")
    unmatched: exp.Expression = g.lit(0)
    if c.distance == "equal":
        per = exp.select(g.col("__cid"), g.alias(exp.Mul(this=g.lit(0.5), expression=exp.Sum(this=exp.Abs(this=r))),
                                                "__d")).from_(g.table(_cte("diff"))).group_by(g.col("__cid"))
    elif c.distance == "ordered":
        running = exp.Window(this=exp.Sum(this=r.copy()), partition_by=[g.col("__cid")],
                             order=exp.Order(expressions=[exp.Ordered(this=g.col("__i"))]),
                             spec=exp.WindowSpec(kind="ROWS", start="UNBOUNDED", start_side="PRECEDING",
                                                 end="CURRENT ROW"))
        cum = exp.select(g.col("__cid"), g.alias(running, "__f")).from_(g.table(_cte("diff")))
        m = exp.Subquery(this=exp.select(exp.Count(this=exp.Star())).from_(g.table(_cte("domain"))))
        scale = exp.Greatest(this=_double(exp.Sub(this=m, expression=g.lit(1))), expressions=[g.lit(1.0)])
        ctes.append((_cte("cum"), cum))
        per = exp.select(g.col("__cid"), g.alias(exp.Div(this=exp.Sum(this=exp.Abs(this=g.col("__f"))), expression=scale),
                                                "__d")).from_(g.table(_cte("cum"))).group_by(g.col("__cid"))
    else:
        ctes.append((_cte("tree"), tree_values(c.hierarchy)))
        text = exp.Cast(this=g.col("__v", "f"), to=exp.DataType.build("VARCHAR"))
        extra = (exp.select(g.col("__cid", "f"), g.col("node", "t"), g.col("parent", "t"), g.col("w", "t"),
                            g.alias(exp.Sum(this=g.col("__r", "f")), "__e"))
                 .from_(exp.alias_(g.table(_cte("diff")), g.ident("f"), table=True))
                 .join(exp.alias_(g.table(_cte("tree")), g.ident("t"), table=True),
                       on=exp.NullSafeEQ(this=text, expression=g.col("leaf", "t")))
                 .group_by(g.col("__cid", "f"), g.col("node", "t"), g.col("parent", "t"), g.col("w", "t")))
        e = g.col("__e")
        def positive(x: exp.Expression) -> exp.Expression:
            return exp.Sum(this=exp.Greatest(this=x, expressions=[g.lit(0.0)]))

        sides = (exp.select(g.col("__cid"), g.col("parent"), g.col("w"), g.alias(positive(e.copy()), "__pos"),
                            g.alias(positive(exp.Neg(this=e.copy())), "__neg"))
                 .from_(g.table(_cte("extra"))).group_by(g.col("__cid"), g.col("parent"), g.col("w")))
        ctes += [(_cte("extra"), extra), (_cte("sides"), sides)]
        cost = exp.Mul(this=g.col("w"), expression=exp.Least(this=g.col("__pos"), expressions=[g.col("__neg")]))
        per = (exp.select(g.col("__cid"), g.alias(exp.Sum(this=cost), "__d")).from_(g.table(_cte("sides")))
               .group_by(g.col("__cid")))
        # domain values that are no leaf: the distance is unmeasurable, every class fails
        leaves = exp.select(g.col("leaf")).from_(g.table(_cte("tree")))
        leaf_of = exp.NullSafeEQ(this=g.col("leaf"), expression=exp.Cast(this=g.col("__v", "d"),
                                                                           to=exp.DataType.build("VARCHAR")))
        unmatched = exp.Subquery(this=exp.select(exp.Count(this=exp.Star()))
                                 .from_(exp.alias_(g.table(_cte("domain")), g.ident("d"), table=True))
                                 .where(exp.Not(this=exp.Exists(this=leaves.where(leaf_of)))))
    ctes.append((_cte("per"), per))
    d = exp.Coalesce(this=g.col("__d", "p"), expressions=[g.lit(0.0)])
    fails = exp.or_(exp.GT(this=d.copy(), expression=g.lit(float(c.t) + TOLERANCE)),
                    exp.GT(this=unmatched, expression=g.lit(0)))
    query = (exp.select(*[g.col(x, "k") for x in columns], g.alias(g.col("__size", "k"), size), g.alias(d, value),
                        g.alias(fails, bad))
             .from_(exp.alias_(g.table(_cte("classes")), g.ident("k"), table=True))
             .join(exp.alias_(g.table(_cte("per")), g.ident("p"), table=True), join_type="left",
                   on=exp.EQ(this=g.col("__cid", "p"), expression=g.col("__cid", "k"))))
    for name, body in ctes:
        query = query.with_(g.ident(name), as_=body, copy=False)
    return query


def tree_values(h: Hierarchy | object) -> exp.Select:
    """The hierarchy as rows ``(leaf, node, parent, w)``: for every leaf text (NULL for the NULL
    leaf) each non-root node on its path and that node's parent with ``w = height(parent)/H``
    (a hierarchy with a NULL leaf; one is added when missing, as the partitioner does)."""
    h = hierarchy_from(h).with_null_leaf()
    height = subtree_heights(h)
    total = max(h.height, 1)
    rows = []
    for code, leaf in enumerate(h.leaves):
        for node in h.ancestors[code]:
            node = int(node)
            if node == 0 or (rows and rows[-1][0] == leaf and rows[-1][1] == node):
                continue  # the root; a leaf's own node repeated below its depth
            parent = int(h.parent[node])
            rows.append((leaf, node, parent, float(height[parent] / total)))
    values = exp.Values(
        expressions=[exp.Tuple(expressions=[exp.Cast(this=g.lit(leaf) if leaf is not None else exp.Null(),
                                                     to=exp.DataType.build("VARCHAR")),
                                            g.lit(node), g.lit(parent), _double(g.lit(w))])
                     for leaf, node, parent, w in rows],
        alias=exp.TableAlias(this=g.ident("tv"), columns=[g.ident(x) for x in ("leaf", "node", "parent", "w")]))
    return exp.select("*").from_(values)

