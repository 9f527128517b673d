"""The request of a single-dimensional recoding (:class:`~sqlanon.TopDown`,
:class:`~sqlanon.Genetic`, :class:`~sqlanon.Optimal`), validated before any work.

An anonymity requirement is one or more ``<QID, k>`` pairs (TKDE 2007, Definition 1): ``qid=``
with ``k=`` is one pair, each ``KAnonymity(k, qid=[...])`` of ``privacy=`` another; the QIs are
their union (in order of first mention), see :func:`requirement`. The criterion is
:class:`~sqlanon.model.criteria.Score` (default) or :class:`~sqlanon.model.criteria.InfoGain`
(the gain alone), with at most one class label (``target=``); without one the gain is the drop
of the LM loss. What the searches do not support is refused here with
:class:`~sqlanon.errors.RecodingError`: numeric or several targets, and NULLs in a categorical
QI without a hierarchy; the privacy models, suppression, selections and several QIDs each
algorithm takes are its capabilities (:func:`sqlanon.request.algorithm.check_fit`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InputError, RecodingError, UnknownColumnError, did_you_mean
from ..model.criteria import InfoGain, Score
from ..model.hierarchy import Hierarchy, unused_label
from .checks import check_names


@dataclass(frozen=True)
class Single:
    """A validated single-dimensional request.

    Attributes:
        qids: the ``<QID, k>`` pairs, QIDs as column names.
        use_score: rank by ``Score`` (else by the gain alone).
        target: the class label (None: the LM gain).
        suppressed: categorical QIs without a hierarchy: refined by disclosing values from ``⊥``.
        levels: the full-domain node the lattice search chose (per QI), once it has run.
    """

    qids: tuple[tuple[tuple[str, ...], int], ...]
    use_score: bool = True
    target: str | None = None
    suppressed: tuple[str, ...] = ()
    levels: tuple[int, ...] | None = None  # set by the lattice search: the node published

    def per_qid(self, qid: Sequence[str]) -> bool:
        """Whether some QID is not the whole QI set (its groups are unions of cells)."""
        return any(set(columns) != set(qid) for columns, _ in self.qids)


def requirement(qid: Any, k: Any, privacy: Sequence[Any]
                ) -> tuple[Any, Any, tuple[tuple[tuple[str, ...], int], ...], tuple[Any, ...]]:
    """``(QIs, k, <QID, k> pairs, the other privacy models)`` from ``qid=``/``k=`` and the
    ``KAnonymity(k, qid=[...])`` models of ``privacy=`` (shape only; the columns are checked
    against the table later). The QIs are ``qid=``, else the union of the models' QIDs; ``k`` is
    ``k=``, else the largest k of a QID spanning every QI (1 if none: a class is no QID's group).
    Without such models ``qid`` and ``k`` are returned as given (checked by the caller) and the
    pairs are empty: the one pair is ``(qid, k)``. A ``KAnonymity`` without ``qid`` is one of the
    other models."""
    named = [c for c in privacy if c.size_only and c.qid is not None]
    rest = tuple(c for c in privacy if not (c.size_only and c.qid is not None))
    if not named:
        if qid is None and k is None:
            raise InputError("give the quasi-identifiers and k (qid=[...], k=...), or "
                             "privacy=[KAnonymity(k, qid=[...]), ...]")
        return qid, k, (), rest
    if k is not None:
        raise InputError("give either k= (with qid=) or KAnonymity(k, qid=[...]) models (each QID with its own k), "
                         "not both")
    pairs: list[tuple[tuple[str, ...], int]] = []
    for c in named:
        columns = check_names("KAnonymity(qid=...)", c.qid, " (e.g. ['age', 'sex'])")
        if not columns:
            raise InputError("KAnonymity(qid=...): a QID needs at least one column")
        pairs.append((tuple(columns), c.min_size))
    union: list[str] = []
    for columns, _ in pairs:
        union += [c for c in columns if c not in union]
    if qid is not None:
        names = check_names("qid", qid, " (e.g. ['age', 'zip'])")
        if set(names) != set(union):
            raise InputError(f"qid={names} is not the union of the KAnonymity models' QIDs {union}: leave qid= out "
                             f"or make it their union")
        union = names
    return union, max([k for c, k in pairs if set(c) == set(union)], default=1), tuple(pairs), rest


def resolve_single(
    pairs: tuple[tuple[tuple[str, ...], int], ...], rows: int, columns: dict[str, str], qid: Sequence[str],
    suppressed: Sequence[str], nulls: dict[str, bool], *, target: Any, criterion: Any,
) -> tuple[Single, Score | InfoGain]:
    """Check the single-dimensional request; return it with its criterion.

    Raises:
        RecodingError: an option the searches do not support; InputError for a bad value.
    """
    for qid_columns, k in pairs:
        if k > rows:
            raise InputError(f"k={k} of QID {list(qid_columns)} is larger than the table ({rows} rows): "
                             f"no anonymization can meet it")
    targets = [target] if isinstance(target, str) else list(target or [])
    if criterion is not None:
        if targets:
            raise InputError("give either target= or a criterion (TopDown(criterion=...)), not both")
        targets = list(criterion.targets)
    if len(targets) > 1 or not all(isinstance(t, str) for t in targets):
        raise RecodingError(f"the single-dimensional searches take at most one class label as target, got "
                            f"{targets!r}")
    if isinstance(criterion, InfoGain) and not targets:
        raise RecodingError("criterion=InfoGain(...) needs its class label")
    for t in targets:
        if t not in columns:
            raise UnknownColumnError(f"no column {t!r}." + did_you_mean(t, columns))
        if t in qid:
            raise InputError(f"{t!r} is both a QI and the target: a column can only be one of them")
    for name in suppressed:
        if nulls[name]:
            raise RecodingError(
                f"QI {name!r} has NULLs and no hierarchy: a single-dimensional recoding suppresses such a column's "
                f"values and discloses them one by one, which is not supported with NULLs; give it a hierarchy "
                f"(hierarchies={{{name!r}: ...}}) or replace the NULLs first")
    chosen = criterion if criterion is not None else Score(*targets)
    return Single(pairs, not isinstance(chosen, InfoGain), targets[0] if targets else None, tuple(suppressed)), chosen


def flat_hierarchy(values: Sequence[str]) -> Hierarchy:
    """The most masked form of a categorical QI without a hierarchy: ``*`` over its values
    (lengthened when ``*`` is one of them; the published hierarchy is rebuilt from what TDR
    discloses, :func:`sqlanon.singledim.cuts.disclosure_hierarchy`)."""
    return Hierarchy._build(unused_label("*", values), {v: {} for v in values})
