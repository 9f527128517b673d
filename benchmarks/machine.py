"""What a benchmark ran on: printed with every result, so numbers carry their machine."""

from __future__ import annotations

import importlib.metadata
import json
import os
import pickle
import platform
import subprocess
import tempfile
import time
from collections.abc import Callable
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
    ``Popen.wait``, whose rusage would be the parent's high-water mark) -- but it starts at the
    parent's high-water mark when the child is forked (fork copies the memory map with its
    peak), so the parent must stay small: :func:`agrawal.write_duckdb` writes the data in a
    process of its own."""
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


def run_child(command: Callable[[str, str], list[str]], timeout: float | None) -> tuple[dict[str, Any], Any]:
    """Run the child ``command(result_path, rules_path)`` (:func:`measure_child`): it writes its
    results as JSON to the first path and its rules pickled to the second. Returns the results
    (with ``rss_mib`` and ``process_s``; floats to 4 places) and the rules -- or, when the child
    timed out or failed, an ``error`` naming why (its stderr's last line) and no rules."""
    paths = []
    for suffix in (".json", ".pickle"):
        fd, path = tempfile.mkstemp(suffix=suffix)
        os.close(fd)
        paths.append(path)
    errors = tempfile.TemporaryFile()  # the child's stderr: its last line names a failure
    returncode, rss, timed_out, seconds = measure_child(command(*paths), timeout, stderr=errors)
    out: dict[str, Any] = {"rss_mib": rss, "process_s": round(seconds, 2)}
    rules = None
    try:
        if timed_out:
            out["error"] = f"timed out after {timeout:.0f} s"
        elif returncode != 0:
            errors.seek(0)
            lines = [ln for ln in errors.read().decode(errors="replace").strip().splitlines() if ln.strip()]
            out["error"] = f"child exited with {returncode}: {lines[-1] if lines else ''}"[:400]
        else:
            out.update(json.loads(Path(paths[0]).read_text()))
            rules = pickle.loads(Path(paths[1]).read_bytes())
    finally:
        errors.close()
        for path in paths:
            os.unlink(path)
    return {key: round(v, 4) if isinstance(v, float) else v for key, v in out.items()}, rules
