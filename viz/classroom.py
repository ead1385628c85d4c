"""The classroom load test's curve: latency against the number of concurrent sessions.

Reads the rows that ``bench/classroom.py`` appends to ``results/benchmarks.jsonl`` (one
per run: sessions, p50_ms, p95_ms, max_ms, errors, mismatches, rss_mb), as a DataFrame.
"""
from __future__ import annotations

import pandas as pd

from .fast_figure import figure
from .heatmap import CHART_HEIGHT, FONT_SIZE, MODEL_COLOURS


def load_curve_figure(runs: pd.DataFrame, budget_ms: float = 1000.0):
    """p50, p95 and max interaction time (ms) per number of sessions, with the p95 budget
    as a dashed line; one point per run, lines through the latest run of each size. Runs of
    several setups (a ``replicas`` column: 1 process, N replicas behind HAProxy) get one
    p95 line each instead."""
    runs = runs.sort_values("sessions")
    hover = "%{x} sessions<br>%{y:.0f} ms<extra>%{fullData.name}</extra>"
    setups = sorted(runs["replicas"].dropna().unique()) if "replicas" in runs else []
    if len(setups) > 1:
        data = [dict(type="scatter", x=group["sessions"].tolist(), y=group["p95_ms"].tolist(),
                     name=f"95th percentile, {'1 process' if n == 1 else f'{n:g} replicas behind HAProxy'}",
                     mode="lines+markers", line=dict(color=MODEL_COLOURS[k], width=3), hovertemplate=hover)
                for k, (n, group) in enumerate((n, runs[runs["replicas"] == n]) for n in setups)]
    else:
        data = [dict(type="scatter", x=runs["sessions"].tolist(), y=runs[column].tolist(), name=name,
                     mode="lines+markers", line=dict(color=MODEL_COLOURS[k], width=3), hovertemplate=hover)
                for k, (column, name) in enumerate([("p50_ms", "median"), ("p95_ms", "95th percentile"),
                                                    ("max_ms", "slowest")]) if column in runs]
    xmax = float(runs["sessions"].max()) if len(runs) else 1.0
    data.append(dict(type="scatter", x=[0, xmax], y=[budget_ms, budget_ms], mode="lines", name="p95 budget",
                     line=dict(color="#888", dash="dash"), hoverinfo="skip"))
    layout = dict(font=dict(size=FONT_SIZE), height=CHART_HEIGHT, plot_bgcolor="white",
                  margin=dict(l=10, r=10, t=30, b=10), legend=dict(orientation="h", y=-0.25),
                  xaxis=dict(title=dict(text="concurrent sessions"), gridcolor="#ddd", rangemode="tozero"),
                  yaxis=dict(title=dict(text="time to a finished rerun (ms)"), gridcolor="#ddd",
                             rangemode="tozero"))
    return figure(data, layout)
