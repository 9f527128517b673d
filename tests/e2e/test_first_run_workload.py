"""What the first runs of the common requests compile (issue 52, "no silent first run"): from an
empty numba cache, each request compiles every kernel it reaches once — one signature, not one
per argument type a caller happens to pass (a literal argument, an integer of another width, an
array of another layout or dtype is a specialization of its own, compiled and cached beside the
first) — and a request under k alone compiles no privacy-model path (the model branches of the
growth loops are pruned when ``kinds`` is None)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_RUN = """
    import json
    import sys

    import duckdb
    import numpy as np
    from numba.core.registry import CPUDispatcher

    import sqlanon

    def signatures():
        out = {}
        for name, module in list(sys.modules.items()):
            if name.startswith("sqlanon.") and module is not None:
                for attr, f in vars(module).items():
                    if isinstance(f, CPUDispatcher) and f.py_func.__module__ == name:
                        out[name.rsplit(".", 1)[1] + "." + attr] = [str(s) for s in f.signatures]
        return out

    con = duckdb.connect()
    rng = np.random.default_rng(0)
    n = 3000
    con.execute("CREATE TABLE t (age INT, zip INT, inc INT, label INT, s INT)")
    con.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?)",
                    list(zip(*(rng.integers(lo, hi, n).tolist() for lo, hi in
                               ((17, 90), (10000, 10300), (0, 100), (0, 3), (0, 5))))))
    entropy = [sqlanon.EntropyLDiversity("s", 2)]
    requests = [
        ("infogain", {"algorithm": sqlanon.Mondrian(sqlanon.InfoGain("label"))}),
        ("regression", {"algorithm": sqlanon.Mondrian(sqlanon.Regression("label"))}),
        ("median", {}),
        ("median+entropy", {"privacy": entropy}),
        ("median+suppression", {"suppression": 0.02}),
        ("infogain+entropy", {"algorithm": sqlanon.Mondrian(sqlanon.InfoGain("label")), "privacy": entropy}),
        ("infogain+suppression", {"algorithm": sqlanon.Mondrian(sqlanon.InfoGain("label")), "suppression": 0.02}),
    ]
    steps = []
    for i, (name, kw) in enumerate(requests):
        before = signatures()
        sqlanon.anonymize(con, "t", qid=["age", "zip", "inc"], k=20, output=f"out{i}", **kw)
        after = signatures()
        steps.append([name, {k: v[len(before.get(k, [])):] for k, v in after.items()
                             if len(v) > len(before.get(k, []))}])
    print(json.dumps(steps))
"""

#: The kernels of the privacy models' path: never compiled for a request under k alone.
MODEL_PATH = {"workload_models._decide", "workload_models._qi_cuts", "workload_models._median_walk",
              "median_finish.allowed", "median_finish._model_cut", "compiled.passes"}


def test_each_request_compiles_each_kernel_once(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env["NUMBA_CACHE_DIR"] = str(tmp_path)
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(_RUN)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    steps = dict(json.loads(done.stdout.splitlines()[-1]))
    # the compiled finishes ran
    assert {"workload_finish._grow", "cut_scan._scan_from"} <= set(steps["infogain"])
    assert "median_finish._grow" in steps["median"]
    assert "median_finish._model_cut" in steps["median+entropy"]
    assert "workload_models._decide" in steps["infogain+entropy"]
    for alone in ("infogain", "regression", "median", "median+suppression", "infogain+suppression"):
        assert not MODEL_PATH & set(steps[alone]), (alone, sorted(MODEL_PATH & set(steps[alone])))
    twice = {(step, kernel): sigs for step, compiled in steps.items() for kernel, sigs in compiled.items()
             if len(sigs) > 1}
    assert twice == {}
