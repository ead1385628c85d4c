"""A figure in words: the text alternative of every Plotly figure the app draws (WCAG 2.1 1.1.1).

A heatmap of α says nothing to a screen reader, so each figure is read back from its own data,
the spec ``st.plotly_chart`` sends, never from anything the page keeps beside it:

- a **summary**, one or two sentences naming what the figure shows (its title, its axes, its
  size), the chart's accessible name (``st.plotly_chart(alt=...)``);
- **tables** a screen reader reads at once: for a heatmap, which column each row reads most
  (for an alignment matrix, which source word each target word attends to, with α); for bars,
  each bar's label, value and the words written on it (right / wrong, never colour alone);
  for lines, each series' range; for markers on a heatmap (links), the pairs they mark;
- the **full matrix** (every cell) and every line's points, on request (a ``<details>``).

A cell the figure leaves blank (NaN: an answer not shown yet) is said to be blank: the text tells
no more than the picture. Plain dicts in (the figure's JSON-ready spec), strings out; no torch,
no Streamlit. ``ui/figures.chart`` draws :func:`alternative_html` under every chart.
"""
from __future__ import annotations

import base64
import functools
import html
import math
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from .fast_figure import Figure

FULL_CELLS = 1600   # a matrix larger than this (40 x 40) is summarised, not written out cell by cell
LIST_POINTS = 400   # points of a line written out at most


@dataclass
class Table:
    """One accessible table: its caption, column headers (the first one labels the rows) and rows.
    ``numbers``: every cell after a row's label is a number this module wrote (or "blank"), written
    as it is: a full matrix is most of a figure's text, and escaping it cell by cell would be most
    of what the text alternative costs (``bench/describe_cost.py``)."""
    caption: str
    header: list[str]
    rows: list[list[str]]
    numbers: bool = False

    @functools.cached_property
    def html(self) -> str:
        """The table as HTML, written once (a heatmap's table is shared by every figure of it)."""
        return _table_html(self)


SUMMARY_CHARS = 240  # an accessible name a screen reader says in one breath (Chromium drops very long ones)


@dataclass
class Description:
    summary: str                                         # the chart's accessible name: what it shows
    text: str = ""                                       # every panel and series in a sentence each
    tables: list[Table] = field(default_factory=list)   # read at once
    full: list[Table] = field(default_factory=list)     # on request


def plain(text) -> str:
    """A Plotly label as plain text: its markup (``<b>``, ``<br>``) dropped, entities decoded."""
    text = str(text if text is not None else "")
    if "<" not in text and "&" not in text:  # most labels: a token, a number
        return text.strip()
    text = re.sub(r"<br\s*/?>", " ", text)
    return html.unescape(re.sub(r"<[^>]+>", "", text)).strip()


def values(v) -> np.ndarray | None:
    """A trace's array as numpy: lists, numpy arrays and Plotly's typed arrays ({dtype, bdata, shape})."""
    if v is None:
        return None
    if isinstance(v, dict) and "bdata" in v:
        dtype = {"f8": "<f8", "f4": "<f4", "i1": "i1", "u1": "u1", "i2": "<i2", "u2": "<u2", "i4": "<i4",
                 "u4": "<u4", "u1c": "u1"}.get(v.get("dtype", "f8"), "<f8")
        out = np.frombuffer(base64.b64decode(v["bdata"]), dtype=dtype)
        shape = v.get("shape")
        if shape:
            out = out.reshape([int(n) for n in str(shape).split(",")])
        return out
    try:
        return np.asarray(v, dtype=float)
    except (TypeError, ValueError):
        return np.asarray(v, dtype=object)


def number(x: float, digits: int = 2) -> str:
    """A value as the tables write it: ``digits`` decimals, whole numbers without, NaN as blank."""
    x = float(x) if x is not None else math.nan
    if not math.isfinite(x):
        return "blank"
    if abs(x) >= 1000 or x.is_integer():
        return f"{x:,.0f}"
    return f"{x:.{digits}f}"


def _axis(layout: dict, trace: dict, letter: str) -> dict:
    """The trace's axis; one without labels of its own (a panel sharing the first panel's) takes
    the first axis's labels."""
    ref = trace.get(f"{letter}axis") or letter  # "x", "x2", ...
    axis = layout.get(f"{letter}axis{ref[1:]}") or {}
    first = layout.get(f"{letter}axis") or {}
    if not axis.get("ticktext") and first.get("ticktext"):
        axis = {**axis, "tickmode": "array", "tickvals": first.get("tickvals"), "ticktext": first["ticktext"]}
    return axis


