"""The first run after an install (issue 52, "no silent first run"): ``import sqlanon`` loads
neither pandas nor numba, the compiled kernels are cached where this user can write, and a run
that compiles kernels says so through its ``progress`` callback and the ``sqlanon`` logger
(:mod:`sqlanon.compilation`)."""

from __future__ import annotations

import ast
import json
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb

import sqlanon
from sqlanon import compilation

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "sqlanon"


def _python(code: str, env: dict[str, str] | None = None) -> str:
    """Run ``code`` in a fresh interpreter on this checkout; its stdout."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_import_loads_neither_pandas_nor_numba():
    out = _python("""
        import sys
        import sqlanon
        heavy = ("pandas", "numba", "duckdb", "sqlglot", "numpy", "pyarrow", "psycopg", "pyspark")
        print(sorted(m for m in heavy if m in sys.modules))
        print(sqlanon.__file__)
    """)
    loaded, where = out.splitlines()
    assert loaded == "[]"
    assert Path(where).resolve() == PACKAGE / "__init__.py"


def test_public_names_load_on_first_use():
    out = _python("""
        import sys
        import sqlanon
        assert sqlanon.SqlanonError.__module__ == "sqlanon.errors"
        assert "numba" not in sys.modules and "pandas" not in sys.modules
        from sqlanon import anonymize, hierarchies, Median
        print(anonymize.__module__, hierarchies.__name__, Median.__module__)
        try:
            sqlanon.no_such_name
        except AttributeError as e:
            print(e)
    """)
    assert out.splitlines() == ["sqlanon.api sqlanon.hierarchies sqlanon.model.criteria",
                                "module 'sqlanon' has no attribute 'no_such_name'"]


def test_every_public_name_resolves_and_matches_the_typing_imports():
    """``__all__`` (the lazy table) and the imports type checkers read name the same objects."""
    tree = ast.parse((PACKAGE / "__init__.py").read_text())
    typed = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom)
                for alias in imp.names:
                    typed[alias.name] = "." * imp.level + (imp.module or alias.name)
    assert typed == {name: home for name, home in sqlanon._HOMES.items()}
    for name in sqlanon.__all__:
        assert getattr(sqlanon, name) is not None
    assert set(sqlanon.__all__) <= set(dir(sqlanon))


# -- the cache directory ---------------------------------------------------------------------------

def test_a_writable_package_keeps_numba_default(tmp_path):
    env = {"HOME": str(tmp_path / "home")}
    assert compilation.use_writable_cache(env, package=tmp_path) is None
    assert "NUMBA_CACHE_DIR" not in env


def test_the_users_choice_is_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(compilation, "_writable_tree", lambda package: False)
    env = {"NUMBA_CACHE_DIR": "/somewhere", "HOME": str(tmp_path)}
    assert compilation.use_writable_cache(env) is None
    assert env["NUMBA_CACHE_DIR"] == "/somewhere"


def test_an_unwritable_package_caches_in_the_users_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(compilation, "_writable_tree", lambda package: False)
    monkeypatch.setattr(compilation.tempfile, "tempdir", str(tmp_path / "no-such-tmp"))
    env = {"HOME": str(tmp_path / "home")}
    assert compilation.use_writable_cache(env) == str(tmp_path / "home" / ".cache" / "sqlanon" / "numba")
    assert env["NUMBA_CACHE_DIR"] == str(tmp_path / "home" / ".cache" / "sqlanon" / "numba")
    env = {"HOME": str(tmp_path / "home"), "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    assert compilation.use_writable_cache(env) == str(tmp_path / "xdg" / "sqlanon" / "numba")


def test_without_a_writable_home_the_cache_goes_to_a_private_temp_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(compilation, "_writable_tree", lambda package: False)
    monkeypatch.setattr(compilation.tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    env = {"HOME": str(blocked), "XDG_CACHE_HOME": str(blocked)}
    chosen = Path(compilation.use_writable_cache(env))
    assert chosen.parent.parent == tmp_path / "tmp" and chosen.is_dir()
    assert chosen.parent.stat().st_mode & 0o077 == 0


def test_a_temp_dir_others_may_write_is_not_used(tmp_path, monkeypatch):
    """numba's cache index is a pickle: a directory another user could plant one in is refused."""
    monkeypatch.setattr(compilation, "_writable_tree", lambda package: False)
    monkeypatch.setattr(compilation.tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    user = os.getuid() if hasattr(os, "getuid") else "user"
    shared = tmp_path / "tmp" / f"sqlanon-{user}"
    shared.mkdir()
    shared.chmod(0o777)
    env = {"HOME": str(blocked)}
    assert compilation.use_writable_cache(env) is None
    assert "NUMBA_CACHE_DIR" not in env


_KERNEL = """
    import os, sys, json
    real = os.access
    package = os.path.realpath(os.environ["PACKAGE"])
    def access(path, mode, *args, **kwargs):  # the package directory as a read-only install sees it
        if os.path.realpath(path).startswith(package) and mode & os.W_OK:
            return False
        return real(path, mode, *args, **kwargs)
    os.access = access
    import numpy as np
    import sqlanon
    from sqlanon.mondrian.compiled import gather
    out = gather.take(np.arange(5, dtype=np.int64), np.array([4, 0], dtype=np.int64))
    assert out.tolist() == [4, 0]
    print(json.dumps({"dir": os.environ.get("NUMBA_CACHE_DIR"), "hits": sum(gather.take.stats.cache_hits.values()),
                      "misses": sum(gather.take.stats.cache_misses.values())}))
"""


def test_an_unwritable_package_caches_kernels_in_the_users_cache_once(tmp_path):
    """A read-only install (the package directory unwritable): the kernels' cache lands in the
    user's cache directory, and the second process loads it instead of compiling again."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "XDG_"))}
    env.update(HOME=str(tmp_path), PACKAGE=str(PACKAGE))
    first = json.loads(_python(_KERNEL, env))
    cache = tmp_path / ".cache" / "sqlanon" / "numba"
    assert first == {"dir": str(cache), "hits": 0, "misses": 1}
    assert any(p.name.startswith("gather.take-") and p.suffix == ".nbi" for p in cache.rglob("*"))
    second = json.loads(_python(_KERNEL, env))
    assert second == {"dir": str(cache), "hits": 1, "misses": 0}


# -- the compile message ----------------------------------------------------------------------------

def _fresh_kernel(name: str):
    """A numba function of a sqlanon module, not compiled yet (compiles in a fraction of a second)."""
    from numba import njit

    def kernel(x):
        return x + 1

    kernel.__module__ = "sqlanon.probe"
    kernel.__qualname__ = kernel.__name__ = name
    return njit(kernel)


def test_a_run_that_compiles_kernels_says_so(monkeypatch, caplog):
    from sqlanon.mondrian.algorithm import Mondrian

    warm = Mondrian.warm
    kernels = iter([_fresh_kernel("first"), _fresh_kernel("second")])

    def compiling_warm(self, spec):  # the kernels a run needs, compiled at its start
        kernel = next(kernels)
        assert kernel(1) == 2 and kernel(2.5) == 3.5  # two compilations, one message
        warm(self, spec)

    monkeypatch.setattr(Mondrian, "warm", compiling_warm)
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT i AS id, i % 37 AS age, i % 5 AS zip FROM range(200) r(i)")
    seen = []
    sql_only = sqlanon.Mondrian(strategy=sqlanon.Levels(memory_rows=0))  # compiles nothing of its own
    with caplog.at_level(logging.INFO, logger="sqlanon"):
        sqlanon.anonymize(con, "t", qid=["age", "zip"], k=5, progress=seen.append, output="a", algorithm=sql_only)
    said = [p for p in seen if p.phase == "compile"]
    assert [(p.message, p.level, p.open_partitions) for p in said] == [(compilation.MESSAGE, 0, 0)]
    assert seen[0] is said[0] and said[0].elapsed > 0
    messages = [r.getMessage() for r in caplog.records if r.name == "sqlanon"]
    assert f"{compilation.MESSAGE} (sqlanon.probe.first)" in messages
    assert any(m.startswith("compiled 2 kernels in ") for m in messages)

    # compiled now: the next run says nothing of compiling
    monkeypatch.setattr(Mondrian, "warm", warm)
    seen.clear()
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="sqlanon"):
        sqlanon.anonymize(con, "t", qid=["age", "zip"], k=5, progress=seen.append, output="b", algorithm=sql_only)
    assert seen and not [p for p in seen if p.phase == "compile"]
    assert not [r for r in caplog.records if "compil" in r.getMessage()]


def test_only_sqlanon_kernels_count():
    from numba import njit

    def other(x):
        return x * 2

    with compilation.reporting(None) as compiles:
        assert njit(other)(3) == 6
    assert compiles.kernels == 0
    with compilation.reporting(None) as compiles:
        assert _fresh_kernel("third")(3) == 4
    assert compiles.kernels == 1 and compiles.seconds > 0


# -- what a first run compiles ---------------------------------------------------------------------

def test_median_compiles_only_the_specialization_the_request_needs(tmp_path):
    """From an empty cache: Median under k alone compiles no privacy-model path, and no kernel
    twice (a literal argument would be a specialization of its own); warming for privacy models
    loads what a finish with a face then uses, compiling nothing more."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env["NUMBA_CACHE_DIR"] = str(tmp_path)
    out = _python("""
        import json
        import numpy as np
        from sqlanon.mondrian.compiled import median_finish as m
        from sqlanon.model.privacy import EntropyLDiversity

        def compiled():
            return {f.py_func.__name__: len(f.signatures)
                    for f in (m._grow, m._median_cut, m._model_cut, m.allowed, m._split, m._select)}

        m.warm()
        alone = compiled()
        m.warm(models=True)
        warmed = compiled()
        face = EntropyLDiversity("y", 2).face()
        codes = np.array([np.arange(60) % 7, np.arange(60) % 5], dtype=np.int32)
        nums = [np.arange(7.0), np.arange(5.0)]
        m._finish(codes, np.array([60], dtype=np.int64), nums, 7, 4,
                  models=m.Models.of([face], {"y": (np.arange(60) % 3).astype(np.int64)}, {"y": 3}, 60, 60))
        print(json.dumps([alone, warmed, compiled()]))
    """, env)
    alone, warmed, after = json.loads(out)
    assert alone == {"_grow": 1, "_median_cut": 1, "_model_cut": 0, "allowed": 0, "_split": 1, "_select": 1}
    assert warmed == {"_grow": 2, "_median_cut": 1, "_model_cut": 1, "allowed": 1, "_split": 1, "_select": 1}
    assert after == warmed
