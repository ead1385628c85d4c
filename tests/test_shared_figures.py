"""Figures made once per process for every tab that draws them from one shared result
(``ui.figures.shared_figure``), and a figure's JSON-ready dict and label width made once
(``viz.fast_figure.Figure.derived``)."""
from __future__ import annotations

import gc

import numpy as np

from ui.figures import SharedFigures
from viz.export import figure_html
from viz.heatmap import alignment_heatmap
from viz.narrow import min_width
from viz.teaching_figures import highlighted_heatmap

SOURCE, TARGET = ["▁the", "▁cat", "</s>"], ["▁le", "▁chat", "</s>"]


class Result:
    """A shared cache's result: any object a weak reference can point at (a decoding record)."""


def heatmap(title: str = "α") -> object:
    return alignment_heatmap(np.eye(3), SOURCE, TARGET, title=title)


def test_a_result_and_key_give_every_tab_the_one_figure_built_once():
    figures, built = SharedFigures(), []

    def build(title):
        built.append(title)
        return heatmap(title)

    record = Result()
    first = figures.get(record, ("alignment", "α"), lambda: build("α"))
    assert figures.get(record, ("alignment", "α"), lambda: build("α")) is first
    assert figures.get(record, ("alignment", "β"), lambda: build("β")) is not first
    assert figures.get(Result(), ("alignment", "α"), lambda: build("α")) is not first  # another sentence's record
    assert built == ["α", "β", "α"]


def test_the_last_figures_drawn_are_kept_and_a_dead_results_never_handed_out():
    figures, built = SharedFigures(kept=2), []

    def build(k):
        built.append(k)
        return heatmap(str(k))

    record = Result()
    for k in range(3):
        figures.get(record, (k,), lambda k=k: build(k))
    figures.get(record, (2,), lambda: build(2))  # kept
    figures.get(record, (0,), lambda: build(0))  # the least recently drawn went: made again
    assert built == [0, 1, 2, 0] and len(figures) == 2
    first = figures.get(record, (0,), lambda: build(0))
    del record
    gc.collect()
    again = Result()  # a new sentence's record, perhaps at the dead one's address
    assert figures.get(again, (0,), lambda: build(0)) is not first and built == [0, 1, 2, 0, 0]


def test_a_large_results_figures_are_made_for_each_draw():
    """A text box's 1,000 characters make a heatmap of ~60,000 cells: not kept, so what a process
    keeps stays small whatever visitors type."""
    figures, built = SharedFigures(largest=100), []
    small, large = Result(), Result()
    small.source_tokens, small.target_tokens = ["a"] * 10, ["b"] * 10
    large.source_tokens, large.target_tokens = ["a"] * 10, ["b"] * 11
    for record in (small, small, large, large):
        figures.get(record, ("alignment",), lambda r=record: built.append(len(r.target_tokens)) or heatmap())
    assert built == [10, 11, 11] and len(figures) == 1


def test_a_figure_answers_to_dict_and_its_width_once_until_its_layout_changes():
    fig = highlighted_heatmap(np.eye(3), SOURCE, TARGET, rows=[1], title="row 2")
    spec = fig.to_dict()
    assert fig.to_dict() is spec and spec["layout"]["shapes"]  # the framed row
    width = min_width(fig)
    assert min_width(fig) == width == min_width(fig.to_dict())
    fig.set_layout(title=dict(text="changed"))
    assert fig.to_dict() is not spec and fig.to_dict()["layout"]["title"]["text"] == "changed"


def test_the_html_download_leaves_a_shared_figure_as_it_was():
    """The download builds a Plotly figure of its own: a shared figure is never turned into Plotly's
    objects under the tabs reading it."""
    fig = heatmap("shared")
    spec = fig.to_dict()
    page = figure_html(fig, "alignment")
    assert "<title>alignment</title>" in page and "shared" in page
    assert "_spec" in fig.__dict__ and fig.to_dict() is spec


def test_a_shared_figures_text_alternative_is_written_once_and_a_page_worded_one_every_draw(monkeypatch):
    """``ui.figures.chart``: the tables under a figure (``viz.describe.alternative_html``) are written
    once per figure, as its description and JSON are; a figure the page names in its own words
    (``alt``) is described again on each draw, since the words may change."""
    import viz.describe
    from ui.figures import chart
    written, write = [], viz.describe.alternative_html
    monkeypatch.setattr(viz.describe, "alternative_html", lambda d: (written.append(d.summary), write(d))[1])
    fig = heatmap()
    for _ in range(3):
        chart(fig, "alignment", "shared_alignment")
    assert len(written) == 1 and "<table>" in fig.derived("alternative_html", lambda: "")
    for _ in range(2):
        chart(fig, "alignment", "worded_alignment", alt="The page's own words")
    assert len(written) == 3
