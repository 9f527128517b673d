"""sqlanon: workload-aware k-anonymization (Mondrian) inside the database.

>>> import duckdb, sqlanon
>>> con = duckdb.connect()
>>> _ = con.execute("CREATE TABLE people AS SELECT i AS id, i % 90 AS age, i % 7 AS zip FROM range(1000) t(i)")
>>> release = sqlanon.anonymize(con, "people", qid=["age", "zip"], k=10)
>>> release.k_achieved >= 10
True
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from . import compilation
from .version import __version__ as __version__  # re-exported

compilation.use_writable_cache()  # before anything imports numba

if TYPE_CHECKING:  # what the names below are; imported on first use (__getattr__)
    from . import hierarchies
    from .api import Request, anonymize
    from .errors import (
        EngineError,
        ExportError,
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
        TextOrderWarning,
        UnknownColumnError,
        UnknownTableError,
        UnsupportedTypeError,
        VerificationError,
    )
    from .exporting import export
    from .frame import anonymize_frame
    from .model.criteria import InfoGain, Median, Regression, Score, Selections, Targets
    from .model.hierarchy import Hierarchy
    from .model.partition import Progress
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
    from .model.selection import SelectionError, parse_selection
    from .mondrian.algorithm import Levels, Mondrian, Sample
    from .pipeline import Release
    from .publish.verify import Verification, verify
    from .release.apply import Applied, apply
    from .release.imprecision import Imprecision, imprecision
    from .release.measures import Measures, measures
    from .release.metrics import Metrics, metrics
    from .release.regions import regions
    from .release.report import report
    from .release.rewrite import RewriteError, rewrite
    from .release.risk import Risk, risk
    from .request.output import Output
    from .request.spec import load_hierarchy
    from .singledim.algorithms import Genetic, Optimal, TopDown

#: The module each public name lives in. ``import sqlanon`` imports none of them: pandas,
#: numba and the engines' drivers load when a name that needs them is first used (about 1 s
#: of imports, which a command that only asks for ``--help`` or an error never pays).
_HOMES = {
    **dict.fromkeys(("Request", "anonymize"), ".api"),
    "Release": ".pipeline",
    **dict.fromkeys(("Levels", "Mondrian", "Sample"), ".mondrian.algorithm"),
    **dict.fromkeys(("Genetic", "Optimal", "TopDown"), ".singledim.algorithms"),
    "Output": ".request.output",
    "anonymize_frame": ".frame",
    **dict.fromkeys(("Applied", "apply"), ".release.apply"),
    **dict.fromkeys(("BetaLikeness", "DeltaDisclosure", "DistinctLDiversity", "EntropyLDiversity", "KAnonymity",
                     "RecursiveCLDiversity", "TCloseness", "VarianceDiversity"), ".model.privacy"),
    **dict.fromkeys(("InfoGain", "Median", "Regression", "Score", "Selections", "Targets"), ".model.criteria"),
    **dict.fromkeys(("EngineError", "ExportError", "FrameError", "HierarchyError", "InputError", "ObjectExistsError",
                     "PrivacyWarning", "ReadOnlyError", "RecodingError", "RemovedOptionError",
                     "SparkEnvironmentError", "SqlanonError", "TextOrderWarning", "UnknownColumnError", "UnknownTableError",
                     "UnsupportedTypeError", "VerificationError"), ".errors"),
    "Hierarchy": ".model.hierarchy",
    "hierarchies": ".hierarchies",
    "load_hierarchy": ".request.spec",
    **dict.fromkeys(("Imprecision", "imprecision"), ".release.imprecision"),
    **dict.fromkeys(("Metrics", "metrics"), ".release.metrics"),
    "Progress": ".model.partition",
    "regions": ".release.regions",
    "report": ".release.report",
    **dict.fromkeys(("RewriteError", "rewrite"), ".release.rewrite"),
    **dict.fromkeys(("SelectionError", "parse_selection"), ".model.selection"),
    **dict.fromkeys(("Verification", "verify"), ".publish.verify"),
    **dict.fromkeys(("Measures", "measures"), ".release.measures"),
    **dict.fromkeys(("Risk", "risk"), ".release.risk"),
    "export": ".exporting",
}

__all__ = list(_HOMES)


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use (PEP 562) and kept here."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(home, __name__)
    value = module if home == f".{name}" else getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
