"""Training curves from a checkpoint's ``train_log.csv``.

One row per evaluation during training, columns ``epoch, steps, train_loss, dev_loss,
dev_bleu, tokens_per_second, lr, minutes`` (written by ``model/train.py``).
"""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .heatmap import CHART_HEIGHT, escape, FONT_SIZE, MODEL_COLOURS


def training_curves_figure(log: pd.DataFrame, title: str | None = None) -> go.Figure:
    """Loss (train and dev, per target token) and dev BLEU against epochs, side by side."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("cross-entropy loss", "dev BLEU (greedy)"),
                        horizontal_spacing=0.12)
    x = log["epoch"] if "epoch" in log else log.index
    hover = "epoch %{x:.2f}<br>%{y:.3f}<extra>%{fullData.name}</extra>"
    if "train_loss" in log:
        fig.add_trace(go.Scatter(x=x, y=log["train_loss"], name="train loss", mode="lines+markers",
                                 line=dict(color=MODEL_COLOURS[0], width=3), hovertemplate=hover), row=1, col=1)
    if "dev_loss" in log:
        fig.add_trace(go.Scatter(x=x, y=log["dev_loss"], name="dev loss", mode="lines+markers",
                                 line=dict(color=MODEL_COLOURS[1], width=3, dash="dash"), hovertemplate=hover),
                      row=1, col=1)
    if "dev_bleu" in log:
        fig.add_trace(go.Scatter(x=x, y=log["dev_bleu"], name="dev BLEU", mode="lines+markers",
                                 line=dict(color=MODEL_COLOURS[2], width=3), hovertemplate=hover), row=1, col=2)
    fig.update_layout(title=dict(text=escape(title)) if title else None, font=dict(size=FONT_SIZE), height=CHART_HEIGHT,
                      margin=dict(l=10, r=10, t=70 if title else 40, b=10), plot_bgcolor="white",
                      legend=dict(orientation="h", y=-0.25))
    fig.update_xaxes(title=dict(text="epoch"), gridcolor="#ddd")
    fig.update_yaxes(gridcolor="#ddd")
    return fig
