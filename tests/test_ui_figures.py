"""A figure on a page and its export (ui/figures.py): SVG · PDF · PNG · LaTeX on Translate and
Compare, the camera on every teaching page and the popover where a page offers it, and a real
browser downloading the heatmap as SVG."""
from __future__ import annotations

import json

import pytest

from viz.export import CHROMIUM
from helpers.export import HAS_BROWSER, svg_texts
from helpers.browser import PAGE_BUDGET


def export_labels(at) -> dict[str, bool]:
    """Download buttons of the page: label -> enabled."""
    return {b.proto.label: not b.proto.disabled for b in at.get("download_button")}


def test_translate_and_compare_offer_svg_pdf_png_and_latex(tiny_zoo, monkeypatch):
    """Closed, the popover builds nothing; open, it offers a size, the print theme and one
    download per format, the LaTeX file only beside an alignment matrix."""
    from helpers.apptest import page, run, translate_app
    monkeypatch.setenv("ATTN_EXPLORER_CHROMIUM", CHROMIUM)
    at = translate_app("3 1 4")
    assert "SVG" not in export_labels(at) and "Download figure (HTML)" in export_labels(at)
    at.session_state["translate_heatmap_export"] = True
    at = run(at)
    labels = export_labels(at)
    assert {"SVG", "PDF", "PNG", "LaTeX (TikZ)"} <= set(labels)
    assert all(labels[k] for k in ("SVG", "PDF", "PNG")) == HAS_BROWSER and labels["LaTeX (TikZ)"]
    assert at.segmented_control(key="translate_heatmap_size").value == "slide"
    at.segmented_control(key="translate_heatmap_size").set_value("column")
    at = run(at)
    assert any("336 × 288 px (252 × 216 pt" in c.value for c in at.caption) or not HAS_BROWSER
    at.session_state["translate_probabilities_export"] = True
    at = run(at)
    labels = [b.proto.label for b in at.get("download_button")]
    assert labels.count("SVG") == 2 and labels.count("LaTeX (TikZ)") == 1  # the bars too, without LaTeX

    at = page("app_pages/compare.py", text="3 1 4", models="rnnsearch,luong-dot")
    at.session_state["compare_heatmap_luong-dot_export"] = True
    labels = export_labels(run(at))
    assert {"SVG", "PDF", "PNG", "LaTeX (TikZ)"} <= set(labels)


def test_without_chromium_the_buttons_say_why_and_the_page_works(tiny_zoo, monkeypatch):
    from helpers.apptest import heatmaps, run, translate_app
    monkeypatch.setenv("ATTN_EXPLORER_CHROMIUM", "/nonexistent/chromium")
    at = translate_app("3 1 4")
    at.session_state["translate_heatmap_export"] = True
    at = run(at)
    assert len(heatmaps(at)) == 1
    labels = export_labels(at)
    assert not labels["SVG"] and not labels["PDF"] and not labels["PNG"]  # disabled, with the reason beside them
    assert labels["LaTeX (TikZ)"] and labels["Download figure (HTML)"]
    assert any("No Chromium at `/nonexistent/chromium`" in c.value for c in at.caption)
    svg = next(b for b in at.get("download_button") if b.proto.label == "SVG")
    assert "No Chromium" in svg.proto.help


def cameras(at) -> dict[str, str]:
    """Every chart of the page: its camera's format and file name, as "svg:name"."""
    configs = [json.loads(c.proto.config) for c in at.get("plotly_chart")]
    return {c["toImageButtonOptions"]["filename"]: c["toImageButtonOptions"]["format"] for c in configs}


def popovers(at) -> set[str]:
    return {b.key for b in at.get("popover")}


def opened(at, keys):
    """The page again with these export popovers open: their download buttons, label -> count."""
    from helpers.apptest import run
    for key in keys:
        at.session_state[key] = True
    at = run(at)
    labels = [b.proto.label for b in at.get("download_button")]
    return at, {label: labels.count(label) for label in labels}


def has_files(at, keys) -> None:
    """Closed, each popover builds nothing; open, each offers SVG, PDF, PNG and HTML."""
    assert set(keys) <= popovers(at)
    assert "SVG" not in [b.proto.label for b in at.get("download_button")]
    at, labels = opened(at, keys)
    assert all(labels.get(f) == len(keys) for f in ("SVG", "PDF", "PNG", "HTML")), labels


def train_briefly(at):
    at.select_slider(key="emerge_steps").set_value(20)
    return at.button(key="emerge_train").click()


def compare_tab(at):
    at.session_state["we_tab"] = "Compare"  # the tab clicked: only the chosen tab is drawn
    return at


TEACHING_PAGES = {  # page, its link, an action that draws its figures -> popovers, charts with the camera only
    "worked_example": ({}, compare_tab, {"we_weights_export"}, set()),
    "what_if": ({"text": "1 2 3 4 5", "model": "rnnsearch"}, None, {"whatif_before_export", "whatif_after_export"},
                set()),
    "beam_tree": ({"text": "1 2 3 4 5", "model": "rnnsearch", "beam": "3"}, None,
                  {"beam_tree_export", "beam_heatmap_export"}, set()),
    "forced_alignment": ({}, lambda at: at.text_input(key="fa_french").set_value("3 2 1").run(),
                         {"fa_alignment_export"}, set()),
    "luong_to_transformer": ({"text": "1 2 3 4 5"}, None, {"tf_grid_export", "tf_head_map_export", "tf_encoder_export"},
                             {"tf_luong_weights", "tf_scale", "tf_heads"}),
    "step_through": ({"text": "1 2 3 4 5", "model": "rnnsearch", "sections": "score,weights,context,output"}, None,
                     {"step_alignment_export"},
                     {"step_heatmap", "step_energies", "step_weights", "step_context", "step_topk"}),
    "emerge": ({}, lambda at: train_briefly(at), {"emerge_curves_export"}, {"emerge_animation"}),
    "lesson": ({"text": "1 2 3 4 5", "stop": "1"}, None, set(), {"lesson_view_heatmap"}),
}


