"""What every privacy model is: one object carrying all its faces (ARX's ``PrivacyCriterion``).

A privacy model judges equivalence classes. It is asked, never inspected: consumers call its
methods and read its declarations, and adding a model is adding one module of this package.

* **The numpy judgement** (the partitioner's and the lattice's): :meth:`PrivacyModel.allowed`
  judges K candidate classes at once from their statistics, which it declares
  (``class_columns``: value counts, ``numeric_columns``: moments) so that only those are
  computed; ``min_size`` bounds the rows of any acceptable class, and ``size_only`` says the
  verdict is ``n >= min_size`` (k-anonymity), which the split search's fast paths use. A split
  is *allowable* when every child it creates satisfies every model (LeFevre et al., KDD 2006,
  Section 2). An empty child is not an equivalence class of the published data: every model
  accepts it.
* **The reference distribution**: a model measured against the whole table's distribution of
  its column (t-closeness, delta-disclosure, beta-likeness) names that column in
  ``reference_column`` and is bound to the table's value counts once per request
  (:meth:`PrivacyModel.with_reference`); an unbound one cannot judge classes.
* **One per-class SQL measure** (:meth:`PrivacyModel.per_class`): one row per class with its
  size (:data:`SIZE`), its value of the measure the model bounds (:data:`VALUE`, named by
  ``measure``, worst at ``worst``) and whether it fails (:data:`BAD`) -- the one statement
  behind :func:`sqlanon.verify`, the live view, ``apply(enforce=True)`` and the listing of
  violating classes, so they can never disagree with each other. The verdicts are the numpy
  judgement's: classes group on their columns (NULLs together), a NULL sensitive value is a
  value of its own, and float thresholds allow :data:`TOLERANCE`.
* **The Rothko-S hypothesis test** (:meth:`PrivacyModel.sample_test`): the model judged on a
  sample (LeFevre & DeWitt, TR 1590, Section 3.1; :mod:`sqlanon.mondrian.hypotheses`). A model
  without a sound test sets ``sample_testable = False``: Rothko-S refuses it and ``"auto"``
  takes the exact path.
* **The manifest record** (:meth:`PrivacyModel.record`, :func:`from_record`), **the argument
  check** (:meth:`PrivacyModel.checked`) and **the report line** (:meth:`PrivacyModel.describe`,
  :meth:`PrivacyModel.reason`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
from sqlglot import exp

from ...engine import sqlgen as g
from ...errors import InputError
from ..stats import ClassStats, Layout

#: Relative tolerance of threshold comparisons on floating-point statistics (entropy,
#: variance), so that the order in which a sum was accumulated cannot flip a verdict.
TOLERANCE = 1e-9

#: Columns of :meth:`PrivacyModel.per_class` besides the class columns (names no relation uses).
SIZE, VALUE, BAD = "__sqlanon_size", "__sqlanon_value", "__sqlanon_bad"
DOUBLE = exp.DataType.build("DOUBLE")

#: Every privacy model by class name (what a manifest record's ``type`` names).
MODELS: dict[str, type[PrivacyModel]] = {}


class Constraint:
    """The numpy face alone: what the one split decision needs of a requirement (a privacy
    model, or a model's Rothko-S test standing in for it on a sample)."""

    #: The verdict is ``n >= min_size``: k-anonymity (the split search's fast paths; a
    #: single-dimensional search enforces such a model as the k of its QIDs).
    size_only: ClassVar[bool] = False
    #: The QID whose groups the model judges when it names one of its own (``KAnonymity(k,
    #: qid=[...])``: several QIDs, each with its own k, TKDE 2007); None: the request's QIs.
    qid: tuple[str, ...] | None = None

    @property
    def class_columns(self) -> tuple[str, ...]:
        """Columns whose value counts it needs (AVS groups)."""
        return ()

    @property
    def numeric_columns(self) -> tuple[str, ...]:
        """Columns whose moments it needs."""
        return ()

    @property
    def min_size(self) -> int:
        """A lower bound on the rows of any acceptable non-empty class; the split search
        discards every cut with a smaller child unjudged, so it must not exceed what
        :meth:`allowed` accepts."""
        return 1

    def allowed(self, stats: ClassStats, layout: Layout) -> np.ndarray:
        """Which of the K candidate classes are acceptable, (K,) bool."""
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError

    def face(self) -> Face | None:
        """The compiled face: the verdict as :func:`sqlanon.model.privacy.compiled.passes`
        computes it in the depth-first finish, from one child's value counts or moments of
        one column (None: no compiled face; the request takes the level-by-level finish). It
        must be :meth:`allowed`'s verdict bit for bit: the same float operations in the same
        order."""
        return None


#: The kinds of :class:`Face` (what :func:`sqlanon.model.privacy.compiled.passes` dispatches on).
DISTINCT, ENTROPY, RECURSIVE, VARIANCE, EQUAL_EMD, ORDERED_EMD, DELTA, BETA = range(1, 9)


@dataclasses.dataclass(frozen=True, eq=False)
class Face:
    """A privacy model's verdict in a form compiled loops take (:meth:`Constraint.face`):
    ``kind`` (:data:`DISTINCT` ...), the ``column`` it reads (value counts, or moments when
    ``numeric``), up to three scalar parameters ``p`` and up to two per-value arrays ``a``,
    ``b`` (float64, one entry per value code; the kind says what they hold)."""

    kind: int
    column: str
    numeric: bool = False
    p: tuple[float, ...] = ()
    a: np.ndarray | None = None
    b: np.ndarray | None = None


class PrivacyModel(Constraint):
    """A privacy model with all its faces (module docstring). Subclasses are frozen dataclasses
    whose compared fields are their parameters."""

    #: What :data:`VALUE` of :meth:`per_class` measures, for listings.
    measure: ClassVar[str] = ""
    #: Whether the smallest (``"min"``) or the largest (``"max"``) value is the worst.
    worst: ClassVar[str] = "min"
    #: Rothko-S can judge it on a sample (:meth:`sample_test`); else it needs the exact path.
    sample_testable: ClassVar[bool] = True

    def __init_subclass__(cls, registered: bool = True, **kwargs: Any) -> None:
        """Every model is registered by its name (:data:`MODELS`); a shared base of models
        (``registered=False``) or a private class is not."""
        super().__init_subclass__(**kwargs)
        if registered and not cls.__name__.startswith("_"):
            MODELS[cls.__name__] = cls

    # -- the reference distribution --------------------------------------------------------
    @property
    def reference_column(self) -> str | None:
        """The column whose whole-table distribution the model measures against (None: none)."""
        return None

    def with_reference(self, texts: Sequence[str | None], counts: np.ndarray) -> PrivacyModel:
        """The model bound to the whole table's distribution of :attr:`reference_column`: its
        values as the database's text (NULL as None) and their row counts, in value-code order
        (ascending, NULL first)."""
        return self

    # -- argument check ---------------------------------------------------------------------
    def checked(self) -> PrivacyModel:
        """The model with its parameters checked, numpy numbers made Python numbers (its text
        goes into the manifest); an :class:`~sqlanon.errors.InputError` naming the problem."""
        return self

    # -- SQL --------------------------------------------------------------------------------
    def per_class(self, source: exp.Expression, columns: Sequence[str],
                  where: exp.Expression | None = None) -> exp.Select:
        """``SELECT columns, SIZE, VALUE, BAD``: one row per class of ``source`` over ``columns``
        (the rows satisfying ``where``, if given; a model with a reference distribution measures
        against *all* rows of ``source``), its size, its measure and whether it fails."""
        raise NotImplementedError

    # -- Rothko-S ---------------------------------------------------------------------------
    def sample_test(self, population: int, sample: int, alpha: float) -> Constraint:
        """The model judged on a simple random sample of ``sample`` rows of a ``population``-row
        partition, at level ``alpha`` (already Bonferroni-divided over a split's children). The
        default judges the sample's statistics as they are (an estimate; pruning corrects)."""
        return self

    # -- manifest and report ----------------------------------------------------------------
    def record(self) -> dict[str, object]:
        """The model as a JSON-ready dict of its exact parameters (the manifest's record)."""
        fields = dataclasses.fields(self)  # type: ignore[arg-type]
        return {"type": type(self).__name__, **{f.name: getattr(self, f.name) for f in fields if f.init and f.compare}}

    @classmethod
    def from_fields(cls, fields: dict[str, Any]) -> PrivacyModel:
        """The inverse of :meth:`record` (without ``type``)."""
        return cls(**fields)

    def release_entry(self) -> tuple[str, dict[str, object]]:
        """Where a release file keeps the model: ``(key of [privacy], entry)``; by default its
        :meth:`record` in ``privacy.model`` (read back by :func:`from_record`)."""
        return "model", self.record()

    # -- release files and command line -----------------------------------------------------
    #: The ``[privacy]`` key of a release file and the ``--flag`` (dashes for underscores) that
    #: declare this model by column, e.g. ``delta_disclosure = { diagnosis = 1.5 }`` and
    #: ``--delta-disclosure diagnosis=1.5`` (None: declared otherwise).
    spec_key: ClassVar[str | None] = None
    #: The parameter a bare number sets (``{ column = number }``).
    spec_param: ClassVar[str] = ""
    #: The flag's help text.
    spec_help: ClassVar[str] = ""

    @classmethod
    def from_spec(cls, column: str, value: Any) -> PrivacyModel:
        """The model of ``column`` declared by a number (its :attr:`spec_param`) or a table of
        its parameters (``{ beta = 1.5, enhanced = true }``), checked."""
        params = dict(value) if isinstance(value, Mapping) else {cls.spec_param: value}
        names = [f.name for f in dataclasses.fields(cls) if f.init and f.compare][1:]  # type: ignore[arg-type]
        unknown = sorted(set(params) - set(names))
        if unknown:
            raise InputError(f"{cls.spec_key}.{column}: unknown parameter {unknown[0]!r}; it takes "
                             f"{', '.join(names)}")
        return cls(column, **params).checked()  # type: ignore[call-arg]

    @classmethod
    def from_flag(cls, text: str) -> PrivacyModel:
        """The model declared by ``--flag COL=NUMBER[,PARAM=VALUE...]`` (``true``/``false`` for
        a flag parameter)."""
        column, sep, rest = text.partition("=")
        first, *options = rest.split(",")
        params: dict[str, Any] = {cls.spec_param: first}
        for option in options:
            name, eq, raw = option.partition("=")
            params[name.strip()] = raw.strip().lower() == "true" if raw.strip().lower() in ("true", "false") else raw
        for name, raw in params.items():
            if isinstance(raw, str):
                try:
                    params[name] = float(raw)
                except ValueError:
                    raise InputError(f"--{str(cls.spec_key).replace('_', '-')} takes COL=NUMBER[,PARAM=VALUE], "
                                     f"got {text!r}") from None
        if not sep or not column:
            raise InputError(f"--{str(cls.spec_key).replace('_', '-')} takes COL=NUMBER[,PARAM=VALUE], got {text!r}")
        return cls.from_spec(column, params)

    def reason(self) -> str:
        """Why a live view suppresses a class failing this model."""
        return f"violates {self.describe()}"

    @property
    def value_hierarchy(self) -> Any:
        """A hierarchy over the sensitive values the model was given (None: none)."""
        return None


@dataclasses.dataclass(frozen=True, eq=False)
class Reference:
    """The whole table's distribution of a column, as row counts per value code (ascending,
    NULL first: the codes of the statistics) -- what delta-disclosure and beta-likeness measure
    a class against, computed once per request."""

    counts: np.ndarray

    @property
    def total(self) -> float:
        return float(self.counts.sum())

    def share(self) -> np.ndarray:
        """``q`` per value code: its share of the table's rows."""
        return self.counts.astype(np.float64) / max(self.total, 1.0)


class OnSensitive(PrivacyModel, registered=False):
    """A model that judges a class by the value counts of one categorical ``sensitive`` column
    (l-diversity, t-closeness, delta-disclosure, beta-likeness; the subclass declares the
    field)."""

    sensitive: str

    @property
    def class_columns(self) -> tuple[str, ...]:
        return (self.sensitive,)


class AgainstTable(OnSensitive, registered=False):
    """A model that measures a class against the whole table's distribution of ``sensitive``,
    bound once per request (:meth:`with_reference`): by default to its :class:`Reference`, in the
    subclass's ``reference`` field."""

    reference: Reference | None

    @property
    def reference_column(self) -> str:
        return self.sensitive

    def with_reference(self, texts: Sequence[str | None], counts: np.ndarray) -> AgainstTable:
        return dataclasses.replace(self, reference=Reference(np.asarray(counts, dtype=np.int64)))  # type: ignore[type-var]


def to_record(c: PrivacyModel) -> dict[str, object]:
    """A model as a JSON-ready dict (exact parameters), for the release manifest."""
    return c.record()


def from_record(record: Mapping[str, object]) -> PrivacyModel:
    """The inverse of :func:`to_record`; raises ValueError for a record it does not know."""
    fields = dict(record)
    kind = MODELS.get(str(fields.pop("type", "")))
    if kind is None:
        raise ValueError(f"unknown constraint record {record!r}")
    return kind.from_fields(fields)


def check_models(models: Any, label: str = "constraints=") -> list[PrivacyModel]:
    """``models`` as a list of checked privacy models, or an :class:`InputError` naming the
    accepted types. None means none; a single model is taken as a list of one."""
    if models is None:
        return []
    if isinstance(models, PrivacyModel):
        models = [models]
    accepted = ", ".join(MODELS)
    if isinstance(models, (str, bytes, Mapping)) or not isinstance(models, Iterable):
        raise InputError(f"{label} takes a list of sqlanon constraint objects ({accepted}), got "
                         f"{type(models).__name__} {models!r}")
    out = []
    for c in models:
        if not isinstance(c, PrivacyModel):
            raise InputError(f"{label} takes sqlanon constraint objects ({accepted}), got {type(c).__name__} {c!r}")
        out.append(c.checked())
    return out


def beyond_k(models: Iterable[PrivacyModel], k: int) -> list[PrivacyModel]:
    """The models a check of k-anonymity with ``k`` does not already settle (a k-anonymity of
    at most ``k`` is settled by it)."""
    return [c for c in models if not (c.size_only and c.min_size <= k)]


# -- argument checks shared by the models ---------------------------------------------------
def plain(value: Any) -> Any:
    """A numpy scalar as the Python number it holds (its text is ``3``, not ``np.int64(3)``)."""
    return value.item() if isinstance(value, np.generic) else value


def integer(model: PrivacyModel, name: str) -> int:
    """An integer parameter (>= 1) of a model, as a Python int."""
    value = getattr(model, name)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 1:
        raise InputError(f"{type(model).__name__} needs an integer {name} >= 1, got {value!r}")
    return int(value)


def number(model: PrivacyModel, name: str, minimum: float, *, strict: bool = False) -> float:
    """A finite number parameter of a model, at least ``minimum`` (above it when ``strict``), as
    a Python number."""
    value = getattr(model, name)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not math.isfinite(value) or value < minimum or (strict and value == minimum):
        raise InputError(f"{type(model).__name__} {name} must be a number {'>' if strict else '>='} {minimum:g}, "
                         f"got {value!r}")
    return plain(value)


def column(model: PrivacyModel, name: str = "sensitive") -> str:
    """The sensitive column's name."""
    value = getattr(model, name)
    if not isinstance(value, str) or not value:
        raise InputError(f"{type(model).__name__} needs the sensitive column's name, got {value!r}")
    return value


def shown(x: float) -> str:
    """A threshold as ``describe()`` writes it: short (``1.5``, ``50``) when that reads back as
    the same float, else every digit (reports show these texts; manifests keep the exact
    value in the records)."""
    short = f"{x:g}"
    return short if float(short) == float(x) else repr(float(x))


# -- SQL building blocks --------------------------------------------------------------------
def double(e: exp.Expression) -> exp.Expression:
    return exp.Cast(this=e, to=DOUBLE.copy())


def subquery(query: exp.Expression, alias: str) -> exp.Subquery:
    return exp.Subquery(this=query, alias=exp.TableAlias(this=g.ident(alias)))


def rows_of(source: exp.Expression, columns: Sequence[str], where: exp.Expression | None) -> exp.Select:
    """``SELECT columns FROM source AS s [WHERE where]``, to be given its aggregates."""
    rows = exp.select(*[g.col(c) for c in columns]).from_(exp.alias_(source.copy(), g.ident("s"), table=True))
    return rows.where(where.copy()) if where is not None else rows


def keys(columns: Sequence[str]) -> list[exp.Column]:
    return [g.col(c) for c in columns]


def value_counts(source: exp.Expression, columns: Sequence[str], sensitive: str,
                 where: exp.Expression | None) -> exp.Select:
    """``SELECT columns, n``: the rows of each sensitive value per class (NULL a value)."""
    return rows_of(source, columns, where).select(g.alias(exp.Count(this=exp.Star()), "n"), copy=False).group_by(
        *keys(columns), g.col(sensitive))


def cte(name: str) -> str:
    """A CTE's name, prefixed so that it never hides a user's relation the query reads."""
    return f"__sqlanon_{name}"


def with_ctes(query: exp.Select, ctes: Sequence[tuple[str, exp.Expression]]) -> exp.Select:
    for name, body in ctes:
        query = query.with_(g.ident(name), as_=body, copy=False)
    return query


def reference_cells(source: exp.Expression, columns: Sequence[str], sensitive: str,
                    where: exp.Expression | None) -> exp.Select:
    """Per class and present sensitive value: ``columns``, ``__v`` (the value), ``__c`` (its rows
    in the class), ``__size`` (the class's rows), ``__q`` (the value's rows in the whole
    relation, every row of ``source``) and ``__total`` (the relation's rows). Only the rows
    satisfying ``where`` form classes; all rows make the reference distribution. One
    ``GROUP BY class, value`` and window sums."""
    placed = exp.Case().when(where.copy(), g.lit(1)).else_(g.lit(0)) if where is not None else g.lit(1)
    cells = (exp.select(*keys(columns), g.alias(g.col(sensitive), "__v"), g.alias(placed, "__placed"),
                        g.alias(exp.Count(this=exp.Star()), "__n"))
             .from_(exp.alias_(source.copy(), g.ident("s"), table=True))
             .group_by(*keys(columns), g.col(sensitive), placed.copy()))
    n = g.col("__n")
    shares = exp.select(
        *keys(columns), g.col("__v"), g.col("__placed"), g.alias(n.copy(), "__c"),
        g.alias(exp.Window(this=exp.Sum(this=n.copy()), partition_by=[*keys(columns), g.col("__placed")]), "__size"),
        g.alias(exp.Window(this=exp.Sum(this=n.copy()), partition_by=[g.col("__v")]), "__q"),
        g.alias(exp.Window(this=exp.Sum(this=n.copy())), "__total"),
    ).from_(subquery(cells, "c"))
    return (exp.select(*keys(columns), g.col("__v"), g.col("__c"), g.col("__size"), g.col("__q"), g.col("__total"))
            .from_(subquery(shares, "r")).where(exp.EQ(this=g.col("__placed"), expression=g.lit(1))))


def ratio_sql() -> exp.Expression:
    """``p / q`` of a cell of :func:`reference_cells` as ``(c N) / (n Q)`` in doubles: the same
    IEEE operations, in the same order, as :func:`ratio` (so the verdicts agree exactly)."""
    return exp.Div(this=exp.paren(exp.Mul(this=double(g.col("__c")), expression=double(g.col("__total")))),
                   expression=exp.paren(exp.Mul(this=double(g.col("__size")), expression=double(g.col("__q")))))


def any_of(condition: exp.Expression) -> exp.Expression:
    """``true`` for a group when ``condition`` holds in any of its rows (portable: no bool_or)."""
    return exp.GT(this=exp.Max(this=exp.Case().when(condition, g.lit(1)).else_(g.lit(0))), expression=g.lit(0))


def ratio(counts: np.ndarray, column: int, n: np.ndarray, reference: np.ndarray, total: float) -> np.ndarray:
    """``p / q`` of value ``column`` in each class, ``(c N) / (n Q)`` in doubles (see
    :func:`ratio_sql`); ``n`` the classes' sizes, ``reference`` the table's counts per value."""
    c = counts[:, column].astype(np.float64)
    return (c * float(total)) / (n * float(reference[column]))
