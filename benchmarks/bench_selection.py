"""Selection benchmark: the imprecision of Agrawal's function C2 as a selection (KDD 2006,
Section 5.4, Figure 9), for Median Mondrian, Median restricted to age and salary, and Selection
Mondrian with C2's three rectangles as query regions.

    python benchmarks/bench_selection.py [--rows 100000] [--k 10 50 100 250 500] [--seed 0]
    python benchmarks/bench_selection.py --quick       # 20,000 rows, k in {10, 100}

C2 (Agrawal et al., 1993) is a union of three age x salary boxes::

    (age < 40 AND salary BETWEEN 50000 AND 100000)
    OR (age >= 40 AND age < 60 AND salary BETWEEN 75000 AND 125000)
    OR (age >= 60 AND salary BETWEEN 25000 AND 75000)

* ``median``: Median Mondrian over the nine Agrawal QIs;
* ``median(age,salary)``: Median Mondrian splitting only age and salary (the other QIs fully
  generalized; for this selection, which reads only age and salary, its regions are those of a
  release with ``qid=["age", "salary"]``, which is what runs);
* ``selection``: Selection Mondrian over the nine QIs (``selections=`` the three boxes, then
  Median).

Imprecision is ``|Pr(V)| - |Pr(T)|`` of the C2 predicate over the published view: rows of every
class whose published box overlaps one of the boxes, minus the rows satisfying C2
(:func:`sqlanon.release.imprecision.imprecision`). Everything runs in one process on one in-memory
DuckDB, on the same data; each (variant, k) is a record (seconds, imprecision, classes), with
``selection``'s imprecision over ``median``'s as the ratio ``imprecision_per_median``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402  (puts the checkout first on sys.path)
from agrawal import QI_COLUMNS, generate  # noqa: E402
from harness import Column  # noqa: E402

C2_BOXES = (
    "age < 40 AND salary BETWEEN 50000 AND 100000",
    "age >= 40 AND age < 60 AND salary BETWEEN 75000 AND 125000",
    "age >= 60 AND salary BETWEEN 25000 AND 75000",
)
C2 = " OR ".join(f"({b})" for b in C2_BOXES)
VARIANTS = ("median", "median(age,salary)", "selection")
COLUMNS = [
    Column("k", "params.k"), Column("variant", "name"), Column("imprecision", "metrics.imprecision", ","),
    Column("classes", "metrics.classes", ","), Column("seconds", "seconds", ".2f"),
    Column("/median imprecision", "ratios.imprecision_per_median", ".3f"),
]  # fmt: skip


def run(con: Any, variant: str, k: int) -> tuple[int, int, float]:
    """(imprecision, classes, seconds) of one variant."""
    import sqlanon

    qid = ["age", "salary"] if variant == "median(age,salary)" else QI_COLUMNS
    extra = {"selections": list(C2_BOXES)} if variant == "selection" else {}
    start = time.perf_counter()
    release = sqlanon.anonymize(con, "agrawal", qid=qid, k=k, output=sqlanon.Output(view="sel_anon", replace=True),
                                **extra)
    seconds = time.perf_counter() - start
    measured = sqlanon.imprecision(con, release, C2)
    return measured.total, release.partitions, seconds


def main(argv: list[str] | None = None) -> None:
    import duckdb

    p = harness.arguments(__doc__, rows=100_000, quick={"rows": 20_000, "k": [10, 100]})
    p.add_argument("--k", type=int, nargs="+", default=[10, 50, 100, 250, 500])
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    rec = harness.Recorder.start(__file__, args)
    con = duckdb.connect()
    data = generate(args.rows, seed=args.seed)  # noqa: F841 (read by name below)
    con.execute("CREATE TABLE agrawal AS SELECT * FROM data")
    true_rows = con.execute(f"SELECT count(*) FROM agrawal WHERE {C2}").fetchone()[0]  # our own constant
    print(f"# Agrawal rows: {args.rows:,} (seed {args.seed}); rows satisfying C2: {true_rows:,}")
    for k in args.k:
        results = {v: run(con, v, k) for v in VARIANTS}
        for v, (imprecision, classes, seconds) in results.items():
            rec.record(v, {"rows": args.rows, "seed": args.seed, "k": k}, seconds,
                       {"imprecision_per_median": harness.ratio(imprecision, max(results["median"][0], 1), 3)},
                       {"imprecision": imprecision, "classes": classes, "c2_rows": true_rows})  # fmt: skip
    print()
    harness.print_table(rec.records, COLUMNS)


if __name__ == "__main__":
    main()
