"""The compiled kernels' first use: where numba caches them, and saying so while it compiles.

The in-memory loops (:mod:`sqlanon.mondrian` and :mod:`sqlanon.model`'s kernels) are numba
functions compiled on their first call and cached on disk (``cache=True``), so a process after
the first loads them in milliseconds.

**Where the cache goes** (:func:`use_writable_cache`, run by ``import sqlanon`` before anything
imports numba). numba writes a kernel's cache to ``__pycache__`` beside its source; when that is
not writable (a system or container install of site-packages) it tries ``~/.cache/numba``, and
when that is not writable either, the import of the kernel's module fails ("cannot cache
function ...: no locator available"). Unless the user chose one (``NUMBA_CACHE_DIR``), a package
directory that cannot be written to sends the cache to the first usable of
``$XDG_CACHE_HOME/sqlanon/numba``, ``~/.cache/sqlanon/numba`` and ``<tempdir>/sqlanon-<uid>/numba``
(the last one only when this user owns it and nobody else may write to it: numba's index files
are pickles). ``NUMBA_CACHE_DIR`` is numba's own setting, so it holds for every numba function of
the process (and of its child processes): only where sqlanon's own directory is unwritable.

**Saying so** (:func:`reporting`). Compiling from scratch takes seconds to minutes: the first
compilation of a sqlanon kernel during a run is reported as :data:`MESSAGE` through the run's
``progress`` callback (a :class:`~sqlanon.model.partition.Progress` of phase ``"compile"``,
possibly from the thread that loads the kernels beside the engine's statements) and at INFO on
the ``sqlanon`` logger, with the seconds spent compiling at the end of the run. numba announces
each compilation (not a load from the cache) with its ``numba:compile`` event.

**Optimized for a first run** (:data:`OPT`). While one of sqlanon's kernels compiles, numba's
optimization level is :data:`OPT` unless the user set ``NUMBA_OPT``: LLVM's pass pipeline of
level 1 instead of numba's default 3 (the machine code is still generated at level 3). The level changes the code, not what it
computes: without fast-math flags LLVM keeps every floating-point operation and its order at
any level, so the releases are bit for bit those of level 3 (the rules of Median, InfoGain on
C2 and on a random label and Regression on R7 at 1M Agrawal rows: the same md5). Measured on
this project's 2-core machine under other load (``benchmarks/bench_compile.py``, InfoGain at
200K rows from an empty cache, CPU seconds compiling): level 3 22.8-27.5 s (4 runs), 2 24.7,
1 20.3-21.7, 0 16.0; the run once cached took the same CPU time at levels 1-3 (10M rows: InfoGain
on a random label 20.3-21.3 s at 1, 20.7-21.2 at 3; Median 10.2-10.5 at 1, 10.6-11.2 at 3) and
12x longer at 0 (InfoGain at 200K rows). Other numba functions of the process keep the process's level.

**One signature per kernel.** numba compiles a kernel once per signature, and a call from
another kernel is typed while numba is still inferring the caller's types: an argument that is
a literal (``0``, a module constant such as ``LISTS``) or that starts as one and changes later
(``aside = 0`` and ``aside += 1``) compiles the callee for ``Literal[int](0)`` too, beside the
int64 one, and each is compiled and cached. So the kernels pass ``np.int64(...)``, not
literals; an empty array a kernel passes has the layout the Python callers' arrays have
(``code[:0]``: contiguous; ``code[:, :0]``: not); gathers move cells by width, whatever the
dtype (:mod:`sqlanon.mondrian.compiled.gather`); and a choice among a node's few QIs is plain
Python (:func:`sqlanon.mondrian.compiled.cut_scan._pick`). ``tests/e2e/test_first_run_workload.py``
checks that each common request compiles each kernel once; ``benchmarks/bench_compile.py``
measures the seconds a first run spends compiling.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .model.partition import Progress

log = logging.getLogger("sqlanon")

#: What the first compilation of a run reports.
MESSAGE = "compiling kernels, first use only"

#: numba's optimization level while sqlanon's kernels compile (module docstring), unless
#: ``NUMBA_OPT`` is set.
OPT = 1

#: The directory of the package (the kernels' sources are below it).
PACKAGE = Path(__file__).resolve().parent


def use_writable_cache(environ: MutableMapping[str, str] = os.environ, package: Path = PACKAGE) -> str | None:
    """Set ``NUMBA_CACHE_DIR`` to a directory this user can write (module docstring) when it is
    unset and a directory of ``package`` cannot be written to; returns the directory set (None:
    nothing changed). A numba imported already rereads its settings."""
    if environ.get("NUMBA_CACHE_DIR") or _writable_tree(package):
        return None
    for candidate, shared in _user_dirs(environ):
        if _usable(candidate, shared):
            environ["NUMBA_CACHE_DIR"] = str(candidate)
            if "numba" in sys.modules and environ is os.environ:
                sys.modules["numba"].config.reload_config()
            return str(candidate)
    return None


def _writable_tree(package: Path) -> bool:
    """Whether numba can cache beside every source of ``package``: each directory's
    ``__pycache__`` is writable, or can be made (the directory is writable)."""
    for folder, subdirs, _ in os.walk(package):
        subdirs[:] = [s for s in subdirs if s != "__pycache__"]
        cache = os.path.join(folder, "__pycache__")
        if not os.access(cache if os.path.isdir(cache) else folder, os.W_OK | os.X_OK):
            return False
    return True


def _user_dirs(environ: MutableMapping[str, str]) -> Iterator[tuple[Path, bool]]:
    """The per-user cache directories to try, in order, each with whether it is in a directory
    every user may write to (the temporary directory)."""
    xdg = environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):
        yield Path(xdg) / "sqlanon" / "numba", False
    home = environ.get("HOME") or os.path.expanduser("~")
    if os.path.isabs(home):
        yield Path(home) / ".cache" / "sqlanon" / "numba", False
    user = os.getuid() if hasattr(os, "getuid") else environ.get("USERNAME", "user")
    yield Path(tempfile.gettempdir()) / f"sqlanon-{user}" / "numba", True


def _usable(path: Path, shared: bool) -> bool:
    """Whether ``path`` exists or can be made, and this user may write there. In a ``shared``
    directory, its parent must also be this user's own and writable by nobody else."""
    try:
        if shared:
            path.parent.mkdir(mode=0o700, exist_ok=True)
            info = path.parent.lstat()
            uid = getattr(os, "getuid", lambda: info.st_uid)()
            if (not stat.S_ISDIR(info.st_mode) or info.st_uid != uid
                    or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)):
                return False
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()  # numba's own test of a cache directory
    except OSError:
        return False
    return True


