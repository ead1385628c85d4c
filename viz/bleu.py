"""BLEU by source-sentence length: Bahdanau et al. (2014), Figure 2, for our models.

Input is the results table (``results/bleu_by_length.csv``): one row per model, set and
length bucket, with columns ``model, set, beam, bucket, min_words, segments, bleu,
ci_low, ci_high`` (the interval is a 95% bootstrap over the bucket's segments).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .heatmap import FONT_SIZE, MODEL_COLOURS, escape

MIN_SEGMENTS = 10  # buckets with fewer segments are drawn but not used for the stated finding


def _rgba(hex_colour: str, alpha: float) -> str:
    r, g, b = (int(hex_colour[k:k + 2], 16) for k in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def bleu_by_length_figure(table: pd.DataFrame, names: dict[str, str] | None = None,
                          title: str | None = None) -> go.Figure:
    """BLEU per length bucket, one line per model with its 95% bootstrap band (top), and
    the number of segments in each bucket (bottom), for one set (test or stress)."""
    names = names or {}
    table = table.sort_values("min_words")
    buckets = list(dict.fromkeys(table["bucket"]))
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.75, 0.25], vertical_spacing=0.05)
    for k, (model, rows) in enumerate(table.groupby("model", sort=False)):
        colour = MODEL_COLOURS[k % len(MODEL_COLOURS)]
        label = escape(names.get(model, model))
        if {"ci_low", "ci_high"} <= set(rows) and rows["ci_low"].notna().any():
            # the band: upper edge, then lower edge filled up to it
            fig.add_trace(go.Scatter(x=rows["bucket"], y=rows["ci_high"], mode="lines", line=dict(width=0),
                                     hoverinfo="skip", showlegend=False, legendgroup=model), row=1, col=1)
            fig.add_trace(go.Scatter(x=rows["bucket"], y=rows["ci_low"], mode="lines", line=dict(width=0),
                                     fill="tonexty", fillcolor=_rgba(colour, 0.18), hoverinfo="skip",
                                     showlegend=False, legendgroup=model), row=1, col=1)
        ci = rows[["ci_low", "ci_high"]].to_numpy() if "ci_low" in rows else np.full((len(rows), 2), np.nan)
        fig.add_trace(go.Scatter(
            x=rows["bucket"], y=rows["bleu"], mode="lines+markers", name=label, legendgroup=model,
            line=dict(color=colour, width=3), marker=dict(size=8),
            customdata=np.column_stack([rows["segments"], ci]),
            hovertemplate=(f"{label}<br>%{{x}} words: BLEU %{{y:.2f}}"
                           "<br>95% CI %{customdata[1]:.2f}–%{customdata[2]:.2f}"
                           "<br>%{customdata[0]} segments<extra></extra>"),
        ), row=1, col=1)
    counts = table.groupby("bucket", sort=False)["segments"].max().reindex(buckets)
    fig.add_trace(go.Bar(x=buckets, y=counts.to_numpy(), name="segments", marker_color="#888",
                         text=counts.to_numpy(), textposition="outside", showlegend=False,
                         hovertemplate="%{x} words: %{y} segments<extra></extra>"), row=2, col=1)
    fig.update_layout(title=dict(text=escape(title)) if title else None, font=dict(size=FONT_SIZE), height=620,
                      margin=dict(l=10, r=10, t=60 if title else 20, b=10), plot_bgcolor="white",
                      legend=dict(orientation="h", y=-0.18), hovermode="closest")
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=buckets, gridcolor="#ddd")
    fig.update_xaxes(title=dict(text="source sentence length (words)"), row=2, col=1)
    fig.update_yaxes(title=dict(text="BLEU"), rangemode="tozero", gridcolor="#ddd", row=1, col=1)
    fig.update_yaxes(title=dict(text="segments"), rangemode="tozero", gridcolor="#ddd",
                     range=[0, float(counts.max()) * 1.3 if len(counts) else 1], row=2, col=1)
    return fig


def bleu_table(table: pd.DataFrame, names: dict[str, str] | None = None) -> pd.DataFrame:
    """Buckets as rows, models as columns, each cell "BLEU [low–high]"; plus segment counts."""
    names = names or {}
    table = table.sort_values("min_words")

    def cell(r) -> str:
        if pd.notna(r.get("ci_low")) and pd.notna(r.get("ci_high")):
            return f"{r['bleu']:.2f} [{r['ci_low']:.2f}–{r['ci_high']:.2f}]"
        return f"{r['bleu']:.2f}"

    t = table.assign(cell=table.apply(cell, axis=1), model=table["model"].map(lambda m: names.get(m, m)))
    wide = t.pivot_table(index=["min_words", "bucket"], columns="model", values="cell", aggfunc="first", sort=False)
    wide.insert(0, "segments", t.groupby(["min_words", "bucket"])["segments"].max())
    wide = wide.sort_index().reset_index(level="min_words", drop=True)
    wide.index.name = "words"
    wide.columns.name = None
    return wide


def describe_finding(table: pd.DataFrame, names: dict[str, str] | None = None,
                     min_segments: int = MIN_SEGMENTS) -> str:
    """One sentence stating what the measured table shows (never pre-written).

    Uses the shortest and the longest bucket that hold at least ``min_segments`` segments
    for every model: who scores highest on the long sentences, and how much of its
    short-sentence BLEU it keeps there, against RNNenc (the paper's contrast) or else the
    model that keeps least.
    """
    names = names or {}
    if table.empty:
        return "No measurements yet."
    models = list(dict.fromkeys(table["model"]))
    solid = table[table["segments"] >= min_segments]
    shared = solid.groupby("min_words")["model"].nunique()
    shared = sorted(shared[shared == len(models)].index)
    if len(shared) < 2:
        return (f"Too few segments to compare lengths: no two buckets hold at least {min_segments} "
                f"segments for every model.")
    at = solid.set_index(["model", "min_words"])
    lo, hi = shared[0], shared[-1]
    short, long_ = at.loc[(models[0], lo), "bucket"], at.loc[(models[0], hi), "bucket"]

    def name(m):
        return names.get(m, m)

    def trend(m):
        a, b = float(at.loc[(m, lo), "bleu"]), float(at.loc[(m, hi), "bleu"])
        kept = f"keeps {b / a:.0%} of its BLEU" if a > 0 else "goes"
        return f"{kept} ({a:.1f} → {b:.1f})"

    best = max(models, key=lambda m: at.loc[(m, hi), "bleu"])
    row = at.loc[(best, hi)]
    ci = f" [{row['ci_low']:.1f}–{row['ci_high']:.1f}]" if "ci_low" in row and pd.notna(row["ci_low"]) else ""
    head = (f"On {long_}-word sentences {name(best)} scores highest (BLEU {row['bleu']:.1f}{ci}, "
            f"{int(row['segments'])} segments)")
    if len(models) == 1:
        return f"{head}; from {short}-word sentences to there it {trend(best)}."
    others = [m for m in models if m != best]

    def kept(m):
        a = float(at.loc[(m, lo), "bleu"])
        return float(at.loc[(m, hi), "bleu"]) / a if a > 0 else float("inf")

    contrast = next((m for m in others if "rnnenc" in m.lower()), None) or min(others, key=kept)
    return (f"{head} and, from {short}-word sentences to there, {trend(best)}, "
            f"while {name(contrast)} {trend(contrast)}.")
