"""Figures for the teaching pages: one decoder step taken apart, the beam-search tree,
forced alignment against gold links, and attention emerging during training.

Plain data in (numpy arrays, token lists, objects with plain attributes), Plotly figures
out; nothing here knows of torch. Conventions follow ``viz/heatmap.py``: a weight matrix is
T x S (row i = α_i over the source), tokens are placed by position with the token as tick
label, labels are HTML-escaped, α is drawn on the fixed 0–1 Cividis scale.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from viz.fast_figure import figure
from viz.heatmap import BAR_HEIGHT, ALPHA_SCALE, alignment_heatmap, DIFFERENCE_SCALE, escape, FONT_SIZE, MODEL_COLOURS

HIGHLIGHT = "#D55E00"   # Okabe–Ito vermillion: the row, path or link being explained
FORCED = "#CC79A7"      # Okabe–Ito reddish purple: target steps the user forced
PRUNED = "#BBBBBB"
HIGHLIGHTED_ROW = "highlighted row"  # shape name the tests look for
FORCED_ROWS = "forced prefix"


def _small_layout(height: int, title: str | None = None, **more) -> dict:
    """The teaching figures' common layout, as a plain dict (see ``viz/fast_figure.py``)."""
    return dict(font=dict(size=FONT_SIZE - 2), height=height, plot_bgcolor="white",
                margin=dict(l=10, r=10, t=40 if title else 10, b=10),
                title=dict(text=escape(title)) if title else None, **more)


# -- the heatmap with a row picked out -------------------------------------------------------
def highlighted_heatmap(weights: np.ndarray, source_tokens: list[str], target_tokens: list[str],
                        rows: Sequence[int] = (), name: str = HIGHLIGHTED_ROW, colour: str = HIGHLIGHT,
                        title: str | None = None, height: int | None = None,
                        target_language: str = "French") -> go.Figure:
    """``viz.heatmap.alignment_heatmap`` with a frame drawn around each row in ``rows``
    (0-based target steps): the step being explained, or the steps the user forced."""
    fig = alignment_heatmap(weights, source_tokens, target_tokens, title=title, height=height,
                            target_language=target_language)
    S = len(source_tokens)
    return fig.set_layout(shapes=[dict(type="rect", name=name, x0=-0.5, x1=S - 0.5, y0=r - 0.5, y1=r + 0.5,
                                       line=dict(color=colour, width=4), fillcolor="rgba(0,0,0,0)") for r in rows])


# -- one decoder step, number by number -------------------------------------------------------
# These are redrawn on every move of the step-through slider, so they are plain specs
# (viz/fast_figure.py: Plotly's validation would cost more than drawing them).
def vector_strip(vector: np.ndarray, label: str, height: int = 90) -> go.Figure:
    """A state or context vector as one coloured row (blue negative, red positive)."""
    v = np.asarray(vector, dtype=float).reshape(1, -1)
    bound = float(np.abs(v).max()) or 1.0
    heatmap = dict(type="heatmap", z=v, zmin=-bound, zmax=bound, zmid=0.0, colorscale=DIFFERENCE_SCALE,
                   reversescale=True, showscale=False,
                   hovertemplate=f"{escape(label)}[%{{x}}] = %{{z:.4f}}<extra></extra>")
    return figure([heatmap], _small_layout(
        height + 40, yaxis=dict(showticklabels=False),
        xaxis=dict(title=dict(text=f"{escape(label)}: {v.shape[1]} dimensions"), showgrid=False)))


def source_bars(values: np.ndarray, source_tokens: list[str], label: str, colour: str = MODEL_COLOURS[0],
                highlight: int | None = None, fmt: str = ".2f") -> go.Figure:
    """One bar per source token: the energies e_ij or the weights α_ij of one step.

    −inf (a local-p position outside the window) is drawn as no bar, labelled "outside".
    """
    values = np.asarray(values, dtype=float)
    finite = np.isfinite(values)
    shown = np.where(finite, values, np.nan)
    colours = [HIGHLIGHT if j == highlight else colour for j in range(len(values))]
    # numbers on the bars only while they fit; the hover always has them
    text = [format(v, fmt) if ok else "outside" for v, ok in zip(values, finite)] if len(values) <= 14 else None
    bars = dict(type="bar", x=list(range(len(values))), y=shown, marker=dict(color=colours), text=text,
                textposition="outside", cliponaxis=False, name=label,
                customdata=[escape(t) for t in source_tokens],
                hovertemplate=f"%{{customdata}}<br>{escape(label)} = %{{y:.4f}}<extra></extra>")
    return figure([bars], _small_layout(
        260, xaxis=dict(tickmode="array", tickvals=list(range(len(source_tokens))),
                        ticktext=[escape(t) for t in source_tokens], tickangle=-90),
        yaxis=dict(title=dict(text=escape(label)), gridcolor="#ddd", zerolinecolor="#888")))


