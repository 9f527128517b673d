"""``sqlanon explain``: the SQL a release runs, step by step, without running what writes.

:func:`explain` is :func:`sqlanon.pipeline.run` on a recording engine
(:mod:`sqlanon.engine.recording`): the reads run (marked ``[ran]``), with every table the run
would have written read as the query that defines it, so the run takes the decisions a real
run takes; every other statement is recorded as the library's own builders produce it. The
listing is therefore by construction what :meth:`sqlanon.Request.run` executes, up to the
run-unique temp names. It costs the reads of a run.
"""

from __future__ import annotations

from typing import Any

from .engine import engine_for
from .engine.base import Engine
from .engine.calls import serialized
from .engine.recording import INLINE_ROWS, ExplainEntry, NeedsData, recording_engine
from .errors import InputError, ObjectExistsError
from .pipeline import Resolvable, run
from .request.spec import Spec

#: The title of each step of the run (the laps of its timings), as the listing numbers them.
STEPS = {
    "validate": "Validate the request: catalog lookups and checks",
    "encode": "Encode: read the source (in place, or a snapshot of it), one domain per QI, the working table",
    "partition_sql": "Partition in SQL: the statements of every tree level, over all open partitions larger than "
                     "memory_rows (none when the table fits)",
    "partition_memory": "Finish in memory: the open partitions' rows fetched in batches and finished by numpy, "
                        "their leaves uploaded",
    "refine": "Refine: one GROUP BY compresses the rows, the search runs in memory, a join places the rows",
    "publish_verify": "Publish in one transaction: rules, manifest, row map, view, verification",
    "stopped": f"Stopped: the statements from here on need an upload of more than {INLINE_ROWS:,} rows, which "
               f"explain does not hold",
    "unfinished": "The step the run was in",
    "cleanup": "Clean up: drop the run's temp tables (also after errors), and note where the release was made",
}


@serialized
def explain(con: Any, request: Resolvable) -> str:
    """Validate ``request`` (a :class:`sqlanon.Request`) and return the SQL it runs, step by step.

    Nothing that writes is run: reads run (marked ``[ran]``); every other statement is recorded
    (module docstring).

    Raises:
        InputError: (and subclasses) as :meth:`sqlanon.Request.run` would for the same request;
            also for Rothko-S (``Sample``), whose statements depend on its sample.
    """
    spec, entries = explain_entries(con, request)
    return _render_explain(spec, entries, engine_for(con).dialect)


def explain_entries(con: Any, request: Resolvable) -> tuple[Spec, list[ExplainEntry]]:
    """The validated request and the statements of :func:`explain`, in order."""
    seen = _Seen(request)
    rec = recording_engine(con)
    try:
        _recorded(con, seen, rec)
    except ObjectExistsError:
        # explain writes nothing, so an output name in use does not stop it: the statements of a
        # run with the names free, after a note of what anonymize would say
        rec = recording_engine(con)
        rec.outputs_free = True
        _recorded(con, seen, rec)
        rec.entries.insert(0, ExplainEntry("validate", _taken_note(engine_for(con), seen.spec), False))
    assert seen.spec is not None
    return seen.spec, rec.entries


def _recorded(con: Any, request: Resolvable, rec: Engine) -> None:
    """:func:`~sqlanon.pipeline.run` on the recording engine ``rec``, until it needs data
    explain does not hold."""
    try:
        run(con, request, engine=rec)
    except NeedsData:
        pass  # the listing says where it stopped
    rec.step_done("cleanup")


class _Seen:
    """The request as :func:`~sqlanon.pipeline.run` sees it, remembering what it resolved to."""

    def __init__(self, request: Resolvable) -> None:
        self.request = request
        self.algorithm = request.algorithm
        self.spec: Spec | None = None

    def resolve(self, engine: Engine) -> Spec:
        self.spec = self.request.resolve(engine)
        if self.algorithm.resolved(self.spec, engine).record().get("strategy") == "sample":
            raise InputError("explain shows the statements of strategy=Levels(); Rothko-S's (Sample) depend on "
                             "its sample (run it and read the outcome: release.outcome)")
        return self.spec


def _taken_note(engine: Any, spec: Spec | None) -> str:
    """Which of the request's output names are in use, and that anonymize stops there."""
    assert spec is not None
    out = spec.outputs
    names = [out.view, out.rules, out.assignment] + ([out.hierarchies] if out.hierarchies else [])
    taken = [f"{o.kind} {o.name!r}" for name in names for o in engine.taken(name)]
    verb = "exists" if len(taken) == 1 else "exist"
    return (f"-- note: {', '.join(taken)} {verb} already: anonymize refuses this request as it stands (only an "
            f"earlier sqlanon release of this name may be replaced); the statements below are a run's with "
            f"the names free")


def _render_explain(spec: Spec, entries: list[ExplainEntry], dialect: str) -> str:
    qis = ", ".join(
        f"{q.name} ({q.kind}, {q.hierarchy.n_leaves} leaves)" if q.hierarchy else f"{q.name} ({q.kind}, {q.data_type})"
        for q in spec.qis
    )
    source = spec.source.path or spec.source.name
    lines = [
        f"-- sqlanon explain: {source!r} ({spec.source.kind}, {spec.source.rows:,} rows), k={spec.k}"
        + ("" if spec.single is None else "; single-dimensional (top-down refinement), QIDs "
           + ", ".join(f"{list(c)} k={k}" for c, k in spec.single.qids)),
        f"-- QIs: {qis}",
        f"-- publishes: {spec.outputs.view} ({'view of a snapshot' if spec.outputs.materialize else 'view'}), "
        f"{spec.outputs.rules}, {spec.outputs.assignment}"
        + (f", {spec.outputs.hierarchies}" if spec.outputs.hierarchies else ""),
        "-- Statements marked [ran] are reads explain ran (each table the run writes read as the query that "
        "defines it); the others are shown, not run.",
        "-- Temp names (__sqlanon_<run>_...) differ in every run.",
    ]
    step = None
    number = 0
    for e in entries:
        if e.step != step:  # steps without statements (no SQL level, say) leave no gap
            step = e.step
            number += 1
            lines += ["", f"-- == {number}. {STEPS.get(step, step)} =="]
        lines.append("")
        if e.note:
            lines.append(f"-- {e.note}")
        if isinstance(e.statement, str):
            lines.append(e.statement)
            continue
        if e.ran:
            lines.append("-- [ran]")
        lines.append(e.statement.sql(dialect=dialect, pretty=True) + ";")
    return "\n".join(lines) + "\n"
