"""The Spark executors' Python, checked before a run touches the data.

A release's in-memory finish runs on the executors (:meth:`SparkEngine.map_groups
<sqlanon.engine.spark.SparkEngine.map_groups>`), in the Python that Spark starts there: the
``PYSPARK_PYTHON`` of the driver's environment when the session started, else ``python3`` from
the executors' ``PATH`` -- not the driver's interpreter. When that Python cannot import sqlanon
(or its dependencies), a release used to fail at the finish, minutes in, with a 200-line Java
stack; when it imports another sqlanon version, the finish would run other code.
:func:`check_executors` runs one tiny job first: each of a few tasks imports sqlanon and the
tasks' module (numpy, pyarrow and sqlglot with it), finds the finish's modules and their
dependencies (numba, scipy) without running them, and returns what it found; a failure becomes a
:class:`SparkEnvironmentError` that names the cause and the fix (``PYSPARK_PYTHON``,
``spark.archives`` with a packed environment, ``--py-files``; see ``docs/guides/spark.md``).
Only a release that finishes on the executors imports the finish there too, in one more such job
before its first finish (``finish=True``, :meth:`SparkEngine.map_groups
<sqlanon.engine.spark.SparkEngine.map_groups>`): numba's import and its cached kernels are most
of a probe's seconds (a worker's ``import sqlanon.mondrian.builder`` took 0.9 s of CPU against
0.2 s for the tasks' module), and a small table's release, finished on the driver, runs no
Python on the executors at all. A success is kept per Spark application, executors'
interpreter and depth, so a session pays each job once.

**Local masters default to the driver's interpreter.** With ``local``, ``local[N]`` or
``local-cluster[...]`` the executors run on this machine, where the driver's own interpreter
(``sys.executable``) is the one that surely has sqlanon and the same Python version -- ``python3``
from ``PATH`` is another one whenever the driver runs from a virtual environment that is not
activated. So when the user chose nothing (no ``PYSPARK_PYTHON`` in the environment, no
``spark.pyspark.python`` setting, the session's default ``python3``), the check points the
session's Python workers at ``sys.executable`` (``SparkContext.pythonExec``, which every Python
function of the session reads when it is created). A choice of the user's is never changed.
"""

from __future__ import annotations

import os
import re
import sys
import threading
from dataclasses import dataclass
from typing import Any

from ..errors import SparkEnvironmentError
from ..version import __version__

#: Where the guide that the error messages point to lives (in the repository's docs).
GUIDE = "docs/guides/spark.md"
#: Spark's default executor Python when ``PYSPARK_PYTHON`` is not set (``SparkContext.pythonExec``).
DEFAULT_PYTHON = "python3"
#: Tasks of the probe: one per core Spark offers by default, at most this many.
MAX_TASKS = 8

_lock = threading.Lock()
#: (application id, executors' interpreter, finish imported) -> what a successful probe found.
_checked: dict[tuple[str, str, bool], Executors] = {}


@dataclass(frozen=True)
class Executors:
    """What the executors' Python reported (one entry per distinct answer of the probe's tasks).

    Attributes:
        python: the interpreters the Python workers ran (``sys.executable`` there).
        python_version: their ``major.minor.micro``.
        location: where they imported sqlanon from (``sqlanon.__file__``): a packed environment's
            site-packages, a ``--py-files`` zip, an installed package.
    """

    python: tuple[str, ...]
    python_version: tuple[str, ...]
    location: tuple[str, ...]


def same_machine(master: str) -> bool:
    """Whether ``master`` runs the executors on the driver's machine (``local``, ``local[N]``,
    ``local[N,F]``, ``local-cluster[N,C,M]``)."""
    return master == "local" or master.startswith(("local[", "local-cluster["))


def check_executors(spark: Any, finish: bool = False) -> Executors:
    """Import sqlanon on the executors of ``spark``'s application, once per application and
    executors' interpreter; on a local master with no interpreter chosen, first point the
    executors at the driver's own (see the module docstring). ``finish``: import the in-memory
    finish's modules too (:data:`FINISH_MODULES`), not only find them.

    Raises:
        SparkEnvironmentError: the executors' Python cannot start, cannot import sqlanon, its
            dependencies or pyarrow, or imports another sqlanon version than this driver's.
    """
    context = spark.sparkContext
    with _lock:
        _default_to_driver_python(spark)
        key = (context.applicationId, context.pythonExec, finish)
        found = _checked.get(key)
        if found is None:
            found = _checked[key] = _probe(spark, finish=True) if finish else _probe(spark)
        return found


def _default_to_driver_python(spark: Any) -> None:
    """``sys.executable`` for the Python workers on a local master when the user chose none."""
    context = spark.sparkContext
    chosen = ("PYSPARK_PYTHON" in os.environ or context.pythonExec != DEFAULT_PYTHON
              or context.getConf().get("spark.pyspark.python") is not None)
    if not chosen and same_machine(context.master) and sys.executable and os.path.isfile(sys.executable):
        context.pythonExec = sys.executable


#: What every probe imports on the executors, by name (``import sqlanon`` alone loads no module):
#: the tasks' own module (numpy, pyarrow and sqlglot with it).
EXECUTOR_MODULES = ("sqlanon.engine.spark_tasks",)
#: The in-memory finish the executors run (its kernels: numba, scipy): found by every probe
#: (:func:`importlib.util.find_spec`, nothing run), imported by a probe with ``finish=True``.
FINISH_MODULES = ("sqlanon.mondrian.builder",)
#: What :data:`FINISH_MODULES` import beyond :data:`EXECUTOR_MODULES`, found by every probe.
FINISH_DEPENDENCIES = ("numba", "scipy")


