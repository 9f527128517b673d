"""sqlanon: workload-aware k-anonymization (Mondrian) inside the database.

>>> import duckdb, sqlanon
>>> con = duckdb.connect()
>>> _ = con.execute("CREATE TABLE people AS SELECT i AS id, i % 90 AS age, i % 7 AS zip FROM range(1000) t(i)")
>>> release = sqlanon.anonymize(con, "people", qid=["age", "zip"], k=10)
>>> release.k_achieved >= 10
True
"""

from __future__ import annotations

from .api import Release, anonymize
from .apply import Applied, apply
from .constraints import (
    DistinctLDiversity,
    EntropyLDiversity,
    KAnonymity,
    RecursiveCLDiversity,
    VarianceDiversity,
)
from .criteria import InfoGain, Median, Regression, Selections, Targets
from .errors import (
    EngineError,
    HierarchyError,
    InputError,
    ObjectExistsError,
    PrivacyWarning,
    ReadOnlyError,
    SqlanonError,
    UnknownColumnError,
    UnknownTableError,
    UnsupportedTypeError,
    VerificationError,
)
from .hierarchy import Hierarchy, load_hierarchy
from .imprecision import Imprecision, imprecision
from .metrics import Metrics, metrics
from .partition import Progress
from .regions import regions
from .report import report
from .rewrite import RewriteError, rewrite
from .selection import SelectionError, parse_selection
from .verify import Verification, verify

__version__ = "0.1.0"

__all__ = [
    "Applied",
    "DistinctLDiversity",
    "EntropyLDiversity",
    "InfoGain",
    "RecursiveCLDiversity",
    "Regression",
    "Selections",
    "SelectionError",
    "RewriteError",
    "Targets",
    "VarianceDiversity",
    "EngineError",
    "Hierarchy",
    "Imprecision",
    "HierarchyError",
    "InputError",
    "KAnonymity",
    "Metrics",
    "Median",
    "ObjectExistsError",
    "PrivacyWarning",
    "Progress",
    "ReadOnlyError",
    "Release",
    "SqlanonError",
    "UnknownColumnError",
    "UnknownTableError",
    "UnsupportedTypeError",
    "Verification",
    "VerificationError",
    "anonymize",
    "apply",
    "imprecision",
    "load_hierarchy",
    "metrics",
    "parse_selection",
    "regions",
    "report",
    "rewrite",
    "verify",
]
