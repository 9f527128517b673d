"""The Agrawal et al. (1993) synthetic generator, as used by LeFevre et al. for Mondrian.

Nine integer attributes, each uniform over the given inclusive range:

    salary      20,000 .. 150,000
    commission  0 if salary >= 75,000, else 10,000 .. 75,000
    age         20 .. 80
    elevel      0 .. 4
    car         1 .. 20
    zipcode     0 .. 8
    hvalue      0.5*z*100,000 .. 1.5*z*100,000   with z = zipcode + 1
    hyears      1 .. 30
    loan        0 .. 500,000

Label and target columns:

    c2   'A' iff (age < 40 and 50,000 <= salary <= 100,000)
                 or (40 <= age < 60 and 75,000 <= salary <= 125,000)
                 or (age >= 60 and 25,000 <= salary <= 75,000); else 'B'
    r7   disposable = 0.67*(salary + commission) - 0.2*loan - 20,000          (float)
    c7   'A' iff disposable > 0; else 'B'
    r10  0.67*(salary + commission) - 5,000*elevel + 0.2*equity - 10,000       (float)
         with equity = 0.1*hvalue*max(hyears - 20, 0)

Rows are generated in fixed blocks of ``BLOCK`` rows, block b from ``default_rng([seed, b])``,
so row i is the same whatever n or the write chunk size: a smaller table is a prefix of a
larger one with the same seed.
"""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

QI_COLUMNS = ["salary", "commission", "age", "elevel", "car", "zipcode", "hvalue", "hyears", "loan"]
BLOCK = 1_000_000
_SCHEMA = ", ".join([f"{c} INTEGER NOT NULL" for c in QI_COLUMNS])
_SCHEMA += ", c2 VARCHAR NOT NULL, c7 VARCHAR NOT NULL, r7 DOUBLE NOT NULL, r10 DOUBLE NOT NULL"


def _block(seed: int, b: int) -> dict[str, np.ndarray]:
    """All columns of block b (BLOCK rows)."""
    rng = np.random.default_rng([seed, b])

    def uniform(low: int | np.ndarray, high: int | np.ndarray) -> np.ndarray:
        return rng.integers(low, np.asarray(high) + 1, BLOCK, dtype=np.int32)  # inclusive

    salary = uniform(20_000, 150_000)
    commission = np.where(salary >= 75_000, 0, uniform(10_000, 75_000)).astype(np.int32)
    age = uniform(20, 80)
    elevel = uniform(0, 4)
    car = uniform(1, 20)
    zipcode = uniform(0, 8)
    z = zipcode + 1
    hvalue = uniform(50_000 * z, 150_000 * z)
    hyears = uniform(1, 30)
    loan = uniform(0, 500_000)

    c2 = (
        ((age < 40) & (50_000 <= salary) & (salary <= 100_000))
        | ((40 <= age) & (age < 60) & (75_000 <= salary) & (salary <= 125_000))
        | ((age >= 60) & (25_000 <= salary) & (salary <= 75_000))
    )
    income = 0.67 * (salary + commission)  # float64
    disposable = income - 0.2 * loan - 20_000
    equity = 0.1 * hvalue * np.maximum(hyears - 20, 0)
    r10 = income - 5_000 * elevel + 0.2 * equity - 10_000
    return {
        "salary": salary, "commission": commission, "age": age, "elevel": elevel, "car": car,
        "zipcode": zipcode, "hvalue": hvalue, "hyears": hyears, "loan": loan,
        "c2": np.where(c2, "A", "B"), "c7": np.where(disposable > 0, "A", "B"),
        "r7": disposable, "r10": r10,
    }  # fmt: skip


