"""The benchmark harness: one scan measurement, one child-process runner, one table printer, the
common arguments, and results written as data.

Every script in ``benchmarks/`` measures through this module, so its numbers mean the same thing
in every script:

* **Scan-equivalent** (:func:`scan_seconds`): ``SELECT sum(q1), ..., sum(qn) FROM t`` over the QI
  columns, run once unmeasured (the warm-up: it brings the file into the OS page cache and the
  engine's buffers) and then ``--repeat`` times (default 3); the scan-equivalent is the **best**
  (smallest) of those warm runs -- the least disturbed estimate of the cost of one pass, on a
  machine shared with other work. Every ``per_scan`` ratio of every script divides by it. (Before
  the harness, ``bench_core`` and ``bench_apply`` took the best of 3 without a warm-up and
  ``bench_engines`` the median of 3 after one, so ratios in ``HISTORY.md`` are not exactly
  comparable across scripts.)
* **Other timings** (:func:`timed`): the same rule -- best of ``repeat`` runs, after an unmeasured
  warm-up where the script asks for one.
* **Children** (:func:`run_child`): a measurement that reports a peak memory runs in a fresh
  interpreter (``python harness.py --child SPEC``), calling one function of the script. The child
  reports its **own** peak resident set (``VmHWM`` of ``/proc/self/status``, read after the
  function returns): ``ru_maxrss`` from ``os.wait4`` is not the child's own, since on Linux
  ``exec`` carries the parent's high-water mark into it (measured: a parent that had touched
  400 MB and freed it started ``python -c pass``; ``wait4`` reported 409 MiB, the child's
  ``VmHWM`` 13 MiB). A child that fails or times out yields an ``error`` naming why (the last
  line of its stderr), and the other measurements go on.
* **Tables** (:func:`table`): one printer for the console and for Markdown, over the records.
* **Arguments** (:func:`arguments`): ``--rows``, ``--repeat``, ``--out``, ``--quick``, ``--dir``,
  ``--timeout`` mean the same in every script; ``--quick`` fills in the script's small settings
  for the options not given.
* **Results as data** (:class:`Recorder`): every measurement is appended as one JSON object to
  ``benchmarks/results/<script>.jsonl`` (:data:`FIELDS` is its schema, :func:`check` validates
  it). ``benchmarks/report.py`` renders them into the documentation's performance page and the
  README's headline sentence.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import importlib.util
import json
import math
import os
import platform
import re
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# Run from a checkout without installing: the library first, the generator, the numpy oracle.
for _path in (str(HERE), str(ROOT)):
    if _path in sys.path:
        sys.path.remove(_path)
    sys.path.insert(0, _path)

RESULTS = HERE / "results"
DATA_DIR = os.path.join(tempfile.gettempdir(), "sqlanon-bench")
#: Timed runs after the warm-up (``--repeat``).
REPEAT = 3
#: The version of the record layout below; bumped when a field changes meaning.
SCHEMA = 1
#: How to get the optional packages the benchmarks compare against or evaluate with.
BENCH_EXTRA = "pip install -e '.[bench]'"


# ----------------------------------------------------------------------------- the machine
def version(package: str) -> str | None:
    """The installed version of ``package``, None when it is not installed."""
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def sqlanon_version() -> str | None:
    """The checkout's sqlanon version (the one the benchmarks import)."""
    try:
        import sqlanon
    except ImportError:
        return None
    return getattr(sqlanon, "__version__", None) or version("sqlanon")


def machine(*packages: str) -> dict[str, Any]:
    """Cores usable by this process, CPU, memory, Python, DuckDB, numpy, pandas, sqlanon and the
    versions of ``packages``."""
    cpu = platform.processor()
    try:
        cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                    if line.startswith("model name")), cpu)  # fmt: skip
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "cores": cores, "cpu_count": os.cpu_count(), "cpu": cpu,
        "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "python": platform.python_version(), "duckdb": version("duckdb"), "numpy": version("numpy"),
        "pandas": version("pandas"), "sqlanon": sqlanon_version(), **{p: version(p) for p in packages},
    }  # fmt: skip


def git_state() -> dict[str, Any]:
    """The checkout's commit and whether its code (Python, SQL, the project file) differs from
    it: documentation, results and the generated page are not the code measured."""
    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no", "--", "*.py", "*.sql", "pyproject.toml")
    return {"commit": commit, "dirty": bool(status) if status is not None else None}


