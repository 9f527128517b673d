"""The algorithms by name.

:data:`ALGORITHMS` names each algorithm object (:mod:`sqlanon.request.algorithm`) as release
files (``[algorithm] name = ...``) and the command line (``--algorithm``) do; each object's
:meth:`~sqlanon.request.algorithm.Algorithm.record` and ``from_record`` map its arguments to
the flat keys both use. :data:`REMOVED` says, for each keyword of the earlier flat API, which
object takes it now.
"""

from __future__ import annotations

from typing import Any

from .errors import InputError
from .model.criteria import InfoGain, Median, Regression, Score
from .mondrian.algorithm import Levels, Mondrian, Sample
from .request.algorithm import Algorithm
from .singledim.algorithms import Genetic, Optimal, TopDown

#: Every algorithm by its name.
ALGORITHMS: dict[str, type[Algorithm]] = {c.name: c for c in (Mondrian, TopDown, Genetic, Optimal)}

#: The keywords of the earlier flat API, and what takes each now.
REMOVED = {
    "recoding": "pass algorithm=sqlanon.TopDown(), sqlanon.Genetic() or sqlanon.Optimal() for a single-dimensional "
                "recoding (sqlanon.Mondrian() is the default)",
    "search": "pass algorithm=sqlanon.TopDown(), sqlanon.Genetic() or sqlanon.Optimal()",
    "metric": "pass algorithm=sqlanon.Genetic(metric=...) or sqlanon.Optimal(metric=...)",
    "budget": "pass algorithm=sqlanon.Genetic(budget=...)",
    "iterations": "pass algorithm=sqlanon.Genetic(iterations=...)",
    "seed": "pass algorithm=sqlanon.Genetic(seed=...) or sqlanon.Mondrian(strategy=sqlanon.Sample(seed=...))",
    "strategy": "pass algorithm=sqlanon.Mondrian(strategy=sqlanon.Levels(...) or sqlanon.Sample(...))",
    "sample_rows": "pass algorithm=sqlanon.Mondrian(strategy=sqlanon.Sample(rows=...))",
    "confidence": "pass algorithm=sqlanon.Mondrian(strategy=sqlanon.Sample(confidence=...))",
    "memory_rows": "pass algorithm=sqlanon.Mondrian(strategy=sqlanon.Levels(memory_rows=...)) "
                   "(or sqlanon.Sample(memory_rows=...))",
    "qids": "pass privacy=[sqlanon.KAnonymity(k, qid=[...]), ...] with algorithm=sqlanon.TopDown()",
    "max_steps": "pass algorithm=sqlanon.TopDown(max_steps=...)",
    "max_seconds": "pass algorithm=sqlanon.TopDown(max_seconds=...)",
    "criterion": "pass algorithm=sqlanon.Mondrian(criterion) (or sqlanon.TopDown(criterion))",
    "constraints": "pass privacy=[...] (the privacy models besides k)",
    "view": "pass output=\"name\" or output=sqlanon.Output(view=...)",
    "replace": "pass output=sqlanon.Output(..., replace=True)",
    "key": "pass output=sqlanon.Output(..., key=...)",
    "class_column": "pass output=sqlanon.Output(..., class_column=...)",
}

#: ``[workload] criterion`` names of the criteria a release file can hold.
CRITERION_NAMES = {Median: "median", InfoGain: "infogain", Regression: "regression", Score: "score"}


def default_algorithm() -> Algorithm:
    """``Mondrian()``: the default of a request."""
    return Mondrian()


def algorithm_of(record: dict[str, Any] | None, criterion: Any = None) -> Algorithm:
    """The algorithm of a release file's or the command line's flat keys (``name`` and the
    algorithm's own keys, :meth:`~sqlanon.request.algorithm.Algorithm.keys`).

    Raises:
        InputError: an unknown name, or a key of another algorithm (naming its algorithm)."""
    rest = dict(record or {})
    name = rest.pop("name", "mondrian")
    if name not in ALGORITHMS:
        raise InputError(f"algorithm must be one of {', '.join(ALGORITHMS)}, got {name!r}")
    kind = ALGORITHMS[name]
    for key in rest:
        if key not in kind.keys():
            owners = [n for n, c in ALGORITHMS.items() if key in c.keys()]
            raise InputError(f"{key} is not a key of algorithm {name}" + (
                f": it is {' and '.join(owners)}'s" if owners else f" (it takes {', '.join(kind.keys())})"))
    return kind.from_record(rest, criterion)


__all__ = ["ALGORITHMS", "Genetic", "Levels", "Mondrian", "Optimal", "REMOVED", "Sample", "TopDown"]