def context_sum(weights_row: np.ndarray, values: np.ndarray, source_tokens: list[str],
                context: np.ndarray, max_dims: int = 64) -> go.Figure:
    """c_i = Σ_j α_ij h_j drawn as its terms: one row α_ij h_j per source token, then the
    sum c_i as the last row. Only the first ``max_dims`` dimensions are drawn."""
    terms = np.asarray(weights_row, dtype=float)[:, None] * np.asarray(values, dtype=float)  # S x C
    C = terms.shape[1]
    d = min(C, max_dims)
    z = np.vstack([terms[:, :d], np.asarray(context, dtype=float).reshape(1, -1)[:, :d]])
    labels = [f"α·{escape(t)}" for t in source_tokens] + ["= c_i"]
    bound = float(np.abs(z).max()) or 1.0
    row_names = [[label] * d for label in labels]  # hover: which term (lists: see viz.heatmap._hover_labels)
    heatmap = dict(type="heatmap", z=z, y=list(range(len(labels))), zmin=-bound, zmax=bound, zmid=0.0,
                   colorscale=DIFFERENCE_SCALE, reversescale=True, xgap=0, ygap=1,
                   colorbar=dict(thickness=10), customdata=row_names,
                   hovertemplate="%{customdata}, dim %{x}: %{z:.4f}<extra></extra>")
    sum_line = dict(type="line", xref="x domain", x0=0, x1=1, yref="y", y0=len(source_tokens) - 0.5,
                    y1=len(source_tokens) - 0.5, line=dict(color="black", width=2))
    return figure([heatmap], _small_layout(
        int(min(900, 60 + 18 * len(labels))), shapes=[sum_line],
        yaxis=dict(tickmode="array", tickvals=list(range(len(labels))), ticktext=labels, autorange="reversed"),
        xaxis=dict(title=dict(text=f"dimension (first {d} of {C})" if d < C else "dimension"), showgrid=False)))


def local_p_forms(forms: dict[str, tuple[np.ndarray, np.ndarray]], source_tokens: list[str],
                  max_dims: int = 64) -> go.Figure:
    """Local-p's step in several forms side by side: ``forms`` maps a name to (weights a_i(j)
    over the source, S; context Σ_j a_i(j) h̄_j, C). Top: the weights as grouped bars, one
    group per source token (their sums, the window masses, in the legend); bottom: each
    form's context as one row, then their difference, on one colour scale."""
    names = list(forms)
    weights = [np.asarray(forms[n][0], dtype=float) for n in names]
    contexts = np.array([np.asarray(forms[n][1], dtype=float).reshape(-1) for n in names])
    C = contexts.shape[1]
    d = min(C, max_dims)
    rows = np.vstack([contexts[:, :d], contexts[:1, :d] - contexts[-1:, :d]])
    labels = [escape(n) for n in names] + [f"{escape(names[0])} − {escape(names[-1])}"]
    bound = float(np.abs(rows).max()) or 1.0
    S = len(source_tokens)
    bars = [dict(type="bar", x=list(range(S)), y=w, name=f"{escape(n)} (Σ = {w.sum():.4f})", xaxis="x", yaxis="y",
                 marker=dict(color=MODEL_COLOURS[k % len(MODEL_COLOURS)]), customdata=[escape(t) for t in source_tokens],
                 hovertemplate=f"%{{customdata}}<br>{escape(n)}: a = %{{y:.4f}}<extra></extra>")
            for k, (n, w) in enumerate(zip(names, weights))]
    heatmap = dict(type="heatmap", z=rows, y=list(range(len(labels))), zmin=-bound, zmax=bound, zmid=0.0,
                   colorscale=DIFFERENCE_SCALE, reversescale=True, ygap=1, xaxis="x2", yaxis="y2",
                   colorbar=dict(thickness=10, len=0.4, y=0.2), customdata=[[label] * d for label in labels],
                   hovertemplate="%{customdata}, dim %{x}: %{z:.4f}<extra></extra>")
    return figure(bars + [heatmap], _small_layout(
        420, barmode="group", legend=dict(orientation="h", y=1.12),
        xaxis=dict(domain=[0, 1], anchor="y", tickmode="array", tickvals=list(range(S)),
                   ticktext=[escape(t) for t in source_tokens], tickangle=-90),
        yaxis=dict(domain=[0.5, 1], title=dict(text="a_i(j)"), gridcolor="#ddd"),
        xaxis2=dict(domain=[0, 1], anchor="y2", showgrid=False,
                    title=dict(text=f"context dimension (first {d} of {C})" if d < C else "context dimension")),
        yaxis2=dict(domain=[0, 0.32], tickmode="array", tickvals=list(range(len(labels))), ticktext=labels,
                    autorange="reversed")))


