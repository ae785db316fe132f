"""Bar charts as SVG documents, written as text: a row of panels, each with a title, axis
labels, ticks, bars (grouped when there are several series, with a legend) and value labels.

An eval's summary chart is two such panels. Drawn with matplotlib, they cost about 0.8 s of
CPU in a fresh eval process (its import, then its font layout), a quarter of a whole 1-question
eval's (docs/guides/evaluation.md); the document here is built from strings alone, in under a
millisecond. The same input gives the same bytes. The SVG has a size and a viewBox, a generic
font family and no script or external reference, so a browser, GitHub and MkDocs show it as
it is.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

from macsql.database.atomic_files import write_text_atomically

FONT = "sans-serif"
TEXT = "#222222"
GRID = "#dddddd"
AXIS = "#555555"

# Characters XML 1.0 does not allow, even escaped: a label holding one would make the whole
# document unreadable, so it is shown as U+FFFD instead.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]|[\ud800-\udfff]")


@dataclass(frozen=True)
class Series:
    """One bar per category; `colors` is one colour for all bars, or one per bar."""

    name: str
    values: Sequence[float]
    labels: Sequence[str]
    colors: Sequence[str] = ("#4c72b0",)


@dataclass(frozen=True)
class Panel:
    """`y_max` fixes the top of the y axis (105 for percentages, room above 100); without it
    the top is the largest value, rounded up to a tick. `integer` keeps ticks whole (counts)."""

    title: str
    y_label: str
    categories: Sequence[str]
    series: Sequence[Series]
    x_label: str = ""
    y_max: float | None = None
    integer: bool = False


def _text(value: str) -> str:
    return escape(_NOT_XML.sub("\ufffd", value))


def _attr(value: str) -> str:
    return quoteattr(_NOT_XML.sub("\ufffd", value))


def _num(x: float) -> str:
    """Coordinates to 2 decimals, without trailing zeros: short and the same on every run."""
    text = f"{x:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text


def text_width(text: str, size: float) -> float:
    """An estimate of a sans-serif text's width: wide (East Asian) characters count double."""
    units = sum(1.0 if unicodedata.east_asian_width(c) in "WF" else 0.62 for c in text)
    return units * size


def axis_ticks(panel: Panel) -> tuple[float, list[float]]:
    """The y axis's top and its ticks (0 included): a step of 1, 2 or 5 times a power of ten,
    at most seven ticks, none above the top."""
    values = [v for s in panel.series for v in s.values if math.isfinite(v)]
    top = panel.y_max if panel.y_max is not None else max([0.0, *values])
    if top <= 0:
        top = 1.0
    raw = top / 6
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw - 1e-12)
    if panel.integer:
        step = max(1.0, float(round(step)))
    if panel.y_max is None:
        top = math.ceil(top / step - 1e-9) * step
    count = math.floor(top / step + 1e-9)
    return top, [round(i * step, 10) for i in range(count + 1)]


def _tick_label(tick: float) -> str:
    return str(int(tick)) if tick == int(tick) else f"{tick:g}"


@dataclass(frozen=True)
class _Frame:
    width: float
    height: float
    plot_top: float
    plot_bottom: float


def _category_room(panel: Panel, panel_width: float) -> tuple[float, float]:
    """The widest category label, and the room each category has (about, before margins)."""
    widest = max((text_width(c, 11) for c in panel.categories), default=0.0)
    return widest, (panel_width - 80) / max(1, len(panel.categories))


def _frame(panels: Sequence[Panel], width: float, height: float) -> _Frame:
    panel_width = width / max(1, len(panels))
    slanted = [w for w, room in (_category_room(p, panel_width) for p in panels) if _slant(w, room)]
    extra = max(slanted, default=0.0) * 0.71  # room below the plots for the slanted labels
    legend = any(len(p.series) > 1 for p in panels)
    plot_top = 58.0 if legend else 40.0
    total = height + extra
    return _Frame(width, total, plot_top, total - 44 - extra)


def _slant(widest: float, room: float) -> bool:
    """Category labels are turned 45 degrees when they would not fit side by side."""
    return widest + 6 > room


