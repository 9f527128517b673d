"""View benchmark: what reading a release's view costs against a table of its rows.

    python benchmarks/bench_view.py [--rows 1000000] [--k 100] [--repeat 3]
    python benchmarks/bench_view.py --quick            # 20,000 rows

A live view (a source with a key, :mod:`sqlanon.publish.view`) re-checks the release's requirement each
time it is read: it joins the source to the row map on the key and the hash of the guarded
columns, counts every class (and, with l-diversity, the sensitive values per class) and
suppresses the classes that no longer qualify. In one run, on an in-memory DuckDB:

* source    an Agrawal table (seed 0) with ``id BIGINT PRIMARY KEY``, and a copy without the key;
* releases  ``k`` alone, and ``k`` + entropy l-diversity (l = 2) on ``elevel``, of each: the
            keyed one a live view, the keyless one a view of a snapshot (its rows' non-QI
            columns and class, joined to the rules; :func:`sqlanon.publish.view.snapshot_view`);
* table     ``CREATE TABLE ... AS SELECT * FROM <live view>``: the same rows, frozen;
* read      best of ``--repeat`` warm wall times (after one unmeasured run, the harness's rule)
            of ``SELECT count(*), sum(hash(r)) FROM r`` for the live view, the snapshot's view
            and the table (every column materialized), and of a selective query
            (``WHERE age_min >= 60``);
* ratios    a record per (release, query, relation read) with ``per_table``: its time over the
            frozen table's.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402  (puts the checkout first on sys.path)
from agrawal import QI_COLUMNS, generate  # noqa: E402
from harness import Column  # noqa: E402

QUERIES = {"full read": "SELECT count(*), sum(hash(r)) FROM {r} AS r",
           "age_min >= 60": "SELECT count(*), sum(r7) FROM {r} WHERE age_min >= 60"}
READ = {"live view": "live", "snapshot view": "snapshot", "table": "frozen"}
COLUMNS = [
    Column("release", "params.release"), Column("query", "params.query"), Column("read", "name"),
    Column("seconds", "seconds", ".3f"), Column("/table", "ratios.per_table", ".2f"),
    Column("classes", "metrics.classes", ","),
]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    import duckdb

    import sqlanon

    parser = harness.arguments(__doc__, rows=1_000_000, quick={"rows": 20_000})
    parser.add_argument("--k", type=int, default=100)
    args = parser.parse_args(argv)
    rec = harness.Recorder.start(__file__, args, ["sqlglot"])
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
    for label, extra in (("k", {}), ("k + entropy l=2", {"sensitive": "elevel", "l": 2})):
        release = sqlanon.anonymize(con, "agrawal", qid, args.k, output=sqlanon.Output(view="live", replace=True),
                                    **extra)
        snapshot = sqlanon.anonymize(con, "keyless", qid, args.k,
                                     output=sqlanon.Output(view="snapshot", replace=True), **extra)
        assert snapshot.materialized and not release.materialized
        con.execute("CREATE OR REPLACE TABLE frozen AS SELECT * FROM live")
        for query, sql in QUERIES.items():
            seconds = {name: harness.timed(lambda: con.execute(sql.format(r=relation)).fetchall(), args.repeat).best
                       for name, relation in READ.items()}  # fmt: skip
            for name, s in seconds.items():
                rec.record(name, {"rows": args.rows, "k": args.k, "release": label, "query": query,
                                  "repeat": args.repeat}, s,
                           {"per_table": harness.ratio(s, seconds["table"])}, {"classes": release.partitions})  # fmt: skip
    print()
    harness.print_table(rec.records, COLUMNS)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
