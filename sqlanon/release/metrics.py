"""Utility and privacy metrics of a published release, computed in SQL.

:func:`metrics` reads a release's published view and its rules relation (reloading the release
by name with :func:`sqlanon.publish.manifest.read`) and returns a :class:`Metrics`. Every figure is an
aggregate the database computes (templates ``sql/metrics_*.sql`` and the NCP query below);
Python only does the final arithmetic on a handful of numbers.

Notation: ``N`` is the number of rows of the view; an *equivalence class* ``E`` is the set of
rows with one ``eq_class`` value; *suppressed* rows are those whose ``eq_class`` is NULL (rows
inserted or updated in the source after the release: every QI column is NULL). They are in no
class. Where a metric needs a group for them (conditional entropy, RMSE) they form one extra
group: in the view they are indistinguishable from each other.

Generalization loss of one cell (row ``r``, QI ``q``), as in NCP (Xu et al., *Utility-based
anonymization using local recoding*, KDD 2006; GCP: Ghinita et al., *Fast data anonymization
with low information loss*, VLDB 2007) and in Iyengar's LM (KDD 2002, Section 3.1):

* ordered numeric/temporal QI: ``(q_max - q_min) / (U - L)`` where ``L``/``U`` are the smallest
  and the largest non-NULL published bound (``q_min`` or ``q_max``) over the release's non-empty
  regions (rules with ``size > 0``; for an unchanged release, the table's smallest and largest
  non-NULL value). Dates and timestamps are taken in microseconds since the epoch
  (the engine's :meth:`~sqlanon.engine.base.Engine.epoch_us`);
* ordered text/boolean/enum QI: the same on ranks: each distinct non-NULL value among those
  bounds gets its rank 0..R-1 in sorted order, ``L = 0``, ``U = R - 1``;
* NULLs sort first: a class holding NULLs and values has a NULL ``q_min``, which counts as
  ``L`` (so the loss is ``(q_max - L) / (U - L)``); a class of only NULLs has loss 0;
* hierarchical QI: ``(M_P - 1) / (M - 1)`` with ``P`` the class's node (the rules' ``q_node``),
  ``M_P`` the leaves under it and ``M`` the leaves of the hierarchy (including the NULL leaf
  when the column has NULLs), so 0 for a leaf and 1 for the root;
* a domain of one value (``U = L``, ``M = 1``) has loss 0;
* an ordered QI published as its cut points (``published="domain"``, :mod:`sqlanon.publish.bounds`):
  the region is ``(q_min, q_max]`` with NULL ends unbounded; the loss is ``(q_max - q_min) /
  (U - L)`` with an open end at ``L``/``U``, which are then the column's own smallest and
  largest value read from the release's source (the rules hold only cut points), so a class
  reaching an end costs its whole way there. Text, booleans and enums: ranks of the cut points
  0..R-1, an open end at -1 below and R above (``U - L = R + 1``);
* a suppressed row has loss 1 on every QI (Iyengar: suppression is generalization to the
  column bounds / the root).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
import pandas as pd
from sqlglot import exp

from .. import display
from ..engine import engine_for
from ..engine import sqlgen as g
from ..engine.base import Engine
from ..engine.calls import serialized
from ..errors import InputError, UnknownColumnError, did_you_mean
from ..model import utility
from ..model.qi import QI, classify
from ..publish.manifest import Manifest
from ..request.checks import check_names
from .imprecision import imprecision, source_ref
from .regions import derived, hierarchy_nodes, load_release, published_bounds, qi_columns, resolve_relation

_DOUBLE = exp.DataType.build("DOUBLE")
_LN2 = math.log(2.0)


@dataclass(frozen=True)
class Metrics:
    """The metrics of one release (see :func:`metrics` for the formulas).

    Attributes:
        view: the published view measured.
        qid: its quasi-identifiers.
        k: the release's k.
        rows: rows of the view (N).
        suppressed: rows with a NULL ``eq_class``.
        classes: equivalence classes (distinct non-NULL ``eq_class``).
        k_achieved: the smallest class (0 if there is none).
        avg_class_size: (rows - suppressed) / classes.
        c_avg: normalized average class size, avg_class_size / k.
        dm: discernibility metric.
        ncp: normalized certainty penalty per QI (average cell loss, 0..1).
        gcp: global certainty penalty (average of ``ncp`` over the QIs, 0..1).
        lm: Iyengar's general loss metric (sum of ``ncp`` over the QIs, 0..len(qid)).
        cm: Iyengar's classification metric per class target.
        cond_entropy: H(target | partition) in bits, per class target.
        entropy: H(target) in bits, per class target.
        rmse: RMSE of the class-mean prediction, per numeric target.
        l_distinct: smallest number of distinct values in a class, per sensitive column.
        l_entropy: smallest exp(entropy in nats) of a class, per sensitive column.
        min_variance: smallest population variance in a class, per numeric sensitive column.
        imprecision: ``|Pr(V)| - |Pr(T)|`` per selection predicate (KDD 2006, Section 3.4).
        aecs: ARX's average equivalence class size, the suppressed rows forming one class:
            N / (classes + [suppressed > 0]).
        precision: for a full-domain release (``search="optimal"``), ARX's non-monotonic
            Precision ``mean_q ((N - S) l_q / h_q + S) / N`` (level ``l_q`` of height ``h_q``).
        at_root: per QI, the share of rows published generalized to the whole domain (a class
            whose cell loss is 1: the hierarchy's root, or the column's whole range), suppressed
            rows included -- what ``suppression=`` is for (issue 19).
        at_root_before: for a Mondrian release with ``suppression=``, the same share had the
            request been partitioned without suppression (recorded in the manifest; empty otherwise).
    """

    view: str
    qid: tuple[str, ...]
    k: int
    rows: int
    suppressed: int
    classes: int
    k_achieved: int
    avg_class_size: float | None
    c_avg: float | None
    dm: int
    ncp: Mapping[str, float | None]
    gcp: float | None
    lm: float | None
    cm: Mapping[str, float | None] = field(default_factory=dict)
    cond_entropy: Mapping[str, float | None] = field(default_factory=dict)
    entropy: Mapping[str, float | None] = field(default_factory=dict)
    rmse: Mapping[str, float | None] = field(default_factory=dict)
    l_distinct: Mapping[str, int | None] = field(default_factory=dict)
    l_entropy: Mapping[str, float | None] = field(default_factory=dict)
    min_variance: Mapping[str, float | None] = field(default_factory=dict)
    imprecision: Mapping[str, int] = field(default_factory=dict)
    aecs: float | None = None
    precision: float | None = None
    at_root: Mapping[str, float | None] = field(default_factory=dict)
    at_root_before: Mapping[str, float | None] = field(default_factory=dict)

    def __repr__(self) -> str:
        return display.text("Metrics", self.view, [
            ("rows", self.rows), ("classes", self.classes), ("smallest class", f"{self.k_achieved:,} (k = {self.k:,})"),
            ("suppressed", self.suppressed), ("GCP", self.gcp)])

    def _repr_html_(self) -> str:
        rows = [("rows", self.rows), ("classes", self.classes), ("smallest class", f"{self.k_achieved:,} (k = {self.k:,})"),
                ("suppressed", self.suppressed), ("GCP (0 exact .. 1 fully generalized)", self.gcp)]
        rows += [(f"NCP {q}", v) for q, v in self.ncp.items()]
        rows += [(f"CM {t}", v) for t, v in self.cm.items()] + [(f"RMSE {t}", v) for t, v in self.rmse.items()]
        return display.card("Metrics", self.view, rows)

    def as_dict(self) -> dict[str, Any]:
        """Every field in declaration order; per-column metrics as ``{column: value}`` in the
        order the columns were given. JSON-serializable (undefined values are None)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, Mapping):
                value = dict(value)
            elif isinstance(value, tuple):
                value = list(value)
            out[f.name] = value
        return out

    def to_frame(self) -> pd.DataFrame:
        """One column ``value`` (object dtype, so integers stay exact) indexed by metric name;
        per-column metrics flattened as ``metric[column]``. ``view`` and ``qid`` are left out."""
        names: list[str] = []
        values: list[Any] = []
        for key, value in self.as_dict().items():
            if key in ("view", "qid"):
                continue
            if isinstance(value, dict):
                for column, v in value.items():
                    names.append(f"{key}[{column}]")
                    values.append(v)
            else:
                names.append(key)
                values.append(value)
        return pd.DataFrame({"value": pd.Series(values, index=names, dtype=object)})


