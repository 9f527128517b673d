"""How results show in a terminal and a notebook: a one-line text repr and a compact HTML card
(Jupyter's ``_repr_html_``) for :class:`~sqlanon.Release`, :class:`~sqlanon.Verification`,
:class:`~sqlanon.Risk` and :class:`~sqlanon.Metrics`. Each class says what matters about it --
its verdict, a title and a few ``(label, value)`` facts; this module only lays them out. The
dataclass fields stay the API: the full record is ``dataclasses.asdict(result)``.

Only counts, names and settings are shown, never a value of the data (a suppressed row's QI
values in particular); every name is escaped (``html.escape`` in a card, ``repr`` in a text).
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

__all__ = ["MAX_FACT", "card", "names", "number", "text"]

#: The longest a fact may be in a text repr (a long algorithm or requirement is shortened).
MAX_FACT = 120


def text(kind: str, title: str, facts: Sequence[tuple[str, Any]], verdict: bool | None = None) -> str:
    """``<Kind 'title': HOLDS; label value; ...>`` on one line: the title as a Python repr (so
    quotes and line breaks in a name stay visible and escaped), then the verdict when given, then
    each fact as ``label value``; the title and each fact at most :data:`MAX_FACT` characters."""
    parts = [] if verdict is None else [_verdict(verdict)]
    parts += [_short(f"{label} {_shown(value)}") for label, value in facts]
    return f"<{kind} {_short(repr(title))}: " + "; ".join(parts) + ">"


def card(kind: str, title: str, rows: Sequence[tuple[str, Any]], verdict: bool | None = None) -> str:
    """A small self-contained HTML table: a header with ``kind: title`` and, when given, a
    green HOLDS / red FAILS badge, then one row per ``(label, value)``."""
    badge = ""
    if verdict is not None:
        colour = "#1a7f37" if verdict else "#cf222e"
        badge = (f' <span style="background:{colour};color:#fff;border-radius:4px;padding:1px 6px;'
                 f'font-size:11px;font-weight:700">{_verdict(verdict)}</span>')
    cells = "".join(
        f'<tr><td style="padding:2px 10px 2px 0;color:#59636e;text-align:left">{html.escape(label)}</td>'
        f'<td style="padding:2px 0;text-align:left;font-variant-numeric:tabular-nums">{html.escape(_shown(value))}</td></tr>'
        for label, value in rows)
    return (f'<div style="font:13px system-ui,sans-serif;border:1px solid #d0d7de;border-radius:6px;'
            f'padding:6px 10px;display:inline-block"><div style="font-weight:700;margin-bottom:4px">'
            f'{html.escape(kind)}: <code>{html.escape(title)}</code>{badge}</div>'
            f'<table style="border-collapse:collapse">{cells}</table></div>')


def names(values: Sequence[str]) -> str:
    """Column or QI names as one short text: ``'age', 'sex', 'education'``."""
    return ", ".join(repr(v) for v in values)


def _verdict(holds: bool) -> str:
    return "HOLDS" if holds else "FAILS"


def _short(fact: str) -> str:
    return fact if len(fact) <= MAX_FACT else fact[:MAX_FACT - 1] + "…"


def _shown(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(_shown(v) for v in value)
    if isinstance(value, float) and 0 < abs(value) < 1:
        return f"{value:.4g}"
    return number(value)


def number(value: Any) -> str:
    """A number as a person reads it: thousands separated, four significant digits, n/a for None."""
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if value != 0 and (abs(value) >= 1e6 or abs(value) < 1e-4):
            return f"{value:.4g}"
        return f"{value:,.1f}" if abs(value) >= 1000 else f"{value:.4g}"
    return str(value)
