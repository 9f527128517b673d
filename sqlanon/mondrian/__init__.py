"""The Mondrian builder (Rothko-T): SQL levels over all open partitions, then the in-memory
finish of small partitions, both driven by the one split decision."""
