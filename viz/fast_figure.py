"""Building Plotly figures from plain specs, without Plotly's per-property validation.

``go.Figure(...)`` and ``update_layout`` validate every property through Plotly's
validator classes: about 25 ms for one alignment heatmap on this machine, against 2 ms for
the same figure built unvalidated. The Compare page draws six figures per interaction, so
validation alone would eat half of its 300 ms budget. The figures in ``viz/`` are
therefore written as plain dicts in Plotly's JSON schema and wrapped here unvalidated (a
``Figure`` builds no Plotly object at all until something other than ``to_dict`` asks);
``tests/test_viz.py`` builds every one of them *with* full validation, so a typo in a
property name still fails the tests rather than the browser.
"""
from __future__ import annotations

import base64
import functools

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
from _plotly_utils.utils import is_homogeneous_array, is_skipped_key, plotlyjsShortTypes, to_typed_array_spec


class Figure(go.Figure):
    """A go.Figure that keeps its spec as plain dicts until something asks for Plotly's objects.

    ``st.plotly_chart`` needs only ``to_dict``, yet building Plotly's objects (even
    unvalidated: every trace's properties deep-copied into compound objects, the layout's
    template) and Plotly's own ``to_dict`` (another deep copy) were a fifth of the server's
    CPU in a class (docs/performance.md, "Where a click's server CPU goes"). So a figure from
    ``figure()`` holds the spec, and ``to_dict`` answers from it with copies of its dicts only.
    Any other use (``fig.data``, ``fig.layout``, ``update_layout``, ``add_trace``, pickling)
    reads an attribute that only Plotly's constructor sets, and ``__getattr__`` builds the
    figure then, once, exactly as ``go.Figure(spec, _validate=False)`` would have. A built
    figure's ``to_dict`` goes the same way from Plotly's property dicts (no deep copy: a figure
    from ``viz/`` is built for one call and never changed afterwards).

    A figure drawn on many pages (``ui.figures.shared_figure``: the same figure for every tab
    that shows the same result) answers ``to_dict`` once: the JSON-ready dict is kept and the same
    one handed to every caller (Streamlit's ``plotly_chart`` and ``viz.narrow.min_width`` read it
    on every draw), and so are values derived from it (:meth:`derived`). Read that dict, never
    change it; ``set_layout`` forgets both."""

    def __init__(self, spec: dict):  # Plotly's own __init__ runs on first use, in __getattr__
        self.__dict__["_spec"] = spec

    def __getattr__(self, name: str):
        # only reached for an attribute not set yet, i.e. one of Plotly's own: build them now
        if name.startswith("__") or "_spec" not in self.__dict__:  # copy's and pickle's probes
            raise AttributeError(name)
        spec = self.__dict__.pop("_spec")
        go.Figure.__init__(self, spec, _validate=False)
        return getattr(self, name)

    def set_layout(self, **props) -> Figure:
        """Set top-level layout properties (``shapes=[...]``), in the spec while there is one;
        returns the figure."""
        spec = self.__dict__.get("_spec")
        self.__dict__.pop("_derived", None)
        for name, value in props.items():
            if spec is not None:
                spec["layout"][name] = value
            else:
                self.layout[name] = value
        return self

    def derived(self, name: str, compute):
        """``compute()`` (a value of this figure's spec, e.g. its JSON-ready dict), made once and
        kept while the spec is unchanged; a figure Plotly has built computes it every time."""
        if "_spec" not in self.__dict__:
            return compute()
        kept = self.__dict__.setdefault("_derived", {})
        if name not in kept:
            kept[name] = compute()
        return kept[name]

    def to_dict(self) -> dict:
        return self.derived("to_dict", self._to_dict)

    def _to_dict(self) -> dict:
        spec = self.__dict__.get("_spec")
        if spec is None:  # built: its traces' and layout's own properties, the same way
            spec = {"data": [trace._props for trace in self._data_objs], "layout": self._layout_obj._props}
            if self._frame_objs:
                spec["frames"] = [frame._props for frame in self._frame_objs]
        res = _json_ready(spec)
        name = pio.templates.default  # what Plotly's constructor puts in (Streamlit sets its own)
        if name and res["layout"].get("template") is None:
            res["layout"]["template"] = _template_json(name)
        return res


