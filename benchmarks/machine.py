"""What a benchmark ran on: printed with every result, so numbers carry their machine."""

from __future__ import annotations

import importlib.metadata
import os
import platform
from pathlib import Path
from typing import Any

import duckdb
import numpy as np


def version(package: str) -> str | None:
    """The installed version of ``package``, None when it is not installed."""
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def machine(*packages: str) -> dict[str, Any]:
    """CPU, cores, memory, Python, DuckDB, numpy, pandas and the versions of ``packages``."""
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text()
                .splitlines() if line.startswith("model name")), platform.processor())  # fmt: skip
    return {
        "nproc": len(os.sched_getaffinity(0)), "cpu_count": os.cpu_count(), "cpu": cpu,
        "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "python": platform.python_version(), "duckdb": duckdb.__version__,
        "numpy": np.__version__, "pandas": version("pandas"), **{p: version(p) for p in packages},
    }  # fmt: skip
