"""The code is lint-clean: ``ruff check .`` (the rules of ``[tool.ruff]`` in pyproject.toml) finds
nothing, and the ruff that pre-commit runs is the one the tests run."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_check_is_clean():
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "."],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def test_pre_commit_runs_the_tested_ruff():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["test"]
    (pinned,) = [re.fullmatch(r"ruff==(\S+)", e).group(1) for e in extras if e.startswith("ruff")]
    config = (ROOT / ".pre-commit-config.yaml").read_text()
    hook = re.search(r"repo: https://github.com/astral-sh/ruff-pre-commit\s+rev: v(\S+)", config)
    assert hook is not None and hook.group(1) == pinned, (hook and hook.group(1), pinned)
