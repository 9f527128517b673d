"""Mondrian as an algorithm object: ``sqlanon.Mondrian(criterion, strategy=...)``.

Multidimensional recoding (LeFevre, DeWitt & Ramakrishnan, ICDE 2006; workload-aware, KDD 2006):
the criterion ranks the allowable splits (Median by default, or what ``target=`` chooses), every
privacy model filters them. The strategy says how the partition is computed at scale (TR 1590);
the result does not depend on it:

- ``"auto"`` (default): :class:`Sample` when the table has at least 10M rows and more than 8
  times the memory budget's rows -- on Spark, more rows than the memory budget -- else
  :class:`Levels` (:func:`sqlanon.mondrian.sample.auto_samples`; always :class:`Levels` with a
  model without a sound sample test); ``suppression=`` works with both
  (:mod:`sqlanon.mondrian.suppression`). The release records which ran
  (``release.algorithm``); name the strategy for releases identical across engines;
- :class:`Levels` -- Rothko-T: partitions larger than ``memory_rows`` are split in SQL level by
  level, the rest finished in memory;
- :class:`Sample` -- Rothko-S (:mod:`sqlanon.mondrian.sample`): the tree is grown on a seeded
  sample of ``rows`` rows under hypothesis tests at ``confidence``, the table repartitioned
  once, splits that fail on the full data pruned, larger leaves sampled again.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

from ..engine.base import Engine
from ..errors import InputError, RecodingError
from ..model.criteria import Criterion, InfoGain, Median, Regression, Score, Selections, Targets
from ..request.algorithm import Algorithm, Partitioned, Prepared
from ..request.checks import check_int, short_repr
from ..request.spec import Spec
from .compiled import median_finish
from .encode import codes_here, reads_work_as_view
from .hypotheses import exact_only
from .run import run_mondrian
from .sample import SampleOptions, check_options, choose

#: The criteria Mondrian ranks splits by (:mod:`sqlanon.model.criteria`).
CRITERIA = (Median, InfoGain, Regression, Targets, Selections)


@dataclass(frozen=True)
class Levels:
    """Rothko-T (TR 1590, Section 2): partitions larger than ``memory_rows`` are split in SQL,
    level by level (O(1) statements per level); smaller ones are finished in memory (numpy), in
    batches of about ``memory_rows`` rows. ``memory_rows=0`` keeps everything in SQL; None sizes
    it from the engine's memory limit (:func:`sqlanon.request.spec.default_memory_rows`). The
    result does not depend on it."""

    memory_rows: int | None = None
    name: ClassVar[str] = "levels"

    def __post_init__(self) -> None:
        if self.memory_rows is not None:
            object.__setattr__(self, "memory_rows", check_int("memory_rows", self.memory_rows, 0))

    def options(self, rows: int, memory_rows: int) -> SampleOptions:
        return choose("levels", rows, memory_rows, None, 0.95, 0)

    def record(self) -> dict[str, Any]:
        return {"strategy": self.name, **({"memory_rows": self.memory_rows} if self.memory_rows is not None else {})}


@dataclass(frozen=True)
class Sample:
    """Rothko-S (TR 1590, Section 3; :mod:`sqlanon.mondrian.sample`): the tree is grown on a seeded
    sample of ``rows`` rows (default: ``memory_rows``), each split made where the hypothesis tests
    say it holds on the full data with ``confidence`` (Bonferroni over the most children a split
    can make); the table is repartitioned once, splits that fail on the full data are pruned, and
    larger leaves sampled again. ``seed``: the same seed draws the same sample on every engine.
    ``memory_rows``: the in-memory finish's batches (as :class:`Levels`). With ``rows`` at least
    the table's rows, the result equals :class:`Levels`'."""

    rows: int | None = None
    confidence: float = 0.95
    seed: int = 0
    memory_rows: int | None = None
    name: ClassVar[str] = "sample"

    def __post_init__(self) -> None:
        check_options("sample", self.rows, self.confidence, self.seed)
        if self.memory_rows is not None:
            object.__setattr__(self, "memory_rows", check_int("memory_rows", self.memory_rows, 0))
        object.__setattr__(self, "confidence", float(self.confidence))

    def options(self, rows: int, memory_rows: int) -> SampleOptions:
        return choose("sample", rows, memory_rows, self.rows, self.confidence, self.seed)

    def record(self) -> dict[str, Any]:
        out: dict[str, Any] = {"strategy": self.name}
        for f in dataclasses.fields(self):
            if getattr(self, f.name) != f.default:
                out["sample_rows" if f.name == "rows" else f.name] = getattr(self, f.name)
        return out


#: ``strategy=`` by name (release files, the command line).
STRATEGIES: dict[str, type] = {"levels": Levels, "sample": Sample}


@dataclass(frozen=True)
class Mondrian(Algorithm):
    """Mondrian multidimensional recoding (ICDE 2006; workload-aware, KDD 2006), in SQL.

    Args:
        criterion: what ranks the allowable splits: ``Median()``, ``InfoGain(...)``,
            ``Regression(...)``, ``Targets(...)``, ``Selections(...)`` (e.g. with ``min_gain``);
            None: ``target=`` of the request chooses (Median without one).
        strategy: ``"auto"``, :class:`Levels` or :class:`Sample` (module docstring).
    """

    criterion: Criterion | None = None
    strategy: str | Levels | Sample = "auto"

    name: ClassVar[str] = "mondrian"
    enforces: ClassVar[str] = "every privacy model"
    supports_suppression: ClassVar[bool] = True
    supports_selections: ClassVar[bool] = True

    def __post_init__(self) -> None:
        if isinstance(self.strategy, str) and self.strategy in STRATEGIES:
            object.__setattr__(self, "strategy", STRATEGIES[self.strategy]())
        if self.strategy != "auto" and not isinstance(self.strategy, (Levels, Sample)):
            raise InputError(f"strategy must be one of 'auto', 'levels', 'sample' (or sqlanon.Levels(memory_rows), "
                             f"sqlanon.Sample(rows, confidence, seed)), got {short_repr(self.strategy)}")
        if isinstance(self.criterion, Score):
            raise RecodingError("Score(...) is top-down refinement's criterion: pass algorithm=sqlanon.TopDown(...)")
        if self.criterion is not None and not isinstance(self.criterion, CRITERIA):
            raise InputError(f"Mondrian(criterion=...) takes Median(), InfoGain(...), Regression(...), Targets(...) "
                             f"or Selections(...), got {short_repr(self.criterion)}")

    @property
    def memory_rows(self) -> int | None:
        return None if self.strategy == "auto" else self.strategy.memory_rows  # type: ignore[union-attr]

    def supports(self, constraint: Any) -> bool:
        """Every privacy model judges a class from its statistics; Rothko-S only those with a
        sound hypothesis test (``sample_testable``, :func:`~sqlanon.mondrian.hypotheses.exact_only`)."""
        return not (isinstance(self.strategy, Sample) and exact_only([constraint]))

    def refusal(self, constraint: Any) -> str:
        return (f"strategy=Sample(...) (Rothko-S) cannot judge {constraint.describe()} on a sample (no sound "
                f"hypothesis test): pass strategy=sqlanon.Levels() (or leave it 'auto', which then partitions "
                f"with Rothko-T)")

    def resolved(self, spec: Spec, engine: Engine) -> Mondrian:
        """The strategy that runs on ``engine`` (``"auto"`` chosen,
        :func:`~sqlanon.mondrian.sample.auto_samples`) with the memory budget resolved, and the
        criterion the request resolved to. ``"auto"`` takes Rothko-T also for a privacy model
        Rothko-S has no sound test for (delta-disclosure)."""
        strategy = self.strategy
        if strategy == "auto":
            exact = exact_only(spec.workload.constraints)
            chosen = "levels" if exact else choose(
                "auto", spec.source.rows, spec.memory_rows, None, 0.95, 0, engine.distributed).strategy
            strategy = Levels(spec.memory_rows) if chosen == "levels" else Sample(memory_rows=spec.memory_rows)
        elif strategy.memory_rows is None:  # type: ignore[union-attr]
            strategy = dataclasses.replace(strategy, memory_rows=spec.memory_rows)  # type: ignore[type-var]
        if isinstance(strategy, Sample) and strategy.rows is None:
            strategy = dataclasses.replace(strategy, rows=max(spec.memory_rows, 1))
        return Mondrian(spec.workload.criterion, strategy)

    def takes_depth_first(self, workload: Any, qis: Any, fraction: float) -> bool:
        """As the compiled finishes say: Median (:func:`~sqlanon.mondrian.compiled.median_finish.takes`),
        or InfoGain, Regression or Targets (:func:`~sqlanon.mondrian.compiled.workload_finish.takes`),
        under k-anonymity and privacy models that have a compiled face, with or without a
        suppression budget (``fraction``); every QI ordered (each finish still decides per batch)."""
        from .compiled import workload_finish

        c, constraints = workload.criterion, workload.constraints
        exact = {s.name: s.exact for s in workload.numeric_stats}

        def summed_exactly(column: str) -> bool:
            return exact.get(column, False)

        if any(q.kind == "hierarchy" for q in qis):
            return False
        if median_finish.takes(c, constraints, summed_exactly):
            return True
        targets = [summed_exactly(name) for name in c.numeric_columns]
        return workload_finish.takes(c, constraints, targets, summed_exactly)

    def warm(self, spec: Spec) -> None:
        # load the compiled finish beside the engine's first statements, where the run finishes in memory
        if spec.memory_rows > 0:
            median_finish.warm_in_background(spec.workload.criterion, spec.workload.constraints,
                                             all(q.ordered for q in spec.qis))

    def reads_work_as_view(self, engine: Engine, spec: Spec) -> bool:
        assert not isinstance(self.strategy, str), "resolve the strategy first"
        return reads_work_as_view(engine, spec, self.strategy.name)

    def codes_here(self, engine: Engine, spec: Spec) -> frozenset[int]:
        assert not isinstance(self.strategy, str), "resolve the strategy first"
        return codes_here(engine, spec, self.strategy.name)

    def partition(self, run: Prepared) -> Partitioned:
        assert not isinstance(self.strategy, str), "resolve the strategy first"
        return run_mondrian(run, self.strategy.options(run.spec.source.rows, run.spec.memory_rows))

    @classmethod
    def keys(cls) -> tuple[str, ...]:
        return ("strategy", "memory_rows", "sample_rows", "confidence", "seed")

    def record(self) -> dict[str, Any]:
        return {"name": self.name, **({} if self.strategy == "auto" else self.strategy.record())}  # type: ignore[union-attr]

    @classmethod
    def from_record(cls, record: dict[str, Any], criterion: Any = None) -> Mondrian:
        """``strategy`` (``"auto"``, ``"levels"``, ``"sample"``) with its keys: ``memory_rows``
        (both), ``sample_rows``, ``confidence``, ``seed`` (Rothko-S)."""
        rest = dict(record)
        name = rest.pop("strategy", "auto" if not rest else "levels" if set(rest) == {"memory_rows"} else "sample")
        if name == "auto" and rest:
            raise InputError(f"{', '.join(rest)}: name the strategy (levels or sample) they belong to")
        if name == "levels" and set(rest) - {"memory_rows"}:
            raise InputError(f"{', '.join(sorted(set(rest) - {'memory_rows'}))}: Rothko-S's (strategy sample), "
                             f"not strategy levels'")
        if name not in ("auto", *STRATEGIES):
            raise InputError(f"strategy must be one of 'auto', 'levels', 'sample', got {short_repr(name)}")
        if "sample_rows" in rest:
            rest["rows"] = rest.pop("sample_rows")
        return cls(criterion, "auto" if name == "auto" else STRATEGIES[name](**rest))

