"""Demo: anonymize the bundled UCI Adult data (30,162 rows) in an embedded DuckDB.

Run with ``python examples/demo.py``. It creates the table, publishes a 10-anonymous view with
age as a number and the other columns generalized through the bundled ARX hierarchies, verifies
it independently and prints what an analyst would see.
"""

from __future__ import annotations

import duckdb

import sqlanon
from sqlanon.datasets import load_adult


def main() -> None:
    con = duckdb.connect()  # embedded, in memory
    hierarchies = load_adult(con, "adult")
    qid = ["age", "sex", "race", "marital-status", "education", "native-country", "workclass", "occupation"]
    release = sqlanon.anonymize(
        con, "adult", qid=qid, k=10,
        hierarchies={q: hierarchies[q] for q in qid if q != "age"},  # age stays numeric
    )
    check = sqlanon.verify(con, release.view, qid=qid, k=10)
    print(f"published view {release.view!r}: {release.rows} rows in {release.partitions} equivalence "
          f"classes, smallest class {release.k_achieved} (k=10), {release.elapsed:.2f}s")
    print(f"independent check: ok={check.ok}, classes={check.classes}, violating={check.violating}")
    print(con.sql(f'SELECT * FROM "{release.view}" LIMIT 5'))
    print(con.sql(
        f'SELECT eq_class, count(*) AS rows, any_value(age_min) AS age_min, any_value(age_max) AS age_max, '
        f'any_value(education) AS education FROM "{release.view}" GROUP BY eq_class ORDER BY rows LIMIT 5'
    ))


if __name__ == "__main__":
    main()