@serialized
def metrics(
    con: Any,
    release: Any,
    *,
    targets: Sequence[str] = (),
    numeric_targets: Sequence[str] = (),
    sensitive: Sequence[str] = (),
    selections: Sequence[str] | None = None,
) -> Metrics:
    """Measure a release, in SQL over its published view and rules relation.

    Args:
        con: the DuckDB or PostgreSQL (psycopg) connection holding the release.
        release: a :class:`sqlanon.Release`, or the name of a release's view (or rules).
        targets: class (label) columns of the view, for CM and the entropies.
        numeric_targets: numeric columns of the view, for RMSE.
        sensitive: sensitive columns of the view, for l-diversity (and, when numeric,
            variance diversity).
        selections: SQL predicates over the QIs whose imprecision to measure; default the
            release's own workload selections (none for a release without them).

    Returns:
        :class:`Metrics`. With N rows, S suppressed, classes E, k the release's k:

        * ``avg_class_size = (N - S) / |classes|``; ``c_avg = avg_class_size / k``
          (normalized average equivalence class size, LeFevre, DeWitt & Ramakrishnan,
          *Mondrian Multidimensional k-Anonymity*, ICDE 2006; the suppressed rows, in no class,
          are left out);
        * ``dm = sum_E |E|^2 + S * N`` (discernibility, Bayardo & Agrawal, *Data Privacy
          through Optimal k-Anonymization*, ICDE 2005: a suppressed row costs ``|D|`` = N; ARX's
          non-monotonic DM); ``aecs = N / (|classes| + [S > 0])`` (ARX's average equivalence
          class size); ``precision`` of a full-domain release (ARX's non-monotonic Precision).
          ARX's Loss per QI is ``ncp[q]`` for a hierarchical QI; the non-uniform entropy needs
          the original values, which the view does not show: it is in
          :mod:`sqlanon.model.utility` (the searches' metrics);
        * ``ncp[q] = (sum_E |E| * loss_E(q) + S) / N`` with the cell loss of the module
          docstring (NCP, Xu et al. 2006); ``gcp = mean_q ncp[q]`` (GCP, Ghinita et al. 2007);
        * ``lm = sum_q ncp[q]``: Iyengar's general loss metric exactly as defined (KDD 2002,
          Section 3.1: "the total information loss ... computed by summing up a normalized
          information loss for each of these columns", each "the average loss for each entry
          in the column", a suppressed entry losing as much as the root / the column bounds);
          it ranges over 0..|QI|, and ``lm / |QI| = gcp``;
        * ``cm[c] = (sum_E (|E| - top_E) + S) / N`` where ``top_E`` is the count of the most
          frequent label of ``c`` in E (Iyengar, Section 3.2, equations 1-2: a row is penalized
          if suppressed or if its label is not its class's majority label; ties do not matter);
        * ``cond_entropy[c] = sum_G |G| / N * H(c in G)`` in bits over the classes and the
          group of suppressed rows (conditional entropy of the label given the partition,
          LeFevre et al., *Workload-Aware Anonymization*, KDD 2006; TR 1590 Section 5.5);
          ``entropy[c]`` is H(c) over all rows. NULL is a label;
        * ``rmse[t] = sqrt(sum_rows (t - mean_G(t))^2 / N_t)`` over the rows where ``t`` is not
          NULL (N_t of them), the groups G being the classes and the suppressed rows (TR 1590
          Section 5.5: the error of predicting T by its class mean). Computed from per-group
          second central moments of ``t`` centred on its global mean, so large offsets lose
          nothing;
        * ``l_distinct[s] = min_E`` distinct values of ``s`` in E (NULL counts as a value);
          ``l_entropy[s] = min_E exp(-sum_v p_v ln p_v)`` (entropy l-diversity, Machanavajjhala
          et al. 2006); ``min_variance[s] = min_E Var(E, s)`` (population variance, variance
          diversity, KDD 2006), for numeric ``s`` only, ignoring NULLs; a class whose ``s`` is
          all NULL has variance 0 (it discloses one value), as in :func:`sqlanon.verify`.

        * ``imprecision[p] = |Pr(V)| - |Pr(T)|``: rows of the classes whose published box
          overlaps predicate ``p`` minus the rows satisfying it (KDD 2006, Section 3.4, eq. 1;
          :func:`sqlanon.release.imprecision.imprecision`).

        A metric that is undefined (no rows, no class) is None.

    Raises:
        InputError: ``release`` is not a release; a column is a QI (or ``eq_class``); a
            numeric target is not numeric; a column is listed twice.
        UnknownColumnError: a column is not in the view (the error lists the columns).
    """
    engine = engine_for(con)
    m = load_release(con, release)
    view_ref, columns = resolve_relation(engine, m.ref(m.view))
    types = dict(columns)
    targets = _check_columns("targets", targets, m, types)
    numeric_targets = _check_columns("numeric_targets", numeric_targets, m, types)
    sensitive = _check_columns("sensitive", sensitive, m, types)
    for t in numeric_targets:
        if classify(types[t]) != "numeric":
            raise InputError(f"numeric target {t!r} has type {types[t]}; RMSE needs a numeric column")
    cls = g.col(m.class_column, "s")  # the templates alias the view as s

    total, suppressed, classes, smallest, squares = engine.fetch_rows(
        g.template("metrics_classes", view=view_ref, **{"class": cls}))[0]
    n = int(total or 0)
    s = int(suppressed or 0)
    classes = int(classes or 0)
    placed = n - s

    ncp: dict[str, float | None] = {}
    at_root: dict[str, float | None] = {}
    if n:
        losses = engine.fetch_rows(ncp_query(engine, m, view_ref))[0]
        for qi, loss, root in zip(m.qis, losses, losses[len(m.qis):]):
            ncp[qi.name] = (float(loss or 0.0) + s) / n
            at_root[qi.name] = (int(root or 0) + s) / n
    else:
        ncp = {qi.name: None for qi in m.qis}
        at_root = {qi.name: None for qi in m.qis}
    gcp = sum(ncp.values()) / len(ncp) if n and ncp else None  # type: ignore[arg-type]
    lm = sum(ncp.values()) if n else None  # type: ignore[arg-type]

    cm: dict[str, float | None] = {}
    cond_entropy: dict[str, float | None] = {}
    entropy: dict[str, float | None] = {}
    for t in targets:
        _, _, minority, nh, _, _ = engine.fetch_rows(
            g.template("metrics_labels", view=view_ref, label=g.col(t, "s"), **{"class": cls}))[0]
        _, nh_all = engine.fetch_rows(g.template("metrics_entropy", view=view_ref, label=g.col(t, "s")))[0]
        cm[t] = (int(minority or 0) + s) / n if n else None
        cond_entropy[t] = _clean(float(nh or 0.0) / n / _LN2) if n else None
        entropy[t] = _clean(float(nh_all or 0.0) / n / _LN2) if n else None

    rmse: dict[str, float | None] = {}
    for t in numeric_targets:
        count, sse, _ = engine.fetch_rows(
            g.template("metrics_moments", view=view_ref, value=g.col(t, "s"), **{"class": cls}))[0]
        rmse[t] = math.sqrt(max(float(sse or 0.0), 0.0) / int(count)) if count else None

    l_distinct: dict[str, int | None] = {}
    l_entropy: dict[str, float | None] = {}
    min_variance: dict[str, float | None] = {}
    for c in sensitive:
        _, _, _, _, distinct, l_ent = engine.fetch_rows(
            g.template("metrics_labels", view=view_ref, label=g.col(c, "s"), **{"class": cls}))[0]
        l_distinct[c] = None if distinct is None else int(distinct)
        l_entropy[c] = _clean(l_ent)
        if classify(types[c]) == "numeric":
            _, _, var = engine.fetch_rows(
                g.template("metrics_moments", view=view_ref, value=g.col(c, "s"), **{"class": cls}))[0]
            min_variance[c] = _clean(var)

    chosen = m.selections if selections is None else ([selections] if isinstance(selections, str) else selections)
    measured = imprecision(con, m, chosen) if chosen else None  # m: not read again by name

    return Metrics(
        view=m.view,
        qid=m.qid,
        k=m.k,
        rows=n,
        suppressed=s,
        classes=classes,
        k_achieved=int(smallest or 0),
        avg_class_size=placed / classes if classes else None,
        c_avg=placed / classes / m.k if classes else None,
        dm=int(squares or 0) + s * n,
        ncp=ncp,
        gcp=gcp,
        lm=lm,
        cm=cm,
        cond_entropy=cond_entropy,
        entropy=entropy,
        rmse=rmse,
        l_distinct=l_distinct,
        l_entropy=l_entropy,
        min_variance=min_variance,
        imprecision={p.text: p.imprecision for p in measured.predicates} if measured else {},
        aecs=n / (classes + (1 if s else 0)) if classes + (1 if s else 0) else None,
        precision=_precision(m, n, s),
        at_root=at_root,
        at_root_before=dict(m.at_root_before or {}),
    )