def peak_rss_mib() -> float:
    """This process's own peak resident set in MiB: ``VmHWM`` (Linux; see the module docstring
    for why not ``ru_maxrss``), else ``ru_maxrss`` (KiB on Linux, bytes on macOS)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (2**20 if sys.platform == "darwin" else 1024), 1)


def missing(module: str, package: str | None = None) -> str | None:
    """None when ``module`` imports; else the sentence saying it is missing and how to get it."""
    if importlib.util.find_spec(module) is not None:
        return None
    return f"{package or module} is not installed: {BENCH_EXTRA} (or pip install {package or module})"


def require(module: str, package: str | None = None, why: str = "") -> None:
    """Exit with a clear message (not a traceback) when a package the whole script needs is missing."""
    message = missing(module, package)
    if message:
        raise SystemExit(f"{Path(sys.argv[0]).name}: {message}" + (f" -- {why}" if why else ""))


# ----------------------------------------------------------------------------- timing
@dataclass(frozen=True)
class Timing:
    """Wall seconds of repeated runs: the unmeasured warm-up (``first``, None without one) and
    the measured ``runs``; ``best`` is the policy's number."""

    first: float | None
    runs: tuple[float, ...]

    @property
    def best(self) -> float:
        return min(self.runs)


def timed(run: Callable[[], object], repeat: int = REPEAT, warmup: bool = True) -> Timing:
    """Best of ``repeat`` wall times of ``run()``, after one unmeasured run when ``warmup``."""
    def once() -> float:
        start = time.perf_counter()
        run()
        return time.perf_counter() - start

    first = once() if warmup else None
    return Timing(first, tuple(once() for _ in range(max(1, repeat))))


def scan_sql(table: str, columns: Sequence[str], dialect: str = "duckdb") -> str:
    """``SELECT sum(c1), ..., sum(cn) FROM table`` in ``dialect`` (identifiers quoted)."""
    from sqlglot import exp

    sums = [exp.Sum(this=exp.column(c, quoted=True)) for c in columns]
    return exp.select(*sums).from_(exp.table_(table, quoted=True)).sql(dialect=dialect)


def scan_seconds(fetch: Callable[[str], object], table: str, columns: Sequence[str],
                 repeat: int = REPEAT, dialect: str = "duckdb") -> float:
    """The scan-equivalent (module docstring): best of ``repeat`` warm runs of the sum of
    ``columns`` over ``table``, after one unmeasured run. ``fetch(sql)`` runs a query and fetches
    its result (DuckDB and psycopg: ``con.execute(sql).fetchall()``; Spark: ``spark.sql(sql).collect()``)."""
    sql = scan_sql(table, columns, dialect)
    return timed(lambda: fetch(sql), repeat).best


def duckdb_scan_seconds(path: str | Path, table: str, columns: Sequence[str], repeat: int = REPEAT) -> float:
    """:func:`scan_seconds` on a DuckDB file, opened read-only and closed again (the children
    open it read-write: no other process may hold it then)."""
    import duckdb

    con = duckdb.connect(str(path), read_only=True)
    try:
        return scan_seconds(lambda sql: con.execute(sql).fetchall(), table, columns, repeat)
    finally:
        con.close()


def ratio(a: float | None, b: float | None, digits: int = 2) -> float | None:
    """``a / b`` rounded, None when either is missing or ``b`` is 0."""
    return round(a / b, digits) if a is not None and b else None


# ----------------------------------------------------------------------------- children
def run_child(script: str | Path, function: str, kwargs: Mapping[str, Any] | None = None,
              timeout: float | None = None) -> dict[str, Any]:
    """Call ``function(**kwargs)`` of ``script`` in a fresh interpreter and return what it
    returned (a JSON object), with ``rss_mib`` (the child's own peak, :func:`peak_rss_mib`) and
    ``process_s`` (the child's whole life as the parent saw it: start-up, imports, the call) --
    or, when it failed or ran longer than ``timeout`` seconds, an ``error`` saying why."""
    fd, spec_path = tempfile.mkstemp(suffix=".json", prefix="bench-child-")
    os.close(fd)
    fd, result = tempfile.mkstemp(suffix=".json", prefix="bench-result-")
    os.close(fd)
    Path(spec_path).write_text(json.dumps({"script": str(Path(script).resolve()), "function": function,
                                           "kwargs": dict(kwargs or {}), "result": result}))  # fmt: skip
    errors = tempfile.TemporaryFile()  # the child's stderr: its last line names a failure
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--child", spec_path], stderr=errors)
    timed_out = False
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        timed_out = True
    seconds = time.perf_counter() - start
    out: dict[str, Any] = {}
    try:
        if timed_out:
            out["error"] = f"timed out after {timeout:.0f} s"
        elif proc.returncode != 0:
            errors.seek(0)
            lines = [ln for ln in errors.read().decode(errors="replace").splitlines() if ln.strip()]
            sys.stderr.write("".join(f"#   child: {ln}\n" for ln in lines[-15:]))
            out["error"] = f"child exited with {proc.returncode}: {lines[-1] if lines else ''}"[:400]
        else:
            out = json.loads(Path(result).read_text())
    finally:
        errors.close()
        for path in (spec_path, result):
            os.unlink(path)
    out["process_s"] = round(seconds, 2)
    return out


