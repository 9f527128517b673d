"""``sqlanon explain``: the SQL a release runs, step by step, without running what writes.

A recording engine (:mod:`sqlanon.engine.recording`) stands in for the engine: read-only catalog lookups run (marked
``[ran]``), every other statement is recorded as the library's own builders produce it, the
per-level statements for the root level.
"""

from __future__ import annotations

import contextlib

from typing import Any

import numpy as np
from sqlglot import exp

from .engine import sqlgen as g
from .errors import InputError, ObjectExistsError
from .pipeline import Resolvable, reads_in_place, working_source
from .model.criteria import rank
from .mondrian.encode import build_domains, code_fetched, encode
from .engine import engine_for
from .engine.calls import serialized
from .engine.recording import ExplainEntry, NeedsData as _NeedsData, recording_engine
from .model.partition import Regions
from .mondrian.builder import Partitioner
from .singledim.run import compress_query, place
from .publish.pipeline import publish_release, reads_work
from .publish.verify import class_sizes_query
from .request.spec import Spec
from .mondrian.split import Children
from .mondrian.levels import batch_query, extents_query, groups_query, repartition


@serialized
def explain(con: Any, request: Resolvable) -> str:
    """Validate ``request`` (a :class:`sqlanon.Request`) and return the SQL it runs, step by step.

    Nothing that writes is run: read-only lookups run (marked ``[ran]``); every other statement
    is rendered from the library's own builders, the per-level ones for the root level.

    Raises:
        InputError: (and subclasses) as :meth:`sqlanon.Request.run` would for the same request;
            also for Rothko-S (``Sample``), whose statements depend on its sample.
    """
    spec, entries = explain_entries(con, request)
    return _render_explain(spec, entries, engine_for(con).dialect)