def topk_bars(tokens: list[str], probs: np.ndarray, chosen: str | None = None) -> go.Figure:
    """The k most probable next tokens, the emitted one in the highlight colour."""
    probs = np.asarray(probs, dtype=float)
    colours = [HIGHLIGHT if t == chosen else MODEL_COLOURS[0] for t in tokens]
    bars = dict(type="bar", y=[escape(t) for t in tokens][::-1], x=probs[::-1], orientation="h",
                marker=dict(color=colours[::-1]), text=[f"{p:.3f}" for p in probs[::-1]],
                textposition="outside", cliponaxis=False, hovertemplate="%{y}: p = %{x:.4f}<extra></extra>")
    return figure([bars], _small_layout(
        60 + 28 * len(tokens), xaxis=dict(range=[0, 1.15], title=dict(text="p(y_i | y_<i, x)"), gridcolor="#ddd"),
        yaxis=dict(type="category")))


def weight_comparison(weights: dict[str, np.ndarray], words: list[str]) -> go.Figure:
    """Grouped bars of α over the same words under several scores (the worked example)."""
    x = [escape(w) for w in words]
    traces = []
    for k, (name, w) in enumerate(weights.items()):
        w = np.asarray(w, dtype=float).reshape(-1)
        traces.append(dict(type="bar", x=x, y=w.tolist(), name=escape(name), text=[f"{v:.3f}" for v in w],
                           textposition="outside", marker=dict(color=MODEL_COLOURS[k % len(MODEL_COLOURS)])))
    return figure(traces, _small_layout(BAR_HEIGHT, barmode="group", legend=dict(orientation="h", y=-0.2),
                                        yaxis=dict(range=[0, 1.1], title=dict(text="α_j"), gridcolor="#ddd")))