def _child(spec_path: str) -> None:
    """Inside a child: import the script, call the function, write its result and peak RSS."""
    spec = json.loads(Path(spec_path).read_text())
    path = Path(spec["script"])
    module_spec = importlib.util.spec_from_file_location(path.stem, path)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[path.stem] = module  # dataclasses and pickling look modules up by name
    module_spec.loader.exec_module(module)
    out = dict(getattr(module, spec["function"])(**spec["kwargs"]))
    out["rss_mib"] = peak_rss_mib()
    Path(spec["result"]).write_text(json.dumps(out, default=str))


# ----------------------------------------------------------------------------- tables
@dataclass(frozen=True)
class Column:
    """A table column: its heading, the dotted path of its value in a record (``params.n``,
    ``seconds``, ``ratios.per_scan``, ``metrics.rss_mib``, ...) and a format spec."""

    heading: str
    key: str
    spec: str = ""


def value(record: Mapping[str, Any], key: str) -> Any:
    """The value at a dotted path of a record; None where a step is missing."""
    current: Any = record
    for part in key.split("."):
        if not isinstance(current, Mapping) or part not in current:
            return None
        current = current[part]
    return current


def cell(v: Any, spec: str = "") -> str:
    """One value as text: ``-`` for None, NaN or an empty list, ``spec`` applied where it fits."""
    if v is None or (isinstance(v, float) and math.isnan(v)) or v == []:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    try:
        return format(v, spec)
    except (TypeError, ValueError):
        return str(v)


def table(records: Iterable[Mapping[str, Any]], columns: Sequence[Column], markdown: bool = False) -> str:
    """The records as a table: right-aligned text columns, or a Markdown table (numbers
    right-aligned)."""
    rows = [[cell(value(r, c.key), c.spec) for c in columns] for r in records]
    heads = [c.heading for c in columns]
    if markdown:
        numeric = [all(_numeric(row[i]) for row in rows) for i in range(len(columns))]
        lines = ["| " + " | ".join(h.replace("|", "\\|") for h in heads) + " |",
                 "|" + "|".join("---:" if n else "---" for n in numeric) + "|"]  # fmt: skip
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
        return "\n".join(lines)
    widths = [max(len(row[i]) for row in [heads, *rows]) for i in range(len(columns))]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in [heads, *rows])


def _numeric(text: str) -> bool:
    return text in ("-", "–") or text.replace(",", "").replace(".", "", 1).lstrip("-").rstrip("x%").isdigit()


def print_table(records: Iterable[Mapping[str, Any]], columns: Sequence[Column]) -> None:
    print(table(records, columns), flush=True)


# ----------------------------------------------------------------------------- arguments
class Arguments(argparse.ArgumentParser):
    """An argument parser with the common options; ``--quick`` sets the script's small settings
    (``quick``) for every option left at its default."""

    def __init__(self, description: str | None, quick: Mapping[str, Any], **kw: Any) -> None:
        super().__init__(description=description, formatter_class=argparse.RawDescriptionHelpFormatter, **kw)
        self.quick = dict(quick)

    def parse_args(self, args: Sequence[str] | None = None, namespace: Any = None) -> Any:  # type: ignore[override]
        parsed = super().parse_args(args, namespace)
        if getattr(parsed, "quick", False):
            for dest, setting in self.quick.items():
                if getattr(parsed, dest) == self.get_default(dest):
                    setattr(parsed, dest, setting)
        return parsed