def _title(obj) -> str:
    if isinstance(obj, dict):
        obj = obj.get("text")
    return plain(obj) if obj else ""


def _labels(axis: dict, positions) -> list[str]:
    """The labels at ``positions`` on an axis: its array tick text where it has one, else the values."""
    ticks = dict(zip([float(v) for v in axis.get("tickvals") or []], axis.get("ticktext") or []))
    at = np.array(sorted(ticks)) if ticks else None
    out = []
    for p in positions:
        try:
            key = float(p)
        except (TypeError, ValueError):
            out.append(plain(p))
            continue
        if at is not None and key not in ticks and np.min(np.abs(at - key)) < 0.5:  # a dot set beside its tick
            key = float(at[np.argmin(np.abs(at - key))])
        out.append(plain(ticks[key]) if key in ticks else number(key))
    return out


HEATMAPS_KEPT = 256  # heatmaps whose words a process keeps (each at most FULL_CELLS cells)
KEPT_BDATA = (8 * FULL_CELLS + 2) // 3 * 4  # base64 characters of FULL_CELLS float64 values: larger is not kept
_HEATMAPS: OrderedDict = OrderedDict()  # what _heatmap_words said of a heatmap, by the heatmap's content
_HEATMAPS_LOCK = threading.Lock()


def _heatmap(trace: dict, layout: dict, panel: str) -> tuple[str, Table | None, Table | None]:
    """:func:`_heatmap_words`, said once per process of each small heatmap: Step through draws
    the same matrix with another row framed on every step, and a class draws the same sentences
    in every tab. Keyed by everything the words read (its values as the spec's typed array, its
    axes, titles and panel); the tables handed out are read, never changed."""
    z = trace.get("z")
    if not (isinstance(z, dict) and "bdata" in z) or len(z["bdata"]) > KEPT_BDATA:
        return _heatmap_words(trace, layout, panel)
    key = repr((panel, z, trace.get("x"), trace.get("y"), trace.get("zmid"), trace.get("colorbar"),
                trace.get("xaxis"), trace.get("yaxis"), _axis(layout, trace, "x"), _axis(layout, trace, "y"),
                layout.get("coloraxis")))
    with _HEATMAPS_LOCK:
        said = _HEATMAPS.get(key)
        if said is not None:
            _HEATMAPS.move_to_end(key)
            return said
    said = _heatmap_words(trace, layout, panel)
    with _HEATMAPS_LOCK:
        _HEATMAPS[key] = said
        while len(_HEATMAPS) > HEATMAPS_KEPT:
            _HEATMAPS.popitem(last=False)
    return said


def _heatmap_words(trace: dict, layout: dict, panel: str) -> tuple[str, Table | None, Table | None]:
    z = values(trace.get("z"))
    if z is None or z.ndim != 2:
        return f"{panel or 'The heatmap'}: no values.", None, None
    z = z.astype(float)
    T, S = z.shape
    xa, ya = _axis(layout, trace, "x"), _axis(layout, trace, "y")
    cols = _labels(xa, trace.get("x") if trace.get("x") is not None else range(S))[:S]
    rows = _labels(ya, trace.get("y") if trace.get("y") is not None else range(T))[:T]
    cols += [str(j + 1) for j in range(len(cols), S)]
    rows += [str(i + 1) for i in range(len(rows), T)]
    x_name, y_name = _title(xa.get("title")) or "column", _title(ya.get("title")) or "row"
    value = _title((trace.get("colorbar") or {}).get("title")) or _title(
        ((layout.get("coloraxis") or {}).get("colorbar") or {}).get("title")) or "value"
    shown = np.isfinite(z)
    text = f"{panel + ': ' if panel else ''}{T} rows ({y_name}) by {S} columns ({x_name}), {value} in each cell"
    if not shown.any():
        return text + "; every cell blank (nothing shown yet).", None, None
    signed = trace.get("zmid") is not None or np.nanmin(z) < 0
    lo, hi = np.nanmin(z), np.nanmax(z)
    text += f", from {number(lo)} to {number(hi)}."
    tops = np.argmax(np.where(shown, np.abs(z) if signed else z, -np.inf), axis=1).tolist()
    any_shown = shown.any(axis=1).tolist()
    top_rows = [[rows[i], cols[j], number(z[i, j])] if any_shown[i] else [rows[i], "blank", "blank"]
                for i, j in enumerate(tops)]
    what = "the largest in size" if signed else "the highest"
    top = Table(f"{panel + ': ' if panel else ''}For each {y_name}, the {x_name} with {what} {value}",
                [y_name, f"{x_name} with {what} {value}", value], top_rows)
    full = None
    if T * S <= FULL_CELLS:
        full = Table(f"{panel + ': ' if panel else ''}Every cell ({value})", [f"{y_name} \\ {x_name}", *cols],
                     [[rows[i], *[f"{v:.2f}" if v == v else "blank" for v in row]]  # NaN != NaN: blank
                      for i, row in enumerate(z.tolist())], numbers=True)
    return text, top, full


