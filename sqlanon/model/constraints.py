"""Privacy constraints: each judges candidate equivalence classes from their statistics.

A split is *allowable* when every child it creates satisfies every constraint (LeFevre et al.,
Workload-Aware Anonymization, KDD 2006, Section 2; TR 1590, Section 1.2). Constraints only
filter; ranking the allowable splits is the criterion's job (:mod:`sqlanon.model.criteria`). Each
constraint declares the columns whose statistics it needs, so that the stats statement computes
only those, and a lower bound on the size of an acceptable class, which lets the partitioner
skip partitions too small to split. Judgement is vectorized: one call covers every cut of every
partition of a tree level. An empty child (a hierarchy node no row falls into) is not an
equivalence class of the published data, so every constraint accepts it.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import numpy as np

from .closeness import Ground
from .hierarchy import Hierarchy
from .stats import ClassStats

#: Relative tolerance of threshold comparisons on floating-point statistics (entropy,
#: variance), so that the order in which a sum was accumulated cannot flip a verdict.
TOLERANCE = 1e-9


class Layout(Protocol):
    """Where a column's statistics sit in a :class:`~sqlanon.model.stats.ClassStats`."""

    def counts(self, stats: ClassStats, column: str) -> np.ndarray: ...

    def moments(self, stats: ClassStats, column: str) -> np.ndarray: ...


class Constraint(Protocol):
    """What a privacy model provides."""

    @property
    def class_columns(self) -> tuple[str, ...]:
        """Columns whose value counts it needs (AVS groups)."""
        ...

    @property
    def numeric_columns(self) -> tuple[str, ...]:
        """Columns whose moments it needs."""
        ...

    @property
    def min_size(self) -> int:
        """A lower bound on the rows of any acceptable non-empty class."""
        ...

    def allowed(self, stats: ClassStats, layout: Layout) -> np.ndarray:
        """Which of the K candidate classes are acceptable, (K,) bool."""
        ...

    def describe(self) -> str: ...


@dataclass(frozen=True)
class KAnonymity:
    """k-anonymity (Samarati & Sweeney): every equivalence class holds at least ``k`` rows.

    ``qid``: the quasi-identifier this k is for, when a request has several (TKDE 2007,
    Definition 1: every group of rows equal on the QID holds at least ``k``; top-down refinement
    enforces each); None: the request's QIs."""

    k: int
    qid: tuple[str, ...] | None = None
    class_columns = ()
    numeric_columns = ()

    def __post_init__(self) -> None:
        if isinstance(self.qid, list):
            object.__setattr__(self, "qid", tuple(self.qid))

    @property
    def min_size(self) -> int:
        return self.k

    def allowed(self, stats: ClassStats, layout: Layout) -> np.ndarray:
        return (stats.n >= self.k) | (stats.n == 0)

    def describe(self) -> str:
        return f"k-anonymity(k={self.k})" if self.qid is None else f"k-anonymity(k={self.k}, qid={list(self.qid)})"


class _OnSensitiveValues:
    """What the diversity models over a categorical sensitive column share: they need that
    column's value counts (AVS groups), and a class needs at least ``l`` rows to pass."""

    sensitive: str
    l: float
    numeric_columns: ClassVar[tuple[str, ...]] = ()

    @property
    def class_columns(self) -> tuple[str, ...]:
        return (self.sensitive,)

    @property
    def min_size(self) -> int:
        return max(1, math.ceil(self.l))


@dataclass(frozen=True)
class DistinctLDiversity(_OnSensitiveValues):
    """Distinct l-diversity (Machanavajjhala et al., ICDE 2006): every class holds at least
    ``l`` distinct values of ``sensitive`` (NULL counts as a value)."""

    sensitive: str
    l: int

    def allowed(self, stats: ClassStats, layout: Layout) -> np.ndarray:
        counts = layout.counts(stats, self.sensitive)
        distinct = np.zeros(len(counts), dtype=np.int64)
        for j in range(counts.shape[1]):  # C vector additions beat a short-axis reduction
            distinct += counts[:, j] > 0
        return (distinct >= self.l) | (stats.n == 0)

    def describe(self) -> str:
        return f"distinct l-diversity({self.sensitive!r}, l={self.l})"