def weight_rows(weights: dict[str, np.ndarray], words: list[str], digits: int = 3,
                label_at: int | None = None) -> go.Figure:
    """α over the same words under several scores as horizontal grouped bars, read top to
    bottom: one group per word (its name once, on the left), one bar per score. A phone shows
    every label, since a long sentence grows the figure down, not across. Each bar of word
    ``label_at`` (every bar when None) has its weight written beside it to ``digits``
    decimals: enough to tell apart the weights a question compares."""
    S = len(words)
    traces = []
    for k, (name, w) in enumerate(weights.items()):
        w = np.asarray(w, dtype=float).reshape(-1)
        text = [f"{v:.{digits}f}" if label_at is None or j == label_at else "" for j, v in enumerate(w)]
        traces.append(dict(type="bar", orientation="h", y=list(range(S)), x=w.tolist(), name=escape(name), text=text,
                           textposition="outside", cliponaxis=False, textfont=dict(size=FONT_SIZE - 4),
                           marker=dict(color=MODEL_COLOURS[k % len(MODEL_COLOURS)]), customdata=[escape(x) for x in words],
                           hovertemplate=f"%{{customdata}}: {escape(name)} α = %{{x:.{digits}f}}<extra></extra>"))
    n = max(1, len(weights))
    layout = _small_layout(int(90 + S * (n * 13 + 14)), barmode="group", bargap=0.25,
                           legend=dict(orientation="h", y=1.0, yanchor="bottom", x=0),
                           xaxis=dict(range=[0, 1.3], title=dict(text="α_j"), gridcolor="#ddd",
                                      tickvals=[0, 0.25, 0.5, 0.75, 1]),
                           yaxis=dict(tickmode="array", tickvals=list(range(S)), ticktext=[escape(x) for x in words],
                                      autorange="reversed"))
    layout["margin"]["t"] = 20 + 24 * ((n + 1) // 2)  # the legend, above the bars
    return figure(traces, layout)


# -- beam search --------------------------------------------------------------------------------
def tree_layout(nodes: Sequence) -> dict[int, tuple[int, float]]:
    """(x, y) of every node: x = its step, y = its rank within that step. Nodes of a step are
    ordered by their parent's rank, then chosen path first, then by score, so edges never
    cross and the chosen path runs straight along the top (rank 0).
    ``nodes`` have ``.id``, ``.parent``, ``.step``, ``.score`` and ``.on_best_path``."""
    pos: dict[int, tuple[int, float]] = {}
    by_step: dict[int, list] = {}
    for n in nodes:
        by_step.setdefault(n.step, []).append(n)
    for step in sorted(by_step):
        ordered = sorted(by_step[step], key=lambda n: (pos[n.parent][1] if n.parent is not None else 0.0,
                                                       not n.on_best_path, -n.score))
        for rank, n in enumerate(ordered):
            pos[n.id] = (step, float(rank))
    return pos


def beam_tree(nodes: Sequence, selected_path: Sequence[int] = ()) -> go.Figure:
    """The hypotheses beam search explored, as a tree read left to right.

    Node = token; marker size = p(token | prefix), colour = log p of the whole prefix;
    grey = pruned (no finished hypothesis descends from it); squares end with </s>. The
    chosen path (the returned hypothesis) is drawn thick in the highlight colour, the
    selected hypothesis outlined. ``customdata`` of every marker is its node id.
    Nodes need ``.id .parent .step .token .logprob .score .finished .on_best_path .pruned``.
    """
    pos = tree_layout(nodes)
    selected = set(selected_path)
    traces = []  # a plain spec (viz/fast_figure.py): the tree is redrawn on every click

    def edges(keep, name, line):
        xs, ys = [], []
        for n in nodes:
            if n.parent is not None and keep(n):
                (x0, y0), (x1, y1) = pos[n.parent], pos[n.id]
                xs += [x0, x1, None]
                ys += [y0, y1, None]
        traces.append(dict(type="scatter", x=xs, y=ys, mode="lines", line=line, name=name, hoverinfo="skip"))

    edges(lambda n: n.pruned, "pruned", dict(color=PRUNED, width=1, dash="dot"))
    edges(lambda n: not n.pruned and not n.on_best_path, "kept", dict(color=MODEL_COLOURS[5], width=1.5))
    edges(lambda n: n.id in selected and not n.on_best_path, "selected", dict(color=FORCED, width=3))
    edges(lambda n: n.on_best_path, "chosen path", dict(color=HIGHLIGHT, width=4))

    def markers(group, name, colour=None, showscale=False):
        p = np.exp([n.logprob for n in group])
        traces.append(dict(
            type="scatter", x=[pos[n.id][0] for n in group], y=[pos[n.id][1] for n in group],
            mode="markers+text", name=name,
            text=[escape(n.token) for n in group], textposition="top center", textfont=dict(size=11),
            customdata=[[n.id, n.score] for n in group],
            marker=dict(size=8 + 22 * p, symbol=["square" if n.finished else "circle" for n in group],
                        color=colour if colour else [n.score for n in group], colorscale=ALPHA_SCALE,
                        showscale=showscale, colorbar=dict(title=dict(text="log p(prefix)", side="right"),
                                                           thickness=10),
                        line=dict(color=[FORCED if n.id in selected else "white" for n in group],
                                  width=[3 if n.id in selected else 1 for n in group])),
            hovertemplate="%{text}<br>log p(prefix) = %{customdata[1]:.3f}<br>node %{customdata[0]}<extra></extra>"))

    live = [n for n in nodes if not n.pruned and not n.on_best_path]
    markers([n for n in nodes if n.pruned], "pruned hypotheses", colour=PRUNED)
    markers(live, "kept hypotheses", showscale=True)
    chosen = sorted((n for n in nodes if n.on_best_path and n.parent is not None), key=lambda n: n.step)
    markers(chosen, "chosen path", colour=HIGHLIGHT)
    root = next(n for n in nodes if n.parent is None)
    traces.append(dict(type="scatter", x=[0], y=[pos[root.id][1]], mode="markers+text", text=["&lt;s&gt;"],
                       name="start", textposition="middle left", marker=dict(size=14, color="black"),
                       customdata=[[root.id, 0.0]], hoverinfo="skip"))
    depth = max(pos[n.id][0] for n in nodes)
    rows = max(y for _, y in pos.values()) + 1
    layout = _small_layout(int(min(1400, max(380, 34 * rows + 170))),
                           xaxis=dict(title=dict(text="target step i"), range=[-0.8, depth + 0.8], dtick=1,
                                      gridcolor="#eee"),
                           yaxis=dict(visible=False, autorange="reversed"),
                           showlegend=True, legend=dict(orientation="h", y=1.02, yanchor="bottom", x=0),
                           dragmode="pan", clickmode="event+select")
    layout["margin"]["t"] = 50
    return figure(traces, layout)


# -- forced alignment -----------------------------------------------------------------------------
LINK_STYLES = {
    # predicted link that is a sure gold link / a possible one / a sure gold link not predicted / a
    # predicted link outside every gold link (Och & Ney 2003: A∩S, A∩P, S∖A, A∖P)
    "sure": dict(symbol="circle", color="#009E73", size=16),
    "possible": dict(symbol="circle-open", color="#009E73", size=16, line=dict(width=3)),
    "missed": dict(symbol="square-open", color="#E69F00", size=20, line=dict(width=3)),
    "wrong": dict(symbol="x", color="#D55E00", size=16),
    "link": dict(symbol="circle", color=HIGHLIGHT, size=14),
}


def link_categories(predicted: set, sure: set | None = None, possible: set | None = None) -> dict[str, set]:
    """Predicted links sorted against gold ones (pairs (English i, French k)); without gold,
    every predicted link is just a ``link``."""
    if sure is None:
        return {"link": set(predicted)}
    possible = possible if possible is not None else sure
    return {"sure": predicted & sure, "possible": (predicted & possible) - sure,
            "missed": sure - predicted, "wrong": predicted - possible}


def alignment_links(word_weights: np.ndarray, english: list[str], french: list[str], predicted: set,
                    sure: set | None = None, possible: set | None = None, title: str | None = None) -> go.Figure:
    """Word attention (French rows x English columns) with the links derived from it and,
    when given, the gold links overlaid. A link (i, k) sits at column i, row k."""
    fig = alignment_heatmap(word_weights, english, french, title=title)
    for category, links in link_categories(predicted, sure, possible).items():
        links = sorted(links)
        style = dict(LINK_STYLES[category])
        fig.add_trace(go.Scatter(x=[i for i, _ in links], y=[k for _, k in links], mode="markers", name=category,
                                 marker=style, hovertemplate=f"{category}: %{{x}}–%{{y}}<extra></extra>"))
    fig.update_layout(showlegend=True, legend=dict(orientation="h", y=-0.05, x=0))
    return fig


# -- watching attention emerge ------------------------------------------------------------------
def emergence_animation(runs: dict[str, list[tuple[int, float, np.ndarray]]], source_tokens: list[str],
                        target_tokens: list[str]) -> go.Figure:
    """The probe sentence's alignment matrix during training, one panel per model, as a
    Plotly animation (play button and step slider run in the browser, no server round trip).

    ``runs``: title -> frames (step, loss, weights T x S). A run with fewer frames (stopped by
    its time limit) keeps showing its last one.
    """
    titles = list(runs)
    n = max(len(f) for f in runs.values())
    fig = make_subplots(rows=1, cols=len(titles), subplot_titles=[escape(t) for t in titles],
                        horizontal_spacing=0.08)
    S, T = len(source_tokens), len(target_tokens)

    def panel(k: int, frame: tuple[int, float, np.ndarray]) -> go.Heatmap:
        return go.Heatmap(z=np.asarray(frame[2], dtype=float), x=list(range(S)), y=list(range(T)), zmin=0, zmax=1,
                          colorscale=ALPHA_SCALE, showscale=k == len(titles) - 1, xgap=1, ygap=1,
                          colorbar=dict(title=dict(text="α"), thickness=12),
                          hovertemplate=f"step {frame[0]}, loss {frame[1]:.3f}<br>α = %{{z:.3f}}<extra></extra>")

    def at(frames, i):
        return frames[min(i, len(frames) - 1)]

    for k, t in enumerate(titles):
        fig.add_trace(panel(k, runs[t][0]), row=1, col=k + 1)
        fig.update_xaxes(tickmode="array", tickvals=list(range(S)), ticktext=[escape(s) for s in source_tokens],
                         side="top", row=1, col=k + 1)
        fig.update_yaxes(tickmode="array", tickvals=list(range(T)), ticktext=[escape(s) for s in target_tokens],
                         autorange="reversed", row=1, col=k + 1)
    def titles_at(i):  # the subplot titles, with each model's step and loss in this frame
        return [dict(fig.layout.annotations[k].to_plotly_json(), yshift=34,  # above the top tick labels
                     text=escape(f"{t}: step {at(runs[t], i)[0]}, loss {at(runs[t], i)[1]:.2f}"))
                for k, t in enumerate(titles)]

    fig.update_layout(annotations=titles_at(0))
    labels = [f"step {at(runs[titles[0]], i)[0]}" for i in range(n)]
    fig.frames = [go.Frame(name=str(i), data=[panel(k, at(runs[t], i)) for k, t in enumerate(titles)],
                           traces=list(range(len(titles))), layout=dict(annotations=titles_at(i)))
                  for i in range(n)]
    play = dict(frame=dict(duration=350, redraw=True), fromcurrent=True, transition=dict(duration=0))
    fig.update_layout(
        updatemenus=[dict(type="buttons", direction="left", x=0, y=-0.08, xanchor="left", yanchor="top", buttons=[
            dict(label="▶ play", method="animate", args=[None, play]),
            dict(label="❚❚ pause", method="animate", args=[[None], dict(mode="immediate", frame=dict(duration=0))])])],
        sliders=[dict(active=0, x=0.15, len=0.85, y=-0.05, currentvalue=dict(prefix="frame: ", xanchor="right"),
                      steps=[dict(label=labels[i], method="animate",
                                  args=[[str(i)], dict(mode="immediate", frame=dict(duration=0, redraw=True))])
                             for i in range(n)])])
    fig.update_layout(**_small_layout(int(max(400, 34 * T + 260))))
    fig.update_layout(margin=dict(t=90, b=110))
    return fig


def emergence_curves(runs: dict[str, dict[str, list[float]]]) -> go.Figure:
    """Loss, mean attention entropy and diagonality against training step, one colour per
    model. ``runs``: title -> {"step": [...], "loss": [...], "entropy": [...], "diagonality": [...]}."""
    panels = [("loss", "training loss (nats/token)"), ("entropy", "mean entropy of α_i (nats)"),
              ("diagonality", "diagonality")]
    fig = make_subplots(rows=1, cols=3, subplot_titles=[p[1] for p in panels], horizontal_spacing=0.08)
    for k, (title, series) in enumerate(runs.items()):
        colour = MODEL_COLOURS[k % len(MODEL_COLOURS)]
        for c, (name, _) in enumerate(panels):
            fig.add_trace(go.Scatter(x=series["step"], y=series[name], mode="lines+markers", name=escape(title),
                                     legendgroup=title, showlegend=c == 0, line=dict(color=colour, width=2)),
                          row=1, col=c + 1)
    fig.update_xaxes(title=dict(text="training step"), gridcolor="#ddd")
    fig.update_yaxes(gridcolor="#ddd", rangemode="tozero")
    fig.update_layout(legend=dict(orientation="h", y=-0.25))
    fig.update_layout(**_small_layout(320))
    return fig


# -- matrices as LaTeX, for the worked example ---------------------------------------------------
def latex_matrix(values: np.ndarray, row_labels: Sequence[str] | None = None, split_after: int | None = None,
                 digits: int = 2, split_column: int | None = None) -> str:
    """A matrix as LaTeX (bmatrix-like), optionally with row labels on the left, a rule after
    row ``split_after`` (W as W_a^T stacked on U_a^T) and one after column ``split_column``
    ([s_{i-1} ; h_j] as its two halves)."""
    m = np.atleast_2d(np.asarray(values, dtype=float))
    rows = []
    # rounded as numpy rounds (half to even after scaling: the numbers a page always showed) in one
    # call, then written from Python floats: numpy scalars one by one cost four times more, and a
    # sent page's matrices are written again on every follower's rerun; adding 0.0 after rounding
    # prints -0.001 as 0.00, not -0.00
    for r, row in enumerate((np.round(m, digits) + 0.0).tolist()):
        rows.append(" & ".join(f"{v:.{digits}f}" for v in row)
                    + (r" \\ \hline " if split_after == r + 1 else r" \\ " if r + 1 < len(m) else ""))
    columns = "r" * m.shape[1] if split_column is None else "r" * split_column + "|" + "r" * (m.shape[1] - split_column)
    body = r"\left[\begin{array}{" + columns + "}" + "".join(rows) + r"\end{array}\right]"
    if row_labels is None:
        return body
    labels = r" \\ ".join(r"\text{" + _latex_text(t) + "}" for t in row_labels)
    return r"\begin{array}{r}" + labels + r"\end{array}\!" + body


def _latex_text(s: str) -> str:
    return "".join("\\" + ch if ch in "#$%&_{}" else ch for ch in s)


def shaped(latex: str, rows: int, cols: int) -> str:
    r"""``\underbrace{latex}_{rows × cols}``: a matrix with its shape written under it."""
    return r"\underbrace{" + latex + r"}_{" + f"{rows} \\times {cols}" + "}"


# -- a class's answers ------------------------------------------------------------------------------
RIGHT, WRONG, NEUTRAL = "#009E73", "#D55E00", "#999999"  # Okabe–Ito green and vermillion; grey: no answer
NOT_ANSWERS = ("gave up", "shown the answer")            # labels that are no answer (asked to be shown)


def answer_counts(counts: dict[str, int], right=None, title: str | None = None) -> go.Figure:
    """How many students gave each answer (horizontal bars, most given on top). With ``right``
    (the right answer, or a collection of the right ones), right answers are green and wrong
    ones vermillion, with the word in the hover; asking to be shown is grey."""
    rights = {right} if isinstance(right, str) else set(right or ())
    items = sorted(counts.items(), key=lambda kv: kv[1])

    def verdict(label: str) -> str:
        return "no answer" if label in NOT_ANSWERS else "right" if label in rights else "wrong" if rights else ""
    colours = [{"right": RIGHT, "wrong": WRONG, "no answer": NEUTRAL}.get(verdict(label), MODEL_COLOURS[0])
               for label, _ in items]
    bar = dict(type="bar", x=[n for _, n in items], y=[escape(label) for label, _ in items], orientation="h",
               marker=dict(color=colours), customdata=[verdict(label) for label, _ in items],
               text=[f"{n} · {verdict(label)}" if rights else str(n) for label, n in items], textposition="auto",
               hovertemplate="%{y}: %{x} (%{customdata})<extra></extra>")
    return figure([bar], _small_layout(80 + 28 * len(items), title, xaxis=dict(title="students", dtick=1)))


def given_numbers(given: dict[str, list[float]], right: dict[str, float], tolerance: float,
                  title: str | None = "The numbers students gave") -> go.Figure:
    """Every number a class gave for one hand computation: one column per quantity (e_1, α_1, c_1 …),
    one dot per student's first answer (green within ±``tolerance`` of the right value, vermillion
    outside; a dot for right, a cross for wrong, so colour is never the only sign), the right value
    as a black bar. Where the room went wrong, and by how much."""
    names = list(right)
    xs, ys, colours, hover, symbols = [], [], [], [], []
    for k, name in enumerate(names):
        values = [v for v in given.get(name, []) if v is not None and np.isfinite(v)]
        for n, v in enumerate(values):
            xs.append(k + 0.25 * ((n % 5) - 2) / 2)  # a little apart, so equal answers stay countable
            ys.append(float(v))
            ok = abs(v - right[name]) <= tolerance + 1e-9
            colours.append(RIGHT if ok else WRONG)
            symbols.append("circle" if ok else "x")
            hover.append(f"{escape(name)}: {v:.2f} ({'right' if ok else 'wrong'})")
    dots = dict(type="scatter", mode="markers", x=xs, y=ys, name="a student's number",
                marker=dict(color=colours, symbol=symbols, size=10, line=dict(color="white", width=1)), customdata=hover,
                hovertemplate="%{customdata}<extra></extra>")
    truth = dict(type="scatter", mode="markers", x=list(range(len(names))), y=[right[n] for n in names],
                 name="the right value", marker=dict(symbol="line-ew-open", size=28, color="black", line=dict(width=3)),
                 customdata=[f"{escape(n)} = {right[n]:.3f}" for n in names], hovertemplate="%{customdata}<extra></extra>")
    return figure([dots, truth], _small_layout(
        320, title, showlegend=True, legend=dict(orientation="h", y=-0.2, x=0),
        xaxis=dict(tickmode="array", tickvals=list(range(len(names))), ticktext=[escape(n) for n in names],
                   range=[-0.6, len(names) - 0.4], showgrid=False),
        yaxis=dict(title=dict(text="value given"), gridcolor="#ddd", zerolinecolor="#888")))


CLASS_SCALE = [[0, "#FFFFFF"], [1, "#0072B2"]]   # white to Okabe–Ito blue: how many students, a count
GOLD_SCALE = [[0, "#FFFFFF"], [0.5, "#9AD3BC"], [1, "#009E73"]]  # none, possible, sure: three steps of green
PROJECTED = FONT_SIZE + 2  # word labels read from the back of a room
PROJECTED_PLOT_PX = 1000   # a panel's plot width the labels are fitted to: a 1400 px projector's main column
CELL_PX, LEGEND_PX, TITLE_PX = 44, 78, 34


def _word_angle(words: list[str], share: float) -> int:
    """The tick angle at which ``words`` fit a panel of ``share`` of PROJECTED_PLOT_PX: level where
    they fit, slanted, else upright-turned (a long sentence)."""
    from viz.narrow import step_px
    for angle in (0, -45, -90):
        if len(words) * step_px(words, PROJECTED, angle) <= share * PROJECTED_PLOT_PX:
            return angle
    return -90


def _legend(title: str, scale, cmax: float, x: float, length: float, y: float, **ticks) -> dict:
    """A panel's own colour bar, horizontal, centred under it."""
    return dict(colorscale=scale, cmin=0, cmax=cmax, colorbar=dict(
        title=dict(text=title, side="top", font=dict(size=PROJECTED - 2, color="#111111")), orientation="h", x=x,
        xanchor="center", len=length, y=y, yanchor="top", thickness=14, tickfont=dict(size=PROJECTED - 4,
                                                                                      color="#111111"), **ticks))


def class_alignment(links: np.ndarray, students: int, word_weights: np.ndarray | None, model_links: set,
                    gold: np.ndarray | None, english: list[str], french: list[str]) -> go.Figure:
    """The room's alignment, French rows by English columns: ``links[k, i]``, how many students
    linked French word k to English word i (written in the cell), across the figure; under it, once
    the answer is revealed (``word_weights`` and ``gold`` given), the model's α with its links (each
    French word to its most-attended English word, also framed on the class's panel) beside the
    gold (sure, possible). Each panel has its own legend under it, as each means something else: a
    count of students, a weight α, a gold category. Word labels large and dark, level where they
    fit a 1400 px projector's column, slanted or turned only for a long sentence."""
    links = np.asarray(links, dtype=float)
    revealed = word_weights is not None and gold is not None
    S, T = len(english), len(french)
    titles = [f"the class ({students} student{'s' if students != 1 else ''})"]
    if revealed:
        titles += ["the model's α and links", "the gold"]
        fig = make_subplots(rows=2, cols=2, specs=[[{"colspan": 2}, None], [{}, {}]], horizontal_spacing=0.08,
                            subplot_titles=titles)
    else:
        fig = make_subplots(rows=1, cols=1, subplot_titles=titles)
    top_angle = _word_angle(english, 1.0)
    low_angle = _word_angle(english, 0.46)
    ticks = {a: (PROJECTED + 8 if a == 0 else int(max(len(w) for w in english) * 0.62 * PROJECTED
                                                  * (0.75 if a == -45 else 1.0)) + 12) for a in (top_angle, low_angle)}
    rows_px = CELL_PX * T
    # heights in px, top to bottom: titles and labels, the class, its legend, titles and labels, model | gold,
    # their legends, the model's-link key
    gap = LEGEND_PX + TITLE_PX + ticks[low_angle] if revealed else 0
    plot = rows_px + (gap + rows_px if revealed else 0)
    top, bottom = TITLE_PX + ticks[top_angle], LEGEND_PX + (40 if revealed else 0)
    y_class = (1 - rows_px / plot, 1.0)
    y_low = (0.0, rows_px / plot)
    panels = [(1, 1, links, y_class, top_angle, 1.0, _legend(
        "students who linked", CLASS_SCALE, max(1, students), 0.5, 0.6, y_class[0] - 8 / plot,
        tickmode="linear", dtick=max(1, int(np.ceil(max(1, students) / 5)))))]
    if revealed:
        panels += [(2, 1, np.asarray(word_weights, dtype=float), y_low, low_angle, 0.46, None),
                   (2, 2, np.asarray(gold, dtype=float), y_low, low_angle, 0.46, None)]
    for n, (r, c, z, y_domain, angle, _, legend) in enumerate(panels, start=1):
        axis = "coloraxis" if n == 1 else f"coloraxis{n}"
        fig.add_trace(go.Heatmap(z=z, x=list(range(S)), y=list(range(T)), coloraxis=axis, xgap=2, ygap=2,
                                 name=titles[n - 1], text=links.astype(int).astype(str).tolist() if n == 1 else None,
                                 texttemplate="%{text}" if n == 1 else None, textfont=dict(size=PROJECTED),
                                 hovertemplate=(f"{escape(titles[0])}: %{{text}} linked<extra></extra>" if n == 1 else
                                                f"{escape(titles[n - 1])}: %{{z:.2f}}<extra></extra>")), r, c)
        fig.update_xaxes(side="top", tickmode="array", tickvals=list(range(S)), ticktext=[escape(w) for w in english],
                         tickangle=angle, tickfont=dict(size=PROJECTED, color="#111111"), showgrid=False, row=r, col=c)
        fig.update_yaxes(autorange="reversed", tickmode="array", tickvals=list(range(T)), domain=list(y_domain),
                         ticktext=[escape(w) for w in french], tickfont=dict(size=PROJECTED, color="#111111"),
                         showticklabels=c == 1, showgrid=False, row=r, col=c)
        if legend is None:
            left, right = fig.get_subplot(r, c).xaxis.domain
            legend = _legend("α" if n == 2 else "gold link", ALPHA_SCALE if n == 2 else GOLD_SCALE, 1,
                             (left + right) / 2, right - left, -8 / plot,
                             **({} if n == 2 else dict(tickmode="array", tickvals=[0, 0.5, 1],
                                                       ticktext=["none", "possible", "sure"])))
        fig.update_layout({axis: legend})
        if n < 3 and revealed:
            fig.add_trace(go.Scatter(x=[i for i, _ in sorted(model_links)], y=[k for _, k in sorted(model_links)],
                                     mode="markers", name="the model's link", showlegend=n == 2,
                                     marker=dict(symbol="square-open", size=22, color=HIGHLIGHT, line=dict(width=3)),
                                     hoverinfo="skip"), r, c)
    for n, title in enumerate(fig.layout.annotations):  # each panel's title above its word labels
        y_top = y_class[1] if n == 0 else y_low[1]
        title.update(y=y_top, yshift=ticks[top_angle if n == 0 else low_angle] + 4,
                     font=dict(size=PROJECTED, color="#111111"))
    fig.update_layout(legend=dict(orientation="h", y=-(LEGEND_PX + 4) / plot, yanchor="top", x=0.5, xanchor="center",
                                  font=dict(size=PROJECTED - 2)), **_small_layout(int(top + plot + bottom)))
    fig.update_layout(margin=dict(t=top, b=bottom, l=10, r=10))
    return fig