def _bars(trace: dict, layout: dict, panel: str) -> tuple[str, Table]:
    horizontal = trace.get("orientation") == "h"
    cat, val = ("y", "x") if horizontal else ("x", "y")
    v = values(trace.get(val))
    v = np.asarray([] if v is None else v, dtype=float).ravel()
    positions = trace.get(cat) if trace.get(cat) is not None else range(len(v))
    labels = _labels(_axis(layout, trace, cat), positions)
    text = trace.get("text")
    written = [plain(t) for t in text] if isinstance(text, (list, tuple)) and len(text) == len(v) else None
    value_name = _title(_axis(layout, trace, val).get("title")) or "value"
    header = ["bar", value_name] + (["written on it"] if written else [])
    rows = [[labels[k] if k < len(labels) else str(k + 1), number(v[k], 3)] + ([written[k]] if written else [])
            for k in range(len(v))]
    summary = f"{panel}: {len(v)} bars of {value_name}"
    if len(v) and np.isfinite(v).any():
        k = int(np.nanargmax(v))
        summary += f"; the highest, {labels[k] if k < len(labels) else k + 1}, at {number(v[k], 3)}"
    return summary + ".", Table(f"{panel}: {value_name} of each bar", header, rows)


def _scatter(trace: dict, layout: dict, panel: str, on_grid: bool) -> tuple[str, Table | None]:
    xa, ya = _axis(layout, trace, "x"), _axis(layout, trace, "y")
    x, y = values(trace.get("x")), values(trace.get("y"))
    if x is None or y is None:
        return "", None
    x, y = np.ravel(x), np.ravel(y)
    n = min(len(x), len(y))
    name = plain(trace.get("name")) or panel
    if on_grid:  # markers on a heatmap's cells (links): the cells they mark, by their labels
        pairs = [f"{c} – {r}" for c, r in zip(_labels(xa, x[:n]), _labels(ya, y[:n]))]
        return f"{name}: {n} marked cell{'s' if n != 1 else ''}" + (f" ({'; '.join(pairs)})." if pairs else "."), None
    x_name, y_name = _title(xa.get("title")) or "x", _title(ya.get("title")) or "y"
    notes = trace.get("customdata") if isinstance(trace.get("customdata"), (list, tuple)) else None
    words = trace.get("text") if isinstance(trace.get("text"), (list, tuple)) else notes
    words = [plain(w) for w in words] if words is not None and len(words) == n and all(
        isinstance(w, str) for w in words) else None
    yy = y[:n].astype(float) if y.dtype != object else np.full(n, np.nan)
    summary = f"{name}: {n} point{'s' if n != 1 else ''}"
    if n and np.isfinite(yy).any():
        summary += f", {y_name} from {number(np.nanmin(yy), 3)} to {number(np.nanmax(yy), 3)}"
    xs = _labels(xa, x[:n]) if xa.get("tickmode") == "array" else [
        number(v, 3) if isinstance(v, (int, float, np.number)) else plain(v) for v in x[:n]]
    rows = [[xs[k], number(yy[k], 3)] + ([words[k]] if words else []) for k in range(min(n, LIST_POINTS))]
    return summary + ".", Table(f"{name}: {y_name} against {x_name}", [x_name, y_name] + (["note"] if words else []), rows)


def _panel_names(layout: dict) -> list[str]:
    """Subplot titles (make_subplots writes them as the layout's first annotations)."""
    return [plain(a.get("text")) for a in layout.get("annotations") or []
            if a.get("xref") == "paper" and a.get("yref") == "paper" and a.get("text")]