def _rows(start: int, stop: int, seed: int) -> pd.DataFrame:
    """Rows start .. stop-1 of the infinite sequence for this seed."""
    blocks = [_block(seed, b) for b in range(start // BLOCK, (stop - 1) // BLOCK + 1)]
    offset = start - (start // BLOCK) * BLOCK
    cols = {c: np.concatenate([blk[c] for blk in blocks])[offset : offset + stop - start]
            for c in blocks[0]}  # fmt: skip
    return pd.DataFrame(cols)


def generate(n: int, seed: int = 0) -> pd.DataFrame:
    """n Agrawal rows as a DataFrame (QI columns int32, c2/c7 'A'/'B', r7/r10 float64)."""
    if n <= 0:
        return pd.DataFrame({c: np.empty(0, np.int32) for c in QI_COLUMNS})
    return _rows(0, n, seed).reset_index(drop=True)


def write_duckdb(
    path: str | Path, n: int, table: str = "agrawal", seed: int = 0, chunk: int = 2_000_000
) -> None:
    """Write n Agrawal rows to ``table`` in the DuckDB file at ``path``, chunk rows at a time.

    No-op if the table already holds n rows written with this seed (recorded in the table
    comment), so repeated benchmark runs reuse the file; otherwise the table is replaced.

    The rows are written by a process of its own: writing 100M rows takes the writer to a
    3.4 GiB high-water mark, which the benchmark's parent process then need not carry (the
    harness measures a child's own peak, ``VmHWM``; ``ru_maxrss`` from ``os.wait4`` would start
    at the parent's high-water mark, which Linux carries over ``exec``: an empty child of a
    parent that had just written 100M rows reported 3445 MiB).
    """
    if _written(path, n, table, seed):
        return
    ctx = multiprocessing.get_context("spawn")  # a fresh interpreter, not a copy of this one
    writer = ctx.Process(target=_write, args=(str(path), n, table, seed, chunk))
    writer.start()
    writer.join()
    if writer.exitcode != 0:
        raise RuntimeError(f"writing {n} Agrawal rows to {path} failed (exit code {writer.exitcode})")


def _written(path: str | Path, n: int, table: str, seed: int) -> bool:
    """Whether ``table`` in ``path`` already holds the n rows of this seed (its comment and count)."""
    if not Path(path).exists():
        return False
    name = _quoted(table)
    con = duckdb.connect(str(path), read_only=True)
    try:
        found = con.execute(
            "SELECT comment FROM duckdb_tables() WHERE schema_name = 'main' AND table_name = ?",
            [table],
        ).fetchall()
        # the tag records n, the count makes sure
        return bool(found) and found[0][0] == _tag(n, seed) and \
            con.execute(f"SELECT count(*) FROM {name}").fetchone()[0] == n
    finally:
        con.close()


def _tag(n: int, seed: int) -> str:
    return f"agrawal n={n} seed={seed}"


def _quoted(table: str) -> str:
    """The table's name as a DuckDB identifier."""
    return '"' + table.replace('"', '""') + '"'


def _write(path: str, n: int, table: str, seed: int, chunk: int) -> None:
    """:func:`write_duckdb`'s writing, in the process it starts."""
    name = _quoted(table)
    con = duckdb.connect(path)
    try:
        con.execute(f"CREATE OR REPLACE TABLE {name} ({_SCHEMA})")
        for start in range(0, n, chunk):
            part = _rows(start, min(n, start + chunk), seed)  # noqa: F841 (scanned by name below)
            con.execute(f"INSERT INTO {name} SELECT * FROM part")
        con.execute(f"COMMENT ON TABLE {name} IS '{_tag(n, seed)}'")  # no quotes in the tag: a safe literal
    finally:
        con.close()


def write_parquet(directory: str | Path, n: int, seed: int = 0, id_column: str = "id",
                  row_group: int | None = None) -> Path:
    """Write n Agrawal rows as Parquet files in ``directory`` (one file per ``BLOCK`` rows,
    ``part-00000.parquet``, ...), with a first BIGINT column ``id_column``: the row number
    0..n-1, a key. ``row_group``: rows per row group (default: pyarrow's, one per file here).
    Returns the directory.

    No-op if the directory already holds these n rows with this seed (recorded in the file
    ``_agrawal``, written last, so an interrupted write is redone); otherwise it is rewritten.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = Path(directory)
    tag = f"agrawal n={n} seed={seed} id={id_column}" + (f" row_group={row_group}" if row_group else "")
    marker = out / "_agrawal"
    if marker.exists() and marker.read_text().strip() == tag:
        return out
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.parquet"):
        old.unlink()
    marker.unlink(missing_ok=True)
    for i, start in enumerate(range(0, n, BLOCK)):
        frame = _rows(start, min(n, start + BLOCK), seed)
        frame.insert(0, id_column, np.arange(start, start + len(frame), dtype=np.int64))
        pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), out / f"part-{i:05d}.parquet",
                       row_group_size=row_group)
    marker.write_text(tag + "\n")  # files starting with '_' are not data to Spark or DuckDB
    return out
