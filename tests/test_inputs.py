"""Every error up front, as a library error.

Each bad input below is refused with a specific :class:`sqlanon.SqlanonError` (an
:class:`sqlanon.InputError` where the request is at fault) before anything is created in the
database, and before the partitioning: a wrong ``con``, a malformed ``qid``, ``progress`` or
``constraints``, a cyclic or runaway hierarchy, a selection nested too deeply to parse, float QIs
holding inf or NaN, a read-only database. Numpy integers are integers. A release is reloaded by
name in exactly the schema that name means, never from another schema's release of that name.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import resource
import signal
from pathlib import Path

import duckdb
import numpy as np
import pytest
from conftest import make_people, objects, temp_objects

import sqlanon
import sqlanon.datasets
import sqlanon.partition
from sqlanon import HierarchyError, InputError, SelectionError, SqlanonError, manifest
from sqlanon.hierarchy import Hierarchy, load_hierarchy
from sqlanon.regions import load_release
from sqlanon.selection import SelectionQI, parse_selection

CITY = {"*": {"x0-1": ["x0", "x1"], "x2-4": ["x2", "x3", "x4"]}}


@pytest.fixture
def people(con) -> str:
    return make_people(con, 200)


@pytest.fixture
def released(con, people):
    """``people``, its release ``people_anon`` (with a selection, so every reader has work), and a
    hierarchy table ``city_h``."""
    con.execute("CREATE TABLE city_h AS SELECT 'x' || i AS leaf, '*' AS root FROM range(5) t(i)")
    return sqlanon.anonymize(con, people, qid=["age", "zip"], k=5, selections=["age > 40"])


@contextlib.contextmanager
def deadline(seconds: float, megabytes: int = 1024):
    """Fail, instead of hanging or exhausting the machine's memory, if the block runs longer than
    ``seconds`` (TimeoutError) or allocates more than about ``megabytes`` (MemoryError): what a
    runaway input did before it was refused. POSIX, main thread; the memory bound needs Linux."""
    def expired(signum, frame):
        raise TimeoutError(f"still running after {seconds} s")

    limit = resource.getrlimit(resource.RLIMIT_AS)
    statm = Path("/proc/self/statm")
    if statm.exists():  # address space in use now, plus the allowance
        in_use = int(statm.read_text().split()[0]) * resource.getpagesize()
        cap = in_use + megabytes * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (cap if limit[1] < 0 else min(cap, limit[1]), limit[1]))
    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        resource.setrlimit(resource.RLIMIT_AS, limit)


def refused(con, exc: type[SqlanonError], call, *args, **kwargs) -> str:
    """Run ``call``, expecting ``exc`` (or a subclass); check nothing was written; return the message."""
    before = objects(con)
    with pytest.raises(exc) as info:
        call(*args, **kwargs)
    assert objects(con) == before
    assert temp_objects(con) == []
    return str(info.value)


# -- 1. the connection -------------------------------------------------------------------------
ENTRY_POINTS = {
    "anonymize": lambda con: sqlanon.anonymize(con, "people", qid=["age"], k=5, view="another"),
    "verify": lambda con: sqlanon.verify(con, "people_anon", ["age", "zip"], 5),
    "apply": lambda con: sqlanon.apply(con, "people_anon", "people", view="recoded"),
    "metrics": lambda con: sqlanon.metrics(con, "people_anon"),
    "report": lambda con: sqlanon.report(con, "people_anon"),
    "regions": lambda con: sqlanon.regions(con, "people_anon"),
    "imprecision": lambda con: sqlanon.imprecision(con, "people_anon", "age > 3"),
    "rewrite": lambda con: sqlanon.rewrite("SELECT count(*) FROM people WHERE age > 3", "people_anon", con=con),
    "load_hierarchy": lambda con: load_hierarchy("city_h", con=con),
    "load_adult": lambda con: sqlanon.datasets.load_adult(con, "adult2"),
    "load_cmc": lambda con: sqlanon.datasets.load_cmc(con, "cmc2"),
}


@pytest.mark.parametrize("bad", [None, "db.duckdb", 5, object()], ids=["None", "str", "int", "object"])
@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_a_connection_that_is_not_one_is_refused(con, released, entry, bad):
    if bad is None and entry in ("load_hierarchy", "rewrite"):
        pytest.skip("con is optional there")
    msg = refused(con, InputError, ENTRY_POINTS[entry], bad)
    assert msg.startswith("con must be a duckdb.DuckDBPyConnection")
    assert type(bad).__name__ in msg


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_the_entry_points_work_with_a_connection(con, released, entry):
    """The table above calls every entry point properly: only ``con`` is wrong there."""
    ENTRY_POINTS[entry](con)


def test_the_connection_is_checked_before_anything_else(con, people):
    with pytest.raises(InputError, match="^con must be"):
        sqlanon.anonymize(None, "no such table", qid=None, k=0)
