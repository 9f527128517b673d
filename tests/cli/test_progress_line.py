"""The CLI's progress line (``sqlanon.cli.common.ProgressLine``) on a terminal: a phase told in
words (the first run's kernel compilation) is drawn as its words, not as an empty tree level."""

from __future__ import annotations

import io

from sqlanon.cli.common import ProgressLine
from sqlanon.model.partition import Progress


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _drawn(progress: Progress) -> str:
    line = ProgressLine(quiet=False)
    line.stream = _Terminal()
    line.enabled = True
    with line as callback:
        assert callback is not None
        callback(progress)
        return line.stream.getvalue()


def test_a_compile_message_is_drawn_as_its_words():
    text = _drawn(Progress(level=0, phase="compile", open_partitions=0, rows_finished=0, elapsed=1.5,
                           message="compiling kernels, first use only"))
    assert "sqlanon: compiling kernels, first use only, 1.5 s" in text
    assert "open partitions" not in text and "publishing" not in text


def test_a_tree_level_is_drawn_as_before():
    text = _drawn(Progress(level=3, phase="sql", open_partitions=12, rows_finished=400, elapsed=2.0))
    assert "level 3 (sql): 12 open partitions, 400 rows finished" in text
