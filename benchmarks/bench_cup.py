"""Mondrian's suppression limit on held-out data: ARX's CUP extract with ARX's ZIP hierarchy (issue 52).

    python benchmarks/bench_cup.py --cup /work/data/cup                # default QI sets, k 50, 0 and 2 %
    python benchmarks/bench_cup.py --cup DIR --qid ZIP,AGE,GENDER --numeric AGE --k 50 --suppression 0.02
    python benchmarks/bench_cup.py --cup DIR --target - STATE RAMNTALL    # Median, InfoGain, Regression

The data is *not* in the repository (its publisher removed it for licensing reasons): ``--cup``
names a directory holding ``cup.csv`` (``;``-separated, with a header: ZIP, AGE, GENDER, INCOME,
STATE, RAMNTALL, NGIFTALL, MINRAMNT; 63,441 rows) and ARX's hierarchies
``cup_hierarchy_<COLUMN>.csv`` (``leaf;level1;...;*``). Every column is read as text; a QI
named in ``--numeric`` is an ordered number (cast to BIGINT), every other QI takes its ARX
hierarchy (ZIP's: 100,000 five-digit leaves, one digit masked per level, ten children per node).

For each QI set, k, suppression fraction and ``--target``: Mondrian (``anonymize(..., suppression=f)``)
under Median (``-``, the default), InfoGain on a text column (``target=`` that column, e.g. ``STATE``)
or Regression on a numeric one (``RAMNTALL``: its BIGINT ``RAMNTALL_n``); a target is never a QI
of its set (such a set is skipped for it).
Recorded: the share of rows whose ZIP is published at the root ``*`` (``metrics().at_root``,
suppressed rows included; with ``f > 0`` also ``at_root_before``: the same request without
suppression), the rows suppressed against the ``floor(f x N)`` allowed (``Release.suppression``),
the classes, the global certainty penalty GCP and ZIP's NCP (:func:`sqlanon.metrics`: the average
normalized width of a cell, a suppressed cell at 1), and the seconds of ``anonymize`` (which, with
suppression, partitions twice: once more without it, for ``at_root_before``). Run it under
``nice -n 5``; the load average is in every record.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import duckdb  # noqa: E402

import harness  # noqa: E402  (puts the checkout first on sys.path)
import sqlanon  # noqa: E402
from harness import Column  # noqa: E402
from sqlanon.request.spec import load_hierarchy  # noqa: E402

COLUMNS = ("ZIP", "AGE", "GENDER", "INCOME", "STATE", "RAMNTALL", "NGIFTALL", "MINRAMNT")
#: The QI sets measured by default (comma-separated; ``--numeric`` says which are ordered).
QID_SETS = ("ZIP,AGE,GENDER", "ZIP,AGE,GENDER,INCOME", "ZIP,AGE,GENDER,INCOME,STATE")
NUMERIC = ("AGE", "INCOME", "RAMNTALL", "NGIFTALL", "MINRAMNT")


def load(con: duckdb.DuckDBPyConnection, cup: Path, numeric: set[str]) -> None:
    """``cup``: every column as text, and ``<COLUMN>_n`` BIGINT for the numeric ones."""
    path = cup / "cup.csv"
    if not path.exists():
        raise SystemExit(f"bench_cup.py: no cup.csv in {cup} (--cup names the directory of the held-out CUP data)")
    casts = "".join(f', CAST("{c}" AS BIGINT) AS "{c}_n"' for c in COLUMNS if c in numeric)
    con.execute(f"CREATE OR REPLACE TABLE cup AS SELECT *{casts} FROM read_csv(?, delim=';', header=true, all_varchar=true)",
                [str(path)])


def main(argv: list[str] | None = None) -> None:
    parser = harness.arguments(__doc__, quick={"qid": ["ZIP,AGE,GENDER"], "suppression": [0.02]})
    parser.add_argument("--cup", type=Path, required=True, help="directory of cup.csv and cup_hierarchy_*.csv")
    parser.add_argument("--qid", nargs="+", default=list(QID_SETS), help="QI sets, each comma-separated")
    parser.add_argument("--numeric", nargs="*", default=list(NUMERIC),
                        help="QIs taken as ordered numbers (the others take ARX's hierarchies)")
    parser.add_argument("--k", type=int, nargs="+", default=[50])
    parser.add_argument("--suppression", type=float, nargs="+", default=[0.0, 0.02])
    parser.add_argument("--target", nargs="+", default=["-"],
                        help="'-' for Median, else the target column (text: InfoGain; numeric: Regression)")
    args = parser.parse_args(argv)
    rec = harness.Recorder.start(__file__, args)
    numeric = set(args.numeric)
    con = duckdb.connect()
    load(con, args.cup, numeric)
    hierarchies: dict[str, sqlanon.Hierarchy] = {}
    for spec in args.qid:
        names = spec.split(",")
        unknown = [q for q in names if q not in COLUMNS]
        if unknown:
            raise SystemExit(f"bench_cup.py: unknown QI {unknown}; the columns are {', '.join(COLUMNS)}")
        for q in names:
            if q not in numeric and q not in hierarchies:
                hierarchies[q] = load_hierarchy(str(args.cup / f"cup_hierarchy_{q}.csv"))
        qid = [f"{q}_n" if q in numeric else q for q in names]
        for target, k, fraction in ((t, k, f) for t in args.target for k in args.k for f in args.suppression):
            if target in names:
                continue
            if target == "-":
                name, request = "median", {"algorithm": sqlanon.Mondrian(sqlanon.Median())}
            else:
                column = f"{target}_n" if target in numeric else target
                name = f"{'regression' if target in numeric else 'infogain'}:{target}"
                request = {"target": column}
            started = time.perf_counter()
            chosen = {q: hierarchies[q] for q in names if q in hierarchies}
            release = sqlanon.anonymize(con, "cup", qid, k, hierarchies=chosen, suppression=fraction or None,
                                        output=sqlanon.Output(view="cup_release", replace=True), **request)
            seconds = time.perf_counter() - started
            m = sqlanon.metrics(con, release)
            s = release.suppression
            rec.record(name, {"dataset": "cup", "qid": spec, "numeric": ",".join(q for q in names if q in numeric),
                              "k": k, "suppression": fraction, "target": target}, seconds, None,
                       {"rows": m.rows, "zip_at_root": m.at_root.get("ZIP"),
                        "zip_at_root_before": m.at_root_before.get("ZIP") if m.at_root_before else None,
                        "suppressed": release.suppressed, "allowed": s.allowed if s else 0,
                        "used": s.used if s else 0, "classes": m.classes, "gcp": m.gcp,
                        "ncp_zip": m.ncp.get("ZIP")},
                       {"at_root": dict(m.at_root), "at_root_before": dict(m.at_root_before or {}),
                        "ncp": dict(m.ncp)})  # fmt: skip
    columns = [Column("run", "name"), Column("QIs", "params.qid"), Column("numeric", "params.numeric"),
               Column("k", "params.k"),
               Column("suppression", "params.suppression", ".0%"),
               Column("ZIP at *", "metrics.zip_at_root", ".1%"), Column("without supp.", "metrics.zip_at_root_before", ".1%"),
               Column("suppressed", "metrics.used", ","), Column("allowed", "metrics.allowed", ","),
               Column("classes", "metrics.classes", ","), Column("GCP", "metrics.gcp", ".4f"),
               Column("NCP ZIP", "metrics.ncp_zip", ".4f"), Column("anonymize s", "seconds", ".1f")]  # fmt: skip
    print()
    print(harness.table(rec.records, columns, markdown=True))


if __name__ == "__main__":
    main()
