"""The documentation: the Sphinx site builds with warnings as errors, and every relative link of the
README and the docs names a file that exists (the pages' ``>>>`` examples run as doctests through
pytest's ``--doctest-glob=*.md``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"\]\(([^)\s#]+)(#[^)\s]*)?\)")


def test_the_site_builds_without_warnings(tmp_path: Path) -> None:
    from sphinx.cmd import build as sphinx
    status = sphinx.build_main(["-W", "--keep-going", "-q", "-b", "html", str(ROOT / "docs"), str(tmp_path)])
    assert status == 0
    assert (tmp_path / "index.html").exists() and (tmp_path / "reference" / "index.html").exists()


@pytest.mark.parametrize("page", ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md")
                                                      if "_build" not in p.parts)])
def test_relative_links_resolve(page: str) -> None:
    path = ROOT / page
    missing = [target for target, _ in LINK.findall(path.read_text())
               if "://" not in target and not (path.parent / target).exists()]
    assert missing == []


def test_the_readme_is_a_front_door() -> None:
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 250
    assert "pip install . && python examples/demo.py" in text and "python -m pytest" in text
    assert not re.search(r"\b20\d\d-\d\d-\d\d\b", text), "nothing dated in the README"
