"""What a benchmark ran on: printed with every result, so numbers carry their machine."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import subprocess
import time
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


def measure_child(cmd: list[str], timeout: float | None, **popen: Any) -> tuple[int, float, bool, float]:
    """Run ``cmd`` to the end (killed after ``timeout`` seconds): ``(exit code, peak RSS in
    MiB, timed out, wall seconds)``. The peak RSS is the child's own (``os.wait4``, not
    ``Popen.wait``, whose rusage would be the parent's high-water mark)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, **popen)
    timed_out = False
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if timeout is not None and time.perf_counter() - start > timeout:
            proc.kill()
            pid, status, usage = os.wait4(proc.pid, 0)
            timed_out = True
            break
        time.sleep(0.05)
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped: keep Popen from waiting
    return proc.returncode, round(usage.ru_maxrss / 1024, 1), timed_out, time.perf_counter() - start  # KiB on Linux
