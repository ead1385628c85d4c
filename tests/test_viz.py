"""viz/: every figure is a valid Plotly figure (built unvalidated for speed, checked here with
Plotly's full validation) and shows what it claims."""
from __future__ import annotations

import numpy as np
import pytest

from viz.fast_figure import placeholder, validated
from viz.heatmap import _hover_labels, alignment_heatmap, difference_heatmap, entropy_figure, probability_figure
from types import SimpleNamespace

from viz.teaching_figures import (beam_tree, context_sum, highlighted_heatmap, local_p_forms, source_bars, topk_bars,
                          vector_strip, weight_comparison)
from viz.transformer import head_grid, head_rows, MARKED_HEAD, self_attention_heatmap

SOURCE = ["▁the", "▁cat", "<b>", "</s>"]
TARGET = ["▁le", "▁chat", "</s>"]
WEIGHTS = np.array([[0.7, 0.1, 0.1, 0.1], [0.05, 0.9, 0.03, 0.02], [0.0, 0.0, 0.1, 0.9]])

FIGURES = {
    "alignment": lambda: alignment_heatmap(WEIGHTS, SOURCE, TARGET, title="RNNsearch <i>x</i>"),
    "difference": lambda: difference_heatmap(WEIGHTS - WEIGHTS[::-1], SOURCE, TARGET, title="A − B"),
    "probability": lambda: probability_figure(TARGET, np.log([0.5, 0.9, 0.99])),
    "probability by word": lambda: probability_figure(TARGET, np.log([0.5, 0.9, 0.99]), groups=[0, 0, 1],
                                                      group_labels=["le chat", "</s>"]),
    "entropy": lambda: entropy_figure({"RNNsearch": np.array([0.2, 0.5, 0.1]), "Luong dot": np.array([1.0, 0.3, 0.2])}),
    "highlighted": lambda: highlighted_heatmap(WEIGHTS, SOURCE, TARGET, rows=[1]),
    # the step-through and beam-tree figures, redrawn on every click, are plain specs too
    "vector strip": lambda: vector_strip(np.array([0.5, -1.0, 0.25]), "s_3"),
    "energies": lambda: source_bars(np.array([1.0, -np.inf, 0.5, 2.0]), SOURCE, "e_ij", highlight=3),
    "context sum": lambda: context_sum(WEIGHTS[0], np.eye(4, 3), SOURCE, WEIGHTS[0] @ np.eye(4, 3)),
    "local-p forms": lambda: local_p_forms({"shipped": (WEIGHTS[0] * 0.9, np.ones(3)),
                                            "Luong eq. 10": (WEIGHTS[0], np.ones(3) * 1.1)}, SOURCE),
    "weight comparison": lambda: weight_comparison({"additive": WEIGHTS[0], "dot": WEIGHTS[1]}, SOURCE),
    "top-k": lambda: topk_bars(["▁le", "▁la"], np.array([0.7, 0.2]), chosen="▁le"),
    "beam tree": lambda: beam_tree(_tiny_tree(), selected_path=[1, 3]),
    "head grid": lambda: head_grid(np.stack([np.stack([WEIGHTS] * 4)] * 3), SOURCE, TARGET, marked=(2, 1),
                                   marked_label="★"),
    "head rows": lambda: head_rows(WEIGHTS, SOURCE, ["head 1", "head 2", "head 3"]),
    "self-attention": lambda: self_attention_heatmap(np.eye(4), SOURCE),
}


@pytest.mark.parametrize("name", FIGURES)
def test_a_figure_sends_what_plotlys_own_figure_would(name):
    """viz.fast_figure.Figure answers to_dict from its spec, without Plotly's objects: the JSON that
    st.plotly_chart sends must be the one Plotly's own figure gives (its constructor and its own
    to_dict: typed arrays, the default template, unset properties left out), key order aside."""
    import json
    import plotly.graph_objects as go
    import plotly.io as pio
    fast, built = FIGURES[name](), FIGURES[name]()
    plotlys = go.Figure.to_dict(built)  # Plotly's own, on the figure its constructor built
    ours = [fast.to_dict(), built.to_dict()]  # from the spec, and from the built figure
    assert all(json.loads(pio.to_json(d, validate=False)) == json.loads(pio.to_json(plotlys, validate=False))
               for d in ours)


