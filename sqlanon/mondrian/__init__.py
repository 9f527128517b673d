"""The Mondrian builder: Rothko-T (SQL levels over all open partitions) and Rothko-S (a tree grown
on a sample, one repartition, pruning), then the in-memory finish of small partitions, all driven
by the one split decision."""
