"""How wide a figure must be drawn for its labels not to run into each other, on any screen.

A figure's width follows the page (a 390 px phone, a 1400 px projector), but its tick labels
are placed one per token (``tickmode="array"``, so that a repeated token stays two columns):
on a narrow screen a sentence of 37 pieces gives each label 8 px. :func:`min_width` reads a
figure's layout and returns the width, in CSS pixels, below which its labels (and the numbers
written on its bars) would touch; the page draws a figure narrower than that in a box that
scrolls sideways (``ui/figures.chart``), so a phone scrolls a long sentence instead of
squeezing it. Plain dicts in, a number out; no Plotly drawing.

Label widths are estimated from the font size (0.62 em a character, the labels' fonts being
sans-serif) and the tick angle: an upright label needs its own width, a vertical one (±90°)
its line height (1.25 em), anything between the two its slanted extent.
"""
from __future__ import annotations

import math

from .fast_figure import Figure

CHAR_EM = 0.62   # a sans-serif character's mean width, in em
LINE_EM = 1.25   # a label's line height, in em (its width when turned vertical)
GAP = 4          # px between two labels


def label_px(text: str, size: float) -> float:
    """The drawn width of ``text`` at ``size`` px (HTML entities count as one character)."""
    plain = text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return CHAR_EM * size * len(plain)


def step_px(labels: list[str], size: float, angle: float | None) -> float:
    """The distance two neighbouring labels need between their anchors, at ``angle`` degrees."""
    longest = max((label_px(t, size) for t in labels), default=0.0)
    a = math.radians(abs(angle or 0.0))
    # a label's bounding box, turned, along the axis: its length's shadow and its line height's
    return longest * abs(math.cos(a)) + LINE_EM * size * abs(math.sin(a)) + GAP


def _axis_need(axis: dict, base: float) -> float:
    """Plot width an x axis needs for its array tick labels (0 when its ticks are Plotly's own)."""
    labels = [str(t) for t in axis.get("ticktext") or []]
    if axis.get("tickmode") != "array" or len(labels) < 2:
        return 0.0
    size = (axis.get("tickfont") or {}).get("size") or base
    domain = axis.get("domain") or [0.0, 1.0]
    return len(labels) * step_px(labels, size, axis.get("tickangle")) / max(0.05, domain[1] - domain[0])


def _bar_text_need(trace: dict, base: float) -> float:
    """Plot width upright text over vertical bars needs (one number per bar, side by side)."""
    text = trace.get("text")
    if trace.get("type") != "bar" or trace.get("orientation") == "h" or not isinstance(text, (list, tuple)):
        return 0.0
    size = (trace.get("textfont") or {}).get("size") or base
    return len(text) * (max((label_px(str(t), size) for t in text), default=0.0) + GAP)


def min_width(fig) -> int:
    """The width (CSS px) below which ``fig``'s labels would overlap: what its x axes' tick labels
    and its bars' numbers need, plus its margins, its y labels and a colour bar; 0 when the
    figure has no labels of its own to fit (kept with a figure of ``viz.fast_figure``: a shared
    figure is measured once)."""
    if isinstance(fig, Figure):
        return fig.derived("min_width", lambda: _min_width(fig.to_dict()))
    return _min_width(fig if isinstance(fig, dict) else fig.to_dict())


def _min_width(spec: dict) -> int:
    layout = spec.get("layout") or {}
    base = (layout.get("font") or {}).get("size") or 12
    needs = [_axis_need(v, base) for k, v in layout.items() if k.startswith("xaxis") and isinstance(v, dict)]
    groups = max(1, sum(1 for t in spec.get("data") or [] if t.get("type") == "bar"))
    bars = [_bar_text_need(t, base) * (groups if layout.get("barmode") == "group" else 1)
            for t in spec.get("data") or []]
    plot = max(needs + bars + [0.0])
    if plot == 0:
        return 0
    y = layout.get("yaxis") or {}
    y_labels = [str(t) for t in y.get("ticktext") or []]
    y_size = (y.get("tickfont") or {}).get("size") or base
    margin = layout.get("margin") or {}
    side = (max((label_px(t, y_size) for t in y_labels), default=3 * CHAR_EM * y_size) + 8
            + (LINE_EM * base if y.get("title") else 0))
    scale = 90 if any(t.get("showscale", t.get("type") == "heatmap") for t in spec.get("data") or []) \
        or "coloraxis" in layout else 0
    return int(math.ceil(plot + side + scale + margin.get("l", 80) + margin.get("r", 80)))