def _precision(m: Manifest, n: int, s: int) -> float | None:
    """ARX's Precision of a full-domain release (its manifest records the levels), else None."""
    if m.levels is None or not n or len(m.levels) != len(m.qis):
        return None
    heights = [float(m.hierarchies[q.name].height) if q.name in m.hierarchies else 0.0 for q in m.qis]
    return utility.precision(n, s, np.asarray(m.levels, dtype=float), np.asarray(heights))


def _clean(value: Any) -> float | None:
    """A finite float, or None (JSON has no NaN)."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _check_columns(label: str, names: Iterable[str], m: Manifest, types: Mapping[str, str]) -> list[str]:
    names = check_names(label, names)
    qi_names = {q.name: q.name for q in m.qis} | {c: q.name for q in m.qis for c in qi_columns(q)}
    for name in names:
        if name in qi_names:
            raise InputError(f"{label}: {name!r} is (a published column of) the quasi-identifier "
                             f"{qi_names[name]!r}; name a non-QI column of the view")
        if name == m.class_column:
            raise InputError(f"{label}: {m.class_column!r} is the equivalence class id, not a data column")
        if name not in types:
            raise UnknownColumnError(f"the view {m.view!r} has no column {name!r}."
                                     + did_you_mean(name, types))
    return names


# -- NCP ---------------------------------------------------------------------------------------
#: A class's cell loss at least ``1 - ROOT_TOLERANCE`` is the whole domain (``at_root``).
ROOT_TOLERANCE = 1e-9


def ncp_query(engine: Engine, m: Manifest, view_ref: exp.Table) -> exp.Select:
    """One row: for each QI, ``sum over classes E of |E| * loss_E(q)`` (module docstring), then
    for each QI the rows of the classes whose loss is 1 (generalized to the whole domain)."""
    rules = m.ref(m.rules)
    non_empty = exp.GT(this=g.col(m.size_column), expression=g.lit(0))
    sizes = (exp.select(g.alias(exp.Count(this=exp.Star()), "n"), g.alias(g.col(m.class_column), "region"))
             .from_(view_ref.copy())
             .where(exp.Not(this=exp.Is(this=g.col(m.class_column), expression=exp.Null())))
             .group_by(g.col(m.class_column)))
    query = (exp.select()
             .from_(derived(sizes, "c"))
             .join(exp.alias_(rules.copy(), g.ident("r"), table=True),
                   on=exp.EQ(this=g.col(m.region_column, "r"), expression=g.col("region", "c"))))
    losses: list[exp.Expression] = []
    roots: list[exp.Expression] = []
    for i, qi in enumerate(m.qis):
        if qi.kind == "hierarchy":
            h = m.hierarchies[qi.name]
            alias = f"h{i}"
            query = query.join(hierarchy_nodes(h, alias), join_type="left",
                               on=exp.EQ(this=g.col("node", alias), expression=g.col(f"{qi.name}_node", "r")))
            span = h.n_leaves - 1
            loss = (exp.Div(this=exp.Cast(this=exp.Sub(this=g.col("leaves", alias), expression=g.lit(1)), to=_DOUBLE),
                            expression=g.lit(float(span)))
                    if span > 0 else g.lit(0.0))
        else:
            # derived tables, not CTEs: a CTE name would shadow a relation of the same name
            dom = f"dom{i}"
            if qi.kind == "ordinal":
                rank = exp.Sub(this=exp.Window(this=exp.DenseRank(),
                                               order=exp.Order(expressions=[exp.Ordered(this=g.col("v"))])),
                               expression=g.lit(1))
                ranks = (exp.select(g.col("v"), g.alias(exp.Cast(this=rank, to=_DOUBLE), "r"))
                         .from_(derived(published_bounds(m, qi), "p"))
                         .where(exp.Not(this=exp.Is(this=g.col("v"), expression=exp.Null()))))
                domain = exp.select(
                    g.alias(g.lit(0.0), "lo"),
                    g.alias(exp.Cast(this=exp.Sub(this=exp.Count(this=exp.Star()), expression=g.lit(1)), to=_DOUBLE), "hi"),
                ).from_(derived(ranks, "k"))
                for side, column in (("a", f"{qi.name}_min"), ("b", f"{qi.name}_max")):
                    query = query.join(derived(ranks, f"{side}{i}"), join_type="left",
                                       on=exp.EQ(this=g.col("v", f"{side}{i}"), expression=g.col(column, "r")))
                low, high = g.col("r", f"a{i}"), g.col("r", f"b{i}")
                if qi.unbounded_ends:  # published="domain": an open end is one rank beyond the cuts
                    domain = exp.select(g.alias(g.lit(-1.0), "lo"), g.alias(
                        exp.Cast(this=exp.Count(this=exp.Star()), to=_DOUBLE), "hi")).from_(derived(ranks, "k"))
                    high = exp.Coalesce(this=high, expressions=[g.col("hi", dom)])
            elif qi.unbounded_ends:
                # published="domain": the bounds are cut points, an open end (NULL) reaches the
                # column's own smallest / largest value, read from the source (the rules never
                # hold them)
                column = _number(engine, qi, g.col(qi.name))
                domain = exp.select(g.alias(exp.Min(this=column), "lo"), g.alias(exp.Max(this=column.copy()), "hi")
                                    ).from_(source_ref(engine, m))
                low = _number(engine, qi, g.col(f"{qi.name}_min", "r"))
                high = exp.Coalesce(this=_number(engine, qi, g.col(f"{qi.name}_max", "r")),
                                    expressions=[g.col("hi", dom)])
            else:
                domain = exp.select(
                    # q_min is NULL for a class holding NULLs: its q_max still bounds the domain
                    g.alias(exp.Min(this=exp.Coalesce(this=_number(engine, qi, g.col(f"{qi.name}_min")),
                                                      expressions=[_number(engine, qi, g.col(f"{qi.name}_max"))])), "lo"),
                    g.alias(exp.Max(this=_number(engine, qi, g.col(f"{qi.name}_max"))), "hi"),
                ).from_(rules.copy()).where(non_empty.copy())
                low, high = _number(engine, qi, g.col(f"{qi.name}_min", "r")), _number(engine, qi, g.col(f"{qi.name}_max", "r"))
            query = query.join(derived(domain, dom), join_type="cross")
            width = exp.Sub(this=g.col("hi", dom), expression=g.col("lo", dom))
            extent = exp.Sub(this=high, expression=exp.Coalesce(this=low, expressions=[g.col("lo", dom)]))
            loss = exp.Coalesce(this=exp.Div(this=exp.Paren(this=extent), expression=exp.Nullif(
                this=exp.Paren(this=width), expression=g.lit(0))), expressions=[g.lit(0.0)])
        losses.append(g.alias(exp.Sum(this=exp.Mul(this=g.col("n", "c"), expression=loss)), f"loss{i}"))
        # rows of classes generalized to the whole domain (loss 1, up to rounding): at_root
        whole = exp.GTE(this=loss.copy(), expression=g.lit(1.0 - ROOT_TOLERANCE))
        roots.append(g.alias(exp.Sum(this=exp.Case().when(whole, g.col("n", "c")).else_(g.lit(0))), f"root{i}"))
    return query.select(*losses, *roots, copy=False)


def _number(engine: Engine, qi: QI, value: exp.Expression) -> exp.Expression:
    """A numeric or temporal bound as DOUBLE (temporal: microseconds since the epoch)."""
    if qi.kind == "temporal":
        value = engine.epoch_us(value, qi.data_type)
    return exp.Cast(this=value, to=_DOUBLE)
