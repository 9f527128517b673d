"""What an algorithm object is: a frozen value that checks its own arguments, declares what it
can do, and partitions the working table when the pipeline asks it to.

The concrete algorithms live with their code: :class:`~sqlanon.mondrian.algorithm.Mondrian`
(multidimensional, with its strategies :class:`~sqlanon.mondrian.algorithm.Levels` and
:class:`~sqlanon.mondrian.algorithm.Sample`) in :mod:`sqlanon.mondrian`, and
:class:`~sqlanon.singledim.algorithms.TopDown`, :class:`~sqlanon.singledim.algorithms.Genetic`
and :class:`~sqlanon.singledim.algorithms.Optimal` (single-dimensional) in
:mod:`sqlanon.singledim`. The request (:mod:`sqlanon.request.spec`) and the pipeline
(:mod:`sqlanon.api`) only ask: scikit-learn's ``_parameter_constraints`` checks an estimator's
own arguments, ARX's anonymizer asks its criteria what they need -- never ``isinstance`` in a
consumer.

:func:`check_fit` is every rule that ties an algorithm to the rest of the request (privacy
models, suppression, selections, several QIDs); it runs before the first statement.
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..engine.base import Engine
from ..errors import RecodingError
from ..model.domain import Domain
from ..model.partition import Progress, Regions, RowLeaves
from .spec import Spec


@dataclass(frozen=True)
class Prepared:
    """What the pipeline hands an algorithm's :meth:`~Algorithm.partition`: the engine, the
    validated request, the QI domains and the encoded working table (``rid, pid, q0.. [, k0..]``,
    :mod:`sqlanon.mondrian.encode`), the caller's ``progress`` callback, ``done_reading`` (ends
    the transaction that reads the source in place, once nothing reads it any more; idempotent)
    and ``lap`` (records a step's time)."""

    engine: Engine
    spec: Spec
    domains: tuple[Domain, ...]
    work: str
    progress: Callable[[Progress], None] | None
    done_reading: Callable[[], None]
    lap: Callable[[str], None]
    held: dict[str, np.ndarray] | None = None  # the working view's rows, fetched and coded here (codes_here)


@dataclass(frozen=True)
class Partitioned:
    """What an algorithm's :meth:`~Algorithm.partition` returns: the spec and domains (a
    single-dimensional search may publish new hierarchies), the regions, the working table of
    every row's region (``rid, pid[, qhash]``), the table of rows finished in memory (None when
    every row's region is in ``work``), the outcome (:attr:`sqlanon.Release.outcome`) and notes
    for the release."""

    spec: Spec
    domains: tuple[Domain, ...]
    regions: Regions
    work: str
    memory: str | RowLeaves | None  # RowLeaves: the rows were finished here from held arrays
    outcome: Any
    notes: tuple[str, ...] = ()


class Algorithm(abc.ABC):
    """An anonymization algorithm (a frozen dataclass in each implementation).

    Capabilities (class attributes):
        name: how release files and the manifest name it (``"mondrian"``, ``"topdown"``, ...).
        single_dimensional: every QI is cut the same way in every row (a grid); a categorical QI
            without a hierarchy is then suppressed to ``⊥`` and disclosed value by value.
        supports_suppression: takes ``suppression=`` (a fraction of the rows it may suppress).
        supports_selections: takes ``selections=`` (Selection Mondrian).
        several_qids: enforces several ``KAnonymity(k, qid=[...])``, each over its own QID.
        needs_hierarchies: every QI needs a hierarchy.
        enforces: the privacy models it judges, in words (errors).
        suppression_hint: where ``suppression=`` goes instead, in words (errors).
    """

    name: ClassVar[str]
    single_dimensional: ClassVar[bool] = False
    supports_suppression: ClassVar[bool] = False
    supports_selections: ClassVar[bool] = False
    several_qids: ClassVar[bool] = False
    needs_hierarchies: ClassVar[bool] = False
    enforces: ClassVar[str] = "k-anonymity only"
    suppression_hint: ClassVar[str] = ("sqlanon.Mondrian() takes it as a local budget, sqlanon.Genetic() and "
                                       "sqlanon.Optimal() as a limit")

    @property
    def criterion(self) -> Any:
        """The split criterion asked for (None: the request's ``target=`` chooses)."""
        return None

    def takes_depth_first(self, workload: Any, qis: Any, fraction: float) -> bool:
        """Whether a compiled depth-first finish takes the request whole, so that an engine-sized
        ``memory_rows`` is worth keeping (otherwise the request caps it: SQL levels are then faster
        on partitions of millions of rows). None here; :class:`~sqlanon.Mondrian` says."""
        return False

    @property
    def memory_rows(self) -> int | None:
        """Rows finished in memory per batch (None: sized from the engine)."""
        return None

    def supports(self, constraint: Any) -> bool:
        """Whether it enforces the privacy model ``constraint`` (k-anonymity always)."""
        return not constraint.class_columns and not constraint.numeric_columns

    def refusal(self, constraint: Any) -> str:
        """Why it refuses the privacy model ``constraint`` (one it does not :meth:`supports`)."""
        return (f"{self.describe()} judges {self.enforces}, not {constraint.describe()}; sqlanon.Mondrian() "
                f"enforces every privacy model (algorithm=...)")

    def with_criterion(self, criterion: Any) -> Algorithm:
        """The same algorithm with the criterion that ran (``target=`` resolved)."""
        return dataclasses.replace(self, criterion=criterion)  # type: ignore[type-var]

    def resolved(self, spec: Spec, engine: Engine) -> Algorithm:
        """The algorithm as it runs for ``spec`` on ``engine`` (Mondrian's ``"auto"`` strategy
        chosen, the criterion ``target=`` chose)."""
        return self

    def check_suppression(self, suppression: Any) -> None:
        """Refuse ``suppression=`` where this configuration of the algorithm cannot take it."""

    def warm(self, spec: Spec) -> None:
        """Start what the run will need beside the engine's first statements (compiling)."""

    def reads_work_as_view(self, engine: Engine, spec: Spec) -> bool:
        """Whether the working table may be a temp view over the source
        (:func:`sqlanon.mondrian.encode.reads_work_as_view`)."""
        return False

    def codes_here(self, engine: Engine, spec: Spec) -> frozenset[int]:
        """The QIs this process codes from the working view's fetched rows instead of the
        engine's code tables (:func:`sqlanon.mondrian.encode.codes_here`); none by default."""
        return frozenset()

    @classmethod
    def keys(cls) -> tuple[str, ...]:
        """The keys of its release-file record (``[algorithm]``) and command-line flags: its
        fields but the criterion (which ``[workload] criterion`` names)."""
        return tuple(f.name for f in dataclasses.fields(cls) if f.name != "criterion")  # type: ignore[arg-type]

    def record(self) -> dict[str, Any]:
        """The arguments given, for a release file (``[algorithm]``): ``name`` and each key
        (:meth:`keys`) whose value differs from its default; :meth:`from_record` inverts it."""
        defaults = {f.name: f.default for f in dataclasses.fields(self)}  # type: ignore[arg-type]
        return {"name": self.name, **{key: getattr(self, key) for key in self.keys()
                                      if getattr(self, key) != defaults[key]}}

    @classmethod
    def from_record(cls, record: dict[str, Any], criterion: Any = None) -> Algorithm:
        """The algorithm of a record (:meth:`record`, without ``name``) and a criterion."""
        return cls(**record, **({"criterion": criterion} if criterion is not None else {}))  # type: ignore[call-arg]

    def describe(self) -> str:
        """The constructor call with the arguments that differ from their defaults."""
        given = [f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self)  # type: ignore[arg-type]
                 if getattr(self, f.name) != f.default]
        return f"{type(self).__name__}({', '.join(given)})"

    @abc.abstractmethod
    def partition(self, run: Prepared) -> Partitioned:
        """Partition the working table of ``run``: the regions, the table of every row's region
        and the outcome."""


def check_fit(algorithm: Algorithm, privacy: Sequence[Any], *, suppression: Any, selections: Any,
              several_qids: bool) -> None:
    """The rules between an algorithm and the rest of the request, from its capabilities, before
    the first statement.

    Raises:
        RecodingError: a privacy model, ``suppression=``, ``selections=`` or several QIDs the
            algorithm cannot take, naming the algorithm that can.
    """
    for c in privacy:
        if not algorithm.supports(c):
            raise RecodingError(algorithm.refusal(c))
    if suppression is not None and not algorithm.supports_suppression:
        raise RecodingError(f"suppression= is not supported by {algorithm.describe()}: {algorithm.suppression_hint}")
    algorithm.check_suppression(suppression)
    if selections not in (None, (), []) and not algorithm.supports_selections:
        raise RecodingError(f"selections= is not supported by {algorithm.describe()}: the single-dimensional "
                            f"searches do not minimize a workload's imprecision; use sqlanon.Mondrian()")
    if several_qids and not algorithm.several_qids:
        raise RecodingError(f"several KAnonymity(k, qid=[...]) models (several QIDs) need sqlanon.TopDown(); "
                            f"{algorithm.describe()} takes one qid= with its k=")
