"""The request of a single-dimensional recoding (``recoding="single"``: top-down refinement,
:mod:`sqlanon.singledim.tdr`), validated before any work.

An anonymity requirement is one or more ``<QID, k>`` pairs (TKDE 2007, Definition 1): ``qid=``
with ``k=`` is one pair, ``qids=[(columns, k), ...]`` several; the QIs are their union (in order
of first mention). The criterion is :class:`~sqlanon.model.criteria.Score` (default) or
:class:`~sqlanon.model.criteria.InfoGain` (the gain alone), with at most one class label
(``target=``); without one the gain is the drop of the LM loss. What TDR does not support is
refused here with :class:`~sqlanon.errors.RecodingError`: selections, l-diversity and other
constraints (but for the lattice search, which judges distinct, entropy and recursive (c, l)-
diversity), numeric or several targets, and NULLs in a categorical QI without a hierarchy.

``search=`` chooses the search (:data:`SEARCHES`): TDR, Iyengar's genetic algorithm or the
optimal full-domain lattice; the latter two take one QID, a ``metric=`` (:data:`SEARCH_METRICS`)
and a ``suppression=`` limit (a fraction of the rows), the GA a ``seed=`` and a ``budget=`` or
``iterations=``, and the lattice a hierarchy for every QI -- each refused clearly where it does
not apply.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InputError, RecodingError, UnknownColumnError, did_you_mean
from ..model.privacy import check_models
from ..model.criteria import InfoGain, Score
from ..model.hierarchy import Hierarchy, unused_label
from .checks import _shown, check_int, check_names, check_number

#: ``recoding=``: multidimensional (Mondrian, the default) or single-dimensional (TDR).
RECODINGS = ("multi", "single")
#: ``search=`` of a single-dimensional recoding: top-down refinement (the default), Iyengar's
#: genetic algorithm, or the optimal full-domain generalization (the lattice).
SEARCHES = ("tdr", "genetic", "optimal")
#: ``metric=`` each search minimizes (:mod:`sqlanon.model.utility`).
SEARCH_METRICS = {"genetic": ("LM", "CM"), "optimal": ("LM", "CM", "DM", "AECS", "Loss", "Precision", "Entropy")}


@dataclass(frozen=True)
class Single:
    """A validated single-dimensional request.

    Attributes:
        qids: the ``<QID, k>`` pairs, QIDs as column names.
        use_score: rank by ``Score`` (else by the gain alone).
        target: the class label (None: the LM gain).
        suppressed: categorical QIs without a hierarchy: refined by disclosing values from ``⊥``.
        max_steps, max_seconds: the anytime budget (None: run to the end).
        search: ``"tdr"``, ``"genetic"`` or ``"optimal"``; metric: what the latter two minimize.
        suppression: the fraction of rows the recoding may suppress (genetic, optimal).
        seed, budget, iterations: the genetic algorithm's seed and its budget (seconds, or
            iterations; None: the default of :mod:`sqlanon.singledim.genetic`).
        levels: the full-domain node the lattice search chose (per QI), once it has run.
    """

    qids: tuple[tuple[tuple[str, ...], int], ...]
    use_score: bool = True
    target: str | None = None
    suppressed: tuple[str, ...] = ()
    max_steps: int | None = None
    max_seconds: float | None = None
    search: str = "tdr"
    metric: str | None = None
    suppression: float = 0.0
    seed: int = 0
    budget: float | None = None
    iterations: int | None = None
    levels: tuple[int, ...] | None = None  # set by the lattice search: the node published

    def suppression_limit(self, rows: int) -> int:
        """The most rows the recoding may suppress: ``floor(suppression * rows)``."""
        return int(self.suppression * rows + 1e-9)

    def per_qid(self, qid: Sequence[str]) -> bool:
        """Whether some QID is not the whole QI set (its groups are unions of cells)."""
        return any(set(columns) != set(qid) for columns, _ in self.qids)


def check_recoding(recoding: Any) -> str:
    if recoding not in RECODINGS:
        raise InputError(f"recoding must be one of {list(RECODINGS)}, got {_shown(recoding)}")
    return recoding


def requirement(qid: Any, k: Any, qids: Any) -> tuple[list[str], int, tuple[tuple[tuple[str, ...], int], ...]]:
    """``(union of the QIs, k of the whole union or 1, the <QID, k> pairs)`` from ``qid=``/``k=``
    or ``qids=`` (shape only; the columns are checked against the table later)."""
    if qids is None:
        if qid is None or k is None:
            raise InputError("give the quasi-identifiers and k (qid=[...], k=...), or qids=[(columns, k), ...]")
        names = check_names("qid", qid, " (e.g. ['age', 'zip'])")
        return names, check_int("k", k, 1), ((tuple(names), check_int("k", k, 1)),)
    if qid is not None or k is not None:
        raise InputError("give either qid= and k=, or qids=[(columns, k), ...] (each QID with its own k), not both")
    if isinstance(qids, (str, bytes)) or not isinstance(qids, Sequence) or not qids:
        raise InputError(f"qids must be a non-empty list of (columns, k) pairs, got {_shown(qids)}")
    pairs: list[tuple[tuple[str, ...], int]] = []
    for pair in qids:
        if isinstance(pair, (str, bytes)) or not isinstance(pair, Sequence) or len(pair) != 2:
            raise InputError(f"qids: each QID is a (columns, k) pair, e.g. (['age', 'sex'], 10); got {_shown(pair)}")
        columns = check_names("qids", pair[0], " (e.g. ['age', 'sex'])")
        if not columns:
            raise InputError("qids: a QID needs at least one column")
        pairs.append((tuple(columns), check_int("qids k", pair[1], 1)))
    union: list[str] = []
    for columns, _ in pairs:
        union += [c for c in columns if c not in union]
    return union, max([k for c, k in pairs if set(c) == set(union)], default=1), tuple(pairs)


def resolve_single(
    pairs: tuple[tuple[tuple[str, ...], int], ...], rows: int, columns: dict[str, str], qid: Sequence[str],
    suppressed: Sequence[str], nulls: dict[str, bool], *, target: Any, criterion: Any, sensitive: Any, l: Any,
    constraints: Any, selections: Any, max_steps: Any, max_seconds: Any,
    search: Any = None, metric: Any = None, suppression: Any = None, seed: Any = None, budget: Any = None,
    iterations: Any = None, hierarchical: Sequence[str] = (),
) -> tuple[Single, Score | InfoGain]:
    """Check the single-dimensional request; return it with its criterion.

    Raises:
        RecodingError: an option TDR does not support; InputError for a bad value.
    """
    if selections not in (None, (), []):
        raise RecodingError("selections= is not supported with recoding='single' (the single-dimensional searches "
                            "check k-anonymity, and l-diversity for search='optimal'); use the default "
                            "multidimensional recoding")
    _check_diversity(search, sensitive, l, constraints)
    for qid_columns, k in pairs:
        if k > rows:
            raise InputError(f"k={k} of QID {list(qid_columns)} is larger than the table ({rows} rows): "
                             f"no anonymization can meet it")
    targets = [target] if isinstance(target, str) else list(target or [])
    if criterion is not None:
        if targets:
            raise InputError("give either target= or criterion=, not both")
        if not isinstance(criterion, (Score, InfoGain)):
            raise RecodingError(f"with recoding='single' criterion= takes Score(...) (InfoGain / (AnonyLoss + 1), "
                                f"the default) or InfoGain(...) (the gain alone), got {criterion!r}")
        targets = list(criterion.targets)
    if len(targets) > 1 or not all(isinstance(t, str) for t in targets):
        raise RecodingError(f"recoding='single' takes at most one class label as target, got {targets!r}")
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
                f"QI {name!r} has NULLs and no hierarchy: recoding='single' suppresses such a column's values "
                f"and discloses them one by one, which is not supported with NULLs; give it a hierarchy "
                f"(hierarchies={{{name!r}: ...}}) or replace the NULLs first")
    steps = None if max_steps is None else check_int("max_steps", max_steps, 0)
    seconds = None if max_seconds is None else check_number("max_seconds", max_seconds, 0.0)
    chosen = criterion if criterion is not None else Score(*targets)
    plan = Single(pairs, not isinstance(chosen, InfoGain), targets[0] if targets else None, tuple(suppressed),
                  steps, seconds)
    return _search(plan, qid, hierarchical, search=search, metric=metric, suppression=suppression, seed=seed,
                   budget=budget, iterations=iterations), chosen


def _check_diversity(search: Any, sensitive: Any, l: Any, constraints: Any) -> None:
    """Privacy models besides k (``sensitive=``/``l=``, ``constraints=``) are judged by the
    lattice search only (:mod:`sqlanon.singledim.lattice`), from each class's value counts of
    their column; TDR and the genetic algorithm check k alone, and refuse them, and the lattice
    refuses a model that needs moments (variance diversity)."""
    asked = [o for o, v in (("sensitive=", sensitive), ("l=", l), ("constraints=", constraints))
             if v not in (None, (), [])]
    if not asked:
        return
    if search != "optimal":
        raise RecodingError(f"{' and '.join(asked)} with recoding='single' need search='optimal' (the lattice "
                            f"search judges l-diversity; top-down refinement and the genetic algorithm check "
                            f"k-anonymity only); or use the default multidimensional recoding")
    for c in check_models(constraints):
        if c.numeric_columns:
            raise RecodingError(f"search='optimal' judges the privacy models over a sensitive column's value counts, "
                                f"not {c.describe()}, which needs the column's moments; use the default "
                                f"multidimensional recoding")


def _search(plan: Single, qid: Sequence[str], hierarchical: Sequence[str], *, search: Any, metric: Any,
            suppression: Any, seed: Any, budget: Any, iterations: Any) -> Single:
    """The search options of a single-dimensional request, checked (``search=None``: TDR)."""
    chosen = "tdr" if search is None else search
    if chosen not in SEARCHES:
        raise InputError(f"search must be one of {list(SEARCHES)}, got {_shown(search)}")
    if chosen == "tdr":
        for option, value in (("metric=", metric), ("suppression=", suppression), ("seed=", seed),
                              ("budget=", budget), ("iterations=", iterations)):
            if value is not None:
                raise RecodingError(f"{option} needs search='genetic' or search='optimal'; top-down refinement "
                                    f"(search='tdr', the default) ranks by its score and never suppresses rows")
        return plan
    if len(plan.qids) != 1 or set(plan.qids[0][0]) != set(qid):
        raise RecodingError(f"search={chosen!r} takes one QID (qid= with k=), not several (qids=)")
    if plan.max_steps is not None or plan.max_seconds is not None:
        raise RecodingError("max_steps= and max_seconds= are top-down refinement's budget; "
                            + ("the genetic algorithm takes budget= (seconds) or iterations=" if chosen == "genetic"
                               else "the lattice search is exact and has none"))
    allowed = SEARCH_METRICS[chosen]
    name = ("CM" if plan.target is not None else "LM") if metric is None else metric
    match = [m for m in allowed if isinstance(name, str) and m.lower() == name.lower()]
    if not match:
        raise InputError(f"metric for search={chosen!r} must be one of {list(allowed)}, got {_shown(metric)}")
    if match[0] == "CM" and plan.target is None:
        raise RecodingError("metric='CM' (Iyengar's classification metric) needs the class label: pass target=")
    fraction = 0.0 if suppression is None else check_number("suppression", suppression, 0.0)
    if fraction >= 1.0:
        raise InputError(f"suppression is the fraction of rows that may be suppressed, in [0, 1); got {suppression!r}")
    if chosen == "optimal":
        if plan.suppressed or set(qid) - set(hierarchical):
            missing = [q for q in qid if q not in hierarchical]
            raise RecodingError(f"search='optimal' generalizes every QI to a level of its hierarchy: give one for "
                                f"{missing} (hierarchies={{...}})")
        for option, value in (("seed=", seed), ("budget=", budget), ("iterations=", iterations)):
            if value is not None:
                raise RecodingError(f"{option} is the genetic algorithm's; the lattice search is exact and "
                                    f"deterministic")
    if budget is not None and iterations is not None:
        raise InputError("give the genetic algorithm either budget= (seconds) or iterations=, not both")
    return dataclasses.replace(
        plan, search=chosen, metric=match[0], suppression=fraction,
        seed=0 if seed is None else check_int("seed", seed, 0),
        budget=None if budget is None else check_number("budget", budget, 0.0),
        iterations=None if iterations is None else check_int("iterations", iterations, 0))


def flat_hierarchy(values: Sequence[str]) -> Hierarchy:
    """The most masked form of a categorical QI without a hierarchy: ``*`` over its values
    (lengthened when ``*`` is one of them; the published hierarchy is rebuilt from what TDR
    discloses, :func:`sqlanon.singledim.cuts.disclosure_hierarchy`)."""
    return Hierarchy._build(unused_label("*", values), {v: {} for v in values})
