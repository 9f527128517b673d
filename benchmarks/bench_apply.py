"""Apply benchmark: recode fresh tables with a release's stored rules (``sqlanon.apply``).

    python benchmarks/bench_apply.py [--train-rows 1000000] [--k 100 10] [--rows 1000000 10000000]
        [--dir /tmp/sqlanon-bench-apply] [--duckdb-memory-limit 2GB] [--runs 1] [--compare]
    python benchmarks/bench_apply.py --quick           # 20,000 training rows, fresh 20,000 and 40,000

In one run, on one on-disk DuckDB file (``<dir>/apply_<train rows>.duckdb``, generated once and
reused; its own file, so a concurrent ``bench_core.py`` run is not disturbed):

* train    an Agrawal table ``agrawal`` (seed 0), anonymized once per ``--k`` with
           ``sqlanon.anonymize(con, "agrawal", qid=QI_COLUMNS, k=k, output=f"train_k{k}")``;
           the smaller k gives more rules (about 7,000 at k = 100 and 77,000 at k = 10 for 1M
           training rows);
* fresh    one table per ``--rows`` N generated with another seed (1): the same distributions,
           different rows, so values fall between and beyond the training values;
* scan     the harness's scan-equivalent of ``fresh`` over the nine QIs (best of ``--repeat``
           warm runs);
* copy     ``CREATE TABLE ... AS SELECT * FROM fresh`` (a persistent table, committed, then
           dropped): the cost of writing N rows, which any recoding into a table pays;
* apply    ``sqlanon.release.apply.apply(con, f"train_k{k}", fresh, view=..., replace=True)`` -- wall time
           (best of ``--runs``, as the copy), the tree depth, rows placed, its own ``timings``;
* ratios   apply / scan and apply / copy;
* check    apply on the training table itself reproduces the release's view (EXCEPT ALL both
           ways is empty), once per k;
* cleanup  recoded tables are dropped after they are measured (the file keeps the inputs and
           the releases);
* compare  (``--compare``, smallest N and the fewest rules only) the plans this module's docstring
           measures against: a plain range join of the table against the rules' boxes (DuckDB
           picks an inequality join) and one nested ``CASE`` expression of the same tree.

Records: ``scan`` and ``copy`` per N, ``apply`` per (k, N) with the ratios ``per_scan`` and
``per_copy`` (and, with ``--compare``, the alternatives' seconds in its metrics).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import duckdb  # noqa: E402
from sqlglot import exp  # noqa: E402

import harness  # noqa: E402  (puts the checkout first on sys.path)
import sqlanon  # noqa: E402
from agrawal import QI_COLUMNS, write_duckdb  # noqa: E402
from harness import Column  # noqa: E402
from sqlanon.engine import engine_for  # noqa: E402
from sqlanon.engine import sqlgen as g  # noqa: E402
from sqlanon.release.apply import _bounds_table, _boxes, apply, guillotine  # noqa: E402
from sqlanon.release.regions import load_release  # noqa: E402

TRAIN = "agrawal"
COLUMNS = [
    Column("measurement", "name"), Column("k", "params.k"), Column("rules", "metrics.rules", ","),
    Column("depth", "metrics.depth"), Column("N", "params.rows", ","), Column("seconds", "seconds", ".3f"),
    Column("/scan", "ratios.per_scan", ".0f"), Column("/copy", "ratios.per_copy", ".1f"),
    Column("unplaced", "metrics.unplaced", ","), Column("train reproduced", "metrics.train_reproduced"),
]  # fmt: skip


def fresh_name(n: int) -> str:
    return f"fresh_{n}"


def copy_seconds(con: duckdb.DuckDBPyConnection, table: str, runs: int) -> float:
    target = "__bench_copy"
    create = g.create_table_as(target, exp.select("*").from_(g.table(table)), temporary=False, replace=True)

    def run() -> None:
        con.execute("BEGIN")
        con.execute(create.sql(dialect=g.DIALECT))
        con.execute("COMMIT")

    seconds = harness.timed(run, runs, warmup=False).best
    con.execute(g.drop(target, "TABLE").sql(dialect=g.DIALECT))
    return seconds


def count(con: duckdb.DuckDBPyConnection, query: exp.Expression) -> int:
    wrapped = exp.select(exp.Count(this=exp.Star())).from_(
        exp.Subquery(this=query, alias=exp.TableAlias(this=g.ident("q"))))
    return con.execute(wrapped.sql(dialect=g.DIALECT)).fetchall()[0][0]


def same_as_view(con: duckdb.DuckDBPyConnection, view: str, applied: str) -> bool:
    a, b = exp.select("*").from_(g.table(view)), exp.select("*").from_(g.table(applied))
    return count(con, exp.except_(a, b, distinct=False)) == 0 and count(con, exp.except_(b, a, distinct=False)) == 0


# ----------------------------------------------------------------------------- alternatives
def range_join(view: str, table: str) -> exp.Select:
    """Every row joined to the rule whose box holds it: ``q_lo < v <= q_hi`` on all nine QIs
    (Agrawal has no NULLs; unbounded ends become the INTEGER limits)."""
    conditions = []
    for c in QI_COLUMNS:
        lo = exp.Coalesce(this=g.col(f"{c}_lo", "r"), expressions=[g.lit(-(2**31))])
        hi = exp.Coalesce(this=g.col(f"{c}_hi", "r"), expressions=[g.lit(2**31 - 1)])
        conditions += [exp.GT(this=g.col(c, "x"), expression=lo), exp.LTE(this=g.col(c, "x"), expression=hi)]
    return (exp.select(exp.Column(this=exp.Star(), table=g.ident("x")), g.col("region", "r"))
            .from_(exp.alias_(g.table(table), g.ident("x"), table=True))
            .join(exp.alias_(g.table(f"{view}_rules"), g.ident("r"), table=True), on=exp.and_(*conditions)))


def nested_case(con: duckdb.DuckDBPyConnection, view: str, table: str) -> tuple[exp.Select, int]:
    """The same balanced tree as ``apply`` builds, as one nested ``CASE`` expression."""
    engine = engine_for(con)
    try:
        m = load_release(con, view)
        bounds = {q.name: _bounds_table(engine, m, i, q) for i, q in enumerate(m.qis)}
        region, _, a, b, lo, hi = _boxes(engine, m, bounds)
        tree = guillotine(a, b, lo, hi)
        values = {q.name: dict(con.execute(exp.select(g.col("r"), g.col("v")).from_(g.table(bounds[q.name]))
                                           .sql(dialect=g.DIALECT)).fetchall()) for q in m.qis}
    finally:
        engine.cleanup()

    def node(key: int) -> exp.Expression:
        if key >= 0:
            return g.lit(int(region[key]))
        j = -key - 1
        q = m.qis[int(tree.attr[j])].name
        test = exp.LTE(this=g.col(q, "x"), expression=g.lit(values[q][int(tree.cut[j])]))
        return exp.Case().when(test, node(int(tree.left[j])), copy=False).else_(node(int(tree.right[j])), copy=False)

    query = exp.select(exp.Column(this=exp.Star(), table=g.ident("x")), g.alias(node(tree.root), "region")).from_(
        exp.alias_(g.table(table), g.ident("x"), table=True))
    return query, len(tree.attr)


def compare(con: duckdb.DuckDBPyConnection, view: str, table: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    query, nodes = nested_case(con, view, table)
    out["case_nodes"] = nodes
    for name, q in (("nested_case", query), ("range_join", range_join(view, table))):
        sql = g.create_table_as("__bench_alt", q, replace=True).sql(dialect=g.DIALECT)
        print(f"# compare: {name} ...", file=sys.stderr, flush=True)
        start = time.perf_counter()
        con.execute(sql)
        out[f"{name}_s"] = round(time.perf_counter() - start, 3)
        out[f"{name}_rows"] = con.execute("SELECT count(*) FROM __bench_alt").fetchall()[0][0]
    con.execute(g.drop("__bench_alt", "TABLE").sql(dialect=g.DIALECT))
    return out


# ----------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> None:
    p = harness.arguments(__doc__, rows=[1_000_000, 10_000_000],
                          quick={"rows": [20_000, 40_000], "train_rows": 20_000})  # fmt: skip
    p.set_defaults(dir=str(Path(harness.DATA_DIR + "-apply")))  # its own file: a concurrent bench_core is not disturbed
    p.add_argument("--train-rows", type=int, default=1_000_000)
    p.add_argument("--k", type=int, nargs="+", default=[100, 10])
    p.add_argument("--duckdb-memory-limit", default=None, help="SET memory_limit, e.g. 2GB (default: DuckDB's)")
    p.add_argument("--runs", type=int, default=1, help="best of this many copy and apply runs")
    p.add_argument("--compare", action="store_true", help="also time a range join and a nested CASE")
    args = p.parse_args(argv)

    Path(args.dir).mkdir(parents=True, exist_ok=True)
    db = str(Path(args.dir) / f"apply_{args.train_rows}.duckdb")
    write_duckdb(db, args.train_rows, table=TRAIN, seed=0)
    for n in args.rows:
        write_duckdb(db, n, table=fresh_name(n), seed=1)
    rec = harness.Recorder.start(__file__, args)

    con = duckdb.connect(db)
    if args.duckdb_memory_limit:
        con.execute("SET memory_limit = $limit", {"limit": args.duckdb_memory_limit})
    try:
        scans, copies = {}, {}
        for n in args.rows:
            scans[n] = harness.scan_seconds(lambda sql: con.execute(sql).fetchall(), fresh_name(n), QI_COLUMNS,
                                            args.repeat)  # fmt: skip
            rec.record("scan", {"rows": n, "repeat": args.repeat}, scans[n])
            copies[n] = copy_seconds(con, fresh_name(n), args.runs)
            rec.record("copy", {"rows": n, "runs": args.runs}, copies[n], {"per_scan": harness.ratio(copies[n], scans[n], 1)})
        for k in args.k:
            view = f"train_k{k}"
            print(f"# anonymizing {args.train_rows:,} rows, k={k} ...", file=sys.stderr, flush=True)
            start = time.perf_counter()
            release = sqlanon.anonymize(con, TRAIN, qid=QI_COLUMNS, k=k,
                                        output=sqlanon.Output(view=view, replace=True))
            anonymize_s = time.perf_counter() - start
            check = apply(con, release, TRAIN, view=f"{view}_again", replace=True)
            identical = same_as_view(con, view, check.view)
            con.execute(g.drop(check.view, "TABLE").sql(dialect=g.DIALECT))  # keep the file small
            for n in args.rows:
                print(f"# apply k={k} to N={n:,} ...", file=sys.stderr, flush=True)
                applied: list[Any] = []

                def run() -> None:
                    applied.append(apply(con, view, fresh_name(n), view=f"{fresh_name(n)}_k{k}", replace=True))

                best = harness.timed(run, args.runs, warmup=False).best
                assert applied and applied[-1].rows == n
                con.execute(g.drop(applied[-1].view, "TABLE").sql(dialect=g.DIALECT))
                metrics = {"rules": release.regions, "classes": release.partitions, "depth": applied[-1].depth,
                           "anonymize_s": anonymize_s, "placed": applied[-1].placed, "unplaced": applied[-1].unplaced,
                           "train_reproduced": identical}  # fmt: skip
                if args.compare and n == min(args.rows) and k == max(args.k):
                    metrics |= compare(con, view, fresh_name(n))
                rec.record("apply", {"rows": n, "k": k, "train_rows": args.train_rows, "runs": args.runs,
                                     "duckdb_memory_limit": args.duckdb_memory_limit}, best,
                           {"per_scan": harness.ratio(best, scans[n], 1), "per_copy": harness.ratio(best, copies[n])},
                           metrics, {"timings": dict(applied[-1].timings)})  # fmt: skip
    finally:
        con.close()
    print(f"\ntrain {args.train_rows:,} rows (seed 0), fresh tables seed 1; memory_limit {args.duckdb_memory_limit}")
    harness.print_table(rec.records, COLUMNS)
    for r in rec.records:
        if r["name"] == "apply":
            print(f"k={r['params']['k']} N={r['params']['rows']:,} apply timings: {r['details']['timings']}")


if __name__ == "__main__":
    main()