def describe_spec(spec: dict, alt: str | None = None) -> Description:
    """The :class:`Description` of a figure's JSON-ready spec; ``alt``: the page's own words for it."""
    layout = spec.get("layout") or {}
    traces = [t for t in spec.get("data") or [] if t.get("visible", True) is not False]
    title = _title(layout.get("title"))
    names = _panel_names(layout)
    heatmaps = [t for t in traces if t.get("type") == "heatmap"]
    kinds = {"heatmap": "heatmap", "bar": "bar chart", "scatter": "chart"}
    kind = next((kinds[t.get("type")] for t in traces if t.get("type") in kinds), "figure")
    if kind == "chart" and any("lines" in (t.get("mode") or "lines") for t in traces):
        kind = "line chart"
    head = f"A {kind}" + (f" in {len(heatmaps)} panels" if len(heatmaps) > 1 else "") + (f": {title}" if title else "")
    sentences, tables, full = [], [], []
    grid_axes = {(t.get("xaxis") or "x", t.get("yaxis") or "y") for t in heatmaps}
    n_heatmap = 0
    for t in traces:
        kind_of = t.get("type")
        subplot = names[n_heatmap] if kind_of == "heatmap" and n_heatmap < len(names) else ""
        panel = plain(t.get("name")) or subplot
        if kind_of == "heatmap":
            n_heatmap += 1
            text, top, whole = _heatmap(t, layout, panel)
            sentences.append(text)
            tables += [top] if top else []
            full += [whole] if whole else []
        elif kind_of == "bar":
            text, table = _bars(t, layout, panel or title or "The bars")
            sentences.append(text)
            tables.append(table)
        elif kind_of == "scatter":
            on_grid = (t.get("xaxis") or "x", t.get("yaxis") or "y") in grid_axes
            text, table = _scatter(t, layout, panel or title or "The line", on_grid)
            if text:
                sentences.append(text)
            if table:
                full.append(table)
    summary = " ".join(s for s in [alt.strip() if alt else "", head + "."] if s)
    if not sentences:
        sentences.append("It shows no data yet.")
    short = f"{summary} {sentences[0]}" if len(summary) + len(sentences[0]) < SUMMARY_CHARS else summary
    if len(short) > SUMMARY_CHARS:
        short = short[:SUMMARY_CHARS - 1].rsplit(" ", 1)[0] + "…"
    return Description(short, f"{summary} {' '.join(sentences)}", tables, full)


def describe(fig, alt: str | None = None) -> Description:
    """:func:`describe_spec` of a Plotly figure (kept with a figure of ``viz.fast_figure``: a
    shared figure is described once per process)."""
    if isinstance(fig, Figure) and alt is None:
        return fig.derived("description", lambda: describe_spec(fig.to_dict()))
    return describe_spec(fig if isinstance(fig, dict) else fig.to_dict(), alt)


def _table_html(t: Table) -> str:
    e = html.escape
    head = "".join(f'<th scope="col">{e(h)}</th>' for h in t.header)
    if t.numbers:
        body = "".join(f'<tr><th scope="row">{e(r[0])}</th><td>' + "</td><td>".join(r[1:]) + "</td></tr>"
                       for r in t.rows)
    else:
        body = "".join("<tr>" + f'<th scope="row">{e(r[0])}</th>' + "".join(f"<td>{e(c)}</td>" for c in r[1:])
                       + "</tr>" for r in t.rows)
    return f"<table><caption>{e(t.caption)}</caption><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def alternative_html(d: Description) -> str:
    """The text alternative as HTML under its chart: the summary and the tables in a ``<figure>``
    a screen reader reads at once (visually hidden: the chart shows the same), and, for everyone,
    one disclosure line that opens the same words and every value."""
    e = html.escape
    read = [t.html for t in d.tables]  # read at once, and again in the disclosure
    full = "".join(f'<div class="fig-matrix">{table}</div>' for table in read + [t.html for t in d.full])
    tables = "".join(read)
    return (f'<figure class="fig-alt"><figcaption class="sr-only">{e(d.text)}</figcaption>'
            f'<div class="sr-only">{tables}</div>'
            f"<details><summary>The figure in words and numbers</summary><p>{e(d.text)}</p>{full}</details></figure>")