def _json_ready(value, key: str | None = None):
    """``value`` with its dicts copied and numpy arrays in Plotly's typed-array form, as
    Plotly's ``convert_to_base64`` writes them (it converts in place; the spec stays as built). Scalars
    and strings, most of a spec, and numpy's arrays and scalars are told apart before Plotly's
    own array test, which asks narwhals about every value (half the time of a figure)."""
    if value is None or isinstance(value, (str, bool, int, float, np.generic)):
        return value
    if isinstance(value, np.ndarray):
        return value if key is None or is_skipped_key(key) else _typed_array(value)
    if isinstance(value, dict):
        return {k: _json_ready(v, k) for k, v in value.items() if v is not None}  # None: unset, as Plotly drops it
    if isinstance(value, (list, tuple)):
        return [_json_ready(v) for v in value] if any(isinstance(v, dict) for v in value) else value
    if key is not None and not is_skipped_key(key) and is_homogeneous_array(value):
        return to_typed_array_spec(value)
    return value


def _typed_array(v: np.ndarray):
    """Plotly's typed-array form of a numeric array ({dtype, bdata[, shape]}), as
    ``to_typed_array_spec`` writes it without its detour through narwhals (0.2 ms an array);
    anything else (int64 narrowed to what plotly.js reads, object arrays…) goes to Plotly."""
    short = plotlyjsShortTypes.get(str(v.dtype))
    if short is None or v.size == 0:
        return to_typed_array_spec(v)
    spec = {"dtype": short, "bdata": base64.b64encode(np.ascontiguousarray(v)).decode("ascii")}
    if v.ndim > 1:
        spec["shape"] = str(v.shape)[1:-1]
    return spec


@functools.lru_cache(maxsize=4)
def _template_json(name: str) -> dict:
    """The layout template ``name`` (Plotly's registry) as plain JSON, built once and shared
    read-only: Plotly's constructor would copy the same template into every figure."""
    return _json_ready(pio.templates[name].to_plotly_json())


def figure(data: list[dict], layout: dict) -> go.Figure:
    """A Figure (above) from trace dicts and a layout dict, skipping validation (see above).

    Every cartesian axis lets its tick labels overflow (``ticklabeloverflow="allow"``, Plotly's
    own default on category axes) unless the layout says otherwise: on a numeric axis Plotly's
    default, "hide past div", measures every drawn label's box to hide those past the chart's
    edge, a forced layout per label, about a fifth of the browser's script time drawing an
    alignment heatmap (docs/performance.md). The labels fit the chart's margins anyway, and the
    chart's own box clips what would not."""
    for name, axis in layout.items():
        if name[1:5] == "axis" and name[0] in "xy" and isinstance(axis, dict):
            axis.setdefault("ticklabeloverflow", "allow")
    return Figure({"data": data, "layout": layout})


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


TRACE_TYPES = ("bar", "heatmap", "scatter")  # every trace type a figure in viz/ draws


def import_plotly_objects() -> int:
    """Import Plotly's object classes for the layout and the traces ``viz/`` draws, all of them
    (about 350 small modules, 0.1 s, ~20 MB). Plotly imports each on first use, under the import
    lock of that module: a server that imports them while thirty tabs first draw the same page
    makes all thirty wait on those locks (a fifth of the server's busy time in a py-spy profile
    of the class bench). The server's warm-up calls this instead. Returns how many were imported."""
    import importlib
    import pkgutil

    def subtree(name: str) -> int:
        package = importlib.import_module(name)
        count = 0
        for module in pkgutil.iter_modules(getattr(package, "__path__", [])):
            importlib.import_module(f"{name}.{module.name}")
            count += 1 + (subtree(f"{name}.{module.name}") if module.ispkg else 0)
        return count

    return sum(subtree(f"plotly.graph_objs.{part}") for part in ("layout", *TRACE_TYPES))