@dataclass(frozen=True)
class EntropyLDiversity(_OnSensitiveValues):
    """Entropy l-diversity (Machanavajjhala et al.; KDD 2006, Section 3.1): in every class E,
    ``-sum_s p(s|E) ln p(s|E) >= ln l``, i.e. the entropy of ``sensitive`` is at least that of
    ``l`` equally frequent values. ``l`` may be fractional."""

    sensitive: str
    l: float

    @property
    def min_size(self) -> int:
        """The fewest rows whose entropy can pass: n rows have at most ``ln n``, and the verdict
        allows ``TOLERANCE`` (so ``l`` a hair above an integer m still lets m rows pass). The
        split search discards every cut with a smaller child unjudged, so this must not exceed
        what :meth:`allowed` accepts."""
        n = max(1, math.ceil(self.l))
        while n > 1 and np.log(float(n - 1)) >= math.log(self.l) - TOLERANCE:
            n -= 1
        return n

    def allowed(self, stats: ClassStats, layout: Layout) -> np.ndarray:
        h = entropy(layout.counts(stats, self.sensitive))
        return (h >= math.log(self.l) - TOLERANCE) | (stats.n == 0)

    def describe(self) -> str:
        return f"entropy l-diversity({self.sensitive!r}, l={_number(self.l)})"


@dataclass(frozen=True)
class RecursiveCLDiversity(_OnSensitiveValues):
    """Recursive (c, l)-diversity (Machanavajjhala et al.; TR 1590, Section 1.1): with
    ``x_1 >= x_2 >= ...`` the counts of the sensitive values in a class,
    ``x_1 < c (x_l + x_{l+1} + ... + x_m)``."""

    sensitive: str
    c: float
    l: int

    def allowed(self, stats: ClassStats, layout: Layout) -> np.ndarray:
        counts = -np.sort(-layout.counts(stats, self.sensitive), axis=1)  # descending
        tail = counts[:, self.l - 1 :].sum(axis=1) if counts.shape[1] >= self.l else np.zeros(len(counts))
        return (counts[:, 0] < self.c * tail) | (stats.n == 0)

    def describe(self) -> str:
        return f"recursive (c,l)-diversity({self.sensitive!r}, c={_number(self.c)}, l={self.l})"


@dataclass(frozen=True)
class VarianceDiversity:
    """Variance (squared-error) diversity (LeFevre et al., KDD 2006 and TR 1590): the variance
    of the numeric ``sensitive`` attribute in every class, ``(1/|E|) sum (s - mean_E)^2``, is at
    least ``v`` (NULLs are left out of the variance)."""

    sensitive: str
    v: float

    class_columns = ()

    @property
    def numeric_columns(self) -> tuple[str, ...]:
        return (self.sensitive,)

    @property
    def min_size(self) -> int:
        return 2 if self.v > 0 else 1

    def allowed(self, stats: ClassStats, layout: Layout) -> np.ndarray:
        var = variance(layout.moments(stats, self.sensitive))
        return (var >= self.v * (1 - TOLERANCE)) | (stats.n == 0)

    def describe(self) -> str:
        return f"variance diversity({self.sensitive!r}, v={_number(self.v)})"


@dataclass(frozen=True)
class TCloseness:
    """t-closeness (Li, Li & Venkatasubramanian, ICDE 2007): in every class, the Earth Mover's
    Distance between the distribution of ``sensitive`` and its distribution in the whole table
    is at most ``t`` (:mod:`sqlanon.model.closeness`; NULL counts as a value).

    ``distance`` is ARX's ground distance: ``"equal"`` (EMD = half the L1 distance),
    ``"ordered"`` (values in the database's sort order, NULL first, ``m - 1`` normalization) or
    ``"hierarchical"`` (``hierarchy``: a generalization hierarchy over the sensitive values,
    anything :func:`sqlanon.load_hierarchy` reads but a table name; values match its leaves by
    their text in the database).

    Unlike k, t-closeness is not monotone: a child of a split can be farther from the table's
    distribution than its parent, so a partition that fails never has children that all pass
    only because they are smaller -- and a split is allowable, as for every constraint, when
    every child it creates satisfies it. The whole table has distance 0, so the root always
    passes. The table's distribution is computed once per request (``ground``, bound by
    :meth:`bound` when the request is resolved); an unbound constraint cannot judge classes.
    """

    sensitive: str
    t: float
    distance: str = "equal"
    hierarchy: Any = None
    ground: Ground | None = field(default=None, compare=False, repr=False)
    numeric_columns: ClassVar[tuple[str, ...]] = ()

    @property
    def class_columns(self) -> tuple[str, ...]:
        return (self.sensitive,)

    @property
    def min_size(self) -> int:
        return 1

    def bound(self, ground: Ground) -> TCloseness:
        """This constraint measuring against ``ground`` (the whole table's distribution)."""
        return dataclasses.replace(self, ground=ground)

    def allowed(self, stats: ClassStats, layout: Layout) -> np.ndarray:
        if self.ground is None:
            raise ValueError(f"{self.describe()} has no reference distribution: resolve the request first")
        distance = self.ground.emd(layout.counts(stats, self.sensitive))
        return (distance <= self.t + TOLERANCE) | (stats.n == 0)

    def describe(self) -> str:
        return f"t-closeness({self.sensitive!r}, t={_number(self.t)}, distance={self.distance})"


