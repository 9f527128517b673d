"""The public entry points. :func:`anonymize` reads top to bottom as the data flow."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
import contextlib
import dataclasses
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from .engine import sqlgen as g
from .model.privacy import Constraint, check_models
from .model.criteria import Criterion
from .mondrian.encode import build_domains, code_fetched, codes_here, encode, reads_work_as_view
from .engine.base import Engine
from .engine.calls import serialized
from .engine import engine_for
from .laps import Laps
from .errors import InputError, RecodingError
from .mondrian import median_finish
from .mondrian.builder import Leaves, Partitioner, Progress, finish_in_memory
from .mondrian.hypotheses import exact_only
from .mondrian.sample import Outcome, check_options, choose, run_sample
from .publish import rules as published_rules
from .publish.pipeline import publish_release, reads_work
from .publish.suppression import allowed as suppression_budget
from .mondrian.budget import baseline, root_shares
from .request.checks import check_callable
from .request.spec import Spec, _current, free_name, resolve
from .publish.verify import Verification
from .singledim.run import run_single


@dataclass(frozen=True)
class Release:
    """What :func:`anonymize` published.

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
        recoding: ``"multi"`` (Mondrian) or ``"single"`` (top-down refinement).
        qids: for ``"single"``, the ``<QID, k>`` pairs, each verified on the view; ``k`` is then
            the k of a QID spanning every QI (1 if none: a class is no QID's group).
        refinements: for ``"single"``, the refinements performed.
        published: what each ordered QI's ``q_min``/``q_max`` publish (``published=``):
            ``{qi: "data" | "domain" | "hierarchy"}``.
        search: for ``"single"``, ``"tdr"``, ``"genetic"`` or ``"optimal"``.
        metric, score: the metric the genetic or lattice search minimized, and its value.
        levels: for ``search="optimal"``, the full-domain node: ``{qi: level}`` (0 the values,
            the hierarchy's height its root).
        suppressed: rows the recoding suppressed (published fully generalized, class NULL).
        evaluated: lattice nodes whose classes were computed, or the GA's fitness evaluations.
        strategy: how the multidimensional partition was computed: ``"levels"`` (Rothko-T and
            the in-memory finish) or ``"sample"`` (Rothko-S, :mod:`sqlanon.mondrian.sample`);
            None for ``"single"``.
        sample_rounds, scans, writes, pruned, rescued, distance_from_minimal: Rothko-S's sample
            rounds; reads and writes of the working table by the partitioning (TR 1590's I/O
            model: a SQL level reads twice and writes once, a sample round reads three times
            and writes once, the in-memory finish reads once); tree nodes undone by pruning;
            partitions whose round kept no split, handed to Rothko-T; leaves that might still
            have an allowable split (TR 1590, Figure 28's measure; 0: every leaf is settled by an
            exact decision).
        at_root, at_root_before: Mondrian with ``suppression=``: per QI, the share of rows
            generalized to the whole domain, with suppression and without it (the same request
            partitioned once more without suppression; :mod:`sqlanon.mondrian.budget`).
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
    recoding: str = "multi"
    qids: tuple[tuple[tuple[str, ...], int], ...] = field(default=())
    refinements: int | None = None
    published: Mapping[str, str] = field(default_factory=dict)
    search: str | None = None
    metric: str | None = None
    score: float | None = None
    levels: Mapping[str, int] | None = None
    suppressed: int = 0
    evaluated: int | None = None
    strategy: str | None = None
    sample_rounds: int = 0
    scans: int = 0
    writes: int = 0
    pruned: int = 0
    rescued: int = 0
    distance_from_minimal: int = 0
    at_root: Mapping[str, float] | None = None
    at_root_before: Mapping[str, float] | None = None

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


def validate(
    engine: Engine, table: str, qid: Sequence[str] | None, k: int | None, *,
    progress: Callable[[Progress], None] | None = None, strategy: str = "auto", sample_rows: int | None = None,
    confidence: float = 0.95, recoding: str = "multi", seed: int | None = None, **request: Any,
) -> Spec:
    """Every check :func:`anonymize` makes before its first write, on the same arguments (but
    the connection's engine): the request as a :class:`~sqlanon.request.spec.Spec`.

    Raises:
        InputError: (and subclasses) what :func:`anonymize` refuses; ``TypeError`` for an
            argument it does not take.
    """
    engine.check_environment()  # Spark: the executors' Python imports this sqlanon
    check_callable("progress", progress)  # first called only after a level of partitioning
    engine.check_writable("the release (its view, rules relation and row map)")
    check_options(strategy, sample_rows, confidence, 0 if seed is None else seed)
    if recoding == "single" and strategy == "sample":
        raise InputError('strategy="sample" partitions multidimensionally (Mondrian); recoding="single" has no use for it')
    exact = exact_only(check_models(request.get("constraints", ())))  # models Rothko-S has no sound test for
    if exact and strategy == "sample":
        raise InputError(f"strategy='sample' (Rothko-S) cannot judge {exact[0]} on a sample (no sound hypothesis "
                         f"test): pass strategy='levels' (or 'auto', which then partitions with Rothko-T)")
    return resolve(engine, table, qid, k, recoding=recoding, seed=seed, **request)


@serialized
def anonymize(
    con: Any,
    table: str,
    qid: Sequence[str] | None = None,
    k: int | None = None,
    *,
    hierarchies: Mapping[str, Any] | None = None,
    view: str | None = None,
    replace: bool = False,
    memory_rows: int | None = None,
    progress: Callable[[Progress], None] | None = None,
    sensitive: str | Sequence[str] | None = None,
    l: float | None = None,
    constraints: Sequence[Constraint] = (),
    target: str | Sequence[str] | None = None,
    criterion: Criterion | None = None,
    selections: str | Sequence[str] | None = None,
    key: str | Sequence[str] | None = None,
    class_column: str | None = None,
    recoding: str = "multi",
    qids: Sequence[tuple[Sequence[str], int]] | None = None,
    max_steps: int | None = None,
    max_seconds: float | None = None,
    published: str | Mapping[str, str] | None = None,
    search: str | None = None,
    metric: str | None = None,
    suppression: float | None = None,
    seed: int | None = None,
    budget: float | None = None,
    iterations: int | None = None,
    strategy: str = "auto",
    sample_rows: int | None = None,
    confidence: float = 0.95,
) -> Release:
    """Publish a k-anonymous multidimensional recoding of ``table`` (Median Mondrian), or a
    single-dimensional one (``recoding="single"``: top-down refinement, Iyengar's genetic
    algorithm or the optimal full-domain lattice, ``search=``).

    Args:
        con: a DuckDB or PostgreSQL (psycopg) connection; the source is read, never written.
        table: table or view to anonymize (``schema.table`` accepted), or the path (or glob) of
            Parquet, CSV or JSON files, which DuckDB reads in place.
        qid: the quasi-identifier columns.
        k: every published equivalence class holds at least ``k`` rows.
        hierarchies: generalization hierarchy per categorical QI: an ARX CSV path
            (``leaf;level1;...;*``), a pandas DataFrame, a nested dict, rows, or a table name.
            QIs without one are ordered domains (numbers, dates, timestamps, text, booleans).
        view: name of the published view (default ``<table>_anon``); the rules are
            ``<view>_rules`` and the row map ``<view>_rowmap``.
        replace: replace an earlier sqlanon release of the same name (its view, rules, row map
            and hierarchies, as its manifest lists them). Never any other object: a table that
            merely has one of those names, or anything the source reads, is refused.
        memory_rows: partitions of at most this many rows are finished in memory (numpy), in
            batches of about this many rows; larger ones are split in SQL. 0 keeps everything in
            SQL. The result does not depend on it.
        progress: called after every tree level with a :class:`~sqlanon.mondrian.builder.Progress`
            (with ``recoding="single"``: after every refinement, phase ``"refine"``).
        sensitive, l: entropy l-diversity of each ``sensitive`` column (KDD 2006, Section 3.1):
            in every class the sensitive values' entropy is at least ``ln l``.
        constraints: further constraints: :class:`~sqlanon.DistinctLDiversity`,
            :class:`~sqlanon.EntropyLDiversity`, :class:`~sqlanon.RecursiveCLDiversity`,
            :class:`~sqlanon.VarianceDiversity`, :class:`~sqlanon.TCloseness`,
            :class:`~sqlanon.DeltaDisclosure`, :class:`~sqlanon.BetaLikeness` (k-anonymity with ``k``
            always applies). Rothko-S (``strategy="sample"``) refuses delta-disclosure, which has no
            sound sample test; ``"auto"`` then partitions with Rothko-T.
        target: the workload's target column(s): class labels give InfoGain Mondrian, numeric
            columns Regression (LSD) Mondrian, both together :class:`~sqlanon.Targets`.
        criterion: an explicit criterion instead (``Median()``, ``InfoGain(...)``,
            ``Regression(...)``, ``Targets(...)``, ``Selections(...)``), e.g. with ``min_gain``.
        selections: the SQL predicates analysts will run (over the QIs; see
            :mod:`sqlanon.model.selection`): Selection Mondrian (KDD 2006, Section 3.4) first splits to
            minimize their imprecision, then continues with the criterion above in each region.
        key: the column(s) that identify a source row (unique, never NULL). Default: the
            table's declared PRIMARY KEY, else a declared UNIQUE key. With a key the release is
            a live view over the source that stays fail-closed while the source changes (see
            :mod:`sqlanon.publish.view`); without one it is a view of a snapshot.
        class_column: name of the equivalence-class column (default ``eq_class``, or
            ``eq_class_1``, ... if the source has a column of that name).
        recoding: ``"multi"`` (Mondrian, the default) or ``"single"``: top-down refinement
            (Fung, Wang & Yu, TKDE 2007; :mod:`sqlanon.singledim`): every QI is cut the same way
            in every row. ``target=`` (one class label) ranks refinements by ``Score = InfoGain /
            (AnonyLoss + 1)``, ``criterion=InfoGain(target)`` by InfoGain alone; without a target
            by the drop of the LM loss per anonymity lost. No sensitive/l/constraints/selections
            (but ``search="optimal"`` judges distinct, entropy and recursive (c, l)-diversity).
        qids: with ``recoding="single"``, several QIDs each with its own k, ``[(columns, k),
            ...]`` instead of ``qid=``/``k=``; each is verified on the view, and a live view
            suppresses every row while some QID's group is below its k.
        max_steps, max_seconds: with ``recoding="single"``, stop after this many refinements or
            seconds (TDR is anytime: the release is valid, only coarser).
        published: what an ordered QI's ``q_min``/``q_max`` publish (:mod:`sqlanon.publish.bounds`):
            ``"data"`` (default: each class's own smallest and largest value), ``"domain"`` (the
            region's box: its cut points, ``q_min < v <= q_max``, NULL for an open end -- the
            column's own extremes are never printed), ``"hierarchy"`` (a numeric QI given a
            hierarchy keeps its numeric cuts and publishes the smallest interval of its hierarchy
            covering the class), or a dict ``{qi: mode}``. Recorded in the manifest, so
            :func:`sqlanon.apply`, imprecision, rewrite and metrics read the bounds the same way.
        search: with ``recoding="single"``: ``"tdr"`` (top-down refinement, the default),
            ``"genetic"`` (Iyengar's genetic algorithm, :mod:`sqlanon.singledim.genetic`) or
            ``"optimal"`` (the optimal full-domain generalization, :mod:`sqlanon.singledim.lattice`;
            every QI needs a hierarchy).
        metric: what ``"genetic"`` (``"LM"``, ``"CM"``) or ``"optimal"`` (also ``"DM"``,
            ``"AECS"``, ``"Loss"``, ``"Precision"``, ``"Entropy"``) minimizes
            (:mod:`sqlanon.model.utility`); default CM with a target, else LM.
        suppression: the fraction of rows that may be suppressed (default 0): published with
            every QI fully generalized and class NULL, verified in SQL. ``"genetic"``/``"optimal"``
            take it as a limit; Mondrian as a local budget carried down the tree, spent only
            where no ordinary split exists (:mod:`sqlanon.mondrian.budget`).
        seed: the seed of the genetic algorithm and of Rothko-S's sample (default 0): the same
            seed gives the same release, on every engine.
        budget, iterations: the genetic algorithm's budget, in seconds or in iterations.
        strategy: ``"levels"`` — Rothko-T: partitions larger than ``memory_rows`` are split in
            SQL level by level, the rest in memory; ``"sample"`` — Rothko-S
            (:mod:`sqlanon.mondrian.sample`): the tree is grown on a seeded sample of
            ``sample_rows`` rows under hypothesis tests, the table repartitioned once, splits that
            fail on the full data pruned, larger leaves sampled again; ``"auto"`` (default):
            ``"sample"`` when the table has at least 10M rows and more than 8 times
            ``memory_rows``, else ``"levels"``. Either result satisfies the requirement and is
            minimal; with ``sample_rows`` at least the table's rows, ``"sample"`` equals
            ``"levels"``.
        sample_rows: rows of a Rothko-S sample, the memory budget of its rounds (default
            ``memory_rows``).
        confidence: Rothko-S's tests make a split on the sample when it holds on the full data
            with this confidence (Bonferroni over the most children a split can make).

    Returns:
        The :class:`Release`.

    Raises:
        InputError: (and subclasses) for a bad request, before anything is written; among them
            :class:`~sqlanon.ReadOnlyError` when the current database is read-only.
        VerificationError: if the published relation fails the independent check (it is
            dropped and any replaced objects are restored).
    """
    lap = Laps()

    engine = engine_for(con)
    spec = validate(engine, table, qid, k, progress=progress, strategy=strategy, sample_rows=sample_rows,
                    confidence=confidence, hierarchies=hierarchies, view=view, replace=replace,
                    memory_rows=memory_rows, sensitive=sensitive, l=l, constraints=constraints,
                    target=target, criterion=criterion, selections=selections, key=key,
                    class_column=class_column, recoding=recoding, qids=qids, max_steps=max_steps,
                    max_seconds=max_seconds, published=published, search=search, metric=metric,
                    suppression=suppression, seed=seed, budget=budget, iterations=iterations)
    lap("validate")
    # load the compiled finish beside the engine's first statements, where the run finishes in memory
    if spec.single is None and spec.memory_rows > 0 and not spec.suppression:
        median_finish.warm_in_background(spec.workload.criterion, spec.workload.constraints,
                                         all(q.ordered for q in spec.qis))
    refinements = None
    shares: tuple = (None, None)  # at_root_before, at_root (Mondrian with suppression=)
    outcome = None  # the single-dimensional search's
    partitioning: Outcome | None = None  # how a multidimensional partition was computed
    stopped: tuple[str, ...] = ()
    in_place = _reads_in_place(engine, spec)
    try:
        # Every read of the source in one transaction when it is read in place (no snapshot):
        # the encoding, and the finish too when the working table is a view over the source.
        with contextlib.ExitStack() as reading:
            if in_place:
                reading.enter_context(engine.transaction())
            source, snapshot, rid, ranges = _working_source(engine, spec, in_place)
            # Rothko-T or Rothko-S (resolved before encoding: whether the working table is a view)
            exact = exact_only(spec.workload.constraints)  # models Rothko-S has no sound test for
            exact_path = (spec.suppression or exact) and strategy == "auto"  # Rothko-S cannot carry either
            options = choose("levels" if exact_path else strategy, spec.source.rows, spec.memory_rows, sample_rows,
                             confidence, 0 if seed is None else seed)
            as_view = reads_work_as_view(engine, spec, options.strategy)
            here = codes_here(engine, spec, options.strategy)
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
            memory = None
            if spec.single is not None:  # top-down refinement over the compressed table
                spec, domains, regions, work, outcome = run_single(engine, spec, domains, work, progress)
                refinements = outcome.refinements
                if not outcome.complete and outcome.search == "tdr":
                    stopped = (f"the refinement budget (max_steps/max_seconds) stopped top-down refinement after "
                               f"{refinements} refinements: the release is valid, and coarser than a full run",)
                lap("refine")
            else:
                w = spec.workload
                partitioner = Partitioner(domains, w.constraints, w.criterion, progress, w.stat_columns,
                                          threads=engine.threads(), hashed=spec.hashed)
                # suppression= is Rothko-T's (the budget travels down its levels): "auto" picked "levels"
                partitioning = Outcome(options.strategy)
                if spec.suppression and options.strategy == "sample":  # Rothko-S does not carry the budget
                    raise RecodingError("suppression= is not supported with strategy='sample' (Rothko-S): pass "
                                        "strategy='levels'")
                if spec.suppression:  # the "before" of the root shares: the same request without suppression
                    plain = baseline(engine, Partitioner(domains, w.constraints, w.criterion, None, w.stat_columns,
                                                         threads=engine.threads(), hashed=spec.hashed), work,
                                     spec.source.rows, spec.memory_rows)
                    shares = (root_shares(plain, domains, spec.source.rows), None)
                    spec = dataclasses.replace(spec, at_root_before=shares[0])  # recorded in the manifest
                if options.strategy == "sample":
                    # the reading transaction ends once a rewrite has replaced the working view
                    work, open_ = run_sample(engine, partitioner, work, spec.source.rows, options, partitioning,
                                             reading.close)
                    lap("partition_sample")
                else:
                    root = partitioner.root(spec.source.rows, suppression_budget(spec))
                    work, open_ = partitioner.run_sql(engine, work, root, spec.memory_rows)
                    partitioning.add_levels(partitioner.levels)
                    lap("partition_sql")
                memory = finish_in_memory(engine, partitioner, work, open_, spec.memory_rows, held=held)
                held = None  # finished: its arrays are let go
                reading.close()  # the finish has read the working table (perhaps the view over the source)
                partitioning.scans += int(len(open_) > 0)
                del open_  # not held while publishing (as the leaves below, it grows with the table)
                lap("partition_memory")
                regions = partitioner.leaves.collect()
                if spec.suppression:
                    shares = (shares[0], root_shares(regions, domains, spec.source.rows))
        partitions, rules = int((regions.boxes.n > 0).sum()), len(regions.boxes)
        if spec.single is None:
            partitioner.leaves = Leaves()  # the publication lets go of the leaves: nothing else holds them
        if not reads_work(spec, memory, regions):  # dropped now: the publication's transaction would keep it
            engine.drop_temp(work)
        held, regions = [regions], None
        verification = publish_release(engine, spec, domains, held, work, memory, snapshot, rid, ranges=ranges,
                                       encoded=source)
        if suppression_budget(spec) or any(q.bounds == "domain" for q in spec.qis):
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
        notes=_notes(engine, spec) + stopped,
        selections=spec.workload.selections,
        recoding="single" if spec.single is not None else "multi",
        qids=spec.single.qids if spec.single is not None else (),
        refinements=refinements,
        published={q.name: q.bounds for q in spec.qis if q.ordered},
        search=outcome.search if outcome is not None else None,
        metric=outcome.metric if outcome is not None else None,
        score=outcome.score if outcome is not None else None,
        levels=outcome.levels if outcome is not None else None,
        suppressed=verification.unplaced if spec.single is not None or spec.suppression else 0,
        evaluated=outcome.evaluated if outcome is not None else None,
        at_root=shares[1],
        at_root_before=shares[0],
        **(_outcome_fields(partitioning) if partitioning is not None else {}),
    )
    object.__setattr__(release, "_con", con)  # for release.imprecision()
    # where the objects were created (unqualified, so in the current schema): reloading this
    # Release reads there, even after the session's schema changed
    object.__setattr__(release, "_location", _current(engine))
    return release


def _outcome_fields(outcome: Outcome) -> dict[str, Any]:
    """The Release fields saying how the partition was computed (:mod:`sqlanon.mondrian.sample`)."""
    return {"strategy": outcome.strategy, "sample_rounds": outcome.rounds, "scans": outcome.scans,
            "writes": outcome.writes, "pruned": outcome.pruned, "rescued": outcome.rescued,
            "distance_from_minimal": outcome.distance_from_minimal}


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


def _reads_in_place(engine: Engine, spec: Spec) -> bool:
    """Whether the run reads the source itself in one transaction rather than a snapshot of it
    (:meth:`Engine.reads_in_place`; a source keyed by one integer column is read as it is)."""
    direct = spec.key is not None and spec.key.direct
    return (not direct and engine.transactions
            and engine.reads_in_place(spec.source.column_names, spec.source.kind == "table"))


def _working_source(engine: Engine, spec: Spec, in_place: bool
                    ) -> tuple[exp.Table, exp.Table, str, list[tuple[int | None, int | None]] | None]:
    """The relation the encoding reads, the one the publication looks rows up in by row id, the
    row-id column, and the publication's row-id ranges when they are known already (None: the
    publication finds them, :func:`sqlanon.publish.rules.rid_chunks`):

    - the source itself, twice, when its key is one integer column (the key is the row id);
    - ``in_place`` (:func:`_reads_in_place`; the caller holds one transaction over every read of
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
    number = engine.row_ids(spec.source.column_names, spec.source.kind == "table")
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
