"""How results show in a terminal and a notebook: a one-line text repr and a compact HTML card
(Jupyter's ``_repr_html_``) for :class:`~sqlanon.Release`, :class:`~sqlanon.Verification`,
:class:`~sqlanon.Risk` and :class:`~sqlanon.Metrics`. Each class says what matters about it as
``(label, value)`` pairs; this module only lays them out. The dataclass fields stay the API: the
full record is ``dataclasses.asdict(result)``."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from .plots import number


def text(kind: str, fields: Sequence[tuple[str, Any]]) -> str:
    """``Kind(name=value, ...)``: the few fields that matter, values as Python reprs."""
    return f"{kind}(" + ", ".join(f"{name}={value!r}" for name, value in fields) + ")"


def card(kind: str, title: str, rows: Sequence[tuple[str, Any]], verdict: bool | None = None) -> str:
    """A small self-contained HTML table: a header with ``kind: title`` and, when given, a
    green HOLDS / red FAILS badge, then one row per ``(label, value)``."""
    badge = ""
    if verdict is not None:
        colour, word = ("#1a7f37", "HOLDS") if verdict else ("#cf222e", "FAILS")
        badge = (f' <span style="background:{colour};color:#fff;border-radius:4px;padding:1px 6px;'
                 f'font-size:11px;font-weight:700">{word}</span>')
    cells = "".join(
        f'<tr><td style="padding:2px 10px 2px 0;color:#59636e;text-align:left">{html.escape(label)}</td>'
        f'<td style="padding:2px 0;text-align:left;font-variant-numeric:tabular-nums">{html.escape(_shown(value))}</td></tr>'
        for label, value in rows)
    return (f'<div style="font:13px system-ui,sans-serif;border:1px solid #d0d7de;border-radius:6px;'
            f'padding:6px 10px;display:inline-block"><div style="font-weight:700;margin-bottom:4px">'
            f'{html.escape(kind)}: <code>{html.escape(title)}</code>{badge}</div>'
            f'<table style="border-collapse:collapse">{cells}</table></div>')


def _shown(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(_shown(v) for v in value)
    if isinstance(value, float) and 0 < abs(value) < 1:
        return f"{value:.4g}"
    return number(value)