def _number(x: float) -> str:
    """A threshold as ``describe()`` writes it: short (``1.5``, ``50``) when that reads back as
    the same float, else every digit (reports show these texts; manifests keep the exact
    value in :func:`to_record`'s records)."""
    short = f"{x:g}"
    return short if float(short) == float(x) else repr(float(x))


def entropy(counts: np.ndarray) -> np.ndarray:
    """Shannon entropy in nats of each row of a count matrix (0 for an empty row):
    ``H = ln n - (1/n) sum_c c ln c``, which needs one logarithm per count and no divisions."""
    n, sum_xlogx = count_moments(counts)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(n > 0, np.log(np.maximum(n, 1.0)) - sum_xlogx / np.maximum(n, 1.0), 0.0)


def count_moments(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of a (K, C) count matrix: ``n = sum_c c`` and ``sum_c c ln c`` (as floats).

    Column by column: for the few values a class column has, numpy's reduction along a short
    axis costs far more per row than C vector additions (and the count matrices are kept
    column-major, so a column is contiguous). ``c ln c`` of integer counts comes from a table."""
    n = np.zeros(len(counts))
    acc = np.zeros(len(counts))
    table = xlogx_table(int(counts.max(initial=0))) if counts.dtype.kind in "iu" else None
    for j in range(counts.shape[1]):
        column = counts[:, j]
        n += column
        if table is not None:
            acc += np.take(table, column)
        else:
            c = column.astype(np.float64)
            acc += c * np.log(np.maximum(c, 1.0))  # 0 ln 0 = 1 ln 1 = 0
    return n, acc


_XLOGX = np.zeros(1)
#: Counts the ``c ln c`` table serves (256 MiB at most): beyond, ``c ln c`` is computed per count.
XLOGX_ROWS = 2**25


def xlogx_table(largest: int) -> np.ndarray | None:
    """``c ln c`` for c = 0..largest (grown on demand; None from :data:`XLOGX_ROWS` counts on)."""
    global _XLOGX
    if largest >= XLOGX_ROWS:
        return None
    if largest >= len(_XLOGX):
        c = np.arange(min(max(largest + 1, 2 * len(_XLOGX)), XLOGX_ROWS), dtype=np.float64)
        _XLOGX = c * np.log(np.maximum(c, 1.0))
    return _XLOGX


def variance(moments: np.ndarray) -> np.ndarray:
    """Population variance from centered moments ``[n, sum, sum of squares]`` (0 when n = 0):
    ``(S2 - S1^2 / n) / n``, clipped at 0 against rounding."""
    n = moments[:, 0].astype(np.float64)
    d = np.maximum(n, 1.0)
    # In place and without np.where (several times slower): the same operations on every class
    # with rows, then 0 for the empty ones (whose sums may hold rounding residue).
    var = moments[:, 1].astype(np.float64)
    var *= var
    var /= d
    np.subtract(moments[:, 2], var, out=var)
    var /= d
    var[n <= 0] = 0.0
    return np.maximum(var, 0.0, out=var)


def squared_error(moments: np.ndarray) -> np.ndarray:
    """Sum of squared deviations from the class mean, ``S2 - S1^2 / n`` (0 when n = 0)."""
    return variance(moments) * moments[:, 0].astype(np.float64)


#: The constraints a manifest can record, by class name.
RECORDABLE: dict[str, type] = {c.__name__: c for c in (KAnonymity, DistinctLDiversity, EntropyLDiversity,
                                                        RecursiveCLDiversity, VarianceDiversity, TCloseness)}


def to_record(c: Constraint) -> dict[str, object]:
    """A constraint as a JSON-ready dict (exact parameters), for the release manifest (a
    t-closeness hierarchy as its ARX rows; its bound reference distribution is not a parameter)."""
    if isinstance(c, TCloseness):
        rows = c.hierarchy.to_rows() if isinstance(c.hierarchy, Hierarchy) else c.hierarchy
        return {"type": "TCloseness", "sensitive": c.sensitive, "t": c.t, "distance": c.distance, "hierarchy": rows}
    given = {f.name: getattr(c, f.name) for f in dataclasses.fields(c)  # type: ignore[arg-type]
             if not (f.default is None and getattr(c, f.name) is None)}  # KAnonymity's qid only when given
    return {"type": type(c).__name__, **{k: list(v) if isinstance(v, tuple) else v for k, v in given.items()}}


def from_record(record: dict[str, object]) -> Constraint:
    """The inverse of :func:`to_record`; raises ValueError for a record it does not know."""
    fields = dict(record)
    kind = RECORDABLE.get(str(fields.pop("type", "")))
    if kind is None:
        raise ValueError(f"unknown constraint record {record!r}")
    if kind is TCloseness and fields.get("hierarchy") is not None:
        fields["hierarchy"] = Hierarchy.from_rows(fields["hierarchy"])  # type: ignore[arg-type]
    return kind(**fields)
