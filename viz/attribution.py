"""Attention beside attribution: heatmaps on one scale, the rows' rank correlation, and the
change an edit of the attention makes (the "Attention or attribution?" page). numpy in,
Plotly out; no torch.

Every matrix is T x S with rows that sum to 1 (attention's α_ij; an attribution's share of
|a_ij| over the source, ``model.attribution.Attribution.relevance``), so one colour scale,
0 to 1, serves them all.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from .fast_figure import figure
from .heatmap import _hover_labels, ALPHA_SCALE, BAR_HEIGHT, escape, FONT_SIZE, MODEL_COLOURS, _cell_size


def side_by_side(matrices: dict[str, np.ndarray], source_tokens: list[str], target_tokens: list[str],
                 target_language: str = "French") -> go.Figure:
    """One heatmap per matrix (title -> T x S), side by side, sharing the target axis and the 0–1 scale.

    Written as the plain spec Plotly's ``make_subplots(rows=1, cols=n, shared_yaxes=True)`` makes
    (``viz.fast_figure``): through Plotly's objects, building and serialising the three heatmaps of
    a 30-word sentence held the GIL for a third of a second, which every other tab waited for."""
    n, S, T = len(matrices), len(source_tokens), len(target_tokens)
    gap = 0.02
    width = (1.0 - gap * (n - 1)) / max(1, n)
    hover = _hover_labels(source_tokens, target_tokens)
    # the source labels stand on top of each panel, turned vertical; each panel's title goes
    # above them, never across them
    ticks = int(0.62 * 11 * max(map(len, source_tokens), default=1)) + 10
    labels = ticks + 44
    source_ticks = [escape(t) for t in source_tokens]
    traces, layout, titles = [], {}, []
    for k, (title, z) in enumerate(matrices.items(), start=1):
        z = np.asarray(z, dtype=float)
        if z.shape != (T, S):
            raise ValueError(f"{title}: {z.shape}, tokens {T} x {S}")
        axis = "" if k == 1 else str(k)
        left = (k - 1) * (width + gap)
        traces.append(dict(type="heatmap", z=z, x=list(range(S)), y=list(range(T)), coloraxis="coloraxis", xgap=1,
                           ygap=1, customdata=hover, name=escape(title), xaxis=f"x{axis}", yaxis=f"y{axis}",
                           hovertemplate="source: %{customdata[0]}<br>target: %{customdata[1]}<br>"
                                         + escape(title) + ": %{z:.3f}<extra></extra>"))
        layout[f"xaxis{axis}"] = dict(anchor=f"y{axis}", domain=[left, left + width], side="top", tickmode="array",
                                      tickvals=list(range(S)), tickangle=-90, showgrid=False, ticktext=source_ticks,
                                      tickfont=dict(size=11))
        layout[f"yaxis{axis}"] = dict(anchor=f"x{axis}", domain=[0.0, 1.0], **(dict(
            autorange="reversed", tickmode="array", tickvals=list(range(T)), showgrid=False,
            ticktext=[escape(t) for t in target_tokens], tickfont=dict(size=12),
            title=dict(text=f"target ({target_language})")) if k == 1 else dict(matches="y", showticklabels=False)))
        titles.append(dict(text=escape(title), x=left + width / 2, y=1.0, xref="paper", yref="paper", xanchor="center",
                           yanchor="bottom", showarrow=False, font=dict(size=16), yshift=ticks + 4))
    layout.update(annotations=titles, coloraxis=dict(cmin=0.0, cmax=1.0, colorscale=ALPHA_SCALE,
                                                     colorbar=dict(title=dict(text="share"), thickness=14)),
                  font=dict(size=FONT_SIZE - 2), plot_bgcolor="white", margin=dict(l=10, r=10, t=labels, b=10),
                  height=int(min(1400, max(320, _cell_size(T) * T + labels + 20))))
    return figure(traces, layout)


def row_correlations(rhos: dict[str, np.ndarray], target_tokens: list[str]) -> go.Figure:
    """Spearman's ρ between attention's row and each method's, per target token (a bar per method)."""
    bars = [dict(type="bar", name=escape(name), x=list(range(len(target_tokens))), y=np.nan_to_num(rho).tolist(),
                 marker=dict(color=MODEL_COLOURS[k % len(MODEL_COLOURS)]),
                 hovertemplate=escape(name) + ": ρ = %{y:.2f}<extra></extra>")
            for k, (name, rho) in enumerate(rhos.items())]
    layout = dict(height=BAR_HEIGHT, barmode="group", font=dict(size=FONT_SIZE - 2), margin=dict(l=10, r=10, t=10, b=10),
                  xaxis=dict(tickmode="array", tickvals=list(range(len(target_tokens))),
                             ticktext=[escape(t) for t in target_tokens], tickangle=-90),
                  yaxis=dict(range=[-1, 1], title=dict(text="ρ with attention")),
                  legend=dict(orientation="h", y=1.1), plot_bgcolor="white")
    return figure(bars, layout)


def logprob_change(old_tokens: list[str], delta: np.ndarray, step: int) -> go.Figure:
    """Each original token's change in log-probability under an edit (bars; the edited step outlined)."""
    x = list(range(len(old_tokens)))
    bar = dict(type="bar", x=x, y=np.asarray(delta, dtype=float).tolist(),
               marker=dict(color=[MODEL_COLOURS[1] if d < 0 else MODEL_COLOURS[0] for d in delta],
                           line=dict(width=[3 if i == step else 0 for i in x], color="black")),
               customdata=[escape(t) for t in old_tokens],
               hovertemplate="%{customdata}: Δ log p = %{y:+.3f}<extra></extra>")
    layout = dict(height=BAR_HEIGHT, font=dict(size=FONT_SIZE - 2), margin=dict(l=10, r=10, t=10, b=10),
                  xaxis=dict(tickmode="array", tickvals=x, ticktext=[escape(t) for t in old_tokens], tickangle=-90),
                  yaxis=dict(title=dict(text="Δ log p(y_i)"), zeroline=True), plot_bgcolor="white")
    return figure([bar], layout)


def change_curve(curves: dict[str, list[dict]]) -> go.Figure:
    """The word-change rate against the α removed (``model.faithfulness_report.pooled_curve`` rows per
    level): one line per level and kind of piece, the most-attended pieces solid, the others dotted,
    so removals of equal weight compare at a glance. A point with no removals is left out."""
    lines = []
    for k, (level, rows) in enumerate(curves.items()):
        labels = [f"{r['alpha_from']:g}–{r['alpha_to']:g}" for r in rows]
        for kind, dash in (("most", "solid"), ("others", "dot")):
            y = [None if r[f"changed_{kind}"] is None else 100 * r[f"changed_{kind}"] for r in rows]
            name = f"{escape(level)}: {'most-attended piece' if kind == 'most' else 'other pieces'}"
            lines.append(dict(type="scatter", mode="lines+markers", x=labels, y=y, name=name,
                              line=dict(color=MODEL_COLOURS[k % len(MODEL_COLOURS)], dash=dash),
                              customdata=[r[f"pairs_{kind}"] for r in rows],
                              hovertemplate=name + "<br>α %{x}: %{y:.1f} % of %{customdata} removals<extra></extra>"))
    layout = dict(height=BAR_HEIGHT + 60, font=dict(size=FONT_SIZE - 2), margin=dict(l=10, r=10, t=10, b=10),
                  xaxis=dict(title=dict(text="α of the piece removed")),
                  yaxis=dict(title=dict(text="word changes (%)"), range=[0, 100]),
                  legend=dict(orientation="h", y=1.15), plot_bgcolor="white")
    return figure(lines, layout)
