"""The privacy measures pycanon reports, for any release or relation with QIs: one ``GROUP BY``
of class x sensitive value in SQL, then small numpy math.

Classes are a release's class column (its suppressed rows, class NULL, form no class) or, for
any other relation, the rows with equal QI columns (a QI published as a range stands for its
``_min``/``_max`` pair). ``q`` is the whole relation's distribution of the sensitive column --
every row, suppressed ones included -- and ``p`` a class's. Per sensitive column:

* ``l_distinct``: fewest distinct values in a class (NULL is a value);
* ``l_entropy``: ``exp(min H)``, H the entropy (nats) of a class's values (Machanavajjhala et
  al., ICDE 2006). pycanon reports ``int()`` of it;
* recursive (c, l) with ``l = l_distinct``: ``c`` the smallest integer with ``r_1 < c (r_l +
  ... + r_m)`` in every class, ``r_1 >= r_2 >= ...`` its value counts (NaN when ``l = 1``).
  pycanon takes the smallest integer above ``r_1 / (r_l + ... + r_m)`` too, but sorts the counts
  *ascending* (its ``r_1`` is the rarest value), so its ``c`` differs from this one, which follows
  the paper;
* t-closeness (Li, Li & Venkatasubramanian, ICDE 2007): the largest EMD of a class from ``q``
  under the equal and the ordered ground distances (and the hierarchical one given a
  hierarchy): :mod:`sqlanon.model.privacy.closeness`. pycanon measures a numeric column with the
  ordered distance and a text column with the equal one: ``t_ordered`` and ``t_equal`` here;
* delta-disclosure privacy (Brickell & Shmatikov, KDD 2008): ``max |ln(p / q)|`` over the
  classes and the values *present* in a class (as pycanon: an absent value has ``ln 0``);
* beta-likeness (Cao & Karras, VLDB 2012): basic ``max (p - q) / q``; enhanced, as pycanon
  computes it, ``max over values of min(basic, -ln q)``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlglot import exp

from ..engine import engine_for
from ..engine import sqlgen as g
from ..engine.calls import serialized
from ..errors import InputError, UnknownColumnError, did_you_mean
from ..model.hierarchy import hierarchy_from
from ..model.privacy.closeness import Ground, leaves_of
from ..publish.verify import class_columns
from ..request.checks import check_qid
from .risk import relation_of


@dataclass(frozen=True)
class SensitiveMeasures:
    """The measures of one sensitive column (module docstring)."""

    column: str
    l_distinct: int
    l_entropy: float
    recursive_c: float
    recursive_l: int
    t_equal: float
    t_ordered: float
    t_hierarchical: float | None
    delta: float
    beta_basic: float
    beta_enhanced: float


@dataclass(frozen=True)
class Measures:
    """What :func:`measures` found: ``k`` (smallest class), ``classes``, ``rows`` in classes,
    ``suppressed`` rows (a release's, no class) and one :class:`SensitiveMeasures` per column."""

    relation: str
    k: int
    classes: int
    rows: int
    suppressed: int
    sensitive: tuple[SensitiveMeasures, ...] = ()

    def of(self, column: str) -> SensitiveMeasures:
        return next(s for s in self.sensitive if s.column == column)


@serialized
def measures(con: Any, relation: Any, qid: Sequence[str] | None = None, sensitive: str | Sequence[str] = (),
             hierarchies: dict[str, Any] | None = None) -> Measures:
    """pycanon's privacy measures of a release or a relation, computed in SQL.

    Args:
        con: a DuckDB, PostgreSQL (psycopg) or Spark connection.
        relation: a :class:`~sqlanon.Release`, a release's view name, or any relation.
        qid: the QI columns (default for a release: its QIs; a release's classes are its class
            column either way).
        sensitive: the sensitive column(s) to measure.
        hierarchies: ``{sensitive column: hierarchy}`` for the hierarchical t-closeness.
    """
    engine = engine_for(con)
    ref, column_names, m, name = relation_of(con, engine, relation)
    if qid is None and m is None:
        raise InputError(f"{name!r} is not a sqlanon release: pass qid= (the quasi-identifier columns)")
    columns = [sensitive] if isinstance(sensitive, str) else list(sensitive)
    for c in columns:
        if c not in column_names:
            raise UnknownColumnError(f"{name!r} has no column {c!r}." + did_you_mean(c, column_names))
    hierarchies = {c: hierarchy_from(h) for c, h in (hierarchies or {}).items()}
    if m is not None:
        keys = [m.class_column]
        placed = exp.Not(this=exp.Is(this=g.col(m.class_column), expression=exp.Null()))
    else:
        keys = list(class_columns(column_names, check_qid(qid)))
        placed = exp.true()
    sizes, suppressed = _class_sizes(engine, ref, keys, placed)
    out = []
    for c in columns:
        cid, sup, vid, n, texts = _cells(engine, ref, keys, placed, c)
        out.append(sensitive_measures(c, cid, sup, vid, n, texts, hierarchies.get(c)))
    return Measures(relation=name, k=int(sizes.min()) if len(sizes) else 0, classes=len(sizes),
                    rows=int(sizes.sum()), suppressed=suppressed, sensitive=tuple(out))


def _class_sizes(engine, ref, keys, placed) -> tuple[np.ndarray, int]:
    flag = g.alias(exp.Case().when(placed.copy(), g.lit(1)).else_(g.lit(0)), "placed")
    per = (exp.select(flag, g.alias(exp.Count(this=exp.Star()), "n")).from_(ref.copy())
           .group_by(*[g.col(k) for k in keys], exp.Case().when(placed.copy(), g.lit(1)).else_(g.lit(0))))
    rows = engine.fetch(per)
    placed_rows = rows["placed"].astype(np.int64) == 1
    n = rows["n"].astype(np.int64)
    return n[placed_rows], int(n[~placed_rows].sum())


def _cells(engine, ref, keys, placed, column):
    """``(class id, suppressed, value rank, count, value texts by rank)`` from one GROUP BY."""
    flag = exp.Case().when(placed.copy(), g.lit(0)).else_(g.lit(1))
    grouped = (exp.select(*[g.col(k) for k in keys], g.alias(flag, "sup"), g.alias(g.col(column), "v"),
                          g.alias(exp.Count(this=exp.Star()), "n"))
               .from_(ref.copy()).group_by(*[g.col(k) for k in keys], flag.copy(), g.col(column)))
    cid = exp.Window(this=exp.func("dense_rank"), order=exp.Order(expressions=[
        exp.Ordered(this=g.col(k), nulls_first=True) for k in keys]))
    vid = exp.Window(this=exp.func("dense_rank"), order=exp.Order(expressions=[
        exp.Ordered(this=g.col("v"), nulls_first=True)]))
    query = exp.select(g.alias(cid, "cid"), g.col("sup"), g.alias(vid, "vid"), g.col("n"),
                       g.alias(exp.Cast(this=g.col("v"), to=exp.DataType.build("VARCHAR")), "t")).from_(
        exp.Subquery(this=grouped, alias=exp.TableAlias(this=g.ident("c"))))
    rows = engine.fetch(query)
    vids = rows["vid"].astype(np.int64) - 1
    texts: list[Any] = [None] * (int(vids.max()) + 1 if len(vids) else 0)
    for v, t in zip(vids.tolist(), list(rows["t"])):
        texts[v] = None if t is None or (isinstance(t, float) and math.isnan(t)) else t
    return (rows["cid"].astype(np.int64) - 1, rows["sup"].astype(np.int64) == 1, vids,
            rows["n"].astype(np.int64), texts)


def sensitive_measures(column: str, cid: np.ndarray, sup: np.ndarray, vid: np.ndarray, n: np.ndarray,
                       texts: Sequence[Any], hierarchy: Any = None) -> SensitiveMeasures:
    """The measures from the class x value counts (``cid``, ``vid`` from 0; ``sup`` rows form
    no class but count in the whole distribution ``q``)."""
    m = int(vid.max()) + 1 if len(vid) else 0
    table = np.bincount(vid, weights=n, minlength=m)
    keep = ~sup
    ids, cls = np.unique(cid[keep], return_inverse=True)
    counts = np.zeros((len(ids), m), dtype=np.int64)
    np.add.at(counts, (cls, vid[keep]), n[keep])
    if len(ids) == 0:
        nan = math.nan
        return SensitiveMeasures(column, 0, nan, nan, 0, nan, nan, None, nan, nan, nan)
    size = counts.sum(axis=1)
    p = counts / size[:, None]
    q = table / table.sum()
    distinct = (counts > 0).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        entropy = -np.where(p > 0, p * np.log(p), 0.0).sum(axis=1)
    l = int(distinct.min())
    ordered = -np.sort(-counts, axis=1)
    recursive_c = math.nan
    if l > 1:
        ratio = ordered[:, 0] / ordered[:, l - 1:].sum(axis=1)
        recursive_c = float(math.floor(ratio.max()) + 1)
    t_hier = None
    if hierarchy is not None:
        h = hierarchy_from(hierarchy)
        h = h.with_null_leaf() if None in texts else h
        leaves = leaves_of(h, list(texts))
        if (leaves < 0).any():
            missing = [t for t, c in zip(texts, leaves) if c < 0]
            raise InputError(f"the hierarchy for {column!r} misses value(s) {missing[:10]}")
        t_hier = float(Ground.of("hierarchical", table, h, leaves).emd(counts).max())
    with np.errstate(divide="ignore"):
        delta = float(np.abs(np.log(p[p > 0] / np.broadcast_to(q, p.shape)[p > 0])).max())
    beta = float(((p - q) / q).max())
    enhanced = float(np.minimum(beta, -np.log(q)).max())
    return SensitiveMeasures(
        column=column, l_distinct=l, l_entropy=float(math.exp(entropy.min())), recursive_c=recursive_c,
        recursive_l=l, t_equal=float(Ground.of("equal", table).emd(counts).max()),
        t_ordered=float(Ground.of("ordered", table).emd(counts).max()), t_hierarchical=t_hier,
        delta=delta, beta_basic=beta, beta_enhanced=enhanced)
