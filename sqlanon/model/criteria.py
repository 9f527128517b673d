"""Split criteria: which allowable split to prefer.

* :class:`Median` — Median Mondrian (LeFevre, DeWitt, Ramakrishnan, ICDE 2006; restated in KDD
  2006, Section 3.1): the QI with the widest *normalized range* first, cut at the median (the
  most balanced allowable cut), falling back to the next QI when it has none.
* :class:`InfoGain` — InfoGain Mondrian (KDD 2006, Section 3.1): the allowable split with the
  smallest weighted entropy of the class label(s); several labels are assumed independent, so
  their weighted entropies add up (KDD 2006, eq. 2).
* :class:`Regression` — LSD Mondrian (KDD 2006, Section 3.2): the allowable split with the
  smallest sum of squared errors of the numeric target(s) around each child's mean; several
  targets add up (KDD 2006, eq. 4).
* :class:`Targets` — class labels and numeric targets together: the sum over targets of each
  target's impurity in the children *normalized by its impurity in the partition*, so a label
  measured in bits and a target measured in squared dollars weigh alike.
* :class:`Selections` — Selection Mondrian (KDD 2006, Section 3.4): the split leaving the least
  imprecision for the workload's selections first, then one of the above inside the query
  regions (keys compared lexicographically).

Each criterion gives per-target impurity *terms* of a class (additive over the children of a
split) and a rule to *combine* the children's terms with the partition's. All candidate QIs and
cut points are scored at once (for an ordered QI every cut between two
distinct values; for a hierarchical one the split into the node's children). Ties — splits
whose normalized impurities agree to 1e-12 — go to the Median choice (widest normalized range,
most balanced cut, lower cut), and so does a partition whose best split reduces impurity by less
than ``min_gain`` per row. Every partition is split as long as some split is allowable, so the
result is minimal whatever the criterion.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from .domain import Domain
from .selection import QueryBox
from .stats import ClassStats, Layout
from .summaries import count_moments, squared_error


def normalized_range(
    cmin: np.ndarray, cmax: np.ndarray, node: np.ndarray, domains: Sequence[Domain]
) -> tuple[np.ndarray, np.ndarray]:
    """Normalized range of every QI in every partition, and which QIs can be split at all.

    Args:
        cmin, cmax: (P, d) smallest and largest code present in each partition.
        node: (P, d) the partition's hierarchy node per hierarchical QI.
        domains: the d encoded domains.

    Returns:
        ``(w, candidate)``, both (P, d). Ordered QI: ``w = (num(cmax) - num(cmin)) /
        (num(last) - num(first))`` (0 when the whole column holds one value); a candidate iff
        ``cmin < cmax``. Hierarchical QI: ``w = leaves(node) / leaves(root)``; a candidate iff
        the node is not a leaf.
    """
    w = np.zeros(cmin.shape, dtype=np.float64)
    candidate = np.zeros(cmin.shape, dtype=bool)
    for j, d in enumerate(domains):
        if d.num is not None:
            span = d.num[-1] - d.num[0]
            if span > 0:
                w[:, j] = (d.num[cmax[:, j]] - d.num[cmin[:, j]]) / span
            candidate[:, j] = cmin[:, j] < cmax[:, j]
        else:
            h = d.qi.hierarchy
            assert h is not None
            nodes = node[:, j]
            w[:, j] = (h.leaf_hi[nodes] - h.leaf_lo[nodes] + 1) / h.n_leaves
            inner = np.array([len(c) > 0 for c in h.children], dtype=bool)
            candidate[:, j] = inner[nodes]
    return w, candidate


def rank(
    cmin: np.ndarray, cmax: np.ndarray, node: np.ndarray, domains: Sequence[Domain],
    exclude: np.ndarray | None = None,
) -> np.ndarray:
    """(P, d) QI indices by normalized range, widest first, ties by QI position; -1 ends the list.

    ``exclude`` (P, d) removes QIs known to have no allowable split.
    """
    w, candidate = normalized_range(cmin, cmax, node, domains)
    if exclude is not None:
        candidate &= ~exclude
    key = np.where(candidate, -w, np.inf)
    order = np.argsort(key, axis=1, kind="stable")  # stable: ties keep QI position order
    return np.where(np.take_along_axis(candidate, order, axis=1), order, -1)


@dataclass(frozen=True)
class Median:
    """Median Mondrian: the first QI in normalized-range order with an allowable cut, cut where
    it is most balanced (``|2 L - n|`` smallest for a left child of ``L`` of ``n`` rows), ties to
    the lower cut — the median cut when it is allowable, otherwise the allowable cut nearest it.
    """

    class_columns: ClassVar[tuple[str, ...]] = ()
    numeric_columns: ClassVar[tuple[str, ...]] = ()
    min_gain: ClassVar[float] = 0.0
    #: Try one QI at a time (a second statistics round only for partitions that need it).
    one_at_a_time: ClassVar[bool] = True
    levels: ClassVar[int] = 1

    def terms(self, stats: ClassStats, layout: Layout) -> np.ndarray | None:
        return None

    def combine(self, children: np.ndarray, partition: np.ndarray) -> np.ndarray:
        raise NotImplementedError  # Median has no impurity

    def weak(self, gain: np.ndarray) -> np.ndarray:
        return np.ones(len(gain), dtype=bool)  # every split is the Median choice

    def describe(self) -> str:
        return "median"


class _SummedTargets:
    """InfoGain and Regression: targets of one kind, whose impurities simply add up."""

    targets: tuple[str, ...]
    min_gain: float
    one_at_a_time: ClassVar[bool] = False
    levels: ClassVar[int] = 1

    def __init__(self, *targets: str | Sequence[str], min_gain: float = 0.0) -> None:
        object.__setattr__(self, "targets", _names(targets))
        object.__setattr__(self, "min_gain", float(min_gain))

    def combine(self, children: np.ndarray, partition: np.ndarray) -> np.ndarray:
        """(K, 1): the targets' impurities summed, target by target (the order in which
        :mod:`sqlanon.model.score_kernels` adds them)."""
        return _sum_columns(children)

    def weak(self, gain: np.ndarray) -> np.ndarray:
        """Splits removing less than ``min_gain`` per row are taken the Median way."""
        return gain[:, 0] < self.min_gain


@dataclass(frozen=True, init=False)
class InfoGain(_SummedTargets):
    """InfoGain Mondrian: minimize ``sum_targets sum_children |P_i| H(C | P_i)`` (bits).

    Args:
        targets: one or more categorical class labels (non-QI, non-sensitive columns).
        min_gain: partitions whose best split gains less than this many bits per row are split
            the Median way instead.
    """

    targets: tuple[str, ...]
    min_gain: float = 0.0
    numeric_columns: ClassVar[tuple[str, ...]] = ()

    @property
    def class_columns(self) -> tuple[str, ...]:
        return self.targets

    def terms(self, stats: ClassStats, layout: Layout) -> np.ndarray:
        """(K, targets): ``|E| H(C|E)`` in bits of each label."""
        return np.column_stack([weighted_entropy(layout.counts(stats, t)) for t in self.targets])

    def describe(self) -> str:
        return f"infogain({', '.join(map(repr, self.targets))})"


@dataclass(frozen=True, init=False)
class Regression(_SummedTargets):
    """LSD Mondrian: minimize ``sum_targets sum_children sum_rows (t - mean_child(t))^2``.

    Args:
        targets: one or more numeric targets (non-QI, non-sensitive columns).
        min_gain: partitions whose best split reduces the squared error by less than this much
            per row (in squared target units) are split the Median way instead.
    """

    targets: tuple[str, ...]
    min_gain: float = 0.0
    class_columns: ClassVar[tuple[str, ...]] = ()

    @property
    def numeric_columns(self) -> tuple[str, ...]:
        return self.targets

    def terms(self, stats: ClassStats, layout: Layout) -> np.ndarray:
        """(K, targets): the squared error of each target around the class mean."""
        return np.column_stack([squared_error(layout.moments(stats, t)) for t in self.targets])

    def describe(self) -> str:
        return f"regression({', '.join(map(repr, self.targets))})"


@dataclass(frozen=True)
class Targets:
    """Class labels and numeric targets together: minimize ``sum_targets impurity_t(children) /
    impurity_t(partition)`` (entropy for labels, squared error for numeric targets; a target
    already pure in the partition contributes nothing).

    Args:
        classes: categorical class labels.
        numeric: numeric targets.
        min_gain: partitions whose best split removes less than this fraction of impurity per
            target and row are split the Median way instead.
    """

    classes: tuple[str, ...] = field(default=())
    numeric: tuple[str, ...] = field(default=())
    min_gain: float = 0.0
    one_at_a_time: ClassVar[bool] = False
    levels: ClassVar[int] = 1

    @property
    def class_columns(self) -> tuple[str, ...]:
        return tuple(self.classes)

    @property
    def numeric_columns(self) -> tuple[str, ...]:
        return tuple(self.numeric)

    def terms(self, stats: ClassStats, layout: Layout) -> np.ndarray:
        """(K, targets): ``|E| H`` in bits per label, squared error per numeric target."""
        return np.column_stack([weighted_entropy(layout.counts(stats, t)) for t in self.classes]
                               + [squared_error(layout.moments(stats, t)) for t in self.numeric])

    def combine(self, children: np.ndarray, partition: np.ndarray) -> np.ndarray:
        """(K, 1): the targets' impurities, each as a fraction of the partition's, summed."""
        with np.errstate(divide="ignore", invalid="ignore"):
            fractions = np.where(partition > 0, children / np.where(partition > 0, partition, 1), 0.0)
        return _sum_columns(fractions)

    def weak(self, gain: np.ndarray) -> np.ndarray:
        return gain[:, 0] < self.min_gain

    def describe(self) -> str:
        return f"targets(classes={list(self.classes)}, numeric={list(self.numeric)})"


#: Prefix of the 0/1 statistic columns Selection Mondrian counts: row inside query region i.
INDICATOR = "__sqlanon_query_region_"


@dataclass(frozen=True, init=False)
class Selections:
    """Selection Mondrian (KDD 2006, Section 3.4): first minimize the imprecision of the
    workload's selections, then split by the ``then`` criterion.

    Each predicate is parsed into hyper-rectangles over the QIs (an OR into several: the paper's
    decomposition into query regions ``R_1..R_m``). The imprecision of a class ``E`` for region
    ``R`` is ``|E| - |E ∩ R|`` when ``E`` is returned for ``R`` and 0 otherwise (KDD 2006, eq. 1:
    ``|Pr(V)| - |Pr(T)|`` summed over classes). A split is judged by the children's total
    ``sum_R sum_E imprecision(E, R)``, where a child counts as returned when it holds a row of
    ``R``: the published box (the bounding box of the child's rows) then overlaps ``R``. It may
    overlap ``R`` without holding a row of it, so this is a lower bound of the published
    imprecision, computed exactly from the class counts of one 0/1 indicator per region; the
    published figure is measured on the view (:func:`sqlanon.release.imprecision.imprecision`).

    Keys are lexicographic: the smallest imprecision first, ties (in particular every split
    once none reduces imprecision — a split never increases it) by the ``then`` criterion's
    impurity; a partition where no split reduces imprecision and ``then`` is weak (Median, or a
    gain below its ``min_gain``) takes the Median choice. So Selection Mondrian proceeds while
    some split reduces imprecision and then continues inside each partition with ``then``, as
    the paper describes.

    Args:
        predicates: SQL boolean predicates over the QIs (see :mod:`sqlanon.model.selection`).
        then: the criterion inside the query regions (default :class:`Median`).
    """

    predicates: tuple[str, ...]
    then: Median | InfoGain | Regression | Targets
    boxes: tuple[QueryBox, ...]
    one_at_a_time: ClassVar[bool] = False
    levels: ClassVar[int] = 2

    def __init__(self, predicates: str | Sequence[str], then: Criterion | None = None,
                 boxes: Sequence[QueryBox] = ()) -> None:
        object.__setattr__(self, "predicates", (predicates,) if isinstance(predicates, str) else tuple(predicates))
        object.__setattr__(self, "then", Median() if then is None else then)
        object.__setattr__(self, "boxes", tuple(boxes))

    def with_boxes(self, boxes: Sequence[QueryBox]) -> Selections:
        """The criterion with its predicates parsed into query regions."""
        return Selections(self.predicates, self.then, boxes)

    @property
    def min_gain(self) -> float:
        return self.then.min_gain

    @property
    def indicators(self) -> tuple[str, ...]:
        return tuple(f"{INDICATOR}{i}" for i in range(len(self.boxes)))

    @property
    def class_columns(self) -> tuple[str, ...]:
        return self.then.class_columns + self.indicators

    @property
    def numeric_columns(self) -> tuple[str, ...]:
        return self.then.numeric_columns

    def terms(self, stats: ClassStats, layout: Layout) -> np.ndarray:
        """(K, regions + then's targets): per query region ``|E| - |E ∩ R|`` if ``E ∩ R`` is
        non-empty, else 0; then the ``then`` criterion's terms."""
        inside = np.column_stack([layout.counts(stats, c)[:, 1] for c in self.indicators])
        imprecision = np.where(inside > 0, stats.n[:, None] - inside, 0).astype(np.float64)
        inner = self.then.terms(stats, layout)
        return imprecision if inner is None else np.column_stack((imprecision, inner))

    def combine(self, children: np.ndarray, partition: np.ndarray) -> np.ndarray:
        """(K, 2): total imprecision, then the ``then`` criterion's impurity (0 for Median)."""
        r = len(self.boxes)
        first = children[:, :r].sum(axis=1, keepdims=True)
        if isinstance(self.then, Median):
            return np.column_stack((first, np.zeros(len(children))))
        return np.column_stack((first, self.then.combine(children[:, r:], partition[:, r:])))

    def weak(self, gain: np.ndarray) -> np.ndarray:
        """No imprecision removed and ``then`` weak: the Median choice."""
        return (gain[:, 0] <= 0) & self.then.weak(gain[:, 1:])

    def describe(self) -> str:
        return f"selections({list(self.predicates)!r}, then={self.then.describe()})"


@dataclass(frozen=True, init=False)
class Score:
    """Top-down refinement's trade-off (single-dimensional recoding only; Fung, Wang & Yu, TKDE
    2007, eq. 1): the refinement with the largest ``gain / (AnonyLoss + 1)``, the gain being the
    InfoGain of the class label (one target), or without a target the drop of Iyengar's loss
    metric LM (see :mod:`sqlanon.singledim.scores`). ``InfoGain(target)`` with
    ``recoding="single"`` ranks by the InfoGain alone.

    Args:
        targets: at most one class label (none: the LM gain).
    """

    targets: tuple[str, ...]
    min_gain: ClassVar[float] = 0.0
    numeric_columns: ClassVar[tuple[str, ...]] = ()
    one_at_a_time: ClassVar[bool] = False
    levels: ClassVar[int] = 1

    def __init__(self, *targets: str | Sequence[str]) -> None:
        object.__setattr__(self, "targets", _names(targets))

    @property
    def class_columns(self) -> tuple[str, ...]:
        return self.targets

    def describe(self) -> str:
        return f"score({', '.join(map(repr, self.targets))})" if self.targets else "score(lm)"


Criterion = Median | InfoGain | Regression | Targets | Selections | Score


def weighted_entropy(counts: np.ndarray) -> np.ndarray:
    """``n H`` in bits of each row of a count matrix: ``(n ln n - sum_c c ln c) / ln 2``."""
    n, sum_xlogx = count_moments(counts)
    return (n * np.log(np.maximum(n, 1.0)) - sum_xlogx) / math.log(2)


def _sum_columns(terms: np.ndarray) -> np.ndarray:
    """(K, 1): the columns of ``terms`` added one after another, left to right — a fixed order
    (numpy's own sum along a row goes pairwise from eight columns on), which the fused scoring
    of :mod:`sqlanon.model.score_kernels` repeats, so both give the same bits."""
    out = np.zeros(len(terms))
    for t in range(terms.shape[1]):
        out += terms[:, t]
    return out[:, None]


def _names(targets: tuple) -> tuple[str, ...]:
    flat: list[str] = []
    for t in targets:
        flat.extend([t] if isinstance(t, str) else list(t))
    return tuple(flat)


def criterion_record(c: Criterion) -> dict[str, object]:
    """A criterion as a JSON-ready dict (exact parameters), for the release manifest; Selection
    Mondrian's parsed query boxes are not recorded (its predicates are, and parse again)."""
    if isinstance(c, Median):
        return {"type": "Median"}
    if isinstance(c, Score):
        return {"type": "Score", "targets": list(c.targets)}
    if isinstance(c, (InfoGain, Regression)):
        return {"type": type(c).__name__, "targets": list(c.targets), "min_gain": c.min_gain}
    if isinstance(c, Targets):
        return {"type": "Targets", "classes": list(c.classes), "numeric": list(c.numeric), "min_gain": c.min_gain}
    return {"type": "Selections", "predicates": list(c.predicates), "then": criterion_record(c.then)}


def criterion_from_record(record: dict[str, object]) -> Criterion:
    """The inverse of :func:`criterion_record`; raises ValueError for a record it does not know."""
    if not isinstance(record, dict):
        raise ValueError(f"not a criterion record: {record!r}")
    fields = dict(record)
    kind = fields.pop("type", None)
    found: Criterion | None = None
    try:
        if kind == "Median":
            found = Median()
        elif kind == "Score":
            found = Score(*fields.pop("targets"))  # type: ignore[arg-type]
        elif kind in ("InfoGain", "Regression"):
            cls = InfoGain if kind == "InfoGain" else Regression
            found = cls(*fields.pop("targets"), min_gain=float(fields.pop("min_gain")))  # type: ignore[arg-type]
        elif kind == "Targets":
            found = Targets(tuple(fields.pop("classes")), tuple(fields.pop("numeric")),  # type: ignore[arg-type]
                            float(fields.pop("min_gain")))  # type: ignore[arg-type]
        elif kind == "Selections":
            then = criterion_from_record(fields.pop("then"))  # type: ignore[arg-type]
            if isinstance(then, Selections):
                raise ValueError("Selection Mondrian inside Selection Mondrian")
            found = Selections(tuple(fields.pop("predicates")), then)  # type: ignore[arg-type]
    except (KeyError, TypeError) as e:
        raise ValueError(f"malformed criterion record {record!r}: {e}") from None
    if found is None or fields:
        raise ValueError(f"unknown criterion record {record!r}")
    return found
