"""t-closeness (Li, Li & Venkatasubramanian, *t-Closeness: Privacy Beyond k-Anonymity and
l-Diversity*, ICDE 2007): in every class, the Earth Mover's Distance between the distribution of
the sensitive column and its distribution in the whole table is at most ``t``; with ARX's three
ground distances.

A class E has the distribution ``P = (p_1..p_m)`` of the sensitive values (``p_i = n_i / |E|``)
and the whole table ``Q = (q_1..q_m)``, over the same ``m`` values (the table's distinct
values: a value absent from E has ``p_i = 0``). With ``r_i = p_i - q_i``:

* **equal** distance (every two values at distance 1): ``EMD = 1/2 sum_i |r_i|``;
* **ordered** distance (values in their sort order, ``|i - j| / (m - 1)`` apart):
  ``EMD = 1/(m-1) sum_i |r_1 + ... + r_i|`` (0 when m = 1);
* **hierarchical** distance (two leaves at ``height(lca) / H``, H the hierarchy's height):
  ``EMD = sum_N height(N)/H min(pos(N), neg(N))`` over the inner nodes N, where ``extra(C)`` is
  the sum of ``r`` over the leaves below C, ``pos(N)`` the sum of the positive ``extra`` of N's
  children and ``neg(N)`` that of the negative ones (negated); ``height(N)`` is the height of
  the subtree under N (for ARX's hierarchies, whose leaves all sit at one depth, N's level).

In numpy (:class:`Ground`): over count matrices (one row per candidate class, one column per
value code), column by column, so each row's value is computed by the same operations whatever
the other rows (the split decision must not depend on how candidates were batched).

In SQL (:meth:`TCloseness.per_class`): independent of the partitioner, it reads only the
relation (and, for the hierarchical distance, the hierarchy given as literals). One
``GROUP BY class, sensitive`` of the relation; window functions number the classes and the
sensitive values (ascending, NULL first: the order the ordered distance uses) and give the whole
relation's share ``q`` of each value -- over *all* its rows, suppressed or unplaced ones included
(the whole table's distribution), while only the rows satisfying ``where`` form classes. Every
class is then crossed with every value (a value absent from a class has ``p = 0``),
``r = p - q``, and per class:

* equal: ``1/2 sum |r|``;
* ordered: ``sum |running sum of r| / (m - 1)`` (window ``ORDER BY`` the value's rank);
* hierarchical: ``extra`` per (class, node) summed over the leaves below the node, then per
  (class, parent) the positive and negative extras of its children, and
  ``sum height(parent)/H * least(pos, neg)``. A value that is no leaf of the hierarchy makes
  every class fail (the distance cannot be measured: fail closed).

Rothko-S has no test for it: the sample child's distance from the table's distribution is the
estimate (the model judges the sample statistics); a child whose population is farther than t
is merged back by pruning, which judges the real statistics.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from sqlglot import exp

from ...engine import sqlgen as g
from ...errors import HierarchyError, InputError
from ..hierarchy import Hierarchy, hierarchy_from
from ..stats import ClassStats, Layout
from .base import (
    BAD,
    EQUAL_EMD,
    ORDERED_EMD,
    SIZE,
    TOLERANCE,
    VALUE,
    AgainstTable,
    Face,
    column,
    cte,
    double,
    number,
    plain,
    shown,
    subquery,
    with_ctes,
)


@dataclass(frozen=True)
class TCloseness(AgainstTable):
    """t-closeness of ``sensitive`` with threshold ``t`` (module docstring; NULL counts as a
    value). Its measure is a class's EMD from the whole relation.

    ``distance`` is ARX's ground distance: ``"equal"`` (EMD = half the L1 distance),
    ``"ordered"`` (values in the database's sort order, NULL first, ``m - 1`` normalization) or
    ``"hierarchical"`` (``hierarchy``: a generalization hierarchy over the sensitive values,
    anything :func:`sqlanon.load_hierarchy` reads but a table name; values match its leaves by
    their text in the database).

    Unlike k, t-closeness is not monotone: a child of a split can be farther from the table's
    distribution than its parent, so a partition that fails never has children that all pass
    only because they are smaller -- and a split is allowable, as for every model, when every
    child it creates satisfies it. The whole table has distance 0, so the root always passes.
    The table's distribution is computed once per request (``ground``, bound by
    :meth:`with_reference` when the request is resolved); an unbound model cannot judge classes.
    """

    sensitive: str
    t: float
    distance: str = "equal"
    hierarchy: Any = None
    ground: Ground | None = field(default=None, compare=False, repr=False)
    measure: ClassVar[str] = "EMD from the whole relation"
    worst: ClassVar[str] = "max"

    @property
    def value_hierarchy(self) -> Any:
        return self.hierarchy

    def bound(self, ground: Ground) -> TCloseness:
        """This model measuring against ``ground`` (the whole table's distribution)."""
        return dataclasses.replace(self, ground=ground)

    def with_reference(self, texts: Sequence[str | None], counts: np.ndarray) -> TCloseness:
        """Bound to the table's value counts; for the hierarchical distance every value, as the
        database writes it as text, must be a leaf of the hierarchy (a ``HierarchyError`` names
        those that are not)."""
        if self.distance != "hierarchical":
            return self.bound(Ground.of(self.distance, counts))
        h = self.hierarchy
        if None in texts:
            h = h.with_null_leaf()
        leaves = leaves_of(h, list(texts))
        missing = [t for t, code in zip(texts, leaves) if code < 0]
        if missing:
            shown_values = ", ".join(repr(v) for v in missing[:20])
            raise HierarchyError(f"the t-closeness hierarchy for {self.sensitive!r} misses {len(missing)} value(s) "
                                 f"present in the data: {shown_values}. Every value, as the database writes it as "
                                 f"text, must be a leaf.")
        return self.bound(Ground.of("hierarchical", counts, h, leaves))

    def allowed(self, stats: ClassStats, layout: Layout) -> np.ndarray:
        if self.ground is None:
            raise ValueError(f"{self.describe()} has no reference distribution: resolve the request first")
        distance = self.ground.emd(layout.counts(stats, self.sensitive))
        return (distance <= self.t + TOLERANCE) | (stats.n == 0)

    def describe(self) -> str:
        return f"t-closeness({self.sensitive!r}, t={shown(self.t)}, distance={self.distance})"

    def face(self) -> Face | None:
        """The equal and ordered distances, once bound (the hierarchical one has none yet)."""
        if self.ground is None or self.distance == "hierarchical":
            return None
        kind = EQUAL_EMD if self.distance == "equal" else ORDERED_EMD
        return Face(kind, self.sensitive, p=(self.t + TOLERANCE,), a=self.ground.reference)

    def checked(self) -> TCloseness:
        sensitive = column(self)
        number(self, "t", 0.0)
        if self.distance not in DISTANCES:
            raise InputError(f"TCloseness distance must be one of {list(DISTANCES)}, got {self.distance!r}")
        if (self.distance == "hierarchical") != (self.hierarchy is not None):
            raise InputError("TCloseness takes a hierarchy= exactly when distance='hierarchical' (the hierarchy "
                             "over the sensitive values gives the ground distance), got "
                             f"distance={self.distance!r}, hierarchy={self.hierarchy!r}")
        hierarchy = hierarchy_from(self.hierarchy) if self.hierarchy is not None else None
        return dataclasses.replace(self, sensitive=sensitive, t=plain(self.t), hierarchy=hierarchy, ground=None)

    def record(self) -> dict[str, object]:
        """The parameters, a hierarchy as its ARX rows (the bound distribution is none)."""
        rows = self.hierarchy.to_rows() if isinstance(self.hierarchy, Hierarchy) else self.hierarchy
        return {"type": "TCloseness", "sensitive": self.sensitive, "t": self.t, "distance": self.distance,
                "hierarchy": rows}

    @classmethod
    def from_fields(cls, fields: dict[str, Any]) -> TCloseness:
        if fields.get("hierarchy") is not None:
            fields = {**fields, "hierarchy": Hierarchy.from_rows(fields["hierarchy"])}
        return cls(**fields)

    def per_class(self, source: exp.Expression, columns: Sequence[str],
                  where: exp.Expression | None = None) -> exp.Select:
        return closeness_query(source, columns, self, where)


DISTANCES = ("equal", "ordered", "hierarchical")


@dataclass(frozen=True, eq=False)
class Ground:
    """The whole table's distribution over a sensitive column's value codes and the ground
    distance between them: what a :class:`TCloseness` measures
    every class against, computed once per request.

    Attributes:
        distance: ``"equal"``, ``"ordered"`` or ``"hierarchical"``.
        reference: ``q`` (C,): the table's share of each value code (codes in the column's sort
            order, NULL first).
        order: hierarchical only: the non-root nodes sorted by parent (children of one node
            consecutive), as hierarchy node ids.
        starts: hierarchical only: where each inner node's children begin in ``order``.
        weight: hierarchical only: ``height(N) / H`` of each inner node, in ``starts`` order.
        lo, hi: hierarchical only: the range of sorted leaf positions below each node of ``order``.
        leaf_order: hierarchical only: the value codes sorted by their hierarchy leaf (DFS order).
    """

    distance: str
    reference: np.ndarray
    order: np.ndarray | None = None
    starts: np.ndarray | None = None
    weight: np.ndarray | None = None
    lo: np.ndarray | None = None
    hi: np.ndarray | None = None
    leaf_order: np.ndarray | None = None

    @classmethod
    def of(cls, distance: str, counts: np.ndarray, hierarchy: Hierarchy | None = None,
           leaves: np.ndarray | None = None) -> Ground:
        """From the table's counts per value code; for the hierarchical distance, the hierarchy
        and the leaf code of each value code (every value a leaf)."""
        counts = np.asarray(counts, dtype=np.float64)
        reference = counts / max(counts.sum(), 1.0)
        if distance != "hierarchical":
            return cls(distance, reference)
        assert hierarchy is not None and leaves is not None
        h = hierarchy
        leaf_order = np.argsort(leaves, kind="stable")  # value codes in DFS leaf order
        sorted_leaves = np.asarray(leaves)[leaf_order]
        nodes = np.arange(1, h.n_nodes)
        order = nodes[np.argsort(h.parent[nodes], kind="stable")]
        parents = h.parent[order]
        starts = np.flatnonzero(np.concatenate(([True], parents[1:] != parents[:-1])))
        height = subtree_heights(h)
        total = max(h.height, 1)
        weight = height[parents[starts]] / total
        # leaves of the data below each node: positions in sorted_leaves within [leaf_lo, leaf_hi]
        lo = np.searchsorted(sorted_leaves, h.leaf_lo[order], side="left")
        hi = np.searchsorted(sorted_leaves, h.leaf_hi[order], side="right")
        return cls(distance, reference, order, starts, weight.astype(np.float64), lo, hi, leaf_order)

    def emd(self, counts: np.ndarray) -> np.ndarray:
        """EMD of each row of a (K, C) count matrix from the reference (0 for an empty row)."""
        return emd(counts, self)


def leaves_of(h: Hierarchy, texts: list[str | None]) -> np.ndarray:
    """The leaf code of each value given as the database's text (NULL as None), -1 where none:
    matched exactly, as the SQL check matches them (``CAST(value AS VARCHAR) = leaf``)."""
    index = {leaf: i for i, leaf in enumerate(h.leaves)}
    return np.array([index.get(t, -1) for t in texts], dtype=np.int64)


def subtree_heights(h: Hierarchy) -> np.ndarray:
    """The height of the subtree under every node (0 for a leaf)."""
    height = np.zeros(h.n_nodes, dtype=np.float64)
    for node in range(h.n_nodes - 1, 0, -1):  # pre-order: children come after their parent
        parent = h.parent[node]
        height[parent] = max(height[parent], height[node] + 1)
    return height


def shares(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's size ``n`` (K,) and its distribution ``p = counts / n`` (K, C; 0 for an
    empty row)."""
    counts = np.asarray(counts)
    n = np.zeros(len(counts))
    for j in range(counts.shape[1]):
        n += counts[:, j]
    p = counts.astype(np.float64) / np.maximum(n, 1.0)[:, None]
    return n, p


def emd(counts: np.ndarray, ground: Ground) -> np.ndarray:
    """EMD of each class (a row of counts per value code) from ``ground.reference``."""
    n, p = shares(counts)
    q = ground.reference
    out = np.zeros(len(p))
    if ground.distance == "equal":
        for j in range(p.shape[1]):
            out += np.abs(p[:, j] - q[j])
        out *= 0.5
    elif ground.distance == "ordered":
        m = p.shape[1]
        running = np.zeros(len(p))
        for j in range(m):
            running += p[:, j] - q[j]
            out += np.abs(running)
        out /= max(m - 1, 1)
    else:
        out = _hierarchical(p - q[None, :], ground)
    out[n == 0] = 0.0
    return out


def _hierarchical(r: np.ndarray, g: Ground) -> np.ndarray:
    """``sum_N w_N min(pos(N), neg(N))`` with every node's ``extra`` from running sums of ``r``
    in leaf order (a node's leaves are consecutive there)."""
    assert g.order is not None and g.starts is not None and g.weight is not None
    assert g.lo is not None and g.hi is not None and g.leaf_order is not None
    k = len(r)
    running = np.zeros((k, r.shape[1] + 1))
    for i, code in enumerate(g.leaf_order):
        running[:, i + 1] = running[:, i] + r[:, code]
    extra = running[:, g.hi] - running[:, g.lo]  # (K, non-root nodes), children consecutive
    pos = np.add.reduceat(np.maximum(extra, 0.0), g.starts, axis=1)
    neg = np.add.reduceat(np.maximum(-extra, 0.0), g.starts, axis=1)
    cost = np.minimum(pos, neg)
    out = np.zeros(k)
    for j in range(cost.shape[1]):
        out += g.weight[j] * cost[:, j]
    return out


def closeness_query(source: exp.Expression, columns: Sequence[str], c: TCloseness,
                    where: exp.Expression | None) -> exp.Select:
    """``SELECT columns, SIZE, VALUE, BAD``: one row per class of ``source`` over ``columns``
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
                        g.alias(rank, "__i"), g.alias(cid, "__cid"), g.alias(whole, "__total")
                        ).from_(subquery(cells, "c"))
    # the domain: every value's rank, text, share of the whole relation, and m
    domain = (exp.select(g.col("__i"), g.col("__v"),
                         g.alias(exp.Div(this=double(exp.Sum(this=g.col("__n"))),
                                         expression=double(exp.Max(this=g.col("__total")))), "__q"))
              .from_(g.table(cte("ranked"))).group_by(g.col("__i"), g.col("__v")))
    classes = (exp.select(g.col("__cid"), *[k.copy() for k in keys], g.alias(exp.Sum(this=g.col("__n")), "__size"))
               .from_(g.table(cte("ranked"))).where(exp.EQ(this=g.col("__placed"), expression=g.lit(1)))
               .group_by(g.col("__cid"), *[k.copy() for k in keys]))
    present = (exp.select(g.col("__cid"), g.col("__i"), g.alias(exp.Sum(this=g.col("__n")), "__n"))
               .from_(g.table(cte("ranked"))).where(exp.EQ(this=g.col("__placed"), expression=g.lit(1)))
               .group_by(g.col("__cid"), g.col("__i")))
    share = exp.Div(this=double(exp.Coalesce(this=g.col("__n", "x"), expressions=[g.lit(0)])),
                    expression=double(g.col("__size", "k")))
    diff = (exp.select(g.col("__cid", "k"), g.col("__i", "d"), g.col("__v", "d"),
                       g.alias(exp.Sub(this=share, expression=g.col("__q", "d")), "__r"))
            .from_(exp.alias_(g.table(cte("classes")), g.ident("k"), table=True))
            .join(exp.alias_(g.table(cte("domain")), g.ident("d"), table=True), join_type="cross")
            .join(exp.alias_(g.table(cte("present")), g.ident("x"), table=True), join_type="left", on=exp.and_(
                exp.EQ(this=g.col("__cid", "x"), expression=g.col("__cid", "k")),
                exp.EQ(this=g.col("__i", "x"), expression=g.col("__i", "d")))))
    ctes = [(cte("ranked"), ranked), (cte("domain"), domain), (cte("classes"), classes),
            (cte("present"), present), (cte("diff"), diff)]
    r = g.col("__r")
    unmatched: exp.Expression = g.lit(0)
    if c.distance == "equal":
        per = exp.select(g.col("__cid"), g.alias(exp.Mul(this=g.lit(0.5), expression=exp.Sum(this=exp.Abs(this=r))),
                                                "__d")).from_(g.table(cte("diff"))).group_by(g.col("__cid"))
    elif c.distance == "ordered":
        running = exp.Window(this=exp.Sum(this=r.copy()), partition_by=[g.col("__cid")],
                             order=exp.Order(expressions=[exp.Ordered(this=g.col("__i"))]),
                             spec=exp.WindowSpec(kind="ROWS", start="UNBOUNDED", start_side="PRECEDING",
                                                 end="CURRENT ROW"))
        cum = exp.select(g.col("__cid"), g.alias(running, "__f")).from_(g.table(cte("diff")))
        m = exp.Subquery(this=exp.select(exp.Count(this=exp.Star())).from_(g.table(cte("domain"))))
        scale = exp.Greatest(this=double(exp.Sub(this=m, expression=g.lit(1))), expressions=[g.lit(1.0)])
        ctes.append((cte("cum"), cum))
        spread = exp.Div(this=exp.Sum(this=exp.Abs(this=g.col("__f"))), expression=scale)
        per = exp.select(g.col("__cid"), g.alias(spread, "__d")).from_(g.table(cte("cum"))).group_by(g.col("__cid"))
    else:
        ctes.append((cte("tree"), tree_values(c.hierarchy)))
        text = exp.Cast(this=g.col("__v", "f"), to=exp.DataType.build("VARCHAR"))
        extra = (exp.select(g.col("__cid", "f"), g.col("node", "t"), g.col("parent", "t"), g.col("w", "t"),
                            g.alias(exp.Sum(this=g.col("__r", "f")), "__e"))
                 .from_(exp.alias_(g.table(cte("diff")), g.ident("f"), table=True))
                 .join(exp.alias_(g.table(cte("tree")), g.ident("t"), table=True),
                       on=exp.NullSafeEQ(this=text, expression=g.col("leaf", "t")))
                 .group_by(g.col("__cid", "f"), g.col("node", "t"), g.col("parent", "t"), g.col("w", "t")))
        e = g.col("__e")
        def positive(x: exp.Expression) -> exp.Expression:
            return exp.Sum(this=exp.Greatest(this=x, expressions=[g.lit(0.0)]))

        sides = (exp.select(g.col("__cid"), g.col("parent"), g.col("w"), g.alias(positive(e.copy()), "__pos"),
                            g.alias(positive(exp.Neg(this=e.copy())), "__neg"))
                 .from_(g.table(cte("extra"))).group_by(g.col("__cid"), g.col("parent"), g.col("w")))
        ctes += [(cte("extra"), extra), (cte("sides"), sides)]
        cost = exp.Mul(this=g.col("w"), expression=exp.Least(this=g.col("__pos"), expressions=[g.col("__neg")]))
        per = (exp.select(g.col("__cid"), g.alias(exp.Sum(this=cost), "__d")).from_(g.table(cte("sides")))
               .group_by(g.col("__cid")))
        # domain values that are no leaf: the distance is unmeasurable, every class fails
        leaves = exp.select(g.col("leaf")).from_(g.table(cte("tree")))
        leaf_of = exp.NullSafeEQ(this=g.col("leaf"), expression=exp.Cast(this=g.col("__v", "d"),
                                                                           to=exp.DataType.build("VARCHAR")))
        unmatched = exp.Subquery(this=exp.select(exp.Count(this=exp.Star()))
                                 .from_(exp.alias_(g.table(cte("domain")), g.ident("d"), table=True))
                                 .where(exp.Not(this=exp.Exists(this=leaves.where(leaf_of)))))
    ctes.append((cte("per"), per))
    d = exp.Coalesce(this=g.col("__d", "p"), expressions=[g.lit(0.0)])
    fails = exp.or_(exp.GT(this=d.copy(), expression=g.lit(float(c.t) + TOLERANCE)),
                    exp.GT(this=unmatched, expression=g.lit(0)))
    query = (exp.select(*[g.col(x, "k") for x in columns], g.alias(g.col("__size", "k"), SIZE), g.alias(d, VALUE),
                        g.alias(fails, BAD))
             .from_(exp.alias_(g.table(cte("classes")), g.ident("k"), table=True))
             .join(exp.alias_(g.table(cte("per")), g.ident("p"), table=True), join_type="left",
                   on=exp.EQ(this=g.col("__cid", "p"), expression=g.col("__cid", "k"))))
    return with_ctes(query, ctes)


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
                                            g.lit(node), g.lit(parent), double(g.lit(w))])
                     for leaf, node, parent, w in rows],
        alias=exp.TableAlias(this=g.ident("tv"), columns=[g.ident(x) for x in ("leaf", "node", "parent", "w")]))
    return exp.select("*").from_(values)

