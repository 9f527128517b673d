"""One pipeline for every algorithm: validate -> prepare (snapshot, encoding) ->
``algorithm.partition`` -> publish + verify (:func:`run`), and what it returns (:class:`Release`).

The request (:class:`sqlanon.Request`) validates itself against the database; the preparation
is shared by both recodings (a snapshot or an in-place read of the source, the QI domains, the
encoded working table); the algorithm object partitions (:mod:`sqlanon.request.algorithm`); the
publication and its independent verification are :mod:`sqlanon.publish`'s.
:func:`sqlanon.explain.explain` is :func:`run` on the recording engine.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from sqlglot import exp

from . import compilation, display
from .engine import engine_for
from .engine import sqlgen as g
from .engine.base import Engine
from .engine.catalog import free_name
from .errors import InputError
from .laps import Laps
from .model.partition import Progress
from .mondrian.encode import build_domains, code_fetched, encode
from .publish import rules as published_rules
from .publish.pipeline import publish_release, reads_work
from .publish.suppression import Suppression
from .publish.verify import Verification
from .request.algorithm import Algorithm, Prepared
from .request.checks import check_callable
from .request.spec import Spec


class Resolvable(Protocol):
    """A request as the pipeline sees it (:class:`sqlanon.Request`)."""

    algorithm: Any

    def resolve(self, engine: Engine) -> Spec: ...


@dataclass(frozen=True)
class Release:
    """What :func:`anonymize` (:meth:`Request.run`) published.

    Attributes:
        view: the anonymized view: one row per source row,
            non-QI columns unchanged, each ordered QI ``q`` replaced by ``q_min``/``q_max``,
            each hierarchical QI by its node label, plus ``eq_class``.
        rules: the rules relation (one row per region; see :mod:`sqlanon.publish.rules`).
        rowmap: the table the view reads its rows from: with a key, each source row's key,
            region and hash; when ``materialized``, the snapshot of the rows the run read (their
            non-QI columns and class).
        hierarchies: the table keeping the hierarchies of hierarchical QIs (None if there are
            none); with the JSON comment on ``rules`` it lets the release reload by name.
        materialized: True when the source had no key (no declared PRIMARY KEY / UNIQUE key and
            no ``key=``), so the view was published over a snapshot (``rowmap``) instead of over the
            source: it does not follow later changes of the source.
        key: the columns the live view finds each source row by (None for a snapshot).
        class_column: the published column holding the equivalence class (``eq_class``, or a
            derived name when the source has a column of that name).
        table, qid, k: the request.
        k_achieved: the smallest equivalence class, as verified on the published relation.
        partitions: number of equivalence classes (non-empty regions).
        regions: number of rules (including empty hierarchy regions that cover the domain).
        rows: rows published (= rows of the source).
        elapsed: wall-clock seconds for the whole call.
        timings: seconds per step.
        statements: SQL statements executed.
        verification: the independent check of the published relation.
        notes: anything the caller should know about this release.
        selections: the workload's selection predicates (Selection Mondrian), as given.
        qids: for a single-dimensional recoding, the ``<QID, k>`` pairs, each verified on the
            view; ``k`` is then the k of a QID spanning every QI (1 if none: a class is no QID's
            group).
        published: what each ordered QI's ``q_min``/``q_max`` publish (``published=``):
            ``{qi: "data" | "domain" | "hierarchy"}``.
        suppressed: rows the recoding suppressed (published fully generalized, class NULL).
        suppression: with ``suppression=``: the rows the limit allowed against the rows used
            (:class:`~sqlanon.publish.suppression.Suppression`); None without a limit.
        algorithm: the algorithm that ran, as an object: Mondrian's ``"auto"`` strategy resolved
            to :class:`~sqlanon.Levels` or :class:`~sqlanon.Sample` with its memory budget, the
            criterion ``target=`` chose, the metric a search minimized.
        outcome: what the algorithm did: for Mondrian a
            :class:`~sqlanon.model.partition.Partitioning` (Rothko-S's sample rounds, reads and
            writes of the working table, tree nodes pruned, partitions rescued, the distance from
            minimal; with ``suppression=`` the shares of rows at the root with and without it);
            for the single-dimensional searches a :class:`~sqlanon.singledim.run.Outcome`
            (refinements, the metric's score, the lattice node, evaluations).
    """

    view: str
    rules: str
    rowmap: str | None
    hierarchies: str | None
    materialized: bool
    key: tuple[str, ...] | None
    class_column: str
    table: str
    qid: tuple[str, ...]
    k: int
    k_achieved: int
    partitions: int
    regions: int
    rows: int
    elapsed: float
    timings: Mapping[str, float]
    statements: int
    verification: Verification
    notes: tuple[str, ...] = field(default=())
    selections: tuple[str, ...] = field(default=())
    qids: tuple[tuple[tuple[str, ...], int], ...] = field(default=())
    published: Mapping[str, str] = field(default_factory=dict)
    suppressed: int = 0
    suppression: Suppression | None = None
    algorithm: Algorithm | None = None
    outcome: Any = None

    def _facts(self, detail: bool = False) -> list[tuple[str, Any]]:
        """What a repr shows (:mod:`sqlanon.display`): the requirement and its smallest
        class, rows, classes, suppressed rows, the algorithm as resolved; ``detail``: the card's
        rows too (QIs, source, how it is published, time, notes). Counts and names only."""
        facts: list[tuple[str, Any]] = [("requirement", self.verification.requirement()),
                                        ("smallest class", f"{self.k_achieved:,} (k = {self.k:,})"),
                                        ("rows", self.rows), ("classes", self.partitions), ("suppressed", self.suppressed)]
        if detail:
            live = f"a live view (key {display.names(self.key)})" if self.key else "a view of a snapshot"
            facts += [("QIs", display.names(self.qid)), ("source", repr(self.table)), ("published as", live)]
        facts.append(("algorithm", self.algorithm.describe() if self.algorithm is not None else "n/a"))
        if detail:
            facts.append(("time", f"{display.number(self.elapsed)} s, {self.statements:,} SQL statements"))
            if self.notes:
                facts.append(("notes", f"{len(self.notes)} (release.notes)"))
        return facts

    def __repr__(self) -> str:
        return display.text("Release", self.view, self._facts(), self.verification.ok)

    def _repr_html_(self) -> str:
        return display.card("Release", self.view, self._facts(detail=True), self.verification.ok)

    def imprecision(self, predicates: str | Sequence[str] | None = None) -> Any:
        """Imprecision of ``predicates`` (default: the release's selections) on the published
        view, computed in SQL: see :func:`sqlanon.release.imprecision.imprecision`."""
        chosen = self.selections if predicates is None else predicates
        if not chosen:
            raise InputError("this release has no selections: pass the predicates to measure")
        con = getattr(self, "_con", None)  # set by anonymize(); not a field, so asdict() works
        if con is None:
            raise InputError("this Release carries no connection: use sqlanon.imprecision(con, release, ...)")
        from .release.imprecision import imprecision  # builds on this module's Release

        return imprecision(con, self, chosen)


def validate(engine: Engine, request: Resolvable, progress: Callable[[Progress], None] | None = None) -> Spec:
    """Every check :func:`run` makes before its first write, on the same request (but the
    connection's engine): the request as a :class:`~sqlanon.request.spec.Spec`.

    Raises:
        InputError: (and subclasses) what :func:`run` refuses.
    """
    engine.check_environment()  # Spark: the executors' Python imports this sqlanon
    check_callable("progress", progress)  # first called only after a level of partitioning
    engine.check_writable("the release (its view, rules relation and row map)")
    return request.resolve(engine)


def run(con: Any, request: Resolvable, progress: Callable[[Progress], None] | None = None, *,
        engine: Engine | None = None) -> Release:
    """Validate, prepare, partition, publish and verify ``request`` (module docstring) on
    ``engine`` (default: the connection's; :func:`sqlanon.explain.explain` passes its recording
    engine, which runs the reads and records the rest)."""
    engine = engine_for(con) if engine is None else engine
    lap = Laps(engine.step_done)
    spec = validate(engine, request, progress)
    assert request.algorithm is not None
    algorithm = request.algorithm.resolved(spec, engine)
    lap("validate")
    with compilation.reporting(progress, lap.started), engine.planned_for(spec.source.rows):
        return _run(con, engine, spec, algorithm, progress, lap)


def _run(con: Any, engine: Engine, spec: Spec, algorithm: Algorithm, progress: Callable[[Progress], None] | None,
         lap: Laps) -> Release:
    """:func:`run` once the request is validated."""
    algorithm.warm(spec)
    here = algorithm.codes_here(engine, spec)
    in_place = reads_in_place(engine, spec, fetched=bool(here))
    try:
        # Every read of the source in one transaction when it is read in place (no snapshot):
        # the encoding, and the partitioning too when the working table is a view over the source.
        with contextlib.ExitStack() as reading:
            if in_place:
                reading.enter_context(engine.transaction(snapshot=True))
            source, snapshot, rid, ranges = working_source(engine, spec, in_place)
            as_view = algorithm.reads_work_as_view(engine, spec)
            pending = build_domains(engine, spec, source, here)
            work = encode(engine, spec, pending, source, g.col(rid, "b"), view=as_view)
            held = None  # the working view's rows, fetched once and coded here (codes_here)
            if here:
                domains, held = code_fetched(engine, spec, pending, engine.fetch(exp.select(exp.Star()).from_(g.table(work))))
                reading.close()  # commit: nothing reads the source any more
            else:
                domains = tuple(d for d in pending if d is not None)
            if not as_view:
                reading.close()  # commit: nothing reads the source any more
            lap("encode")
            done = algorithm.partition(Prepared(engine, spec, domains, work, progress, reading.close, lap, held))
            held = None  # finished: its arrays are let go
        spec, domains, work, memory, outcome, notes = done.spec, done.domains, done.work, done.memory, \
            done.outcome, done.notes
        regions = done.regions
        del done  # the publication lets go of the regions: nothing else may hold them
        partitions, rules = int((regions.boxes.n > 0).sum()), len(regions.boxes)
        if not reads_work(spec, memory, regions):  # dropped now: the publication's transaction would keep it
            engine.drop_temp(work)
        held, regions = [regions], None
        verification = publish_release(engine, spec, domains, held, work, memory, snapshot, rid, ranges=ranges,
                                       encoded=source)
        if spec.suppression_limit or any(q.bounds == "domain" for q in spec.qis):
            # a box left without a published code is no region (sqlanon.publish.rules.printable_boxes)
            rules = int(engine.fetch_rows(exp.select(exp.Count(this=exp.Star())).from_(g.table(spec.outputs.rules)))[0][0])
        lap("publish_verify")
    finally:
        engine.cleanup()
    release = Release(
        view=spec.outputs.view,
        rules=spec.outputs.rules,
        rowmap=spec.outputs.assignment,
        hierarchies=spec.outputs.hierarchies,
        materialized=spec.outputs.materialize,
        key=spec.key.columns if spec.key else None,
        class_column=spec.outputs.class_column,
        table=spec.source.name,
        qid=tuple(q.name for q in spec.qis),
        k=spec.k,
        k_achieved=verification.k_achieved,
        partitions=partitions,
        regions=rules,
        rows=verification.rows,
        elapsed=lap.elapsed,
        timings=lap.timings,
        statements=engine.statements,
        verification=verification,
        notes=_notes(engine, spec) + notes,
        selections=spec.workload.selections,
        qids=spec.single.qids if spec.single is not None else (),
        published={q.name: q.bounds for q in spec.qis if q.ordered},
        suppressed=verification.unplaced if spec.single is not None or spec.suppression else 0,
        suppression=Suppression(spec.suppression, spec.suppression_limit, verification.unplaced)
        if spec.suppression else None,
        algorithm=algorithm,
        outcome=outcome,
    )
    object.__setattr__(release, "_con", con)  # for release.imprecision()
    # where the objects were created (unqualified, so in the current schema): reloading this
    # Release reads there, even after the session's schema changed
    object.__setattr__(release, "_location", engine.current())
    return release


def _notes(engine: Engine, spec: Spec) -> tuple[str, ...]:
    """Why a release is a view of a snapshot rather than a live view, if it is one."""
    if not spec.outputs.materialize:
        return ()
    where = repr(spec.source.path or spec.source.name)
    if spec.source.temporary and not engine.views_read_temporary:
        why = f"{where} is a temp view, which a {engine.name} view may not read"
        fix = "Save it as a table for a live view."
    else:
        why = f"{where} has no key (no declared PRIMARY KEY or UNIQUE key, no key=)"
        fix = "Pass key= (or declare a key) for a live view."
    return (f"{why}: published {spec.outputs.view!r} as a view of a snapshot ({spec.outputs.assignment!r}) that does "
            f"not follow later changes of the source. {fix}",)


def reads_in_place(engine: Engine, spec: Spec, fetched: bool = False) -> bool:
    """Whether the run reads the source itself in one transaction rather than a snapshot of it
    (:meth:`Engine.reads_in_place`, or :meth:`Engine.reads_fetched_in_place` when the run's rows
    are ``fetched`` into this process once; a source keyed by one integer column is read as it is)."""
    if spec.key is not None and spec.key.direct or not engine.transactions:
        return False
    table = spec.source.kind == "table"
    # "domain" bounds: the publication's check of their ends reads the source again, after the
    # reading transaction (sqlanon.publish.pipeline.may_expose), so by ids that must not move
    fetched = fetched and not any(q.unbounded_ends for q in spec.qis)
    return (engine.reads_in_place(spec.source.column_names, table)
            or fetched and table and engine.reads_fetched_in_place(spec.source.ref))


def working_source(engine: Engine, spec: Spec, in_place: bool
                    ) -> tuple[exp.Table, exp.Table, str, list[tuple[int | None, int | None]] | None]:
    """The relation the encoding reads, the one the publication looks rows up in by row id, the
    row-id column, and the publication's row-id ranges when they are known already (None: the
    publication finds them, :func:`sqlanon.publish.rules.rid_chunks`):

    - the source itself, twice, when its key is one integer column (the key is the row id);
    - ``in_place`` (:func:`reads_in_place`; the caller holds one transaction over every read of
      the source): a temp view numbering the source, and a temp snapshot of only the columns
      the publication takes from it -- a keyless release's non-QI columns, else the key. At
      100M Agrawal rows that is 5 of 14 columns, and the encoding reads the stored table
      instead of a copy: 22 s instead of 41 s to encode, and no 6 s to drop the copy. A
      keyless release's row-id ranges are read here too, from the stored table (0.3 s at 100M;
      2.6 s from the temp snapshot at publication);
    - else a temp snapshot of the whole source numbered by a generated id, read by both, so
      that the partitioning and the publication see the same rows. (DuckDB's own ``rowid`` is
      no identity across transactions: CHECKPOINT renumbers it after deletes.)
    """
    if spec.key is not None and spec.key.direct:
        return spec.source.ref, spec.source.ref, spec.key.columns[0], None
    rid = free_name("__sqlanon_rid", spec.source.column_names)
    number = (engine.in_place_ids(spec.source.column_names) if in_place
              else engine.row_ids(spec.source.column_names, spec.source.kind == "table"))
    numbered = exp.select(g.alias(number, rid), exp.Star()).from_(spec.source.ref)
    if not in_place:
        name = engine.temp_name("snapshot")
        engine.execute(g.create_table_as(name, numbered))
        return g.table(name), g.table(name), rid, None
    view = g.table(engine.create_temp_view("numbered", numbered))
    qis = {q.name for q in spec.qis}
    kept = spec.key.columns if spec.key is not None else [c for c in spec.source.column_names if c not in qis]
    snapshot = engine.create_temp("snapshot", exp.select(g.col(rid), *[g.col(c) for c in kept]).from_(view))
    ranges = published_rules.rid_chunks(engine, view, rid, spec.source.rows) if spec.key is None else None
    return view, g.table(snapshot), rid, ranges
