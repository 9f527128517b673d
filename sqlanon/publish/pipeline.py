"""Publication as one unit: rules, manifest, row map and view created in one transaction, then
the published relation verified independently; a failed check rolls everything back.

:func:`anonymize <sqlanon.anonymize>` publishes through :func:`publish_release`; ``sqlanon
explain`` runs the same function on its recording engine.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator, Sequence

from sqlglot import exp

from ..engine import sqlgen as g
from ..engine.base import Engine
from ..engine.catalog import find_source
from ..errors import EngineError, ObjectExistsError, VerificationError
from ..model.domain import Domain
from ..model.parallel import return_free_memory
from ..model.partition import Regions, RowLeaves
from ..request.spec import Spec
from . import manifest, suppression
from .rules import assignment_table, create_rules, publish, reads_sql_rows, rowmap_query, writes_held
from .verify import Verification, exposed_values, verify_source
from .view import PLACED, RECODED


def created(spec: Spec) -> list[tuple[str, str]]:
    """``(name, kind)`` of every object a release creates: the view, the rules, the row map (a
    keyless release's snapshot), the hierarchies."""
    out = spec.outputs
    return ([(out.view, "VIEW"), (out.rules, "TABLE"), (out.assignment, "TABLE")]
            + ([(out.hierarchies, "TABLE")] if out.hierarchies else []))


def verified(engine: Engine, spec: Spec) -> Verification:
    """The independent check (:func:`sqlanon.verify`) of the relation just published: every
    class of at least k rows, one row per source row, every row placed, every constraint met.

    Raises:
        VerificationError: naming each problem; the transaction then rolls back.
    """
    view = find_source(engine, engine.objects(), spec.outputs.view, count=False)
    result = verify_source(engine, view, [q.name for q in spec.qis], spec.k, class_column=spec.outputs.class_column,
                           constraints=spec.workload.constraints,
                           qids=spec.single.qids if spec.single is not None else None, just_published=True)
    problems = []
    limit = spec.suppression_limit
    if result.violating:
        problems.append(f"{result.violating} equivalence class(es) smaller than k={spec.k} "
                        f"(smallest {result.k_achieved})")
    if result.rows != spec.source.rows:
        problems.append(f"{result.rows} published rows for {spec.source.rows} source rows")
    if result.unplaced > limit:
        problems.append(f"{result.unplaced} rows without an equivalence class (suppressed)"
                        + (f", more than the {limit} the request allows" if limit else ""))
    if result.leaked:
        problems.append(f"{result.leaked} suppressed rows not fully generalized")
    problems += [f"{c.violating} class(es) violate {c.constraint}" for c in result.checks if not c.ok]
    problems += [f"{q.violating} group(s) of QID {list(q.qid)} smaller than k={q.k}" for q in result.qids if not q.ok]
    if result.exposed:
        problems.append(exposure_problem(result.exposed))
    if problems:
        raise VerificationError(
            f"the published relation {spec.outputs.view!r} failed verification: "
            + "; ".join(problems) + ". Nothing was published."
        )
    return result


def reads_work(spec: Spec, memory: str | RowLeaves | None, regions: Regions) -> bool:
    """Whether :func:`publish_release` reads the working table: for the rows of leaves finished
    in SQL or when no row was finished in memory (:func:`~sqlanon.publish.rules.reads_sql_rows`),
    and for suppressed rows. When it does not, the caller drops the
    table before the publication's transaction (inside it, DuckDB would keep the table to the
    commit): its temp files (about 4 GB at 100M rows) are freed before the row map is written.
    In a reproduction over temp tables alone the row map's statements took 25.2 s without it
    and 29.1 s beside it; in the whole run no gain has been measured (38-42 s either way)."""
    return reads_sql_rows(memory, regions) or bool(spec.suppression_limit)


def publish_release(
    engine: Engine, spec: Spec, domains: tuple[Domain, ...], regions: list[Regions], work: str,
    memory: str | RowLeaves | None, source: exp.Table, rid: str,
    ranges: Sequence[tuple[int | None, int | None]] | None = None, encoded: exp.Table | None = None,
) -> Verification | None:
    """Create the release's objects in one transaction (:meth:`Engine.transaction`: its own, or
    the caller's — a savepoint, or dropping what was created, undoes a failure there), after
    dropping what ``replace=True`` overwrites (inside it, so a failure restores them), and
    verify the result (:func:`verified`) before the transaction ends.

    ``regions`` is a one-item list that the publication empties once the rules and the row map
    are made: the caller holds no other reference, so the leaves (0.26 GiB at 100M rows) are let
    go before the longest statements, the snapshot's or row map's table-sized joins.

    An engine without transactions (Spark) moves what ``replace=True`` overwrites aside (renamed)
    instead of dropping it, and drops it only once the new release has passed its check; a
    failure drops the new objects and moves the old ones back.

    ``encoded``: the relation the encoding read (every column by row id ``rid``; default
    ``source``), where the publication finds the QI values of a keyless release's rows: its
    suppressed rows' values are checked not to be printed (:func:`exposed_values`).

    Publication is atomic: when another run publishes the same names at the same time, the
    database refuses one of the two transactions (a write-write conflict) and that run rolls
    back and raises :class:`ObjectExistsError`; exactly one release stands.
    """
    def undo() -> None:  # no transaction to roll back: remove what was created
        for name, kind in created(spec):
            engine.execute(g.drop(name, kind))

    try:
        # without transactions set_aside runs undo itself, before it moves the old objects back
        with engine.transaction(undo if engine.transactions else None), \
                set_aside(engine, spec.outputs.existing, undo):
            leaves = regions.pop()
            return_free_memory()  # what making the leaves left (the rules' arrays come next)
            if not writes_held(spec, memory, leaves):  # the statements below join the rows' leaves
                memory = assignment_table(engine, memory)
            if leaves.visibility is None:  # Mondrian's: what its published rows hold, for the bounds
                leaves = dataclasses.replace(leaves, visibility=suppression.visibility(
                    engine, spec, domains, leaves, work, memory, encoded if encoded is not None else source))
            leafmap = create_rules(engine, spec, domains, leaves)
            manifest.write(engine, spec)
            rowmap = rowmap_query(spec, work, memory, leaves, leafmap)
            count = len(leaves.boxes)
            del leaves
            return_free_memory()  # what the rules' arrays left, before the longest statements
            if spec.suppression_limit:  # rows the recoding suppressed: no region
                rowmap = exp.union(rowmap, suppression.rowmap_rows(work, spec.hashed), distinct=False)
            rows = (snapshot_rows(spec, encoded if encoded is not None else source, rid, rowmap)
                    if spec.key is None and isinstance(rowmap, exp.Expression) else None)
            publish(engine, spec, source, rid, rowmap, count, suppressed=bool(spec.suppression_limit), ranges=ranges)
            result = verified(engine, spec)
            # a keyed release's verify matched its rows
            if spec.key is None and isinstance(result, Verification) and may_expose(spec, result):
                if rows is None:  # writes_held: only where nothing can be exposed
                    raise AssertionError("a row map written from held arrays has no query for exposed values")
                exposed = exposed_values(engine, rows, spec.qis, g.table(spec.outputs.rules), g.table(spec.outputs.view),
                                         spec.k)
                if exposed:
                    raise VerificationError(f"the published relation {spec.outputs.view!r} failed verification: "
                                            f"{exposure_problem(exposed)}. Nothing was published.")
            engine.drop_temp(leafmap.table)  # read by the row map's query until here
            return result
    except EngineError as e:
        if engine.lost_race(e):
            raise ObjectExistsError(
                f"another run published {spec.outputs.view!r} (or one of its objects) at the same time; "
                f"this run was rolled back and left nothing behind"
            ) from e
        raise


def may_expose(spec: Spec, result: Verification) -> bool:
    """Whether :func:`exposed_values` can count anything on a release just verified: a printed
    value is exposed only when a suppressed row holds it -- and the verification counted the
    view's rows without a class (``unplaced``), one per row the row map leaves without a region
    (its ``RECODED`` rows) -- or, under ``published="domain"``, at a column's ends. Without
    either its answer is 0 whatever the data, and its statement (every row, the view and the
    rules stacked and grouped once per QI: 17-30 s of a 46 s run at 1M rows on PostgreSQL) is
    not run."""
    return bool(result.unplaced) or any(q.ordered and q.bounds == "domain" for q in spec.qis)


def exposure_problem(exposed: int) -> str:
    """The verification problem of values a release may not print (:func:`exposed_values`)."""
    return (f"{exposed} printed value(s) held by suppressed rows only, or (published='domain') an end of "
            f"the column held by fewer than k rows")


def snapshot_rows(spec: Spec, source: exp.Table, rid: str, rowmap: exp.Expression) -> exp.Select:
    """The rows a keyless release read (its snapshot ``source``), with their QI values and
    whether the row map places them in a class, for :func:`exposed_values` (its snapshot
    holds no QI value, so this is checked at publication only)."""
    region = exp.Is(this=g.col("region", "m"), expression=exp.Null())
    def flag(when):
        return (exp.Case().when(when, g.lit(1)).else_(g.lit(0)))
    return (exp.select(*[g.col(q.name, "b") for q in spec.qis], g.alias(flag(exp.Not(this=region)), PLACED),
                       g.alias(flag(region.copy()), RECODED))
            .from_(exp.alias_(source.copy(), g.ident("b"), table=True))
            .join(exp.Subquery(this=rowmap.copy(), alias=exp.TableAlias(this=g.ident("m"))),
                  on=exp.EQ(this=g.col("rid", "m"), expression=g.col(rid, "b")), join_type="left"))


@contextlib.contextmanager
def set_aside(engine: Engine, existing: Sequence[tuple[str, str]], undo: Callable[[], None] | None = None,
              ) -> Iterator[None]:
    """Inside the block the objects ``existing`` (``(name, kind)``) are gone. An engine with
    transactions drops them (in the caller's transaction, which undoes that on failure); one
    without renames them aside, drops them when the block succeeds, and on failure runs
    ``undo`` (drop what the block created under those names) and moves them back."""
    if engine.transactions:
        for name, kind in existing:
            engine.execute(g.drop(name, kind.upper()))
        yield
        return
    aside: list[tuple[str, str, str]] = []  # (name, kind, where it was moved)
    try:
        for name, kind in existing:
            moved = f"{engine.prefix}replaced_{len(aside)}"
            engine.execute(_rename(name, moved, kind))
            aside.append((name, kind, moved))
        yield
    except BaseException:
        if undo is not None:
            undo()
        for name, kind, moved in reversed(aside):  # tables first: renaming a view reads what it reads
            engine.execute(_rename(moved, name, kind))
        raise
    for _, kind, moved in aside:
        engine.execute(g.drop(moved, kind.upper()))


def _rename(name: str, to: str, kind: str) -> exp.Alter:
    """``ALTER TABLE|VIEW name RENAME TO to``."""
    return exp.Alter(this=g.table(name), kind=kind.upper(), actions=[exp.AlterRename(this=g.table(to))])
