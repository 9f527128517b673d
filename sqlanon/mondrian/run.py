"""A Mondrian run against the database: the working table partitioned into regions.

The strategy chooses how (:class:`~sqlanon.mondrian.algorithm.Levels`: Rothko-T, SQL levels
then the in-memory finish; :class:`~sqlanon.mondrian.algorithm.Sample`: Rothko-S,
:mod:`.sample`); either way every partition small enough is finished in memory
(:func:`~sqlanon.mondrian.builder.finish_in_memory`) and the leaves are collected as
:class:`~sqlanon.model.partition.Regions`. With ``suppression=`` the request is first
partitioned without it, for the shares of rows generalized to the whole domain
(:mod:`.budget`), and the budget travels down Rothko-T's levels.
"""

from __future__ import annotations

import dataclasses

from ..model.partition import Leaves
from ..request.algorithm import Partitioned, Prepared
from .budget import baseline, root_shares
from .builder import Partitioner, finish_in_memory
from .sample import Outcome, SampleOptions, run_sample


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
    if spec.suppression:  # the "before" of the root shares: the same request without suppression
        plain = baseline(engine, partitioner(None), work, spec.source.rows, spec.memory_rows)
        before = root_shares(plain, domains, spec.source.rows)
        spec = dataclasses.replace(spec, at_root_before=before)  # recorded in the manifest
    tree = partitioner()
    if options.strategy == "sample":
        # the reading transaction ends once a rewrite has replaced the working view
        work, open_ = run_sample(engine, tree, work, spec.source.rows, options, outcome, run.done_reading)
        run.lap("partition_sample")
    else:
        root = tree.root(spec.source.rows, spec.suppression_limit)
        work, open_ = tree.run_sql(engine, work, root, spec.memory_rows)
        outcome.add_levels(tree.levels)
        run.lap("partition_sql")
    memory = finish_in_memory(engine, tree, work, open_, spec.memory_rows, held=run.held)
    run.done_reading()  # the finish has read the working table (perhaps the view over the source)
    outcome.add(scans=int(len(open_) > 0))
    del open_  # not held while publishing (as the leaves below, it grows with the table)
    run.lap("partition_memory")
    regions = tree.leaves.collect()
    tree.leaves = Leaves()  # the publication lets go of the leaves: nothing else holds them
    if spec.suppression:
        after = root_shares(regions, domains, spec.source.rows)
    return Partitioned(spec, domains, regions, work, memory, outcome.settled(before, after))
