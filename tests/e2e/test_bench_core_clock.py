"""bench_core's sqlanon child times the anonymization, not sqlanon's imports (issue 52): ``import
sqlanon`` loads its public names on first use, and the numpy child imports its reference before
its clock starts, so the sqlanon child loads ``sqlanon.anonymize`` (the pipeline, pandas,
sqlglot) before it connects and starts the clock, and reports the imports' time apart."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD = """
import json, sys
sys.path.insert(0, {root!r})
from tests.support.bench import bench_module
agrawal = bench_module("agrawal")
core = bench_module("bench_core")
import duckdb
con = duckdb.connect({db!r})
frame = agrawal.generate(3000)
con.execute("CREATE TABLE agrawal AS SELECT * FROM frame")
con.close()
seen = []
real = duckdb.connect
def connect(*a, **kw):  # the child connects just before its clock starts
    seen.append("sqlanon.pipeline" in sys.modules)
    return real(*a, **kw)
duckdb.connect = connect
out = core.child_sqlanon({db!r}, 10, None, None)
print(json.dumps({{"loaded_before_clock": seen, "import_s": out.get("import_s"), "s": out["s"]}}))
"""


def test_the_sqlanon_child_loads_sqlanon_before_its_clock(tmp_path):
    db = str(tmp_path / "agrawal.duckdb")
    # a fresh interpreter: this one has imported sqlanon's modules already
    done = subprocess.run([sys.executable, "-c", CHILD.format(root=str(ROOT), db=db)], capture_output=True,
                          text=True, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["loaded_before_clock"] == [True]
    assert out["import_s"] is not None and out["import_s"] > 0 and out["s"] > 0