def _tiny_tree():
    """<s> -> le (-> chat </s>) and la (pruned): the nodes beam_tree reads."""
    node = lambda i, parent, step, token, lp, score, **kw: SimpleNamespace(  # noqa: E731
        id=i, parent=parent, step=step, token=token, logprob=lp, score=score, finished=kw.get("finished", False),
        on_best_path=kw.get("best", False), pruned=kw.get("pruned", False))
    return [node(0, None, 0, "<s>", 0.0, 0.0, best=True), node(1, 0, 1, "▁le", -0.2, -0.2, best=True),
            node(2, 0, 1, "▁la", -1.8, -1.8, pruned=True), node(3, 1, 2, "</s>", -0.1, -0.3, best=True, finished=True)]


def test_placeholder_is_an_empty_chart_that_says_its_message():
    fig = validated(placeholder("Loading the models…")).to_dict()
    assert fig["data"] == [] and fig["layout"]["annotations"][0]["text"] == "Loading the models…"
    assert fig["layout"]["xaxis"]["visible"] is False and fig["layout"]["yaxis"]["visible"] is False


def test_the_warm_up_imports_every_trace_type_viz_draws():
    """The server imports Plotly's classes for these trace types before a class arrives
    (viz.fast_figure.import_plotly_objects): a type missing there is imported under load."""
    import re
    from pathlib import Path
    from viz.fast_figure import TRACE_TYPES
    drawn = {FIGURES[name]().to_dict()["data"][0]["type"] for name in FIGURES}
    source = "".join(p.read_text(encoding="utf-8") for p in (Path(__file__).parent.parent / "viz").glob("*.py"))
    built = {name.lower() for name in re.findall(r"\bgo\.([A-Z][a-z]+)\(", source)} - {"figure", "frame"}
    assert drawn | built <= set(TRACE_TYPES), (drawn | built) - set(TRACE_TYPES)


@pytest.mark.parametrize("name", FIGURES)
def test_figures_pass_plotlys_full_validation(name):
    fig = FIGURES[name]()
    strict = validated(fig)  # raises ValueError on an unknown property or a bad value
    assert strict.to_dict()["data"][0]["type"] == fig.to_dict()["data"][0]["type"]


def test_alignment_heatmap_shows_the_weights_on_a_fixed_scale():
    fig = FIGURES["alignment"]()
    validated(fig)
    heat = fig.data[0]
    assert np.allclose(np.asarray(heat.z), WEIGHTS)
    assert (heat.zmin, heat.zmax) == (0.0, 1.0)
    assert list(fig.layout.xaxis.ticktext) == ["▁the", "▁cat", "&lt;b&gt;", "&lt;/s&gt;"]  # markup shown as text
    assert "<i>" not in fig.layout.title.text
    assert "%{z:.3f}" in heat.hovertemplate
    assert tuple(np.asarray(heat.customdata)[1, 2]) == ("&lt;b&gt;", "▁chat")  # (source, target) of cell (1, 2)


def test_probability_figure_multiplies_pieces_into_words():
    fig = FIGURES["probability by word"]()
    assert np.allclose(fig.data[0].y, [0.45, 0.99])


def test_classroom_load_curve():
    import pandas as pd
    from viz.classroom import load_curve_figure
    runs = pd.DataFrame({"sessions": [30, 1, 10], "p50_ms": [200, 40, 90], "p95_ms": [800, 60, 300],
                         "max_ms": [1500, 80, 600]})
    fig = validated(load_curve_figure(runs, budget_ms=1000)).to_dict()
    lines = {t["name"]: t for t in fig["data"]}
    assert list(lines["95th percentile"]["x"]) == [1, 10, 30] and list(lines["95th percentile"]["y"]) == [60, 300, 800]
    assert list(lines["p95 budget"]["y"]) == [1000, 1000]


