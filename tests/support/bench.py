"""The benchmark scripts (``benchmarks/*.py``) as modules for the tests of the harness and the report."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def bench_module(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` imported under ``name``; the harness puts the checkout on
    ``sys.path`` for the scripts, so the session's ``sys.path`` is restored afterwards."""
    path = sys.path[:]
    try:
        spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path[:] = path
