"""Figures for the Transformer: every layer's and head's cross-attention at once, one head's
weights beside the others, and self-attention.

Plain data in (numpy arrays, token lists), Plotly figures out, on the app's one fixed α
scale (0–1, Cividis; ``viz/heatmap.py``), so a head here and an RNN's heatmap elsewhere can
be compared by colour alone. Plain specs, not validated (``viz/fast_figure.py``).
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from viz.fast_figure import figure
from viz.heatmap import ALPHA_SCALE, alignment_heatmap, escape, FONT_SIZE
from viz.teaching_figures import HIGHLIGHT

MARKED_HEAD = "marked head"  # shape name the tests look for


def head_grid(head_weights: np.ndarray, source_tokens: list[str], target_tokens: list[str],
              marked: tuple[int, int] | None = None, marked_label: str = "", cell: int = 210) -> go.Figure:
    """head_weights: layers x heads x T x S -> a grid of small heatmaps, one row per layer,
    one column per head (titles "L1 · H1", 1-based). ``marked`` = (layer, head), 0-based, is
    framed in the highlight colour, with ``marked_label`` (a few characters) after its title.
    Hover names the layer, the head and the tokens."""
    head_weights = np.asarray(head_weights, dtype=float)
    L, H, T, S = head_weights.shape
    if (T, S) != (len(target_tokens), len(source_tokens)):
        raise ValueError(f"weights are {T} x {S}, tokens {len(target_tokens)} x {len(source_tokens)}")
    gap_x, gap_y = 0.03, 0.08
    width, height = (1 - gap_x * (H - 1)) / H, (1 - gap_y * (L - 1)) / L
    src, trg = [escape(t) for t in source_tokens], [escape(t) for t in target_tokens]
    hover = [[[s, t] for s in src] for t in trg]
    data, layout = [], dict(font=dict(size=FONT_SIZE - 4), height=L * cell + 40, plot_bgcolor="white",
                            margin=dict(l=10, r=10, t=30, b=10), annotations=[], shapes=[])
    for layer in range(L):
        for head in range(H):
            n = layer * H + head + 1
            # rounded and clamped: float error (-5.6e-17) would put a domain outside [0, 1]
            x0, y1 = round(head * (width + gap_x), 6), round(1 - layer * (height + gap_y), 6)
            x1, y0 = min(1.0, round(x0 + width, 6)), max(0.0, round(y1 - height, 6))
            axis = "" if n == 1 else str(n)
            data.append(dict(type="heatmap", z=head_weights[layer, head], xaxis=f"x{axis}", yaxis=f"y{axis}",
                             zmin=0.0, zmax=1.0, colorscale=ALPHA_SCALE, showscale=n == 1,
                             colorbar=dict(title=dict(text="α"), thickness=12), customdata=hover,
                             hovertemplate=f"layer {layer + 1}, head {head + 1}<br>source: %{{customdata[0]}}"
                                           "<br>target: %{customdata[1]}<br>α = %{z:.3f}<extra></extra>"))
            layout[f"xaxis{axis}"] = dict(domain=[x0, x1], anchor=f"y{axis}", showticklabels=False,
                                          showgrid=False, zeroline=False)
            layout[f"yaxis{axis}"] = dict(domain=[y0, y1], anchor=f"x{axis}", autorange="reversed",
                                          showticklabels=False, showgrid=False, zeroline=False)
            is_marked = marked == (layer, head)
            # short titles: four of them share a row of about 600 px
            title = f"L{layer + 1} · H{head + 1}" + (f" {marked_label}" if is_marked and marked_label else "")
            layout["annotations"].append(dict(text=escape(title), xref="paper", yref="paper", x=(x0 + x1) / 2,
                                              y=y1, yanchor="bottom", showarrow=False,
                                              font=dict(size=FONT_SIZE - 3, color=HIGHLIGHT if is_marked else "#333")))
            if is_marked:
                layout["shapes"].append(dict(type="rect", name=MARKED_HEAD, xref="paper", yref="paper",
                                             x0=x0, x1=x1, y0=y0, y1=y1,
                                             line=dict(color=HIGHLIGHT, width=4), fillcolor="rgba(0,0,0,0)"))
    return figure(data, layout)


def head_rows(weights: np.ndarray, source_tokens: list[str], head_labels: list[str],
              title: str | None = None) -> go.Figure:
    """heads x S: each head's α over the source for one target step, a row per head."""
    fig = alignment_heatmap(weights, source_tokens, head_labels, title=title,
                            height=int(120 + 44 * len(head_labels)))
    fig.layout.yaxis.title = dict(text="head", font=dict(size=FONT_SIZE))
    return fig


def self_attention_heatmap(weights: np.ndarray, tokens: list[str], title: str | None = None,
                           side: str = "source") -> go.Figure:
    """S x S self-attention: row j is what token j attends to (its α over the same sentence)."""
    fig = alignment_heatmap(weights, tokens, tokens, title=title)
    fig.layout.xaxis.title = dict(text=f"{side}: attended", font=dict(size=FONT_SIZE))
    fig.layout.yaxis.title = dict(text=f"{side}: attending", font=dict(size=FONT_SIZE))
    return fig
