"""The single-dimensional algorithms as objects: ``sqlanon.TopDown``, ``sqlanon.Genetic``,
``sqlanon.Optimal``.

Every QI is cut the same way in every row (a grid, so apply, regions, metrics and the report
serve them unchanged). A categorical QI without a hierarchy is suppressed to ``⊥`` and
disclosed value by value (:mod:`sqlanon.request.single`).

- :class:`TopDown` -- top-down refinement (Fung, Wang & Yu, TKDE 2007; :mod:`.tdr`): anytime,
  several QIDs each with its own k (``KAnonymity(k, qid=[...])``);
- :class:`Genetic` -- Iyengar's genetic algorithm (KDD 2002; :mod:`.genetic`), one QID, a
  suppression limit;
- :class:`Optimal` -- the optimal full-domain generalization (the lattice, :mod:`.lattice`),
  every QI with a hierarchy, one QID, a suppression limit, every privacy model judged over the
  value counts of its column (not variance diversity, which needs moments).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

from ..engine.base import Engine
from ..errors import InputError, RecodingError
from ..model.criteria import InfoGain, Score
from ..request.algorithm import Algorithm, Partitioned, Prepared
from ..request.checks import check_int, check_number, short_repr
from ..request.spec import Spec
from .run import run_genetic, run_optimal, run_tdr

#: What each search minimizes (:mod:`sqlanon.model.utility`).
GENETIC_METRICS = ("LM", "CM")
OPTIMAL_METRICS = ("LM", "CM", "DM", "AECS", "Loss", "Precision", "Entropy")


def _metric(algorithm: str, metric: Any, allowed: tuple[str, ...]) -> str | None:
    """``metric`` spelled as in ``allowed`` (case-insensitively), None for the default."""
    if metric is None:
        return None
    match = [m for m in allowed if isinstance(metric, str) and m.lower() == metric.lower()]
    if not match:
        raise InputError(f"{algorithm}(metric=...) must be one of {list(allowed)}, got {short_repr(metric)}")
    return match[0]


class _SingleDimensional(Algorithm):
    single_dimensional: ClassVar[bool] = True

    def resolved(self, spec: Spec, engine: Engine) -> Algorithm:
        metric = getattr(self, "metric", "")
        if metric is None:  # CM (Iyengar's classification metric) with a class label, else LM
            metric = "CM" if spec.single is not None and spec.single.target is not None else "LM"
            return dataclasses.replace(self, metric=metric)  # type: ignore[type-var]
        return self

    def check_target(self, target: str | None) -> None:
        """A metric that needs the class label refuses a request without one."""
        if getattr(self, "metric", None) == "CM" and target is None:
            raise RecodingError("metric='CM' (Iyengar's classification metric) needs the class label: pass target=")


@dataclass(frozen=True)
class TopDown(_SingleDimensional):
    """Top-down refinement (Fung, Wang & Yu, TKDE 2007): from the most general state, the
    refinement with the best criterion is made while every QID keeps its k.

    Args:
        criterion: ``Score(label)`` (``InfoGain / (AnonyLoss + 1)``, the default) or
            ``InfoGain(label)`` (the gain alone); None: ``Score`` of the request's ``target=``, or
            without one the drop of the LM loss per anonymity lost.
        max_steps, max_seconds: stop after this many refinements or seconds (TDR is anytime: the
            release is valid, only coarser).
    """

    criterion: Score | InfoGain | None = None
    max_steps: int | None = None
    max_seconds: float | None = None

    name: ClassVar[str] = "topdown"
    several_qids: ClassVar[bool] = True
    enforces: ClassVar[str] = "k-anonymity of each QID only"

    def __post_init__(self) -> None:
        if self.criterion is not None and not isinstance(self.criterion, (Score, InfoGain)):
            raise RecodingError(f"TopDown(criterion=...) takes Score(...) (InfoGain / (AnonyLoss + 1), the default) "
                                f"or InfoGain(...) (the gain alone), got {self.criterion!r}")
        if self.max_steps is not None:
            object.__setattr__(self, "max_steps", check_int("max_steps", self.max_steps, 0))
        if self.max_seconds is not None:
            object.__setattr__(self, "max_seconds", check_number("max_seconds", self.max_seconds, 0.0))

    def resolved(self, spec: Spec, engine: Engine) -> TopDown:
        return dataclasses.replace(self, criterion=spec.workload.criterion)

    def partition(self, run: Prepared) -> Partitioned:
        return run_tdr(run, self.max_steps, self.max_seconds)


    suppression_hint: ClassVar[str] = ("top-down refinement never suppresses rows; sqlanon.Genetic() and "
                                       "sqlanon.Optimal() take a limit, sqlanon.Mondrian() a local budget")


@dataclass(frozen=True)
class Genetic(_SingleDimensional):
    """Iyengar's genetic algorithm (KDD 2002; :mod:`sqlanon.singledim.genetic`).

    Args:
        metric: what it minimizes: ``"LM"`` or ``"CM"`` (default: CM with ``target=``, else LM).
        budget, iterations: stop after this many seconds, or iterations (None: the default of
            :mod:`sqlanon.singledim.genetic`); not both.
        seed: the same seed gives the same release, on every engine.
    """

    metric: str | None = None
    budget: float | None = None
    iterations: int | None = None
    seed: int = 0

    name: ClassVar[str] = "genetic"
    supports_suppression: ClassVar[bool] = True
    enforces: ClassVar[str] = "k-anonymity only"

    def __post_init__(self) -> None:
        object.__setattr__(self, "metric", _metric("Genetic", self.metric, GENETIC_METRICS))
        if self.budget is not None and self.iterations is not None:
            raise InputError("give the genetic algorithm either budget= (seconds) or iterations=, not both")
        if self.budget is not None:
            object.__setattr__(self, "budget", check_number("budget", self.budget, 0.0))
        if self.iterations is not None:
            object.__setattr__(self, "iterations", check_int("iterations", self.iterations, 0))
        object.__setattr__(self, "seed", check_int("seed", self.seed, 0))

    def partition(self, run: Prepared) -> Partitioned:
        assert self.metric is not None, "resolve the metric first"
        return run_genetic(run, self.metric, self.seed, self.iterations, self.budget)



@dataclass(frozen=True)
class Optimal(_SingleDimensional):
    """The optimal full-domain generalization (the lattice, :mod:`sqlanon.singledim.lattice`):
    every QI generalized to one level of its hierarchy, the node minimizing ``metric``.

    Args:
        metric: ``"LM"``, ``"CM"``, ``"DM"``, ``"AECS"``, ``"Loss"``, ``"Precision"`` or
            ``"Entropy"`` (:mod:`sqlanon.model.utility`); default CM with ``target=``, else LM.
    """

    metric: str | None = None

    name: ClassVar[str] = "optimal"
    supports_suppression: ClassVar[bool] = True
    needs_hierarchies: ClassVar[bool] = True
    enforces: ClassVar[str] = ("the privacy models over a sensitive column's value counts (not one that needs "
                               "the column's moments, as variance diversity does)")

    def __post_init__(self) -> None:
        object.__setattr__(self, "metric", _metric("Optimal", self.metric, OPTIMAL_METRICS))

    def supports(self, constraint: Any) -> bool:
        """The lattice (:class:`~sqlanon.singledim.lattice.Lattice`) judges every model from each
        class's value counts of its column: not one that needs moments."""
        return not constraint.numeric_columns

    def refusal(self, constraint: Any) -> str:
        return (f"{self.describe()} judges the privacy models over a sensitive column's value counts, not "
                f"{constraint.describe()}, which needs the column's moments; use sqlanon.Mondrian() (algorithm=...)")

    def partition(self, run: Prepared) -> Partitioned:
        assert self.metric is not None, "resolve the metric first"
        return run_optimal(run, self.metric)

