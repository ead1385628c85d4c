"""Alignment heatmaps and the per-step figures that go with them.

Conventions (as in ``model/analysis.py``): ``weights`` is T x S, row i is α_i, the
alignment weights of target step i over the source tokens j (Bahdanau eq. 6). The source
runs along the x axis (on top, as in the paper's Figure 3), the target down the y axis.

Every heatmap uses one fixed colour scale, α from 0 to 1 on Cividis (colour-blind safe,
light = attended), so two figures can be compared by colour alone.

Tokens are placed by position (0..S-1) with the token as the tick label, because a
categorical axis would merge repeated tokens ("▁the" twice) into one column. Labels are
HTML-escaped: Plotly renders a subset of HTML in labels and hover text, and user input
must show as typed ("<b>" as the three characters, not as bold).
"""
from __future__ import annotations

import functools
import html

import numpy as np
import plotly.graph_objects as go

from .fast_figure import figure

ALPHA_SCALE = "Cividis"    # sequential, colour-blind safe; light = high weight
DIFFERENCE_SCALE = "RdBu"  # diverging, colour-blind safe (ColorBrewer)
FONT_SIZE = 16             # readable on a projector
CHART_HEIGHT = 360         # px: a line chart beside the page's text (training curves, load curve)
BAR_HEIGHT = 300           # px: one row of bars (token probabilities, a worked example's weights)
# Okabe & Ito (2008): eight colours distinguishable under every common colour-vision deficiency
MODEL_COLOURS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"]


def escape(token: str) -> str:
    """A token as Plotly text: markup characters escaped so they show literally."""
    return html.escape(str(token), quote=False)


def _cell_size(n: int) -> int:
    return 34 if n <= 30 else 24 if n <= 60 else 16


def _layout(source_tokens, target_tokens, title: str | None, height: int | None,
            target_language: str = "French") -> dict:
    S, T = len(source_tokens), len(target_tokens)
    upright = S <= 20 and max(map(len, source_tokens), default=0) <= 4
    x_size = FONT_SIZE if S <= 40 else 12 if S <= 80 else 10  # long inputs: smaller labels, all still shown
    y_size = FONT_SIZE if T <= 40 else 12 if T <= 80 else 10
    # the source labels sit on top, under the title: leave room for them, upright or turned
    # vertical (the paper's Figure 3: a turned label's box is one line wide, so neighbours never
    # touch where a slanted one's would; viz/narrow.py gives the width they need)
    labels = 30 if upright else int(0.62 * x_size * max(map(len, source_tokens), default=1)) + 20
    top = labels + 30 + (40 if title else 0)
    layout = dict(
        font=dict(size=FONT_SIZE),
        height=height or int(min(1400, max(320, _cell_size(T) * T + top + 20))),
        margin=dict(l=10, r=10, t=top, b=10),
        xaxis=dict(side="top", tickmode="array", tickvals=list(range(S)), ticktext=[escape(t) for t in source_tokens],
                   tickangle=0 if upright else -90,
                   tickfont=dict(size=x_size), showgrid=False,
                   title=dict(text="source (English)", font=dict(size=FONT_SIZE))),
        yaxis=dict(autorange="reversed", tickmode="array", tickvals=list(range(T)), tickfont=dict(size=y_size),
                   ticktext=[escape(t) for t in target_tokens], showgrid=False,
                   title=dict(text=f"target ({target_language})", font=dict(size=FONT_SIZE))),
        plot_bgcolor="white",
    )
    if title:
        layout["title"] = dict(text=escape(title), font=dict(size=FONT_SIZE + 2), x=0, xanchor="left",
                               y=1, yref="container", yanchor="top", pad=dict(t=6))
    return layout


def _hover_labels(source_tokens, target_tokens) -> list[list[list[str]]]:
    """T x S x 2 strings (source token, target token) for the hover box, as nested lists:
    Plotly's JSON encoder (orjson) takes those directly, while an object array makes it walk
    the whole figure in Python (measured: 12 -> 7 ms to encode a 22 x 20 heatmap).

    A sentence's labels are made once per process and the same lists handed to every figure of
    it (read, never changed): Step through redraws the heatmap with another row framed on every
    step, and every page of a class draws the same sentences. Past ``SHARED_HOVER_CELLS`` cells
    they are made per call, so what the process keeps stays small whatever visitors type (the
    alignment heatmap, drawn on every step, has none then: :func:`alignment_heatmap`)."""
    if len(source_tokens) * len(target_tokens) > SHARED_HOVER_CELLS:
        return _make_hover_labels(source_tokens, target_tokens)
    return _shared_hover_labels(tuple(source_tokens), tuple(target_tokens))


# 40 x 40, as ui.figures.LARGEST_SHARED. A larger heatmap (a long text: up to 120 source pieces and
# twice as many target steps) has no per-cell labels: they would be made for every draw (a process
# keeps no visitor's large ones), 30,000 small lists a slider move on Step through, and be most of
# the 0.5-0.9 MB the figure sends. Its hover reads the axes' tick labels instead (Plotly writes
# %{x} and %{y} as the tick text of an array-ticked axis): the same tokens, from S + T strings
SHARED_HOVER_CELLS = 1600
AXIS_HOVER = "source: %{x}<br>target: %{y}<br>α = %{z:.3f}<extra></extra>"


def _make_hover_labels(source_tokens, target_tokens) -> list[list[list[str]]]:
    src = [escape(t) for t in source_tokens]
    return [[[s, t] for s in src] for t in (escape(t) for t in target_tokens)]


