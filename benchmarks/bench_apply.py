"""Apply benchmark: recode fresh tables with a release's stored rules (``sqlanon.apply``).

    python benchmarks/bench_apply.py [--train-rows 1000000] [--k 100 10] [--rows 1000000 10000000]
        [--dir /tmp/sqlanon-bench-apply] [--duckdb-memory-limit 2GB] [--repeat 1] [--compare]

In one run, on one on-disk DuckDB file (``<dir>/apply_<train rows>.duckdb``, generated once and
reused; its own file, so a concurrent ``bench_core.py`` run is not disturbed):

* train    an Agrawal table ``agrawal`` (seed 0), anonymized once per ``--k`` with
           ``sqlanon.anonymize(con, "agrawal", qid=QI_COLUMNS, k=k, view=f"train_k{k}")``;
           the smaller k gives more rules (about 7,000 at k = 100 and 77,000 at k = 10 for 1M
           training rows);
* fresh    one table per ``--rows`` N generated with another seed (1): the same distributions,
           different rows, so values fall between and beyond the training values;
* scan     best of 3 wall times of ``SELECT sum(q) ... FROM fresh`` over the nine QIs: one
           scan-equivalent;
* copy     ``CREATE TABLE ... AS SELECT * FROM fresh`` (a persistent table, committed, then
           dropped): the cost of writing N rows, which any recoding into a table pays;
* apply    ``sqlanon.release.apply.apply(con, f"train_k{k}", fresh, view=..., replace=True)`` -- wall time
           (best of ``--repeat``), the tree depth, rows placed, its own ``timings``;
* ratios   apply / scan and apply / copy;
* check    apply on the training table itself reproduces the release's view (EXCEPT ALL both
           ways is empty), once per k;
* cleanup  recoded tables are dropped after they are measured (the file keeps the inputs and
           the releases);
* compare  (``--compare``, smallest N and the fewest rules only) the plans this module's docstring
           measures against: a plain range join of the table against the rules' boxes (DuckDB
           picks an inequality join) and one nested ``CASE`` expression of the same tree.

Results are printed as JSON lines (a machine line, one line per (k, N)) and as a table.
"""

from __future__ import annotations

import sqlanon
import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import duckdb
from sqlglot import exp

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(HERE)]  # run from a checkout without installing

import sqlanon  # noqa: E402
from agrawal import QI_COLUMNS, write_duckdb  # noqa: E402
from machine import machine  # noqa: E402
from sqlanon.engine import sqlgen as g  # noqa: E402
from sqlanon.release.apply import _boxes, _bounds_table, apply, guillotine  # noqa: E402
from sqlanon.engine import engine_for  # noqa: E402
from sqlanon.release.regions import load_release  # noqa: E402

TRAIN = "agrawal"


def fresh_name(n: int) -> str:
    return f"fresh_{n}"


def best_of(repeats: int, run) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def scan_seconds(con: duckdb.DuckDBPyConnection, table: str) -> float:
    query = exp.select(*[exp.Sum(this=g.col(c)) for c in QI_COLUMNS]).from_(g.table(table)).sql(dialect=g.DIALECT)
    return best_of(3, lambda: con.execute(query).fetchall())


