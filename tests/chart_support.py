"""Reading an eval's ``summary.svg`` back with the XML parser: each panel's texts, bars and the
scale its y axis ticks give, so that tests check what a reader of the chart sees."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

SVG = "{http://www.w3.org/2000/svg}"


@dataclass
class ChartPanel:
    title: str
    categories: list[str]
    value_labels: list[str]
    bar_heights: list[float]
    bar_bottoms: list[float]
    ticks: list[float]
    unit: float  # pixels per unit of the y axis, from its first and last ticks
    baseline: float  # the y of tick 0
    y_top: float  # the y axis's top, in data units


def _classed(element: ET.Element, tag: str, cls: str) -> list[ET.Element]:
    return [e for e in element.iter(SVG + tag) if e.get("class") == cls]


def _f(element: ET.Element, name: str) -> float:
    value = element.get(name)
    assert value is not None, f"{element.tag} has no {name}"
    return float(value)


def read_chart(path: Path) -> list[ChartPanel]:
    """The panels of a chart file, after checking it is a self-contained SVG document."""
    root = ET.parse(path).getroot()
    assert root.tag == SVG + "svg"
    width, height = root.get("width"), root.get("height")
    assert width and height and float(width) > 0 and float(height) > 0
    assert root.get("viewBox") == f"0 0 {width} {height}"
    assert "sans-serif" in (root.get("font-family") or "")
    for element in root.iter():
        assert element.tag.startswith(SVG), element.tag  # nothing from another namespace
        assert element.tag not in (SVG + "script", SVG + "foreignObject", SVG + "image")
        assert not any("href" in name for name in element.attrib), element.attrib
    panels = []
    for g in _classed(root, "g", "panel"):
        grid = _classed(g, "line", "grid")
        ticks = [float(t.text or "") for t in _classed(g, "text", "tick-label")]
        assert len(grid) == len(ticks) >= 2 and ticks[0] == 0
        unit = (_f(grid[0], "y1") - _f(grid[-1], "y1")) / (ticks[-1] - ticks[0])
        baseline = _f(grid[0], "y1")
        vertical = [a for a in _classed(g, "line", "axis") if a.get("x1") == a.get("x2")]
        bars = _classed(g, "rect", "bar")
        panels.append(
            ChartPanel(
                title="".join(_classed(g, "text", "title")[0].itertext()),
                categories=["".join(t.itertext()) for t in _classed(g, "text", "category")],
                value_labels=["".join(t.itertext()) for t in _classed(g, "text", "value")],
                bar_heights=[_f(b, "height") for b in bars],
                bar_bottoms=[_f(b, "y") + _f(b, "height") for b in bars],
                ticks=ticks,
                unit=unit,
                baseline=baseline,
                y_top=(baseline - _f(vertical[0], "y1")) / unit,
            )
        )
    return panels


def ex_labels(summary: dict, levels: list[str]) -> list[str]:
    """The value labels the EX-by-difficulty panel must show for a summary."""
    by = summary["by_difficulty"]
    return [f"{by.get(n, {}).get('ex', 0.0):.1f}" for n in [*levels, "all"]]
