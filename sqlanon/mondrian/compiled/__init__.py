"""The compiled (numba) depth-first finishes of a batch held in memory: Median under the privacy
models with a compiled face (:mod:`.median_finish`), and InfoGain, Regression and Targets under
k-anonymity (:mod:`.workload_finish`, with its kernels :mod:`.cut_scan`, :mod:`.histograms` and
:mod:`.gather`). Both take the decisions the level-by-level finish of
:mod:`sqlanon.mondrian.builder` takes, so the regions are the same."""