def test_head_grid_places_every_head_and_frames_the_marked_one():
    heads = np.random.default_rng(0).dirichlet(np.ones(4), size=(3, 4, 3))  # layers x heads x T x S
    raw = head_grid(heads, SOURCE, TARGET, marked=(1, 2), marked_label="★")
    fig = validated(raw).to_dict()
    assert len(fig["data"]) == 12 and all(t["zmin"] == 0 and t["zmax"] == 1 for t in fig["data"])
    assert np.allclose(np.asarray(raw.data[1 * 4 + 2].z), heads[1, 2])
    frame = [s for s in fig["layout"]["shapes"] if s["name"] == MARKED_HEAD]
    x = fig["layout"]["xaxis7"]["domain"]  # layer 2, head 3 is the 7th panel
    assert len(frame) == 1 and (frame[0]["x0"], frame[0]["x1"]) == tuple(x)
    assert any(a["text"] == "L2 · H3 ★" for a in fig["layout"]["annotations"])
    with pytest.raises(ValueError):
        head_grid(heads, SOURCE[:2], TARGET)


def test_the_downloads_hold_the_matrix_and_a_standalone_page():
    """The CSV (written when its button is clicked) is α itself, repeated tokens kept apart;
    the HTML page carries the figure's data and plotly.js."""
    import io

    import pandas as pd

    from viz.export import figure_html, matrix_csv
    table = pd.read_csv(io.StringIO(matrix_csv(WEIGHTS, ["▁a", "▁a", "<b>", "</s>"], TARGET)))
    assert list(table.columns) == ["target \\ source", "▁a", "▁a.1", "<b>", "</s>"]
    assert table.iloc[:, 0].tolist() == TARGET and np.allclose(table.iloc[:, 1:].to_numpy(), WEIGHTS)
    page = figure_html(FIGURES["highlighted"](), "a <title>")
    assert "<title>a &lt;title&gt;</title>" in page and "plotly" in page.lower() and "highlighted row" in page


def test_every_axis_lets_its_tick_labels_overflow_unless_told():
    """viz.fast_figure.figure sets ``ticklabeloverflow="allow"`` on each cartesian axis (Plotly's
    default there measures every label in the browser to hide the ones past the chart's edge,
    docs/performance.md "In the visitor's browser"); an axis that says otherwise keeps its own."""
    from viz.fast_figure import figure
    layout = alignment_heatmap(np.eye(3), ["a", "b", "c"], ["x", "y", "z"]).to_dict()["layout"]
    assert layout["xaxis"]["ticklabeloverflow"] == layout["yaxis"]["ticklabeloverflow"] == "allow"
    own = figure([], {"xaxis2": {"ticklabeloverflow": "hide past domain"}, "yaxis": {}, "title": {"text": "t"}})
    spec = validated(own).to_dict()["layout"]
    assert spec["xaxis2"]["ticklabeloverflow"] == "hide past domain" and spec["yaxis"]["ticklabeloverflow"] == "allow"
    assert "ticklabeloverflow" not in spec["title"]


def test_a_sentences_hover_labels_are_made_once_and_a_long_texts_heatmap_hovers_from_its_axes():
    """Every heatmap of a sentence hands the same hover labels to Plotly (read, never changed);
    past 40 x 40 cells the alignment heatmap has no per-cell labels (Step through would make and
    send them on every slider move) and hovers with its axes' tick labels, which name the tokens; a
    figure that still labels every cell makes its own, so a visitor's long text is not kept."""
    plain = alignment_heatmap(WEIGHTS, SOURCE, TARGET).to_dict()["data"][0]["customdata"]
    framed = highlighted_heatmap(WEIGHTS, SOURCE, TARGET, rows=[2]).to_dict()["data"][0]["customdata"]
    assert framed is plain and plain[1][2] == ["&lt;b&gt;", "▁chat"] and len(plain) == 3 and len(plain[0]) == 4
    words = [f"▁w{j}" for j in range(41)]
    weights = np.full((41, 41), 1 / 41)
    trace = highlighted_heatmap(weights, words, words, rows=[3]).to_dict()
    heat, layout = trace["data"][0], trace["layout"]
    assert "customdata" not in heat and "%{x}" in heat["hovertemplate"] and "%{y}" in heat["hovertemplate"]
    assert layout["xaxis"]["ticktext"][40] == layout["yaxis"]["ticktext"][40] == "▁w40"
    at_limit = alignment_heatmap(np.full((40, 40), 1 / 40), words[:40], words[:40]).to_dict()["data"][0]
    assert at_limit["customdata"][39][0] == ["▁w0", "▁w39"]
    long = _hover_labels(words, words)
    assert _hover_labels(words, words) is not long and long[40][0] == ["▁w0", "▁w40"]