def arguments(doc: str | None, *, rows: int | Sequence[int] | None = None, quick: Mapping[str, Any] | None = None,
              timeout: bool = False) -> Arguments:
    """The parser of a script: its docstring as the description and the common options --
    ``--rows`` (when the script's data has a size: one value or several), ``--repeat``,
    ``--out``, ``--quick``, ``--dir`` and, with ``timeout``, ``--timeout``. ``quick``: the
    settings ``--quick`` stands for (option destination -> value)."""
    p = Arguments(doc, quick or {})
    if rows is not None:
        if isinstance(rows, int):
            p.add_argument("--rows", type=int, default=rows, help=f"table size (default {rows:,})")
        else:
            p.add_argument("--rows", type=int, nargs="+", default=list(rows),
                           help=f"table sizes (default {' '.join(f'{n:,}' for n in rows)})")
    p.add_argument("--repeat", type=int, default=REPEAT,
                   help=f"timed runs of every repeated measurement, the best kept (default {REPEAT})")
    p.add_argument("--out", type=Path, default=RESULTS,
                   help="directory of the results, one <script>.jsonl each (default benchmarks/results)")
    p.add_argument("--no-record", action="store_true", help="print only; write no results")
    p.add_argument("--quick", action="store_true",
                   help="small settings for a check that the script runs" + (
                       " (" + ", ".join(f"--{d.replace('_', '-')} {_shown(v)}" for d, v in (quick or {}).items()) + ")"
                       if quick else ""))  # fmt: skip
    p.add_argument("--dir", default=DATA_DIR, help=f"where generated data files live and are reused (default {DATA_DIR})")
    if timeout:
        p.add_argument("--timeout", type=float, default=None, help="seconds per child process; a slower one is killed")
    return p


def _shown(v: Any) -> str:
    return " ".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v)


# ----------------------------------------------------------------------------- results
#: The fields of a record (one JSON object per line of ``results/<script>.jsonl``) and their types.
FIELDS: dict[str, tuple[type, ...]] = {
    "schema": (int,),          # SCHEMA
    "script": (str,),          # "bench_core"
    "run": (str,),             # one invocation: its start time, process id and a random tag
    "name": (str,),            # the measurement: "sqlanon", "scan", "apply", ...
    "params": (dict,),         # what was measured: rows, k, criterion, ... (scalars)
    "seconds": (int, float, type(None)),  # the measurement's wall time, None when it has none
    "ratios": (dict,),         # name -> number or None: against a scan, numpy, a floor, a peer, ...
    "metrics": (dict,),        # other scalars shown in the page: peak RSS, classes, accuracy, ...
    "details": (dict,),        # anything else kept: per-step timings, levels, slowest statements
    "error": (str, type(None)),  # why the measurement failed or was skipped (a peer missing, ...)
    "quick": (bool,),          # run with --quick: small settings, not a performance claim
    "command": (str,),         # the command line
    "machine": (dict,),        # machine(): cores, cpu, memory_gib, python, duckdb, numpy, sqlanon, ...
    "load_avg": (list,),       # 1, 5 and 15 minute load averages when the record was written
    "git": (dict,),            # commit, dirty (a "note" when the run was of another tree)
    "timestamp": (str,),       # UTC, ISO 8601, when the record was written
}
MACHINE_FIELDS = ("cores", "cpu", "memory_gib", "python", "duckdb", "numpy", "sqlanon")
_SCALAR = (str, int, float, bool, type(None))


class SchemaError(ValueError):
    """A results record that does not have the layout of :data:`FIELDS`."""


def check(record: Any) -> dict[str, Any]:
    """``record`` when it has the layout of :data:`FIELDS`; else :class:`SchemaError` naming the
    first field that is wrong."""
    if not isinstance(record, dict):
        raise SchemaError(f"a record is a JSON object, not {type(record).__name__}")
    missing_fields = [f for f in FIELDS if f not in record]
    extra = [f for f in record if f not in FIELDS]
    if missing_fields or extra:
        raise SchemaError(f"record fields: missing {missing_fields}, unknown {extra}")
    for name, types in FIELDS.items():
        if not isinstance(record[name], types) or (isinstance(record[name], bool) and bool not in types):
            raise SchemaError(f"record field {name!r}: {type(record[name]).__name__} is not "
                              f"{' or '.join(t.__name__ for t in types)}")  # fmt: skip
    if record["schema"] != SCHEMA:
        raise SchemaError(f"record schema {record['schema']}, this harness reads {SCHEMA}")
    for name in ("params", "metrics"):
        for key, v in record[name].items():
            if not isinstance(v, _SCALAR):
                raise SchemaError(f"{name}[{key!r}] is a {type(v).__name__}, not a scalar (put it in details)")
    for key, v in record["ratios"].items():
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
            raise SchemaError(f"ratios[{key!r}] is {v!r}, not a number or null")
    absent = [f for f in MACHINE_FIELDS if f not in record["machine"]]
    if absent:
        raise SchemaError(f"machine lacks {absent}")
    if len(record["load_avg"]) != 3 or not all(isinstance(x, (int, float)) for x in record["load_avg"]):
        raise SchemaError(f"load_avg is {record['load_avg']!r}, not three numbers")
    # a "note" says how a run of another tree was made (e.g. a git archive of an older commit)
    if set(record["git"]) - {"note"} != {"commit", "dirty"} or not isinstance(record["git"].get("note", ""), str):
        raise SchemaError(f"git has {sorted(record['git'])}, not commit and dirty (and perhaps a note)")
    try:
        datetime.datetime.fromisoformat(record["timestamp"])
    except ValueError as e:
        raise SchemaError(f"timestamp {record['timestamp']!r} is not ISO 8601") from e
    return record


