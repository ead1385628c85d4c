"""Accessibility without a browser (docs/accessibility.md): every figure's text alternative
(``viz/describe.py``) says what the figure's own data holds and no more; colour is never the only
sign of right and wrong; the theme's text reaches 4.5:1; visitors get no developer toolbar; and
every chart a page draws carries its alternative (``ui/figures.chart``, through AppTest).
The browser's side (axe-core, the accessible tree, the keyboard) is tests/test_accessibility_browser.py."""
from __future__ import annotations

import json
import tomllib

import numpy as np

from conftest import ROOT
from helpers.apptest import translate_app
from viz.describe import alternative_html, describe
from viz.heatmap import alignment_heatmap, difference_heatmap, entropy_figure, probability_figure
from viz.teaching_figures import alignment_links, answer_counts, class_alignment, given_numbers, highlighted_heatmap

W = np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.05, 0.15, 0.8]])
EN, FR = ["▁the", "▁cat", "</s>"], ["▁le", "▁chat", "</s>"]


def test_a_heatmap_says_which_source_word_each_target_word_reads_most():
    d = describe(alignment_heatmap(W, EN, FR, title="RNNsearch"))
    assert "heatmap" in d.summary and "RNNsearch" in d.summary and "3 rows (target (French))" in d.summary
    top = d.tables[0]
    assert top.header == ["target (French)", "source (English) with the highest α", "α"]
    assert top.rows == [["▁le", "▁the", "0.70"], ["▁chat", "▁cat", "0.80"], ["</s>", "</s>", "0.80"]]
    full = d.full[0]  # every cell, on request
    assert full.header[1:] == EN and [r[0] for r in full.rows] == FR and full.rows[0][1:] == ["0.70", "0.20", "0.10"]


def test_a_blank_heatmap_tells_no_more_than_the_picture():
    """Stop 11's grid before the student answers: its cells are blank, and so is its text."""
    d = describe(alignment_heatmap(np.full((3, 3), np.nan), EN, FR, title="shown once you have answered"))
    assert "blank" in d.summary and not d.tables and not d.full
    assert "0." not in alternative_html(d)


def test_a_difference_heatmap_names_the_largest_change_with_its_sign():
    d = describe(difference_heatmap(W - W.T, EN, FR))
    assert d.tables[0].rows[0][1:] == ["▁cat", "0.10"] or d.tables[0].rows[0][2].startswith("-")
    assert "Δα" in d.summary


def test_bars_lines_and_a_class_figures_in_words():
    bars = describe(probability_figure(FR, np.log([0.5, 0.9, 0.99])))
    assert "3 bars" in bars.summary and bars.tables[0].rows[1][:2] == ["▁chat", "0.900"]
    lines = describe(entropy_figure({"RNNsearch": np.array([0.1, 0.5]), "dot": np.array([1.0, 0.2])}))
    assert "line chart" in lines.summary and {t.caption.split(":")[0] for t in lines.full} == {"RNNsearch", "dot"}
    panels = describe(class_alignment(np.array([[1, 0, 0], [0, 2, 0], [0, 0, 2]]), 2, W, {(0, 0), (1, 1)}, np.eye(3),
                                      ["a", "b", "c"], ["x", "y", "z"]))
    assert "3 panels" in panels.summary and len(panels.tables) == 3
    assert [r[:2] for r in panels.tables[1].rows] == [["x", "a"], ["y", "b"], ["z", "c"]]  # the model's panel, by word
    links = describe(alignment_links(W, EN, FR, {(0, 0), (2, 1)}, {(0, 0), (1, 1)}))
    assert "wrong: 1 marked cell (</s> – ▁chat)" in links.text and "missed: 1 marked cell" in links.text


def test_right_and_wrong_are_never_colour_alone():
    counts = describe(answer_counts({"the cat": 3, "le": 1, "gave up": 2}, right="the cat"))
    assert {r[0]: r[2] for r in counts.tables[0].rows} == {"the cat": "3 · right", "le": "1 · wrong",
                                                          "gave up": "2 · no answer"}
    dots = given_numbers({"e1": [0.5, 0.9]}, {"e1": 0.5}, 0.02).to_dict()["data"][0]
    assert dots["marker"]["symbol"] == ["circle", "x"]  # a dot for right, a cross for wrong, beside the colours
    assert [row[2] for row in describe(given_numbers({"e1": [0.5, 0.9]}, {"e1": 0.5}, 0.02)).full[0].rows] == \
        ["e1: 0.50 (right)", "e1: 0.90 (wrong)"]