@dataclass
class Compiles:
    """What a run compiled (:func:`reporting`): kernels compiled and the seconds spent."""

    kernels: int = 0
    seconds: float = 0.0


@dataclass
class _Run:
    progress: Callable[[Progress], None] | None
    started: float
    compiles: Compiles
    announced: bool = False


class _Watch:
    """numba's ``numba:compile`` listener: the runs under way hear of the first compilation of a
    sqlanon kernel, which compiles at :data:`OPT`. numba compiles under one lock, so one
    compilation is under way at a time; the kernels a kernel calls compile inside it (``depth``
    > 0)."""

    def __init__(self) -> None:
        self.runs: list[_Run] = []
        self.lock = threading.Lock()
        self.depth = 0
        self.since = 0.0
        self.told = False  # a compilation outside any run was logged
        self.level: Any = None  # numba's level before the kernel at hand compiled (None: kept)

    def on_start(self, event: Any) -> None:
        self.depth += 1
        if self.depth > 1 or not _ours(event):
            return
        self.level = _lower_level()
        self.since = time.perf_counter()
        with self.lock:
            due = [run for run in self.runs if not run.announced]
            for run in due:
                run.announced = True
            alone = not self.runs and not self.told
            self.told = self.told or alone
        if due or alone:
            log.info("%s (%s)", MESSAGE, _name(event))
        for run in due:
            if run.progress is not None:
                from .model.partition import Progress

                run.progress(Progress("compile", 0, 0, 0, time.perf_counter() - run.started, message=MESSAGE))

    def on_end(self, event: Any) -> None:
        self.depth -= 1
        if self.depth > 0 or not _ours(event):
            return
        if self.level is not None:
            from numba.core import config

            config.OPT, self.level = self.level, None
        took = time.perf_counter() - self.since
        with self.lock:
            for run in self.runs:
                run.compiles.kernels += 1
                run.compiles.seconds += took


def _lower_level() -> Any:
    """Set numba's optimization level to :data:`OPT` (numba reads it as each compiled library is
    optimized) unless ``NUMBA_OPT`` is set; returns the level it replaced (None: unchanged)."""
    from numba.core import config

    if os.environ.get("NUMBA_OPT") or config.OPT <= OPT:
        return None
    level, config.OPT = config.OPT, type(config.OPT)(OPT)
    return level


def _ours(event: Any) -> bool:
    return _name(event).startswith(f"{__package__}.")


def _name(event: Any) -> str:
    func = event.data["dispatcher"].py_func
    return f"{func.__module__}.{func.__qualname__}"


_watch: _Watch | None = None
_watch_lock = threading.Lock()


def _watching() -> _Watch:
    """The listener, registered with numba once per process."""
    global _watch
    with _watch_lock:
        if _watch is None:
            from numba.core import event

            watch = _Watch()

            class Listener(event.Listener):
                def on_start(self, ev: Any) -> None:
                    watch.on_start(ev)

                def on_end(self, ev: Any) -> None:
                    watch.on_end(ev)

            event.register("numba:compile", Listener())
            _watch = watch
        return _watch


@contextlib.contextmanager
def reporting(progress: Callable[[Progress], None] | None, started: float | None = None) -> Iterator[Compiles]:
    """Report the compilation of sqlanon's kernels during the block (module docstring):
    :data:`MESSAGE` through ``progress`` (``elapsed`` counted from ``started``, a
    ``time.perf_counter()``) and the logger at the first, the seconds at the end. Yields what
    was compiled."""
    watch = _watching()
    run = _Run(progress, time.perf_counter() if started is None else started, Compiles())
    with watch.lock:
        watch.runs.append(run)
    try:
        yield run.compiles
    finally:
        with watch.lock:
            watch.runs.remove(run)
        if run.compiles.kernels:
            log.info("compiled %d kernels in %.1f s (cached for later runs)", run.compiles.kernels,
                     run.compiles.seconds)