def load(path: str | Path) -> list[dict[str, Any]]:
    """The records of one results file, each checked; an error names the file and line."""
    out = []
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(check(json.loads(line)))
        except (json.JSONDecodeError, SchemaError) as e:
            raise SchemaError(f"{path}:{number}: {e}") from e
    return out


def _plain(v: Any) -> Any:
    """numpy scalars and the like as plain JSON values; floats rounded to 6 significant digits."""
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):
        v = v.item()
    if isinstance(v, float):
        return None if math.isnan(v) or math.isinf(v) else float(f"{v:.6g}")
    if isinstance(v, Mapping):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v


@dataclass
class Recorder:
    """One invocation of a script: what every record of it shares, and :meth:`record`."""

    script: str
    out: Path | None
    quick: bool
    command: str
    machine: dict[str, Any]
    git: dict[str, Any]
    run: str
    records: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def start(cls, script: str, args: argparse.Namespace, packages: Sequence[str] = ()) -> Recorder:
        """The recorder of ``script`` (its ``__file__``) run with ``args``; prints the machine."""
        now = datetime.datetime.now(datetime.timezone.utc)
        name = Path(script).stem
        command = " ".join(["python", f"benchmarks/{name}.py", *sys.argv[1:]])
        rec = cls(script=name, out=None if args.no_record else Path(args.out), quick=bool(args.quick),
                  command=re.sub(r"(://[^/@\s:]+:)[^@\s]*@", r"\1***@", command),  # no password in a record
                  machine=machine(*packages), git=git_state(),
                  run=f"{now.strftime('%Y-%m-%dT%H:%M:%SZ')}-{os.getpid()}-{uuid.uuid4().hex[:8]}")  # fmt: skip
        m = rec.machine
        print(f"# {rec.command}\n# machine: {m['cores']} cores ({m['cpu']}), {m['memory_gib']} GiB; python "
              f"{m['python']}, duckdb {m['duckdb']}, numpy {m['numpy']}, pandas {m['pandas']}, sqlanon {m['sqlanon']}"
              + "".join(f", {p} {m[p]}" for p in packages) + f"; commit {(rec.git['commit'] or '?')[:10]}"
              + (" (modified)" if rec.git["dirty"] else "") + ("; QUICK settings" if rec.quick else "")
              + (f"; results -> {rec.path}" if rec.path else "; not recorded"), flush=True)  # fmt: skip
        return rec

    @property
    def path(self) -> Path | None:
        return None if self.out is None else self.out / f"{self.script}.jsonl"

    def record(self, name: str, params: Mapping[str, Any], seconds: float | None = None,
               ratios: Mapping[str, float | None] | None = None, metrics: Mapping[str, Any] | None = None,
               details: Mapping[str, Any] | None = None, error: str | None = None) -> dict[str, Any]:
        """Append one measurement to the script's results file (and to :attr:`records`); returns
        the record. ``params``/``metrics`` hold scalars, ``details`` anything JSON can hold."""
        rec = check({
            "schema": SCHEMA, "script": self.script, "run": self.run, "name": name,
            "params": _plain(dict(params)), "seconds": _plain(seconds), "ratios": _plain(dict(ratios or {})),
            "metrics": _plain(dict(metrics or {})), "details": _plain(dict(details or {})), "error": error,
            "quick": self.quick, "command": self.command, "machine": self.machine,
            "load_avg": [round(x, 2) for x in os.getloadavg()], "git": self.git,
            "timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        })  # fmt: skip
        self.records.append(rec)
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a") as f:
                f.write(json.dumps(rec, separators=(",", ":")) + "\n")
        shown = {k: rec[k] for k in ("params", "seconds", "ratios", "metrics", "error") if rec[k] not in ({}, None)}
        print(json.dumps({"name": name, **shown}), flush=True)
        return rec


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        _child(sys.argv[2])
    else:
        raise SystemExit("harness.py runs only as a benchmark's child: python harness.py --child SPEC")
