"""The examples run as documented (they are the first thing a user tries)."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize("name", ["demo.py", "workload.py"])
def test_example_runs(name, capsys):
    runpy.run_path(str(EXAMPLES / name), run_name="__main__")
    out = capsys.readouterr().out
    assert ("independent check: ok=True" in out) if name == "demo.py" else ("infogain + l-diversity" in out)