@functools.lru_cache(maxsize=128)
def _shared_hover_labels(source_tokens: tuple, target_tokens: tuple) -> list[list[list[str]]]:
    return _make_hover_labels(source_tokens, target_tokens)


def alignment_heatmap(weights: np.ndarray, source_tokens: list[str], target_tokens: list[str],
                      title: str | None = None, show_scale: bool = True, height: int | None = None,
                      target_language: str = "French") -> go.Figure:
    """The alignment matrix α (T x S) as a heatmap on the fixed 0–1 scale; the target axis is
    named by the model's output language (a model made elsewhere may write German).

    Hover shows the source token, the target token and α_ij to three decimals (past
    ``SHARED_HOVER_CELLS`` cells read from the axes' tick labels, not from per-cell labels).
    """
    weights = np.asarray(weights, dtype=float)
    if weights.shape != (len(target_tokens), len(source_tokens)):
        raise ValueError(f"weights are {weights.shape}, tokens {len(target_tokens)} x {len(source_tokens)}")
    heatmap = dict(
        type="heatmap", z=weights, x=list(range(len(source_tokens))), y=list(range(len(target_tokens))),
        zmin=0.0, zmax=1.0, colorscale=ALPHA_SCALE, showscale=show_scale,
        colorbar=dict(title=dict(text="α"), thickness=14),
        xgap=1, ygap=1, hovertemplate=AXIS_HOVER,
    )
    if weights.size <= SHARED_HOVER_CELLS:
        heatmap.update(customdata=_hover_labels(source_tokens, target_tokens),
                       hovertemplate="source: %{customdata[0]}<br>target: %{customdata[1]}<br>α = %{z:.3f}<extra></extra>")
    layout = _layout(source_tokens, target_tokens, title, height, target_language)
    if not np.isfinite(weights).any():  # a blank grid (the answer not shown yet): its cells' place kept
        layout["xaxis"]["range"] = [-0.5, len(source_tokens) - 0.5]
        layout["yaxis"].update(range=[len(target_tokens) - 0.5, -0.5], autorange=False)
    return figure([heatmap], layout)


def difference_heatmap(difference: np.ndarray, source_tokens: list[str], target_tokens: list[str],
                       title: str | None = None, height: int | None = None,
                       target_language: str = "French") -> go.Figure:
    """α_A − α_B on a fixed −1…1 diverging scale (red: A attends more, blue: B attends more)."""
    difference = np.asarray(difference, dtype=float)
    heatmap = dict(
        type="heatmap", z=difference, x=list(range(len(source_tokens))), y=list(range(len(target_tokens))),
        zmin=-1.0, zmax=1.0, zmid=0.0, colorscale=DIFFERENCE_SCALE, reversescale=True,
        colorbar=dict(title=dict(text="Δα"), thickness=14), xgap=1, ygap=1,
        customdata=_hover_labels(source_tokens, target_tokens),
        hovertemplate="source: %{customdata[0]}<br>target: %{customdata[1]}<br>Δα = %{z:+.3f}<extra></extra>",
    )
    return figure([heatmap], _layout(source_tokens, target_tokens, title, height, target_language))


def probability_figure(target_tokens: list[str], logprobs: np.ndarray, groups: list[int] | None = None,
                       group_labels: list[str] | None = None) -> go.Figure:
    """p(y_i | y_<i, x) of every output token as bars.

    With ``groups`` (each piece's word index) and ``group_labels`` (the words), a word's
    probability is the product of its pieces' probabilities: the chain rule, since the
    model emits a word piece by piece.
    """
    logprobs = np.asarray(logprobs, dtype=float)
    labels = list(target_tokens)
    if groups is not None:
        logprobs = np.bincount(np.asarray(groups), weights=logprobs, minlength=len(group_labels))
        labels = list(group_labels)
    probs = np.exp(logprobs)
    bars = dict(
        type="bar", x=list(range(len(labels))), y=probs, marker=dict(color=MODEL_COLOURS[0]),
        customdata=[escape(t) for t in labels], text=[f"{p:.2f}" for p in probs], textposition="outside",
        hovertemplate="%{customdata}<br>p = %{y:.3f}<extra></extra>",
    )
    return figure([bars], dict(
        font=dict(size=FONT_SIZE), height=BAR_HEIGHT, margin=dict(l=10, r=10, t=30, b=10), plot_bgcolor="white",
        xaxis=dict(tickmode="array", tickvals=list(range(len(labels))), ticktext=[escape(t) for t in labels],
                   tickangle=-90 if len(labels) > 8 or max(map(len, labels), default=0) > 4 else 0),
        yaxis=dict(range=[0, 1.15], title=dict(text="probability"), gridcolor="#ddd"),
    ))


def entropy_figure(entropies: dict[str, np.ndarray]) -> go.Figure:
    """Attention entropy per target step, one line per model (0 = all weight on one token)."""
    lines = [dict(type="scatter", x=np.arange(1, len(h) + 1), y=np.asarray(h, dtype=float), mode="lines+markers",
                  name=escape(name), line=dict(color=MODEL_COLOURS[k % len(MODEL_COLOURS)], width=3),
                  hovertemplate=f"{escape(name)}<br>step %{{x}}: %{{y:.3f}} nats<extra></extra>")
             for k, (name, h) in enumerate(entropies.items())]
    return figure(lines, dict(font=dict(size=FONT_SIZE), height=340, margin=dict(l=10, r=10, t=30, b=10),
                              plot_bgcolor="white", legend=dict(orientation="h", y=-0.25),
                              xaxis=dict(title=dict(text="target step i"), gridcolor="#ddd"),
                              yaxis=dict(title=dict(text="entropy of α_i (nats)"), gridcolor="#ddd", rangemode="tozero")))
