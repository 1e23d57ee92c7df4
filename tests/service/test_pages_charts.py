"""The pages' SVG charts (:mod:`tailbound.service.pages.charts`): well-formed XML, escaped
text, points where the data says, non-finite values left out, log scales in decades."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import pytest

from tailbound.service.pages.charts import Ref, Series, bar_chart, line_chart, nice_ticks

SVG = "{http://www.w3.org/2000/svg}"


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)


def test_line_chart_is_xml_with_title_points_and_refs() -> None:
    svg = line_chart(
        "latency <of> t&1",
        [
            Series("p99", [(0, 0.001), (10, 0.002), (20, math.nan)]),
            Series("b", [(5, 0.0015)], True),
        ],
        x_label="s",
        y_label="latency",
        refs=[Ref("bound", 0.004), Ref("none", math.inf)],
    )
    root = parse(svg)
    assert root.get("role") == "img"
    assert root.find(f"{SVG}title").text == "latency <of> t&1"
    line = root.find(f"{SVG}polyline")
    points = [tuple(map(float, p.split(","))) for p in line.get("points").split()]
    assert len(points) == 2  # the NaN point is left out
    assert points[0][0] < points[1][0] and points[0][1] > points[1][1]  # up means larger
    assert len(root.findall(f"{SVG}line[@class='ref']")) == 1  # the infinite ref is left out
    markers = [c for c in root.iter(f"{SVG}circle") if c.get("data-series") == "b"]
    assert len(markers) == 1


def test_points_sit_where_their_values_are() -> None:
    svg = line_chart("t", [Series("s", [(0, 0.0), (1, 1.0)])], x_label="x", y_label="y")
    root = parse(svg)
    (a, b) = [
        tuple(map(float, p.split(","))) for p in root.find(f"{SVG}polyline").get("points").split()
    ]
    ref = line_chart(
        "t", [Series("s", [(0, 0.0), (1, 1.0)])], x_label="x", y_label="y", refs=[Ref("r", 0.5)]
    )
    y_half = float(parse(ref).find(f"{SVG}line[@class='ref']").get("y1"))
    assert y_half == pytest.approx((a[1] + b[1]) / 2, abs=0.2)


def test_bar_chart_bars_and_log_scale() -> None:
    svg = bar_chart(
        "replay",
        ["a", "b"],
        [("SLO", [0.5, 0.05]), ("replayed", [0.001, None])],
        y_label="latency",
        log_y=True,
    )
    root = parse(svg)
    bars = root.findall(f"{SVG}rect[@class='bar']")
    assert len(bars) == 3  # None draws nothing
    heights = [float(b.get("height")) for b in bars]
    # in category order: a's SLO (0.5), a's replay (0.001), b's SLO (0.05); on decades, 0.5
    # and 0.001 are 2.7 decades apart and 0.05 one decade below 0.5
    per_decade = (heights[0] - heights[1]) / math.log10(0.5 / 0.001)
    assert heights[0] - heights[2] == pytest.approx(per_decade, rel=0.01)


def test_nice_ticks_cover_the_range() -> None:
    for low, high in ((0, 1), (0, 0.0093), (3, 47), (0, 1e-7), (5, 5)):
        ticks = nice_ticks(low, high)
        assert ticks[0] <= low and ticks[-1] >= high
        assert 2 <= len(ticks) <= 12
