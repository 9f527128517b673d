"""sqlanon: workload-aware k-anonymization (Mondrian) inside the database.

>>> import duckdb, sqlanon
>>> con = duckdb.connect()
>>> _ = con.execute("CREATE TABLE people AS SELECT i AS id, i % 90 AS age, i % 7 AS zip FROM range(1000) t(i)")
>>> release = sqlanon.anonymize(con, "people", qid=["age", "zip"], k=10)
>>> release.k_achieved >= 10
True
"""

from __future__ import annotations

from .api import Request, anonymize
from .pipeline import Release
from .mondrian.algorithm import Levels, Mondrian, Sample
from .singledim.algorithms import Genetic, Optimal, TopDown
from .request.output import Output
from .frame import anonymize_frame
from .release.apply import Applied, apply
from .model.privacy import (
    BetaLikeness,
    DeltaDisclosure,
    DistinctLDiversity,
    EntropyLDiversity,
    KAnonymity,
    RecursiveCLDiversity,
    TCloseness,
    VarianceDiversity,
)
from .model.criteria import InfoGain, Median, Regression, Score, Selections, Targets
from .errors import (
    EngineError,
    FrameError,
    HierarchyError,
    InputError,
    ObjectExistsError,
    PrivacyWarning,
    ReadOnlyError,
    RecodingError,
    RemovedOptionError,
    SparkEnvironmentError,
    SqlanonError,
    UnknownColumnError,
    UnknownTableError,
    UnsupportedTypeError,
    VerificationError,
)
from .model.hierarchy import Hierarchy
from . import hierarchies
from .request.spec import load_hierarchy
from .release.imprecision import Imprecision, imprecision
from .release.metrics import Metrics, metrics
from .model.partition import Progress
from .release.regions import regions
from .release.report import report
from .release.rewrite import RewriteError, rewrite
from .model.selection import SelectionError, parse_selection
from .publish.verify import Verification, verify
from .release.measures import Measures, measures
from .release.risk import Risk, risk

from .version import __version__ as __version__  # re-exported

__all__ = [
    "Applied",
    "BetaLikeness",
    "DeltaDisclosure",
    "Genetic",
    "Levels",
    "Mondrian",
    "Optimal",
    "Output",
    "RemovedOptionError",
    "Request",
    "Sample",
    "TopDown",
    "DistinctLDiversity",
    "EntropyLDiversity",
    "InfoGain",
    "RecursiveCLDiversity",
    "Regression",
    "Selections",
    "SelectionError",
    "Score",
    "RewriteError",
    "Targets",
    "VarianceDiversity",
    "EngineError",
    "Hierarchy",
    "hierarchies",
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
    "RecodingError",
    "Release",
    "SparkEnvironmentError",
    "SqlanonError",
    "UnknownColumnError",
    "UnknownTableError",
    "UnsupportedTypeError",
    "Verification",
    "VerificationError",
    "anonymize",
    "anonymize_frame",
    "FrameError",
    "apply",
    "imprecision",
    "load_hierarchy",
    "metrics",
    "parse_selection",
    "regions",
    "report",
    "rewrite",
    "verify",
    "TCloseness",
    "Measures",
    "measures",
    "Risk",
    "risk",
]