def test_the_alternative_shows_markup_as_typed():
    html = alternative_html(describe(alignment_heatmap(W, ["<b>", "&", "x"], FR)))
    assert "&lt;b&gt;" in html and "<b>" not in html and "&amp;" in html
    assert html.startswith('<figure class="fig-alt">') and "<details>" in html and 'scope="row"' in html


def test_the_full_matrix_writes_each_cell_as_a_number_or_blank():
    """A matrix's number cells are written unescaped (numbers: nothing to escape), its labels escaped,
    a cell the figure leaves blank said blank, and the tables read at once repeated in the disclosure."""
    w = W.copy()
    w[1, 2] = np.nan
    d = describe(alignment_heatmap(w, ["<b>", "&", "x"], FR))
    assert d.full[0].numbers and not d.tables[0].numbers
    assert [r[1:] for r in d.full[0].rows] == [["0.70", "0.20", "0.10"], ["0.10", "0.80", "blank"],
                                             ["0.05", "0.15", "0.80"]]
    html = alternative_html(d)
    assert "<td>0.80</td><td>blank</td></tr>" in html and "<b>" not in html and '<th scope="col">&lt;b&gt;</th>' in html
    top = html.split('<div class="sr-only">', 1)[1].split("</div>", 1)[0]
    assert top.startswith("<table>") and html.count(top) == 2


def test_a_matrix_framed_on_another_row_is_put_in_words_once_and_anew_when_it_differs():
    """Step through frames another row of the same α on every step: the matrix's tables are made
    once and shared (their HTML written once), each figure's title still its own; a heatmap that
    differs in one value or one label is described anew."""
    first = describe(highlighted_heatmap(W, EN, FR, rows=[0], title="row 1 is the step"))
    third = describe(highlighted_heatmap(W, EN, FR, rows=[2], title="row 3 is the step"))
    assert third.tables[0] is first.tables[0] and third.full[0] is first.full[0]
    assert "row 1 is the step" in first.summary and "row 3 is the step" in third.summary
    assert alternative_html(third).split("<details>")[1] == alternative_html(first).split("<details>")[1].replace(
        "row 1 is the step", "row 3 is the step")
    w = W.copy()
    w[2, 0] = 0.9
    changed = describe(highlighted_heatmap(w, EN, FR, rows=[2], title="row 3 is the step"))
    assert changed.tables[0].rows[2] == ["</s>", "▁the", "0.90"] and first.tables[0].rows[2] == ["</s>", "</s>", "0.80"]
    relabelled = describe(highlighted_heatmap(W, EN, ["▁la", "▁chatte", "</s>"], rows=[0], title="row 1 is the step"))
    assert [r[0] for r in relabelled.tables[0].rows] == ["▁la", "▁chatte", "</s>"]
    assert [r[0] for r in first.full[0].rows] == FR


def contrast(fg: str, bg: str = "#ffffff", alpha: float = 1.0) -> float:
    """WCAG 2.1's contrast ratio of ``fg`` drawn at ``alpha`` over ``bg``."""
    def rgb(c):
        return np.array([int(c[i:i + 2], 16) for i in (1, 3, 5)], dtype=float)
    blend = alpha * rgb(fg) + (1 - alpha) * rgb(bg)

    def luminance(c):
        c = c / 255
        c = np.where(c <= 0.03928, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
        return float(0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2])
    hi, lo = sorted([luminance(blend), luminance(rgb(bg))], reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_the_theme_reaches_4_5_to_1_and_visitors_get_no_developer_toolbar():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["client"]["toolbarMode"] in ("viewer", "minimal")
    text = config["theme"]["textColor"]
    assert contrast(text) >= 7 and contrast(text, alpha=0.6) >= 4.5  # body text; captions (60 %)
    assert contrast(text, "#fafafa", 0.6) >= 4.5  # a caption's code, on its grey
    assert contrast("#828180") < 4.5  # the check sees Streamlit's default caption colour fail


def test_every_chart_on_a_page_carries_its_text_alternative(product):
    at = translate_app("I will eat.")
    charts = at.get("plotly_chart")
    alternatives = [h.proto.body for h in at.get("html") if "<figure class=\"fig-alt\"" in h.proto.body]
    assert len(charts) == len(alternatives) == 2
    for chart, html in zip(charts, alternatives):
        assert chart.proto.alt.startswith(("A heatmap", "A bar chart")), chart.proto.alt
        spec = json.loads(chart.proto.spec)
        assert all(t in html for t in spec["layout"]["xaxis"]["ticktext"][:2])  # the figure's own labels
        assert "<table>" in html and "<details>" in html
