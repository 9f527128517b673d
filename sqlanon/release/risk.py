"""Re-identification risk of a table or a release, in SQL (El Emam, *Guide to the
De-Identification of Personal Health Information*, 2013; the definitions ARX implements in
``RiskModelSampleSummary``).

The records are grouped into classes: a raw table on its QI columns (NULLs together), a
release on its class column. One ``GROUP BY`` gives each class's size ``f`` (and, with a
population table, its population size ``F``); a second folds them into a histogram
``(f, F, classes)`` that numpy turns into the measures below. With ``n`` records and ``c``
classes:

* **prosecutor** (the attacker knows the target is in the data): a record's risk is ``1/f``;
  ``highest = 1 / min f``, ``average = c / n`` (the mean of the records' risks), ``unique`` =
  share of records alone in their class (``f = 1``), ``at_risk(t)`` = share of records whose
  risk exceeds ``t``;
* **journalist** (the target is in a population the data is a sample of; needs
  ``population=``): a record's risk is ``1/F``; ``highest = 1 / min F``,
  ``average = max(c / sum F, (1/n) sum f/F)`` (ARX's "success rate"), ``unique`` = share of
  records whose class is unique in the population (``F = 1``), ``at_risk(t)`` on ``1/F``;
* **marketer** (the attacker tries to re-identify everyone): ``(1/n) sum f/F``, the expected
  share of records re-identified.

Suppressed rows of a release (class column NULL) are left out of the records and the classes,
as ARX leaves out suppressed records (every QI of theirs is fully generalized, so they single
out no one); :attr:`Risk.suppressed` counts them. The population is a table with the QI columns
(raw values, a superset of the data's individuals): for a raw table its rows are grouped on the
same QI values; for a release they are recoded with the release's rules (:func:`sqlanon.apply`,
into a temporary table dropped afterwards) and grouped on the class column. A class whose
population count is below its sample count (a population that is not a superset) counts ``F = f``.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlglot import exp

from .. import display
from ..engine import engine_for
from ..engine import sqlgen as g
from ..engine.calls import serialized
from ..engine.catalog import find_source
from ..errors import InputError, PrivacyWarning, UnknownColumnError, did_you_mean
from ..publish import manifest as manifest_module
from ..publish.manifest import Manifest
from ..request.checks import check_number, check_qid
from .regions import load_release, resolve_relation


def check_threshold(threshold: Any) -> float:
    """A risk threshold: a finite number from 0 to 1 (NaN would put no record at risk)."""
    return check_number("threshold", threshold, 0.0, maximum=1.0)


@dataclass(frozen=True)
class Model:
    """One attacker model's measures (see the module docstring)."""

    highest: float
    average: float
    unique: float
    risks: tuple[float, ...]  # distinct record risks, ascending
    records: tuple[int, ...]  # records holding each of ``risks``

    def at_risk(self, threshold: float) -> float:
        """Share of records whose risk is above ``threshold``.

        Raises:
            InputError: ``threshold`` is not a number from 0 to 1 (a risk is a probability).
        """
        threshold = check_threshold(threshold)
        total = sum(self.records)
        return sum(r for risk, r in zip(self.risks, self.records) if risk > threshold) / total if total else 0.0