def copy_seconds(con: duckdb.DuckDBPyConnection, table: str, repeats: int) -> float:
    target = "__bench_copy"
    create = g.create_table_as(target, exp.select("*").from_(g.table(table)), temporary=False, replace=True)

    def run() -> None:
        con.execute("BEGIN")
        con.execute(create.sql(dialect=g.DIALECT))
        con.execute("COMMIT")

    seconds = best_of(repeats, run)
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
def print_table(records: list[dict[str, Any]]) -> None:
    cols = [("k", "k", "{}"), ("rules", "rules", "{:,}"), ("depth", "depth", "{}"), ("N", "n", "{:,}"),
            ("scan s", "scan_s", "{:.3f}"), ("copy s", "copy_s", "{:.2f}"), ("apply s", "apply_s", "{:.2f}"),
            ("apply/scan", "apply_per_scan", "{:.0f}"), ("apply/copy", "apply_per_copy", "{:.1f}"),
            ("unplaced", "unplaced", "{:,}")]
    cells = [[h for h, _, _ in cols]]
    for rec in records:
        cells.append([fmt.format(rec[key]) if rec.get(key) is not None else "-" for _, key, fmt in cols])
    widths = [max(len(row[i]) for row in cells) for i in range(len(cols))]
    for row in cells:
        print("  ".join(c.rjust(w) for c, w in zip(row, widths)))
    for rec in records:
        print(f"k={rec['k']} N={rec['n']:,} apply timings: {rec['timings']}")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--train-rows", type=int, default=1_000_000)
    p.add_argument("--k", type=int, nargs="+", default=[100, 10])
    p.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000], help="fresh table sizes")
    p.add_argument("--dir", default="/tmp/sqlanon-bench-apply", help="where the DuckDB file lives")
    p.add_argument("--duckdb-memory-limit", default=None, help="SET memory_limit, e.g. 2GB (default: DuckDB's)")
    p.add_argument("--repeat", type=int, default=1, help="best of this many copy and apply runs")
    p.add_argument("--compare", action="store_true", help="also time a range join and a nested CASE")
    args = p.parse_args(argv)

    Path(args.dir).mkdir(parents=True, exist_ok=True)
    db = str(Path(args.dir) / f"apply_{args.train_rows}.duckdb")
    start = time.perf_counter()
    write_duckdb(db, args.train_rows, table=TRAIN, seed=0)
    for n in args.rows:
        write_duckdb(db, n, table=fresh_name(n), seed=1)
    info = machine()
    print(json.dumps({"machine": info, "prepare_s": round(time.perf_counter() - start, 2)}), flush=True)

    con = duckdb.connect(db)
    if args.duckdb_memory_limit:
        con.execute("SET memory_limit = $limit", {"limit": args.duckdb_memory_limit})
    records = []
    try:
        scans = {n: scan_seconds(con, fresh_name(n)) for n in args.rows}
        copies = {n: copy_seconds(con, fresh_name(n), args.repeat) for n in args.rows}
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
                best, applied = float("inf"), None
                for _ in range(args.repeat):
                    started = time.perf_counter()
                    applied = apply(con, view, fresh_name(n), view=f"{fresh_name(n)}_k{k}", replace=True)
                    best = min(best, time.perf_counter() - started)
                assert applied is not None and applied.rows == n
                con.execute(g.drop(applied.view, "TABLE").sql(dialect=g.DIALECT))
                rec = {"k": k, "rules": release.regions, "classes": release.partitions, "depth": applied.depth,
                       "train_rows": args.train_rows, "anonymize_s": round(anonymize_s, 2), "n": n,
                       "scan_s": round(scans[n], 4), "copy_s": round(copies[n], 3), "apply_s": round(best, 3),
                       "apply_per_scan": round(best / scans[n], 1), "apply_per_copy": round(best / copies[n], 2),
                       "placed": applied.placed, "unplaced": applied.unplaced, "timings": dict(applied.timings),
                       "train_reproduced": identical, "memory_limit": args.duckdb_memory_limit}
                if args.compare and n == min(args.rows) and k == max(args.k):
                    rec.update(compare(con, view, fresh_name(n)))
                records.append(rec)
                print(json.dumps(rec), flush=True)
    finally:
        con.close()
    print(f"\nmachine: {info['nproc']} cores ({info['cpu']}), {info['memory_gib']} GiB; duckdb {info['duckdb']}, "
          f"numpy {info['numpy']}, python {info['python']}; train {args.train_rows:,} rows (seed 0), "
          f"fresh tables seed 1; memory_limit {args.duckdb_memory_limit}")
    print_table(records)


if __name__ == "__main__":
    main()