@pytest.mark.parametrize("name", list(TEACHING_PAGES))
def test_teaching_pages_save_svg_and_offer_files(tiny_zoo, monkeypatch, tmp_path, name):
    """Every chart's camera saves SVG; a figure drawn once per rerun has the SVG · PDF · PNG ·
    HTML popover; a chart redrawn on every slider move (a fragment's), on every training frame,
    or on a lesson a whole class clicks through has the camera only (docs/figures.md)."""
    from helpers.apptest import page, run
    monkeypatch.setenv("ATTN_EXPLORER_CHROMIUM", CHROMIUM)
    monkeypatch.setenv("ATTN_EXPLORER_GOLD", str(tmp_path / "no-gold"))
    query, act, files, camera_only = TEACHING_PAGES[name]
    at = page(f"app_pages/{name}.py", **query)
    if act is not None:
        at = run(act(at))
    charts = cameras(at)
    assert charts and set(charts.values()) == {"svg"}, charts
    assert all(at.get_by_key(k) is not None for k in camera_only)  # drawn, without a popover
    assert not {f"{k}_export" for k in camera_only} & popovers(at)
    if files:
        has_files(at, files)


def test_step_through_slider_moves_add_no_widget(tiny_zoo):
    """The step's fragment draws charts with the camera only: a move redraws no popover, and the
    camera names the step's file."""
    from helpers.apptest import page, run
    at = page("app_pages/step_through.py", text="1 2 3 4 5", model="rnnsearch", sections="weights")
    assert popovers(at) == {"step_alignment_export"} and "rnnsearch-step1-weights" in cameras(at)
    at.slider(key="step_i").set_value(2)
    at = run(at)
    assert popovers(at) == {"step_alignment_export"} and "rnnsearch-step2-weights" in cameras(at)


def test_which_model_exercise_files_do_not_tell_the_answer(tiny_zoo, monkeypatch):
    """Before the student commits, the heatmap's title, hover, camera file name and download
    names say nothing of the model that drew it."""
    from model.zoo import DISPLAY_NAMES
    from teaching.exercises import which_exercise, MECHANISMS
    from ui.examples import EXAMPLES
    from helpers.apptest import page
    monkeypatch.setenv("ATTN_EXPLORER_CHROMIUM", CHROMIUM)
    seed = 5
    ex = which_exercise(seed, list(MECHANISMS), list(EXAMPLES))
    at = page("app_pages/exercises.py", ex="which", seed=str(seed))
    assert cameras(at) == {f"exercise-which-{seed}": "svg"}
    at, labels = opened(at, {"ex_which_fig_export"})
    shown = at.get("plotly_chart")[0].proto
    names = [str(b.proto) for b in at.get("download_button")]
    assert labels["SVG"] == labels["HTML"] == 1
    for said in [shown.spec, shown.config, *names]:
        assert DISPLAY_NAMES.get(ex.model, ex.model) not in said and ex.model not in said.lower()


@pytest.mark.browser
@pytest.mark.server
def test_browser_downloads_the_heatmap_as_svg(class_server_process, tmp_path):
    """Headless Chromium on a real server: open the heatmap's popover, click SVG, and get a
    file whose <text> elements hold the sentence's pieces (made on the server by Kaleido)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from helpers.browser import APP_IDLE, headless_chromium, HEATMAP_TICKS, wait_for
    url, _, chromium = class_server_process  # the process's server on the tiny zoo (tests/conftest.py)
    with headless_chromium(chromium) as page:
        page.goto(f"{url}/?text=3%201%204%201%205", wait_until="domcontentloaded", timeout=PAGE_BUDGET * 1000)
        ticks = wait_for(page, HEATMAP_TICKS, "the heatmap")
        wait_for(page, APP_IDLE, "the app to finish running", PAGE_BUDGET)
        button = page.locator(".st-key-translate_heatmap_svg button")
        for _ in range(18):  # a click during a rerun may be lost on a loaded machine: open it again, if closed
            if button.is_visible():
                break
            if not page.locator('[data-testid="stPopoverBody"]').is_visible():
                page.locator(".st-key-translate_heatmap_export button").first.click()
            try:
                button.wait_for(timeout=5_000)
            except PlaywrightTimeout:
                continue
        wait_for(page, APP_IDLE, "the popover's rerun to finish", PAGE_BUDGET)
        with page.expect_download(timeout=PAGE_BUDGET * 1000) as download:  # Chromium started on the server, one figure
            button.click()
        path = tmp_path / download.value.suggested_filename
        download.value.save_as(path)
    assert path.name == "alignment-rnnsearch-slide.svg"
    texts = svg_texts(path.read_bytes())
    pieces = [t.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&") for t in ticks]
    assert pieces == ["▁3", "▁1", "▁4", "▁1", "▁5", "</s>"] and set(pieces) <= set(texts)