def _panel(panel: Panel, left_edge: float, panel_width: float, frame: _Frame) -> list[str]:
    top, ticks = axis_ticks(panel)
    tick_width = max(text_width(_tick_label(t), 10) for t in ticks)
    left = left_edge + 26 + tick_width
    right = left_edge + panel_width - 12
    plot_w = right - left
    plot_h = frame.plot_bottom - frame.plot_top
    bottom = frame.plot_bottom
    out = ['<g class="panel">']
    out.append(
        f'<text class="title" x="{_num((left + right) / 2)}" y="22" text-anchor="middle" '
        f'font-size="14" fill="{TEXT}">{_text(panel.title)}</text>'
    )
    for tick in ticks:
        y = bottom - tick / top * plot_h
        out.append(
            f'<line class="grid" x1="{_num(left)}" y1="{_num(y)}" x2="{_num(right)}" '
            f'y2="{_num(y)}" stroke="{GRID}" stroke-width="1"/>'
        )
        out.append(
            f'<text class="tick-label" x="{_num(left - 6)}" y="{_num(y + 3.5)}" '
            f'text-anchor="end" font-size="10" fill="{TEXT}">{_text(_tick_label(tick))}</text>'
        )
    n_cat = len(panel.categories)
    n_series = max(1, len(panel.series))
    slot = plot_w / max(1, n_cat)
    bar_w = slot * 0.8 / n_series
    widest_value = max((len(label) for s in panel.series for label in s.labels), default=1)
    value_size = max(6.0, min(10.0, bar_w / (0.7 * max(1, widest_value))))
    for j, series in enumerate(panel.series):
        for i, value in enumerate(series.values):
            shown = min(max(value, 0.0), top) if math.isfinite(value) else 0.0
            height = shown / top * plot_h
            x = left + i * slot + slot * 0.1 + j * bar_w
            color = series.colors[i] if len(series.colors) > 1 else series.colors[0]
            label = series.labels[i]
            what = f"{panel.categories[i]}, {series.name}: {label}"
            out.append(
                f'<rect class="bar" x="{_num(x)}" y="{_num(bottom - height)}" '
                f'width="{_num(bar_w)}" height="{_num(height)}" fill={_attr(color)}>'
                f"<title>{_text(what)}</title></rect>"
            )
            out.append(
                f'<text class="value" x="{_num(x + bar_w / 2)}" y="{_num(bottom - height - 4)}" '
                f'text-anchor="middle" font-size="{_num(value_size)}" fill="{TEXT}">'
                f"{_text(label)}</text>"
            )
    out.append(
        f'<line class="axis" x1="{_num(left)}" y1="{_num(bottom)}" x2="{_num(right)}" '
        f'y2="{_num(bottom)}" stroke="{AXIS}" stroke-width="1"/>'
    )
    out.append(
        f'<line class="axis" x1="{_num(left)}" y1="{_num(frame.plot_top)}" x2="{_num(left)}" '
        f'y2="{_num(bottom)}" stroke="{AXIS}" stroke-width="1"/>'
    )
    slanted = _slant(*_category_room(panel, panel_width))
    for i, category in enumerate(panel.categories):
        x = left + (i + 0.5) * slot
        if slanted:
            place = (
                f'x="{_num(x)}" y="{_num(bottom + 12)}" text-anchor="end" '
                f'transform="rotate(-45 {_num(x)} {_num(bottom + 12)})"'
            )
        else:
            place = f'x="{_num(x)}" y="{_num(bottom + 15)}" text-anchor="middle"'
        out.append(
            f'<text class="category" {place} font-size="11" fill="{TEXT}">{_text(category)}</text>'
        )
    if panel.x_label:
        out.append(
            f'<text class="x-label" x="{_num((left + right) / 2)}" y="{_num(frame.height - 8)}" '
            f'text-anchor="middle" font-size="11" fill="{TEXT}">{_text(panel.x_label)}</text>'
        )
    middle = (frame.plot_top + bottom) / 2
    out.append(
        f'<text class="y-label" x="{_num(left_edge + 14)}" y="{_num(middle)}" '
        f'text-anchor="middle" transform="rotate(-90 {_num(left_edge + 14)} {_num(middle)})" '
        f'font-size="11" fill="{TEXT}">{_text(panel.y_label)}</text>'
    )
    if len(panel.series) > 1:
        out += _legend(panel, right)
    out.append("</g>")
    return out


def _legend(panel: Panel, right: float) -> list[str]:
    """Swatches and names in a row under the title, ending at the plot's right edge."""
    out = ['<g class="legend">']
    x = right - sum(text_width(s.name, 10) + 22 for s in panel.series)
    for series in panel.series:
        out.append(
            f'<rect class="swatch" x="{_num(x)}" y="32" width="10" height="10" '
            f"fill={_attr(series.colors[0])}/>"
        )
        out.append(
            f'<text class="legend-label" x="{_num(x + 14)}" y="41" font-size="10" '
            f'fill="{TEXT}">{_text(series.name)}</text>'
        )
        x += text_width(series.name, 10) + 22
    out.append("</g>")
    return out


def render_svg(panels: Sequence[Panel], *, width: float = 1000, height: float = 400) -> str:
    """The panels side by side, as one SVG document (taller when category labels are slanted)."""
    for panel in panels:
        for series in panel.series:
            if not len(series.values) == len(series.labels) == len(panel.categories):
                raise ValueError(f"{panel.title!r}: {series.name!r} needs one value per category")
            if len(series.colors) not in (1, len(series.values)):
                raise ValueError(f"{panel.title!r}: {series.name!r} needs one colour, or one a bar")
    frame = _frame(panels, width, height)
    w, h = _num(frame.width), _num(frame.height)
    lines = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
        f'viewBox="0 0 {w} {h}" font-family="{FONT}">',
        f"<title>{_text('; '.join(p.title for p in panels))}</title>",
        f'<rect width="{w}" height="{h}" fill="#ffffff"/>',
    ]
    panel_width = frame.width / max(1, len(panels))
    for k, panel in enumerate(panels):
        lines += _panel(panel, k * panel_width, panel_width, frame)
    lines.append("</svg>")
    return "\n".join(lines) + "\n"


def write_svg(path: Path, panels: Sequence[Panel], **size: float) -> Path:
    write_text_atomically(path, render_svg(panels, **size))
    return path
