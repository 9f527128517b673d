"""Plots as inline SVG, and the number formatting they share with the report.

The release report (:mod:`sqlanon.release.report`) must be one self-contained HTML file with no scripts
and no new dependency, so its charts are plain SVG strings built here: a column chart (the
class-size histogram), stacked horizontal bars (timings, selections) and a colour ramp for
generalization widths. Every label is escaped.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any

from ..display import number

BLUE = "#4c78a8"
ORANGE = "#e45756"
GREY = "#aab4bf"




def esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def ticks(top: float, count: int = 5) -> list[float]:
    """Round tick values from 0 to at least ``top``."""
    if top <= 0:
        return [0.0, 1.0]
    raw = top / count
    step = 10 ** math.floor(math.log10(raw))
    step *= next(f for f in (1, 2, 2.5, 5, 10) if f * step >= raw)
    return [i * step for i in range(math.ceil(top / step - 1e-9) + 1)]


def svg_columns(labels: Sequence[str], values: Sequence[float], title: str, *, y_label: str,
                mark: tuple[float, str] | None = None) -> str:
    """A vertical bar chart (the class-size histogram). ``mark = (slot, text)`` draws a dashed
    vertical line at ``slot`` (0 the left edge of the first bar, 1 of the second, ...) labelled
    ``text`` (the class-size histogram marks k)."""
    w, h, left, bottom, top_pad = 1000, 300, 64, 64, 28
    marks = ticks(max(values) if values else 0)
    scale = (h - bottom - top_pad) / marks[-1]
    slot = (w - left - 10) / max(len(values), 1)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
             f'role="img" aria-label="{esc(title)}"><title>{esc(title)}</title>']
    for t in marks:
        y = h - bottom - t * scale
        parts.append(f'<line x1="{left}" x2="{w - 10}" y1="{y:.1f}" y2="{y:.1f}" stroke="#d0d7de"/>'
                     f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{number(int(t) if t == int(t) else t)}</text>')
    rotate = len(labels) > 12
    for i, (label, value) in enumerate(zip(labels, values)):
        x = left + i * slot
        bh = value * scale
        parts.append(f'<rect class="bar" x="{x + slot * 0.1:.1f}" y="{h - bottom - bh:.1f}" width="{slot * 0.8:.1f}" '
                     f'height="{bh:.1f}" fill="{BLUE}"><title>{esc(label)}: {number(value)}</title></rect>')
        cx, cy = x + slot / 2, h - bottom + 14
        anchor = f'text-anchor="end" transform="rotate(-40 {cx:.1f} {cy:.1f})"' if rotate else 'text-anchor="middle"'
        parts.append(f'<text x="{cx:.1f}" y="{cy:.1f}" {anchor}>{esc(label)}</text>')
    if mark is not None:
        x = left + mark[0] * slot
        parts.append(f'<line class="mark" x1="{x:.1f}" x2="{x:.1f}" y1="{top_pad - 8}" y2="{h - bottom}" stroke="{ORANGE}" '
                     f'stroke-width="2" stroke-dasharray="6 4"/><text x="{x + 5:.1f}" y="{top_pad - 12}" '
                     f'fill="{ORANGE}">{esc(mark[1])}</text>')
    parts.append(f'<text x="14" y="{(h - bottom) / 2:.0f}" transform="rotate(-90 14 {(h - bottom) / 2:.0f})" '
                 f'text-anchor="middle">{esc(y_label)}</text></svg>')
    return "".join(parts)


def svg_before_after(labels: Sequence[str], before: Sequence[float | None], after: Sequence[float | None],
                     title: str) -> str:
    """Pairs of horizontal bars on a 0..100 % scale, before (grey) and after (blue), one pair per
    label (the report's risk picture); a missing value draws no bar and says so."""
    label_w, bar_w, row_h = 200, 260, 52
    h = row_h * len(labels) + 30
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{label_w + bar_w + 70}" height="{h}" role="img" '
             f'aria-label="{esc(title)}"><title>{esc(title)}</title>',
             f'<rect x="{label_w}" y="4" width="12" height="12" fill="{GREY}"/>'
             f'<text x="{label_w + 18}" y="14">before (source)</text>'
             f'<rect x="{label_w + 130}" y="4" width="12" height="12" fill="{BLUE}"/><text x="{label_w + 148}" y="14">'
             f'after (release)</text>']
    for i, (label, pair) in enumerate(zip(labels, zip(before, after))):
        y = 26 + i * row_h
        parts.append(f'<text x="{label_w - 8}" y="{y + 24}" text-anchor="end">{esc(label)}</text>')
        for j, (value, colour) in enumerate(zip(pair, (GREY, BLUE))):
            by = y + 4 + j * 22
            if value is None:
                parts.append(f'<text x="{label_w}" y="{by + 13}">not readable</text>')
                continue
            length = bar_w * min(max(value, 0.0), 1.0)
            parts.append(f'<rect class="bar" x="{label_w}" y="{by}" width="{max(length, 1):.1f}" height="18" '
                         f'fill="{colour}"><title>{esc(label)}: {value:.1%}</title></rect>'
                         f'<text x="{label_w + length + 6:.1f}" y="{by + 13}">{value:.1%}</text>')
    return "".join(parts) + "</svg>"


def svg_rows(labels: Sequence[str], segments: Sequence[Sequence[float]], captions: Sequence[str], title: str,
              colours: Sequence[str] = (BLUE,), *, labels_above: bool = False) -> str:
    """A horizontal bar chart, each bar a stack of segments (timings; selections: the rows a
    selection returns, split into the rows it selects and the imprecision). Long labels (SQL
    predicates) go above their bar, short ones (step names) to its left."""
    label_w, bar_w = (0, 700) if labels_above else (200, 600)
    row_h, bar_y = (44, 18) if labels_above else (26, 4)
    h = row_h * len(segments) + 6
    top = max((sum(row) for row in segments), default=0)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{label_w + bar_w + 300}" height="{h}" role="img" '
             f'aria-label="{esc(title)}"><title>{esc(title)}</title>']
    for i, (label, row, caption) in enumerate(zip(labels, segments, captions)):
        y = 3 + i * row_h
        limit = 150 if labels_above else 30
        shown = label if len(label) <= limit else label[:limit - 1] + "…"
        where = f'x="0" y="{y + 12}"' if labels_above else f'x="{label_w - 8}" y="{y + 17}" text-anchor="end"'
        parts.append(f'<text {where}>{esc(shown)}<title>{esc(label)}</title></text>')
        x = float(label_w)
        for j, (value, colour) in enumerate(zip(row, colours)):
            length = bar_w * value / top if top > 0 else 0.0
            if j == 0 or length > 0:  # the first segment at least a hairline, so an empty bar shows
                parts.append(f'<rect class="bar" x="{x:.1f}" y="{y + bar_y}" width="{max(length, 1):.1f}" '
                             f'height="18" fill="{colour}"><title>{esc(caption)}</title></rect>')
            x += length
        parts.append(f'<text x="{x + 6:.1f}" y="{y + bar_y + 13}">{esc(caption)}</text>')
    return "".join(parts) + "</svg>"


def shade(bucket: int) -> str:
    """White-ish for exact values to dark blue for the whole domain."""
    t = bucket / 10
    r, gr, b = (round(a + (z - a) * t) for a, z in ((232, 8), (240, 48), (250, 107)))
    return f"rgb({r},{gr},{b})"