def _probe(spark: Any, finish: bool = False) -> Executors:
    """One job of a few tasks, each reporting the Python it runs and the sqlanon it imports
    (``finish``: the finish's modules imported too, else only found)."""
    context = spark.sparkContext
    tasks = max(1, min(MAX_TASKS, context.defaultParallelism))
    # closure cells: travel with the pickled function
    modules = EXECUTOR_MODULES + FINISH_MODULES if finish else EXECUTOR_MODULES
    found_only = () if finish else FINISH_DEPENDENCIES + FINISH_MODULES

    def report(_rows: Any) -> Any:  # nested: pickled by value, so executors without sqlanon can run it
        import sys as executor_sys

        found = {"python": executor_sys.executable, "python_version": ".".join(map(str, executor_sys.version_info[:3]))}
        try:  # what the executors run, by name
            import importlib
            import importlib.util

            for module in modules:
                importlib.import_module(module)
            for module in found_only:  # found, not run: an import is most of a probe's time
                if importlib.util.find_spec(module) is None:
                    raise ModuleNotFoundError(f"No module named {module!r}")
        except Exception as e:  # reported to the driver, which words the error
            found["error"] = f"{type(e).__name__}: {e}"
        package = executor_sys.modules.get("sqlanon")  # there when the package imported, even if a module failed
        if package is not None:  # its version first: another version's modules may well fail to import
            found.update(sqlanon=package.__version__, location=package.__file__ or "")
        yield found

    described = context.getLocalProperty("spark.job.description")
    context.setJobDescription("sqlanon: check that the executors import this sqlanon"
                              + (" and its in-memory finish" if finish else ""))
    try:
        answers = context.parallelize(range(tasks), tasks).mapPartitions(report).collect()
    except Exception as e:  # the worker could not start: Spark's error, never shown as it is
        raise _error(spark, _worker_cause(e)) from None
    finally:
        context.setJobDescription(described)  # None removes it
    python = tuple(sorted({a["python"] for a in answers}))
    # another version first: its modules may well fail to import here, for that reason
    other = sorted({(a["sqlanon"], a["location"]) for a in answers if a.get("sqlanon", __version__) != __version__})
    if other:
        version, location = other[0]
        raise _error(spark, f"they import sqlanon {version} (from {location}), this driver runs sqlanon "
                            f"{__version__}: the finish would run other code", version=True)
    failed = [a for a in answers if "error" in a]
    if failed:
        raise _error(spark, f"their Python ({failed[0]['python']}) cannot import sqlanon: {failed[0]['error']}")
    return Executors(python, tuple(sorted({a["python_version"] for a in answers})),
                     tuple(sorted({a["location"] for a in answers})))


def _worker_cause(error: BaseException) -> str:
    """Why Spark could not run the probe's tasks, in one line, from its error's text."""
    text = str(error)
    m = re.search(r'Cannot run program "([^"]*)"[^\n]*?, ([^\n]*)', text)
    if m:
        return f"their Python {m.group(1)!r} cannot be started ({m.group(2).strip()})"
    m = re.search(r"Python in worker has different version:? (\S+) than that in driver:? ([0-9.]+)", text)
    if m:
        return (f"their Python is version {m.group(1)}, this driver's {m.group(2)} "
                f"(PySpark runs only the driver's minor version)")
    m = re.search(r"Error from python worker:\n(.*?)(?:\nPYTHONPATH was:|\n\S+Exception|\Z)", text, re.DOTALL)
    if m:
        lines = [line.strip() for line in m.group(1).splitlines() if line.strip()]
        return f"their Python cannot start PySpark's worker: {lines[-1] if lines else 'no output'}"
    # a Python exception of the worker: its last line names it
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("at ")]
    python = [line for line in lines if re.match(r"[\w.]+(Error|Exception): ", line)]
    return f"the probe's task failed: {(python or lines or [type(error).__name__])[-1]}"


def _error(spark: Any, cause: str, *, version: bool = False) -> SparkEnvironmentError:
    """The error for ``cause``: the executors' interpreter, the driver's, and the fixes."""
    context = spark.sparkContext
    if "PYSPARK_PYTHON" in os.environ:
        where = "PYSPARK_PYTHON"
    elif context.pythonExec == DEFAULT_PYTHON:
        where = "Spark's default: python3 on the executors' PATH"
    elif context.pythonExec == sys.executable and same_machine(context.master):
        where = "the driver's interpreter, sqlanon's default on a local master"
    else:
        where = "set on the session"
    ship = ("ship this driver's sqlanon and its dependencies to the executors: pack a virtual "
            "environment that has them (venv-pack, or conda-pack) and start the session with "
            "spark.archives=<env>.tar.gz#environment and PYSPARK_PYTHON=./environment/bin/python; "
            "or, where the executors' Python already has sqlanon's dependencies, ship sqlanon "
            "alone as a zip with --py-files (spark.submit.pyFiles)")
    if version:
        fix = f"install sqlanon {__version__} on the executors, or {ship}"
    elif same_machine(context.master):
        fix = (f"start the session with PYSPARK_PYTHON set to an interpreter that imports sqlanon, e.g. "
               f"os.environ['PYSPARK_PYTHON'] = sys.executable ({sys.executable}) before the builder's "
               f"getOrCreate() (spark.pyspark.python is read by spark-submit only); on a local master "
               f"sqlanon does this itself when neither is set")
    else:
        fix = ship
    return SparkEnvironmentError(
        f"the Spark executors cannot run sqlanon's finish: {cause}.\n"
        f"Their Python: {context.pythonExec!r} ({where}; master {context.master}); this driver runs "
        f"sqlanon {__version__} on {sys.executable}.\n"
        f"Fix: {fix} (see {GUIDE}).")
