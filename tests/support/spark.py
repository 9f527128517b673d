"""Spark test set-up: the master the Spark tests run on, the package zip shipped to executors, and
the Spark jobs a block of statements ran."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

#: The master the Spark tests run on: ``local[2]``, or what ``$SQLANON_SPARK_MASTER`` names, e.g.
#: ``local-cluster[2,1,1024]`` (two executor JVMs of one core and 1 GB, each with Python workers of
#: its own: tasks, results and the finish's functions cross process boundaries as on a cluster).
SPARK_MASTER = os.environ.get("SQLANON_SPARK_MASTER") or "local[2]"


def sqlanon_zip(path: Path) -> Path:
    """``path``: a zip of the sqlanon package these tests import, laid out as its wheel (the
    package, and ``sql/`` as ``sqlanon/sql``): what ``docs/guides/spark.md`` ships with
    ``--py-files`` (``spark.submit.pyFiles``) to executors that have sqlanon's dependencies."""
    import zipfile

    import sqlanon

    package = Path(sqlanon.__file__).parent
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for f in sorted(package.rglob("*")):
            if f.is_file() and "__pycache__" not in f.parts:
                z.write(f, (Path("sqlanon") / f.relative_to(package)).as_posix())
        templates = package.parent / "sql"  # a source checkout; an installed package has sqlanon/sql
        if templates.is_dir() and not (package / "sql").is_dir():
            for f in sorted(templates.rglob("*.sql")):
                z.write(f, (Path("sqlanon/sql") / f.relative_to(templates)).as_posix())
    return path


@contextlib.contextmanager
def spark_jobs(spark: Any) -> Iterator[list[int]]:
    """The ids of the Spark jobs the statements inside ran (a job group of their own), filled in
    when the block ends."""
    sc = spark.sparkContext
    group = f"sqlanon-test-{uuid.uuid4().hex}"
    sc.setJobGroup(group, "counted by a test")
    out: list[int] = []
    try:
        yield out
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
        out.extend(sc.statusTracker().getJobIdsForGroup(group))