@dataclass(frozen=True)
class Risk:
    """What :func:`risk` measured.

    Attributes:
        relation: the table or release view measured; ``release``: whether classes came from a
            release's class column.
        qid: the QI columns; ``rows`` records measured; ``suppressed`` rows of a release left out;
        classes: classes among the measured records.
        prosecutor: always; journalist and ``marketer`` only with a population (else None).
    """

    relation: str
    release: bool
    qid: tuple[str, ...]
    rows: int
    suppressed: int
    classes: int
    prosecutor: Model
    journalist: Model | None = None
    marketer: float | None = None
    population: str | None = None

    @property
    def highest(self) -> float:
        return self.prosecutor.highest

    @property
    def average(self) -> float:
        return self.prosecutor.average

    @property
    def unique(self) -> float:
        return self.prosecutor.unique

    def __repr__(self) -> str:
        p = self.prosecutor
        return display.text("Risk", self.relation, [("highest", p.highest), ("average", p.average), ("unique", p.unique),
                                                    ("records", self.rows), ("classes", self.classes)])

    def _repr_html_(self) -> str:
        rows = [("records", self.rows), ("classes", self.classes), ("suppressed (left out)", self.suppressed),
                ("highest risk (1 / smallest class)", self.prosecutor.highest),
                ("average risk", self.prosecutor.average), ("unique records (share)", self.prosecutor.unique),
                ("records at risk > 0.2 (share)", self.at_risk(0.2))]
        if self.journalist is not None:
            rows += [("journalist: highest", self.journalist.highest), ("marketer", self.marketer)]
        return display.card("Risk", self.relation, rows)

    def at_risk(self, threshold: float) -> float:
        """Prosecutor: share of records whose risk ``1/f`` exceeds ``threshold``."""
        return self.prosecutor.at_risk(threshold)


@serialized
def risk(con: Any, table_or_release: Any, qid: Sequence[str] | None = None, population: str | None = None) -> Risk:
    """Re-identification risk of a raw table (classes: equal QI values) or of a release (its
    class column); see the module docstring for the models.

    Args:
        con: a DuckDB, PostgreSQL (psycopg) or Spark connection.
        table_or_release: a :class:`~sqlanon.Release`, the name of a release's view, or any
            table or view (then ``qid`` is required).
        qid: the QI columns (default for a release: its QIs).
        population: a table with the QI columns holding the population the data was drawn
            from: adds the journalist and marketer models.

    Raises:
        InputError: (and subclasses) for an unknown relation or column, a missing ``qid``.
    """
    engine = engine_for(con)
    ref, column_names, m, name = relation_of(con, engine, table_or_release)
    if qid is None:
        if m is None:
            raise InputError(f"{name!r} is not a sqlanon release: pass qid= (the quasi-identifier columns)")
        qid = [q.name for q in m.qis]
    qid = check_qid(qid)
    if m is None:
        for q in qid:
            if q not in column_names:
                raise UnknownColumnError(f"{name!r} has no column {q!r}." + did_you_mean(q, column_names))
    keys = [g.col(m.class_column)] if m is not None else [g.col(q) for q in qid]
    pop_source = None
    if population is not None:
        pop_source = find_source(engine, engine.objects(), population, count=False)
        for q in qid:
            if q not in pop_source.column_names:
                raise UnknownColumnError(f"population {population!r} has no QI column {q!r}."
                                         + did_you_mean(q, pop_source.column_names))
    suppressed = 0
    if m is not None:
        null = exp.Is(this=g.col(m.class_column), expression=exp.Null())
        suppressed = int(engine.scalar(exp.select(exp.Count(this=exp.Star())).from_(ref.copy()).where(null)) or 0)
    applied = None
    try:
        population_ref: exp.Expression | None = None
        if pop_source is not None and m is not None:
            from .apply import apply  # a release's classes: the population recoded by its rules

            applied = engine.temp_name("risk_population")
            with warnings.catch_warnings():  # its classes below k are the point here, not a mistake
                warnings.simplefilter("ignore", PrivacyWarning)
                apply(con, m, population, view=applied)
            population_ref = g.table(applied)
        elif pop_source is not None:
            population_ref = pop_source.ref
        histogram = engine.fetch_rows(_histogram(ref, keys, m is not None, population_ref))
    finally:
        if applied is not None:
            engine.execute(g.drop(applied, "TABLE"))
    f = np.array([int(r[0]) for r in histogram], dtype=np.int64)
    big_f = np.array([int(r[1]) for r in histogram], dtype=np.int64)
    c = np.array([int(r[2]) for r in histogram], dtype=np.int64)
    big_f = np.maximum(big_f, f)  # a population is a superset of the sample
    rows = int((f * c).sum())
    prosecutor = _model(f, f, c, c.sum() / rows if rows else 0.0)
    journalist = marketer = None
    if population is not None:
        success = float((f * c / big_f).sum() / rows) if rows else 0.0
        journalist = _model(big_f, f, c, max(float(c.sum() / (big_f * c).sum()) if rows else 0.0, success))
        marketer = success
    return Risk(relation=name, release=m is not None, qid=tuple(qid), rows=rows, suppressed=suppressed,
                classes=int(c.sum()), prosecutor=prosecutor, journalist=journalist, marketer=marketer,
                population=population)


