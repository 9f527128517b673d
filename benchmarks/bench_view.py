"""View benchmark: what reading a release's view costs against a table of its rows.

    python benchmarks/bench_view.py [--rows 1000000] [--k 100] [--repeat 3]

A live view (a source with a key, :mod:`sqlanon.publish.view`) re-checks the release's requirement each
time it is read: it joins the source to the row map on the key and the hash of the guarded
columns, counts every class (and, with l-diversity, the sensitive values per class) and
suppresses the classes that no longer qualify. In one run, on an in-memory DuckDB:

* source    an Agrawal table (seed 0) with ``id BIGINT PRIMARY KEY``, and a copy without the key;
* releases  ``k`` alone, and ``k`` + entropy l-diversity (l = 2) on ``elevel``, of each: the
            keyed one a live view, the keyless one a view of a snapshot (its rows' non-QI
            columns and class, joined to the rules; :func:`sqlanon.publish.view.snapshot_view`);
* table     ``CREATE TABLE ... AS SELECT * FROM <live view>``: the same rows, frozen;
* read      best of ``--repeat`` wall times of ``SELECT count(*), sum(hash(r)) FROM r`` for the
            live view, the snapshot's view and the table (every column materialized), and of a
            selective query (``WHERE age_min >= 60``);
* ratios    live view / table and snapshot's view / table, printed as JSON lines and a table.
"""

from __future__ import annotations

import sqlanon
import argparse
import json
import sys
import time
from pathlib import Path

import duckdb

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]  # the checkout's sqlanon, also when an older one is installed
from agrawal import QI_COLUMNS, generate  # noqa: E402
from machine import machine  # noqa: E402

import sqlanon  # noqa: E402


def best(con: duckdb.DuckDBPyConnection, sql: str, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        con.execute(sql).fetchall()
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    print(json.dumps({"machine": machine("duckdb", "numpy", "sqlglot")}))
    con = duckdb.connect()
    frame = generate(args.rows)
    frame.insert(0, "id", range(len(frame)))
    con.register("frame", frame)
    kinds = {"f": "DOUBLE", "i": "BIGINT", "u": "BIGINT"}
    columns = ", ".join(f'"{c}" {"BIGINT PRIMARY KEY" if c == "id" else kinds.get(frame[c].dtype.kind, "VARCHAR")}'
                        for c in frame.columns)
    con.execute(f"CREATE TABLE agrawal ({columns})")
    con.execute("INSERT INTO agrawal SELECT * FROM frame")
    con.unregister("frame")
    con.execute("CREATE TABLE keyless AS SELECT * FROM agrawal")
    qid = [q for q in QI_COLUMNS if q != "elevel"]
    rows = []
    for label, extra in (("k", {}), ("k + entropy l=2", {"sensitive": "elevel", "l": 2})):
        release = sqlanon.anonymize(con, "agrawal", qid, args.k, output=sqlanon.Output(view="live", replace=True),
                                    **extra)
        snapshot = sqlanon.anonymize(con, "keyless", qid, args.k,
                                     output=sqlanon.Output(view="snapshot", replace=True), **extra)
        assert snapshot.materialized and not release.materialized
        con.execute("CREATE OR REPLACE TABLE frozen AS SELECT * FROM live")
        for query, sql in (("full read", "SELECT count(*), sum(hash(r)) FROM {r} AS r"),
                           ("age_min >= 60", "SELECT count(*), sum(r7) FROM {r} WHERE age_min >= 60")):
            view = best(con, sql.format(r="live"), args.repeat)
            snap = best(con, sql.format(r="snapshot"), args.repeat)
            table = best(con, sql.format(r="frozen"), args.repeat)
            row = {"rows": args.rows, "release": label, "query": query, "live_view_s": round(view, 3),
                   "snapshot_view_s": round(snap, 3), "table_s": round(table, 3),
                   "live_ratio": round(view / table, 2), "snapshot_ratio": round(snap / table, 2),
                   "classes": release.partitions}
            print(json.dumps(row))
            rows.append(row)
    print(f"\n{'release':<18}{'query':<16}{'live view s':>12}{'snapshot view s':>16}{'table s':>9}"
          f"{'live/table':>11}{'snap/table':>11}")
    for r in rows:
        print(f"{r['release']:<18}{r['query']:<16}{r['live_view_s']:>12.3f}{r['snapshot_view_s']:>16.3f}"
              f"{r['table_s']:>9.3f}{r['live_ratio']:>11.2f}{r['snapshot_ratio']:>11.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
