"""What the tests share, one home per concern (fixtures are in ``tests/conftest.py``).

* :mod:`tests.support.db`: engine-neutral SQL helpers (``quote``, ``rows``, ``frame``, ``run``,
  ``objects``, ``temp_objects``, ``here``, ``describe``) and table loaders (``load_frame``,
  ``make_people``, ``load_adult`` with the ``ADULT_*`` constants).
* :mod:`tests.support.releases`: ``request_options`` and the suppressing releases
  (``SUPPRESSING``, ``suppressing_release``, ``ZIP``).
* :mod:`tests.support.pg_server`: where the PostgreSQL tests' server comes from.
* :mod:`tests.support.spark`: the Spark master of the tests and the package zip for executors.
* :mod:`tests.support.reference_mondrian`: the plain-Python Mondrian oracle.
* :mod:`tests.support.sql_logic`: SQL three-valued logic in plain Python.
* :mod:`tests.support.mondrian`: brute-force oracles of a Mondrian release (``check_release``,
  ``judge``, ``impurity_of``) and random tables for it.
* :mod:`tests.support.engines`: the cases every engine must publish alike, and the comparison of
  a release on DuckDB and another engine (``identical``).
* :mod:`tests.support.finish`: the in-memory finish on one batch, compiled or level by level.
* :mod:`tests.support.lattice`: the optimal lattice by brute force.
* :mod:`tests.support.selections`: random selections, their SQL and their value, and releases to
  ask them of.
* :mod:`tests.support.cli`: the command line in process.
* :mod:`tests.support.refusal`: a request refused before any work, nothing written.
* :mod:`tests.support.stats`: a one-column statistics layout for judging a class by hand.

The helpers of :mod:`~tests.support.db` and :mod:`~tests.support.releases` are re-exported
here: ``from tests.support import load_frame, rows, request_options``.
"""

from tests.support.db import (
    ADULT_COLUMNS,
    ADULT_CSV,
    ADULT_HIERARCHIES,
    ADULT_ROWS,
    CITY,
    DATA,
    TEMP_PREFIX,
    Adult,
    columns,
    describe,
    frame,
    here,
    is_postgres,
    load_adult,
    load_frame,
    make_people,
    objects,
    quote,
    rows,
    run,
    series,
    temp_objects,
)
from tests.support.releases import SUPPRESSING, ZIP, request_options, suppressing_release

__all__ = ["ADULT_COLUMNS", "ADULT_CSV", "ADULT_HIERARCHIES", "ADULT_ROWS", "CITY", "DATA", "SUPPRESSING", "TEMP_PREFIX", "ZIP",
           "Adult", "columns", "describe", "frame", "here", "is_postgres", "load_adult", "load_frame", "make_people", "objects",
           "quote", "request_options", "rows", "run", "series", "suppressing_release", "temp_objects"]