def _model(size: np.ndarray, f: np.ndarray, c: np.ndarray, average: float) -> Model:
    """Measures of a model where a record of a class of ``f`` sample records has risk
    ``1/size`` (``c`` classes per histogram row)."""
    records = f * c
    total = int(records.sum())
    if total == 0:
        return Model(0.0, 0.0, 0.0, (), ())
    risk_of = 1.0 / size
    values = np.unique(risk_of)
    per = np.array([records[risk_of == v].sum() for v in values], dtype=np.int64)
    unique = float(records[size == 1].sum() / total)
    return Model(float(risk_of.max()), float(average), unique, tuple(values.tolist()), tuple(per.tolist()))


def relation_of(con: Any, engine: Any, given: Any) -> tuple[exp.Table, list[str], Manifest | None, str]:
    """What ``given`` names: its reference, column names, release manifest (None for a plain
    relation) and a label. A :class:`~sqlanon.Release` or manifest is read where it was made
    (another schema's release of the same name never answers); a name binds as the engine binds
    it, and is a release when a manifest describes it."""
    if isinstance(given, Manifest) or (not isinstance(given, str) and hasattr(given, "view")):
        m = load_release(con, given)
        ref, columns = resolve_relation(engine, m.ref(m.view))
        return ref, [c for c, _ in columns], m, m.view
    if not isinstance(given, str) or not given:
        raise InputError(f"expected a table name or a sqlanon.Release, got {given!r}")
    source = find_source(engine, engine.objects(), given, count=False)
    return source.ref, list(source.column_names), _manifest(engine, source, given), given


def _manifest(engine, source, given: Any):
    """The release's manifest when ``given`` is a Release or names a release view, else None."""
    try:
        m = manifest_module.read(engine, source.name, location=getattr(given, "_location", None)
                                 or (source.catalog, source.schema))
    except InputError:
        return None
    return m if m.view.lower() == source.name.lower() else None


def _histogram(source: exp.Expression, keys: list[exp.Expression], release: bool,
               population: exp.Expression | None) -> exp.Select:
    """``(f, F, classes)``: one ``GROUP BY`` of the classes (of the sample and, stacked under it,
    of the population: NULL keys group together on both sides), then one of their sizes."""
    names = [f"k{i}" for i in range(len(keys))]
    sample = exp.select(*[g.alias(k.copy(), n) for k, n in zip(keys, names)], g.alias(g.lit(1), "s"), g.alias(g.lit(0), "p")
                        ).from_(source.copy())
    if release:
        sample = sample.where(exp.Not(this=exp.Is(this=keys[0].copy(), expression=exp.Null())))
    stacked: exp.Expression = sample
    if population is not None:
        pop = exp.select(*[g.alias(k.copy(), n) for k, n in zip(keys, names)], g.alias(g.lit(0), "s"), g.alias(g.lit(1), "p")
                         ).from_(population.copy())
        stacked = exp.union(sample, pop, distinct=False)
    per_class = (exp.select(g.alias(exp.Sum(this=g.col("s")), "f"), g.alias(exp.Sum(this=g.col("p")), "pf"))
                 .from_(exp.Subquery(this=stacked, alias=exp.TableAlias(this=g.ident("u"))))
                 .group_by(*[g.col(n) for n in names])
                 .having(exp.GT(this=exp.Sum(this=g.col("s")), expression=g.lit(0))))
    return (exp.select(g.col("f"), g.col("pf"), g.alias(exp.Count(this=exp.Star()), "classes"))
            .from_(exp.Subquery(this=per_class, alias=exp.TableAlias(this=g.ident("c"))))
            .group_by(g.col("f"), g.col("pf")).order_by(g.col("f"), g.col("pf")))