def explain_entries(con: Any, request: Resolvable) -> tuple[Spec, list[ExplainEntry]]:
    """The validated request and the statements of :func:`explain`, in order."""
    def resolved(free: bool) -> tuple[Any, Spec]:
        rec = recording_engine(con)
        rec.outputs_free = free
        rec.section = "Validate the request: catalog lookups and checks (once)"
        return rec, request.resolve(rec)

    try:
        rec, spec = resolved(False)
    except ObjectExistsError:
        # explain writes nothing, so an output name in use does not stop it: the statements of a
        # run with the names free, after a note of what anonymize would say
        rec, spec = resolved(True)
        rec.entries.insert(0, ExplainEntry(rec.section, _taken_note(engine_for(con), spec), False))
    algorithm = request.algorithm.resolved(spec)
    if algorithm.record().get("strategy") == "sample":
        raise InputError("explain shows the statements of strategy=Levels(); Rothko-S's (Sample) depend on its "
                         "sample (run it and read the outcome: release.outcome)")
    try:
        in_place = reads_in_place(rec, spec)
        reading = contextlib.ExitStack()  # the transaction over every read of the source (in place)
        if in_place:
            rec.section = ("Read the source in place, in one transaction: a view numbering its rows, and a snapshot "
                           "of only the columns the publication takes from it (once)")
            reading.enter_context(rec.transaction())
        else:
            rec.section = "Snapshot of the source: it has no stable row ids (once)"
        source, snapshot, rid, ranges = working_source(rec, spec, in_place)
        rec.section = "Encode: one domain table per QI, then the working table (once)"
        as_view = algorithm.reads_work_as_view(rec, spec)
        here = algorithm.codes_here(rec, spec)  # as anonymize: numbers coded from one fetch of the working view
        pending = build_domains(rec, spec, source, here)
        work = encode(rec, spec, pending, source, g.col(rid, "b"), view=as_view)
        if here:
            domains, _ = code_fetched(rec, spec, pending, rec.fetch(exp.select(exp.Star()).from_(g.table(work))))
        else:
            domains = tuple(d for d in pending if d is not None)
        if not as_view:
            reading.close()
        rec.live_reads = False
        rec.placeholder = True
        if spec.single is not None:
            rec.section = "Compress: one GROUP BY over the QI codes, class counts as columns (once)"
            rec.show(compress_query(spec, work), "fetched to numpy: top-down refinement computes every refinement's "
                     "statistics from it in memory, no statement per candidate")
            rec.section = "Place the rows: each distinct QI code vector's region, joined to the working table (once)"
            work = place(rec, work, [np.zeros(d.size, np.int64) for d in domains],
                         np.zeros((0, len(spec.qis)), np.int64), np.zeros(0, np.int64), spec.hashed)
            w = spec.workload
            root = Partitioner(domains, w.constraints, w.criterion, None, w.stat_columns).root(spec.source.rows)
            memory = None
            regions = Regions(root, np.zeros_like(root.lo), root.hi.copy(), np.array([True]))
        else:
            w = spec.workload
            partitioner = Partitioner(domains, w.constraints, w.criterion, None, w.stat_columns,
                                      hashed=spec.hashed)
            layout = partitioner.layout
            root = partitioner.root(spec.source.rows)
            rec.section = (f"Partition in SQL: repeats at every tree level while an open partition has more than "
                           f"memory_rows={spec.memory_rows:,} rows; shown for the root level (partition 0)")
            if spec.source.rows > spec.memory_rows:
                rec.show(extents_query(work, root.pid, layout),
                         "extents of the open partitions: count, min and max code of every QI")
                # At the root every code of an ordered QI occurs, so its extents are the domain's.
                exclude = (root.n < 2 * partitioner.min_size)[:, None] & (root.node < 0)
                order = rank(np.zeros_like(root.lo), root.hi.copy(), root.node, domains, exclude=exclude)[0]
                order = order[order >= 0]
                if len(order):
                    if w.criterion.one_at_a_time:  # Median: one QI at a time, widest normalized range first
                        asked = order[:1]
                        note = (f"frequency groups of each partition's candidate QI; at the root "
                                f"{spec.qis[order[0]].name!r} (widest normalized range). A further round only for "
                                f"partitions whose candidate has no allowable split")
                    else:
                        asked = order
                        note = "frequency groups of every candidate QI of every partition (the criterion compares them all)"
                    rec.show(groups_query(rec, work, np.repeat(root.pid, len(asked)), asked, layout), note)
                    kids = Children(np.zeros(2, np.int64), np.array([0, 1]), np.array([0, 1]), np.full(2, -1),
                                    np.ones(2, np.int64), np.zeros(2, dtype=bool))  # stand-ins: the cut depends on the data
                    rec.show("-- one CREATE TABLE AS per level gives every row its child's id (the last SQL level also "
                             "orders the rows by pid, so that each in-memory batch reads only its own row groups)")
                    work = repartition(rec, work, kids, asked[:1], root.pid, np.array([1, 2]),
                                       np.ones(2, dtype=bool), layout)
            else:
                rec.show(f"-- none: the source has {spec.source.rows:,} rows, at most memory_rows="
                         f"{spec.memory_rows:,}, so it is partitioned in memory")
            memory = None
            if spec.memory_rows > 0 and here:
                rec.section = "Finish in memory: the rows fetched while encoding, one batch (no further read)"
                rec.show("-- numpy finishes every partition of the rows fetched above; the rows' leaves are uploaded "
                         "to one temp table (depends on the data)")
                memory = rec.temp_name("leaves0")
                rec.upload_placeholder(memory)
            elif spec.memory_rows > 0:
                rec.section = (f"Finish in memory: partitions of at most {spec.memory_rows:,} rows, fetched in "
                               "batches of about as many rows; repeats per batch (ids shown for the root)")
                batches = rec.upload("batches", {"pid": root.pid, "b": np.zeros(1, np.int64)})
                if rec.distributed:
                    rec.show(batch_query(work, batches, layout, None, None, None), "the rows of every batch")
                    rec.show("-- grouped by batch (groupBy(b).applyInArrow): one task per batch finishes its partitions "
                             "on an executor with numpy and writes its rows' leaves to one temp table (depends on the "
                             "data); only the leaves' boxes come back to the driver")
                else:
                    rec.show(batch_query(work, batches, layout, 0, 0, 0), "the rows of one batch")
                    rec.show("-- numpy finishes the batch's partitions; the rows' leaves are uploaded and appended to one "
                             "temp table (depends on the data)")
                memory = rec.temp_name("leaves0")
                rec.upload_placeholder(memory)
            regions = Regions(root, np.zeros_like(root.lo), root.hi.copy(), np.array([spec.memory_rows == 0]))
        reading.close()  # a working view over the source was read by the finish
        if not reads_work(spec, memory, regions):
            rec.drop_temp(work)
        rec.section = "Publish in one transaction: rules, manifest, row map, view, verification (once)"
        publish_release(rec, spec, domains, [regions], work, memory, snapshot, rid, check=_show_verification,
                        ranges=ranges)
    except _NeedsData:
        rec.show("-- the remaining statements depend on the data")
    finally:
        rec.section = "Clean up: drop the run's temp tables (also after errors)"
        rec.cleanup()
    return spec, rec.entries


def _taken_note(engine: Any, spec: Spec) -> str:
    """Which of the request's output names are in use, and that anonymize stops there."""
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
        "-- Statements marked [ran] are read-only lookups explain ran; the others are shown, not run.",
        "-- Temp names (__sqlanon_<run>_...) differ in every run.",
    ]
    section = None
    number = 0
    for e in entries:
        if e.section != section:  # steps without statements (no snapshot needed, say) leave no gap
            section = e.section
            number += 1
            lines += ["", f"-- == {number}. {section} =="]
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


def _show_verification(rec, spec: Spec) -> None:
    """The check of :func:`~sqlanon.publish.pipeline.publish_release`, shown rather than run:
    the independent verification statement (the classes of the published relation and its
    suppressed rows, in one read, as :func:`sqlanon.verify` does)."""
    published = [c for qi in spec.qis for c in qi.published]
    catalog, schema = rec.current()  # where the view is created, as sqlanon.verify names it
    rules = g.table(spec.outputs.rules, schema, catalog)
    rec.show(class_sizes_query(g.table(spec.outputs.view, schema, catalog), published, spec.k,
                               spec.outputs.class_column, (spec.qis, rules, spec.outputs.size_column)),
             "independent verification of the published relation (sqlanon.verify); if it fails: ROLLBACK")
