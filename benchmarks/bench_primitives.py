"""The passes every anonymize() run makes, timed alone on DuckDB and on Spark in one run (issue 15).

    python benchmarks/bench_primitives.py --rows 10000000 [--dir /tmp/sqlanon-bench]
        [--master 'local[2]'] [--shuffle-partitions 8] [--driver-memory 8g] [--duckdb-end-to-end S]
    python benchmarks/bench_primitives.py --quick      # 20,000 rows

Needs PySpark and Java, as bench_spark.py.

Why: Spark's target was "within 3x of DuckDB's time". An anonymize() run is made of a few kinds of
full passes over the table -- check the key, build the QI domains, write the coded working table,
rewrite it per SQL level, join the source to the row map for the published view -- plus the
in-memory finish (numpy, the same code on both engines). This script times each pass alone, as
anonymize() runs it on the nine Agrawal QIs, from the same Parquet files on both engines (DuckDB:
the on-disk file bench_spark.py loads; Spark: ``CREATE TABLE ... USING parquet LOCATION``), and
prints Spark/DuckDB per pass. The SQL is a hand-written equivalent of what the library generates
(fixed benchmark names only), so each number is one pass and nothing else:

* ``key check``: ``GROUP BY id HAVING count(*) > 1`` (spec's check of ``key=``);
* ``domains``: per QI ``CREATE TABLE dom AS SELECT v, row_number() OVER (ORDER BY v) - 1 ...
  FROM (SELECT DISTINCT q ...)`` (encode's code tables), nine statements;
* ``encode``: the working table ``(rid, pid, qhash, q0..q8)`` with the nine code tables joined
  (broadcast on Spark, as the library hints);
* ``rewrite``: one SQL level's rewrite: the working table joined to a small splits table;
* ``floor write``: the same columns written with no join (a scan and a write, nothing else);
* ``view join``: the source joined to the row map on the key, grouped (what reading the published
  view costs beyond the source's scan).

Then the **lower bound**: even with no SQL level at all and a free in-memory finish, a Spark run
costs at least key check + domains + encode + view join; that sum is compared with 3x DuckDB's
measured end-to-end time when given (``--duckdb-end-to-end S``, e.g. from bench_spark.py's run).

Records: one per (pass, engine), Spark's with the ratio ``per_duckdb``; and ``spark lower bound``
(with ``per_duckdb_end_to_end`` when ``--duckdb-end-to-end`` is given).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import duckdb  # noqa: E402

import harness  # noqa: E402  (puts the checkout first on sys.path)
from agrawal import QI_COLUMNS, write_parquet  # noqa: E402
from bench_spark import load_duckdb, parquet_dir, spark_session  # noqa: E402
from harness import Column  # noqa: E402

QI = list(QI_COLUMNS)


def statements(create: str, temp: str, hint: str, hashing: str) -> dict[str, list[str]]:
    """Each pass as its statements; ``create``/``temp`` spell a table creation, ``hint`` the
    broadcast hint (Spark) and ``hashing`` the row hash function."""
    codes = ", ".join(f"CAST(coalesce(d{i}.code, 0) AS INT) AS q{i}" for i in range(len(QI)))
    joins = " ".join(f"LEFT JOIN dom{i} d{i} ON b.{c} = d{i}.v" for i, c in enumerate(QI))
    qs = ", ".join(f"w.q{i}" for i in range(len(QI)))
    return {
        "key check": ["SELECT count(*) FROM (SELECT 1 FROM agrawal WHERE id IS NOT NULL GROUP BY id HAVING count(*) > 1) d"],
        "domains": [f"{create} dom{i} {temp} AS SELECT v, row_number() OVER (ORDER BY v) - 1 AS code FROM "
                    f"(SELECT DISTINCT {c} AS v FROM agrawal WHERE {c} IS NOT NULL) d" for i, c in enumerate(QI)],
        "encode": [f"{create} work {temp} AS SELECT {hint} b.id AS rid, CAST(0 AS BIGINT) AS pid, "
                   f"{hashing}({', '.join(QI)}) AS qhash, {codes} FROM agrawal b {joins}"],
        "rewrite": [f"{create} splits {temp} AS SELECT * FROM (VALUES (0, 0, 0, 64999, 1), (0, 0, 65000, 200000, 2)) "
                    "AS s(pid, a, lo, hi, child)",
                    f"{create} work2 {temp} AS SELECT w.rid, coalesce(s.child, w.pid) AS pid, w.qhash, {qs} "
                    "FROM work w LEFT JOIN splits s ON w.pid = s.pid AND w.q0 BETWEEN s.lo AND s.hi"],
        "floor write": [f"{create} floor {temp} AS SELECT id AS rid, CAST(0 AS BIGINT) AS pid, {hashing}({', '.join(QI)}) "
                        f"AS qhash, {', '.join(f'CAST({c} AS INT) AS q{i}' for i, c in enumerate(QI))} FROM agrawal"],
        "view join": ["SELECT count(*), sum(w.q0), max(b.salary) FROM agrawal b JOIN work2 w ON b.id = w.rid"],
    }


def timed(run: Callable[[str], object], passes: dict[str, list[str]]) -> dict[str, float]:
    out = {}
    for name, sqls in passes.items():
        start = time.perf_counter()
        for sql in sqls:
            run(sql)
        out[name] = time.perf_counter() - start
        print(f"  {name:12s} {out[name]:8.2f} s", flush=True)
    return out


COLUMNS = [Column("pass", "name"), Column("engine", "params.engine"), Column("seconds", "seconds", ".2f"),
           Column("spark/duckdb", "ratios.per_duckdb", ".1f")]


def main(argv: list[str] | None = None) -> None:
    ap = harness.arguments(__doc__, rows=10_000_000, quick={"rows": 20_000})
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--shuffle-partitions", type=int, default=8)
    ap.add_argument("--driver-memory", default="8g")
    ap.add_argument("--duckdb-end-to-end", type=float, default=None,
                    help="DuckDB's measured anonymize() seconds on the same table, for the bound")
    args = ap.parse_args(argv)
    harness.require("pyspark", "pyspark", "the Spark passes run in PySpark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise SystemExit("bench_primitives.py: Java is not installed (Spark needs a JVM)")
    rec = harness.Recorder.start(__file__, args, ["pyspark"])
    Path(args.dir).mkdir(parents=True, exist_ok=True)
    parquet = write_parquet(parquet_dir(args.dir, args.rows), args.rows)
    path, _ = load_duckdb(args.dir, args.rows, parquet)

    work = tempfile.mkdtemp(prefix="prim", dir=args.dir)
    try:
        copy = Path(work) / "copy.duckdb"
        shutil.copy(path, copy)  # the passes create tables: never in the shared file
        con = duckdb.connect(str(copy))
        print("duckdb")
        duck = timed(lambda s: con.execute(s).fetchall(), statements("CREATE TABLE", "", "", "hash"))
        con.close()

        spark = spark_session(args.master, str(Path(work) / "warehouse"), args.shuffle_partitions, args.driver_memory)
        spark.sparkContext.setLogLevel("ERROR")
        spark.sql(f"CREATE TABLE agrawal USING parquet LOCATION '{parquet}'")
        spark.sql("SELECT count(*) FROM agrawal").collect()
        hint = "/*+ " + ", ".join(f"BROADCAST(d{i})" for i in range(len(QI))) + " */"
        print(f"spark {args.master}")
        sp = timed(lambda s: spark.sql(s).collect(), statements("CREATE TABLE", "USING parquet", hint, "xxhash64"))
        spark.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)

    params = {"rows": args.rows, "master": args.master, "shuffle_partitions": args.shuffle_partitions}
    for name in duck:
        rec.record(name, {**params, "engine": "duckdb"}, duck[name])
        rec.record(name, {**params, "engine": "spark"}, sp[name], {"per_duckdb": harness.ratio(sp[name], duck[name], 1)})
    print()
    harness.print_table(rec.records, COLUMNS)
    bound = sum(sp[p] for p in ("key check", "domains", "encode", "view join"))
    print(f"\nSpark lower bound (key check + domains + encode + view join, no SQL level, free finish): {bound:.1f} s")
    if args.duckdb_end_to_end:
        print(f"3x DuckDB's end-to-end {args.duckdb_end_to_end:.1f} s = {3 * args.duckdb_end_to_end:.1f} s; "
              f"bound / DuckDB = {bound / args.duckdb_end_to_end:.2f}x")
    rec.record("spark lower bound", {**params, "engine": "spark", "duckdb_end_to_end_s": args.duckdb_end_to_end},
               bound, {"per_duckdb_end_to_end": harness.ratio(bound, args.duckdb_end_to_end)})


if __name__ == "__main__":
    main()
