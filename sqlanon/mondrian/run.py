"""A Mondrian run against the database: the working table partitioned into regions.

The strategy chooses how (:class:`~sqlanon.mondrian.algorithm.Levels`: Rothko-T, SQL levels
then the in-memory finish; :class:`~sqlanon.mondrian.algorithm.Sample`: Rothko-S,
:mod:`.sample`); either way every partition small enough is finished in memory
(:func:`~sqlanon.mondrian.builder.finish_in_memory`) and the leaves are collected as
:class:`~sqlanon.model.partition.Regions`. With ``suppression=`` the request is first
partitioned without it, for the shares of rows generalized to the whole domain
(:func:`baseline`, :func:`~.suppression.root_shares`), and the budget travels down Rothko-T's levels or Rothko-S's rounds
(:mod:`.suppression`). When the table is one in-memory batch its rows are fetched once
(:func:`held_rows`); when a depth-first compiled finish then finishes it, the request without
suppression is not partitioned again but read off the run's own tree, its suppressing splits
undone (:func:`~.suppression.untrimmed`, :func:`~.suppression.shares_untrimmed`: the same shares,
``tests/mondrian/test_suppression_baseline.py``); otherwise both partitionings finish from the
one fetch.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from sqlglot import exp

from ..engine import sqlgen as g
from ..engine.base import Engine
from ..model.partition import Leaves, Regions
from ..request.algorithm import Partitioned, Prepared
from .builder import Partitioner, finish_in_memory
from .sample import Outcome, SampleOptions, run_sample
from .suppression import root_shares, shares_untrimmed


def run_mondrian(run: Prepared, options: SampleOptions) -> Partitioned:
    """Partition ``run.work`` (Rothko-T or Rothko-S, ``options.strategy``), finish in memory and
    collect the leaves; the reading transaction (``run.done_reading``) ends as soon as nothing
    reads the source any more."""
    engine, spec, domains, work = run.engine, run.spec, run.domains, run.work
    w = spec.workload

    def partitioner(progress=run.progress) -> Partitioner:
        return Partitioner(domains, w.constraints, w.criterion, progress, w.stat_columns, threads=engine.threads(),
                           hashed=spec.hashed)

    outcome = Outcome(options.strategy)
    before = after = None
    held = run.held
    tree = partitioner()
    undone = False  # the "before" read off the run's own tree (its suppressing splits undone)
    if spec.suppression:  # the "before" of the root shares: the same request without suppression
        if held is None and options.strategy == "levels":
            held = held_rows(engine, work, spec.source.rows, spec.memory_rows)
        undone = (options.strategy == "levels" and held is not None
                  and tree.depth_first_applies(tree.root(spec.source.rows, spec.suppression_limit)))
        if not undone:
            plain = baseline(engine, partitioner(None), work, spec.source.rows, spec.memory_rows, held)
            before = root_shares(plain, domains, spec.source.rows)
    if options.strategy == "sample":
        # the reading transaction ends once a rewrite has replaced the working view
        work, open_ = run_sample(engine, tree, work, spec.source.rows, options, outcome, run.done_reading,
                                 spec.suppression_limit)
        run.lap("partition_sample")
    else:
        root = tree.root(spec.source.rows, spec.suppression_limit)
        work, open_ = tree.run_sql(engine, work, root, spec.memory_rows)
        outcome.add_levels(tree.levels)
        run.lap("partition_sql")
    memory = finish_in_memory(engine, tree, work, open_, spec.memory_rows, held=held)
    del held
    if undone:  # one batch, finished depth-first: every suppressing split is in tree.untrimmed
        before = shares_untrimmed(tree.leaves.collect(), tree.untrimmed, domains, spec.source.rows)
    tree.untrimmed = []
    if before is not None:
        spec = dataclasses.replace(spec, at_root_before=before)  # recorded in the manifest
    run.done_reading()  # the finish has read the working table (perhaps the view over the source)
    outcome.add(scans=int(len(open_) > 0))
    del open_  # not held while publishing (as the leaves below, it grows with the table)
    run.lap("partition_memory")
    regions = tree.leaves.collect()
    tree.leaves = Leaves()  # the publication lets go of the leaves: nothing else holds them
    if spec.suppression:
        after = root_shares(regions, domains, spec.source.rows)
    return Partitioned(spec, domains, regions, work, memory, outcome.settled(before, after))


def held_rows(engine: Engine, work: str, rows: int, memory_rows: int) -> dict[str, np.ndarray] | None:
    """The working table's rows fetched into this process, when Rothko-T finishes them as one
    batch here (``0 < rows <= memory_rows`` and :attr:`Engine.driver_rows`: no SQL level); else
    None. With ``suppression=`` the baseline and the run then finish from one fetch: at 10M
    Agrawal rows the baseline's copy of the working table and its second fetch had doubled the
    time of a release (Median 7.2 s, with ``suppression=0.01`` 14.8 s)."""
    if not 0 < rows <= min(memory_rows, engine.driver_rows):
        return None
    return engine.fetch(exp.select(exp.Star()).from_(g.table(work)))


def baseline(engine: Engine, partitioner: Partitioner, work: str, rows: int, memory_rows: int,
             held: dict[str, np.ndarray] | None = None) -> Regions:
    """The regions of the same request without suppression (nothing published), partitioned
    by a fresh ``partitioner`` from the working table's rows ``held`` in this process
    (:func:`held_rows`; left as they are), else from a copy of the working table ``work``
    (left as it is)."""
    if held is not None:
        finish_in_memory(engine, partitioner, work, partitioner.root(rows), memory_rows, purpose="baseline",
                         held=dict(held), assign=False)
        return partitioner.leaves.collect()
    copy = engine.temp_name("baseline_work")  # not "baseline": the finish names its tables after its purpose
    engine.execute(g.create_table_as(copy, exp.select(exp.Star()).from_(g.table(work))))
    work, open_ = partitioner.run_sql(engine, copy, partitioner.root(rows), memory_rows)
    finish_in_memory(engine, partitioner, work, open_, memory_rows, purpose="baseline")
    return partitioner.leaves.collect()
