"""Building Plotly figures from plain specs, without Plotly's per-property validation.

``go.Figure(...)`` and ``update_layout`` validate every property through Plotly's
validator classes: about 25 ms for one alignment heatmap on this machine, against 2 ms for
the same figure built unvalidated. The Compare page draws six figures per interaction, so
validation alone would eat half of its 300 ms budget. The figures in ``viz/`` are
therefore written as plain dicts in Plotly's JSON schema and wrapped here unvalidated;
``tests/test_viz.py`` builds every one of them *with* full validation, so a typo in a
property name still fails the tests rather than the browser.
"""
from __future__ import annotations

import plotly.graph_objects as go
from _plotly_utils.utils import convert_to_base64


class Figure(go.Figure):
    """A go.Figure whose ``to_dict`` does not deep-copy. ``st.plotly_chart`` serialises a
    figure through ``to_dict``, and Plotly's deep copy of every trace and of the layout cost
    as much as building the figure (1–2.5 ms a chart; Step through draws seven per slider
    move). A figure from ``viz/`` is built for one call and never changed afterwards, so a
    shallow copy of each trace and of the layout is enough: ``convert_to_base64`` (numpy
    arrays to Plotly's typed-array form) then writes into the copies' top level."""

    def to_dict(self) -> dict:
        res = {"data": [dict(trace) for trace in self._data], "layout": dict(self._layout)}
        if self._frame_objs:
            res["frames"] = [dict(frame._props) for frame in self._frame_objs]
        convert_to_base64(res)
        return res


def figure(data: list[dict], layout: dict) -> go.Figure:
    """A Figure (above) from trace dicts and a layout dict, skipping validation (see above)."""
    spec = {"data": data, "layout": layout}
    try:
        return Figure(spec, _validate=False)
    except (TypeError, ValueError):  # a Plotly without the private switch: validate, slower but correct
        return go.Figure(spec)


def validated(fig: go.Figure) -> go.Figure:
    """The same figure rebuilt with Plotly's full validation (tests use this): raises
    ValueError on any unknown property or invalid value."""
    return go.Figure(fig.to_dict())


def placeholder(message: str, height: int = 120) -> go.Figure:
    """An empty chart that only says ``message``: what a page shows while its data is not
    ready (no axes, no toolbar-worthy content)."""
    hidden = dict(visible=False)
    return figure([], dict(height=height, xaxis=hidden, yaxis=hidden, margin=dict(l=0, r=0, t=0, b=0),
                           annotations=[dict(text=message, showarrow=False, font=dict(size=18),
                                             xref="paper", yref="paper", x=0.5, y=0.5)]))
