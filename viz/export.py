"""Export what a page shows: the attention matrix as CSV, a figure as standalone HTML.

(PNG comes from Plotly's own toolbar, the camera icon; see :data:`PLOTLY_CONFIG`.)
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go


def plotly_config(filename: str) -> dict:
    """Plotly's toolbar config: the camera button saves ``filename.png`` at twice the size."""
    return {"displaylogo": False,
            "toImageButtonOptions": {"format": "png", "filename": filename, "scale": 2}}


def matrix_csv(weights: np.ndarray, source_tokens: list[str], target_tokens: list[str]) -> str:
    """α as CSV: one row per target token, one column per source token (tokens as typed,
    repeated tokens kept as separate columns), weights to 6 decimals."""
    table = pd.DataFrame(np.round(np.asarray(weights, dtype=float), 6), columns=list(source_tokens))
    table.insert(0, "target \\ source", list(target_tokens))
    return table.to_csv(index=False)


def figure_html(fig: go.Figure, title: str = "Attention Explorer") -> str:
    """A self-contained HTML page (plotly.js inlined): opens offline, stays interactive."""
    return fig.to_html(include_plotlyjs=True, full_html=True, config={"displaylogo": False},
                       default_width="100%", default_height=fig.layout.height or 600) \
        .replace("<head>", f"<head><title>{_escape(title)}</title>", 1)


def _escape(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
