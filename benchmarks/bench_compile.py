"""First use after an install: the CPU seconds numba spends compiling sqlanon's kernels on a
request's first run (issue 52, "no silent first run": at most 10 s in all on the project's
2-core machine), and what the same request costs once they are cached.

    python benchmarks/bench_compile.py [--rows 200000] [--only median infogain ...]
    python benchmarks/bench_compile.py --quick        # 20,000 rows: a check that it runs

Each request runs twice, each time in a child process of its own, on Agrawal rows generated in
memory (k = 100, the nine QIs, as ``bench_workload.py``): first with an empty numba cache
(``NUMBA_CACHE_DIR`` a fresh directory: every kernel the request reaches is compiled), then with
the cache that run left (every kernel loaded). The default 200,000 rows take every phase of the
compiled finishes on two threads (the workload finish's histogram phase and its wide nodes'
growth call kernels from Python too); ``--quick`` only the single-threaded growth.

Records per request: ``compile_cpu_s``, the CPU seconds inside numba's compilations (its
``numba:compile`` events, outermost only: a kernel compiled inside another counts once), with
the kernels of sqlanon compiled (``kernels``) and their signatures (``signatures``: more than
``kernels`` means a kernel compiled twice for one request); the first run's CPU and wall
seconds of ``anonymize()`` (``first_cpu_s``, ``seconds``) and the cached run's
(``cached_cpu_s``, ``cached_s``); ``details`` has the compile seconds per kernel (numba's own
helpers under their module's name) and the signatures of every kernel compiled more than once.
Runs: ``median``, ``infogain`` (C2), ``regression`` (R7), ``median+entropy-car`` (entropy
l-diversity of ``car``, l = 5), ``median+supp`` (a suppression limit of 1 %) and
``infogain+entropy-car``.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402  (puts the checkout first on sys.path)
from harness import Column  # noqa: E402

RUNS: dict[str, dict[str, Any]] = {
    "median": {},
    "infogain": {"target": "c2"},
    "regression": {"target": "r7"},
    "median+entropy-car": {"sensitive": "car", "l": 5},
    "median+supp": {"suppression": 0.01},
    "infogain+entropy-car": {"sensitive": "car", "l": 5, "target": "c2"},
}
COLUMNS = [
    Column("N", "params.rows", ","), Column("run", "name"), Column("compile cpu", "metrics.compile_cpu_s", ".1f"),
    Column("kernels", "metrics.kernels"), Column("signatures", "metrics.signatures"),
    Column("first cpu", "metrics.first_cpu_s", ".1f"), Column("first s", "seconds", ".1f"),
    Column("cached cpu", "metrics.cached_cpu_s", ".1f"), Column("cached s", "metrics.cached_s", ".1f"),
    Column("error", "error"),
]  # fmt: skip


def child(rows: int, run: str, k: int) -> dict[str, Any]:
    """One request on ``rows`` Agrawal rows in this process, with numba's compilations timed."""
    import duckdb
    from numba.core import event
    from numba.core.registry import CPUDispatcher

    import sqlanon
    from agrawal import QI_COLUMNS, generate

    spent: dict[str, float] = {}
    stack: list[list[float]] = []

    class Listener(event.Listener):
        """CPU seconds of each compilation, less those of the compilations inside it."""

        def on_start(self, ev: Any) -> None:
            stack.append([time.process_time(), 0.0])

        def on_end(self, ev: Any) -> None:
            start, inner = stack.pop()
            took = time.process_time() - start
            func = ev.data["dispatcher"].py_func
            name = f"{func.__module__}.{func.__qualname__}"
            spent[name] = spent.get(name, 0.0) + took - inner
            if stack:
                stack[-1][1] += took

    event.register("numba:compile", Listener())
    con = duckdb.connect()
    data = generate(rows)
    con.register("data", data)
    con.execute("CREATE TABLE agrawal AS SELECT * FROM data")
    con.unregister("data")
    kw = dict(RUNS[run])
    qid = [q for q in QI_COLUMNS if q != kw.get("sensitive")]
    cpu, wall = time.process_time(), time.perf_counter()
    sqlanon.anonymize(con, "agrawal", qid=qid, k=k, **kw)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    signatures = {}
    for module in [m for name, m in sys.modules.items() if name.startswith("sqlanon.")]:
        for name, f in vars(module).items():
            if isinstance(f, CPUDispatcher) and f.py_func.__module__ == module.__name__ and f.signatures:
                signatures[f"{module.__name__}.{name}"] = [str(s) for s in f.signatures]
    return {"cpu_s": cpu, "s": wall, "compile_cpu_s": sum(spent.values()), "spent": spent,
            "kernels": len(signatures), "signatures": sum(len(s) for s in signatures.values()),
            "twice": {name: s for name, s in signatures.items() if len(s) > 1}}


def measure(rows: int, run: str, k: int, timeout: float | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The first run (an empty numba cache) and the second (the cache the first left)."""
    cache = tempfile.mkdtemp(prefix="sqlanon-bench-numba-")
    before = os.environ.get("NUMBA_CACHE_DIR")
    os.environ["NUMBA_CACHE_DIR"] = cache  # the children's: this process imports no numba
    try:
        first = harness.run_child(__file__, "child", {"rows": rows, "run": run, "k": k}, timeout)
        cached = harness.run_child(__file__, "child", {"rows": rows, "run": run, "k": k}, timeout)
    finally:
        if before is None:
            del os.environ["NUMBA_CACHE_DIR"]
        else:
            os.environ["NUMBA_CACHE_DIR"] = before
        shutil.rmtree(cache, ignore_errors=True)
    return first, cached


def main(argv: list[str] | None = None) -> None:
    p = harness.arguments(__doc__, rows=200_000, quick={"rows": 20_000}, timeout=True)
    p.add_argument("--k", type=int, default=100)
    p.add_argument("--only", nargs="*", choices=sorted(RUNS), default=list(RUNS))
    args = p.parse_args(argv)
    rec = harness.Recorder.start(__file__, args)
    for run in args.only:
        print(f"# N={args.rows:,}: {run} ...", file=sys.stderr, flush=True)
        first, cached = measure(args.rows, run, args.k, args.timeout)
        error = first.get("error") or cached.get("error")
        metrics = {"compile_cpu_s": first.get("compile_cpu_s"), "kernels": first.get("kernels"),
                   "signatures": first.get("signatures"), "first_cpu_s": first.get("cpu_s"),
                   "cached_cpu_s": cached.get("cpu_s"), "cached_s": cached.get("s"),
                   "cached_compile_cpu_s": cached.get("compile_cpu_s"), "rss_mib": first.get("rss_mib")}
        spent = sorted((first.get("spent") or {}).items(), key=lambda kv: -kv[1])
        details = {"compile_cpu_s": dict(spent), "compiled_twice": first.get("twice") or {},
                   "process_s": [first.get("process_s"), cached.get("process_s")]}
        rec.record(run, {"rows": args.rows, "k": args.k}, first.get("s"), {}, metrics, details, error)
    print()
    harness.print_table(rec.records, COLUMNS)
    total = sum(r["metrics"]["compile_cpu_s"] or 0 for r in rec.records)
    print(f"\n# compile CPU seconds, all runs (each from an empty cache): {total:.1f}; load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
