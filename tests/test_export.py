"""Figures for slides and papers: SVG, PDF and PNG drawn by Kaleido in Debian's Chromium
(``viz/export.py``), the alignment matrix as LaTeX (``viz/latex.py``), the Translate and Compare
buttons, and a real browser that clicks one and gets the file.

Kaleido starts a browser per call, so the figures of the viz-level tests are drawn in one
browser (the module fixture ``drawn``). The LaTeX test compiles with ``pdflatex``
(``scripts/setup_latex.sh`` installs it; ``scripts/test.sh`` sets ATTN_EXPLORER_REQUIRE_LATEX=1,
which makes a missing pdflatex a failure rather than a skip).
"""
from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from viz.export import (CHROMIUM, ExportError, export_image, export_unavailable, plotly_config, print_ready, render,
                        SIZES)
from viz.heatmap import alignment_heatmap
from viz.latex import alignment_tex, latex_escape

SOURCE = ["▁L'accord", "▁économique", "▁européenne", "▁<b>", "▁&", "</s>"]
TARGET = ["▁The", "▁agreement", "▁ça", "</s>"]
WEIGHTS = np.random.default_rng(3).dirichlet(np.ones(len(SOURCE)), size=len(TARGET))
HAS_BROWSER = export_unavailable(CHROMIUM) is None
needs_browser = pytest.mark.skipif(not HAS_BROWSER, reason=f"no Chromium at {CHROMIUM} (scripts/setup_browser.sh)")


def svg_texts(svg: bytes) -> list[str]:
    """Every <text> element's text (its tspans' joined), as a reader of the SVG sees it."""
    root = ET.fromstring(svg)
    return ["".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}text")]


def pdf_page_size(pdf: bytes) -> tuple[float, float, int]:
    from pypdf import PdfReader
    reader = PdfReader(io.BytesIO(pdf))
    box = reader.pages[0].mediabox
    return float(box.width), float(box.height), len(reader.pages)


# -- SVG, PDF, PNG ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def drawn():
    """The heatmap drawn once per size and theme, as SVG, PDF and PNG, in one browser."""
    if not HAS_BROWSER:
        pytest.skip(export_unavailable(CHROMIUM))
    fig = alignment_heatmap(WEIGHTS, SOURCE, TARGET, title="RNNsearch")
    keys = [(size, light, fmt) for size in SIZES for light in (False, True) for fmt in ("svg", "pdf")]
    keys += [("slide", False, "png"), ("slide", False, "svg-again")]
    jobs = [{"figure": print_ready(fig, SIZES[s], light), "format": f.replace("-again", ""),
             "scale": 2 if f == "png" else 1} for s, light, f in keys]
    return dict(zip(keys, render(jobs)))


def test_svg_keeps_every_token_as_text(drawn):
    """Searchable, editable labels: each token a <text> of its own, accents, ▁ and markup as typed."""
    for size in SIZES:
        texts = svg_texts(drawn[(size, False, "svg")])
        for token in SOURCE + TARGET:
            assert token in texts, (size, token)
        assert "RNNsearch" in texts


def test_pdf_pages_have_the_chosen_size(drawn):
    """1 CSS px is 0.75 pt: a 16:9 slide is 960 × 540 pt, a paper column 3.5 in (252 pt) wide."""
    for size in SIZES:
        for light in (False, True):
            width, height, pages = pdf_page_size(drawn[(size, light, "pdf")])
            assert pages == 1 and (width, height) == (SIZES[size].width * 0.75, SIZES[size].height * 0.75)
    assert pdf_page_size(drawn[("slide", False, "pdf")])[:2] == (960.0, 540.0)


def test_sizes_scale_the_type_and_the_print_theme_is_black_on_white(drawn):
    column, slide = drawn[("column", False, "svg")].decode(), drawn[("slide", False, "svg")].decode()
    assert "font-size: 10px" in column and "font-size: 16px" not in column  # 16 px labels at 10/16
    assert "font-size: 22px" in slide and "font-size: 10px" not in slide
    shown, printed = drawn[("page", False, "svg")].decode(), drawn[("page", True, "svg")].decode()
    assert "fill: rgb(42, 63, 95)" in shown  # Plotly's default blue-grey text
    assert "fill: rgb(42, 63, 95)" not in printed and "fill: rgb(0, 0, 0)" in printed


def test_same_figure_same_svg_and_a_png_at_twice_the_size(drawn):
    assert drawn[("slide", False, "svg")] == drawn[("slide", False, "svg-again")]
    png = drawn[("slide", False, "png")]
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert int.from_bytes(png[16:20], "big") == 2 * 1280 and int.from_bytes(png[20:24], "big") == 2 * 720


@needs_browser
def test_the_servers_export_runs_in_a_child_and_is_stopped_at_its_timeout():
    """export_image draws in a child process; one that overruns is killed and says so."""
    fig = alignment_heatmap(WEIGHTS, SOURCE, TARGET)
    svg = export_image(fig, "svg", SIZES["page"])
    assert set(SOURCE) <= set(svg_texts(svg))
    import viz.export as export
    export._EXPORTER.stop()  # a cold start: Chromium alone takes longer than 0.3 s to start
    with pytest.raises(ExportError, match="longer than"):
        export_image(fig, "pdf", timeout=0.3)


def test_one_export_at_a_time_one_click_waiting_the_rest_turned_away(monkeypatch):
    """The server's bound, with the child replaced by a half-second task (the real child is
    tested above): four clicks at once run one by one, two of them, and two are refused at once."""
    import threading
    import time

    import viz.export as export
    running, peak, lock = [0], [0], threading.Lock()

    def child(job, timeout):
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.5)
        with lock:
            running[0] -= 1
        return b"<svg/>"

    monkeypatch.setattr(export, "_child", child)
    monkeypatch.setattr(export, "export_unavailable", lambda browser=CHROMIUM: None)
    fig, results = alignment_heatmap(WEIGHTS, SOURCE, TARGET), []

    def click():
        try:
            results.append(export.export_image(fig, "svg"))
        except ExportError as e:
            results.append((str(e), time.perf_counter() - start))

    start, threads = time.perf_counter(), [threading.Thread(target=click) for _ in range(4)]
    for t in threads:
        t.start()
        time.sleep(0.05)
    for t in threads:
        t.join()
    assert peak[0] == 1 and results.count(b"<svg/>") == 2
    refused = [r for r in results if r != b"<svg/>"]
    assert len(refused) == 2 and all("try again" in why and at < 0.4 for why, at in refused)


def test_without_a_browser_the_export_says_why(tmp_path):
    missing = str(tmp_path / "chromium")
    reason = export_unavailable(missing)
    assert reason and missing in reason and "setup_browser.sh" in reason
    with pytest.raises(ExportError, match="No Chromium"):
        export_image(alignment_heatmap(WEIGHTS, SOURCE, TARGET), "svg", browser=missing)
    assert plotly_config("x")["toImageButtonOptions"]["format"] == "svg"  # the camera still saves SVG


# -- LaTeX -------------------------------------------------------------------------------------------
def test_latex_escape_spells_every_token_in_ascii():
    assert latex_escape("▁économique") == r"\wordstart{}\'{e}conomique"
    assert latex_escape("50% & $x_1^2 #{}") == r"50\% \& \$x\_1\^{}2 \#\ensuremath{\{}\ensuremath{\}}"
    assert latex_escape("</s> «ça» œuvre") == (r"\ensuremath{<}/s\ensuremath{>} \ensuremath{\ll}\c{c}a\ensuremath{\gg} "
                                              r"\oe{}uvre")
    assert latex_escape("naïve α 中") == r'na\"{\i}ve \ensuremath{\alpha} \texttt{[U+4E2D]}'
    assert all(latex_escape(t).isascii() for t in SOURCE + TARGET + ["ßøł…€", "\x00\u200b"])


def test_latex_export_compiles_with_pdflatex(tmp_path):
    """The .tex is a whole document: pdflatex makes one page, cropped to the picture, holding
    every token."""
    pdflatex = shutil.which("pdflatex")
    if not pdflatex:
        if os.environ.get("ATTN_EXPLORER_REQUIRE_LATEX") == "1":
            pytest.fail("pdflatex is not installed: run bash scripts/setup_latex.sh")
        pytest.skip("pdflatex is not installed (bash scripts/setup_latex.sh)")
    tex = alignment_tex(WEIGHTS, SOURCE, TARGET, title="RNNsearch: α_ij")
    assert tex.isascii() and tex.count(r"\fill[fill={rgb,255:") == WEIGHTS.size + 11  # the cells and the colour bar
    (tmp_path / "alignment.tex").write_text(tex, encoding="ascii")
    done = subprocess.run([pdflatex, "-interaction=nonstopmode", "-halt-on-error", "alignment.tex"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "Warning" not in (tmp_path / "alignment.log").read_text(errors="replace")
    pdf = (tmp_path / "alignment.pdf").read_bytes()
    width, height, pages = pdf_page_size(pdf)
    assert pages == 1 and 100 < width < 400 and 100 < height < 400
    from pypdf import PdfReader
    text = PdfReader(io.BytesIO(pdf)).pages[0].extract_text()
    for word in ("agreement", "europ", "source (English)", "target (French)"):
        assert word in text


def test_latex_export_refuses_a_matrix_that_does_not_fit_its_tokens():
    with pytest.raises(ValueError):
        alignment_tex(WEIGHTS[:, :2], SOURCE, TARGET)


# -- the buttons on Translate and Compare ------------------------------------------------------------
def export_labels(at) -> dict[str, bool]:
    """Download buttons of the page: label -> enabled."""
    return {b.proto.label: not b.proto.disabled for b in at.get("download_button")}


def test_translate_and_compare_offer_svg_pdf_png_and_latex(tiny_zoo, monkeypatch):
    """Closed, the popover builds nothing; open, it offers a size, the print theme and one
    download per format, the LaTeX file only beside an alignment matrix."""
    from test_app import page, run, translate_app
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
    from test_app import heatmaps, run, translate_app
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


# -- the teaching pages: the camera saves SVG everywhere, the popover where a page can afford it -------
def cameras(at) -> dict[str, str]:
    """Every chart of the page: its camera's format and file name, as "svg:name"."""
    configs = [json.loads(c.proto.config) for c in at.get("plotly_chart")]
    return {c["toImageButtonOptions"]["filename"]: c["toImageButtonOptions"]["format"] for c in configs}


def popovers(at) -> set[str]:
    return {b.key for b in at.get("popover")}


def opened(at, keys):
    """The page again with these export popovers open: their download buttons, label -> count."""
    from test_app import run
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


TEACHING_PAGES = {  # page, its link, an action that draws its figures -> popovers, charts with the camera only
    "worked_example": ({}, None, {"we_weights_export"}, set()),
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
    from test_app import page, run
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
    from test_app import page, run
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
    from test_app import page
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


# -- a real browser clicks the button ------------------------------------------------------------------
def test_browser_downloads_the_heatmap_as_svg(tiny_zoo, tmp_path):
    """Headless Chromium on a real server: open the heatmap's popover, click SVG, and get a
    file whose <text> elements hold the sentence's pieces (made on the server by Kaleido)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from test_browser import APP_IDLE, find_chromium, headless_chromium, HEATMAP_TICKS, OUTPUT, streamlit_app, wait_for
    chromium = find_chromium()
    if not chromium:
        pytest.skip("Chromium not found and scripts/setup_browser.sh could not install it (needs root and apt)")
    with streamlit_app(tiny_zoo, OUTPUT / "streamlit-export.log") as url, headless_chromium(chromium) as page:
        page.goto(f"{url}/?text=3%201%204%201%205", wait_until="domcontentloaded", timeout=90_000)
        ticks = wait_for(page, HEATMAP_TICKS, "the heatmap")
        wait_for(page, APP_IDLE, "the app to finish running", 30)
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
        wait_for(page, APP_IDLE, "the popover's rerun to finish", 60)
        with page.expect_download(timeout=90_000) as download:  # Chromium started on the server, one figure
            button.click()
        path = tmp_path / download.value.suggested_filename
        download.value.save_as(path)
    assert path.name == "alignment-rnnsearch-slide.svg"
    texts = svg_texts(path.read_bytes())
    pieces = [t.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&") for t in ticks]
    assert pieces == ["▁3", "▁1", "▁4", "▁1", "▁5", "</s>"] and set(pieces) <= set(texts)


# -- python -m viz.paper_figures ---------------------------------------------------------------------------
def test_figures_command_writes_every_file_the_same_way_twice(tiny_zoo, tmp_path):
    """The paper's figures from checkpoints (the suite's tiny ones: the command is the same)
    and the shipped results: 7 figures × PDF, SVG, PNG and figures.md; every alignment's SVG
    holds its source words as text; a second run writes the same SVGs."""
    import sys

    from conftest import ROOT
    from viz.paper_figures import FIG3, SENTENCE
    if not HAS_BROWSER:
        pytest.skip(export_unavailable(CHROMIUM))

    def figures(out, *extra):
        done = subprocess.run([sys.executable, "-m", "viz.paper_figures", "--out", str(out), "--checkpoints", str(tiny_zoo),
                               "--results", str(ROOT / "results"), *extra], cwd=ROOT, capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        return out

    first = figures(tmp_path / "first")
    names = ["fig2-bleu-by-length", "fig3a-rnnsearch", "fig3b-rnnsearch", "fig3c-rnnsearch", "fig3d-rnnsearch",
             "bahdanau-vs-luong", "luong-to-transformer"]
    assert sorted(p.name for p in first.iterdir()) == sorted(
        [f"{n}.{f}" for n in names for f in ("pdf", "svg", "png")] + ["figures.md"])
    for letter, sentence in FIG3.items():
        texts = svg_texts((first / f"fig3{letter}-rnnsearch.svg").read_bytes())
        assert set(sentence.split()) <= set(texts), letter
    assert set(SENTENCE.split()) <= set(svg_texts((first / "bahdanau-vs-luong.svg").read_bytes()))
    from model.figure_records import records
    (transformer,) = records(tiny_zoo, [("transformer", SENTENCE)])  # what the grid's axes should read
    layers, heads = len(transformer["attention_heads"]), len(transformer["attention_heads"][0])
    grid = svg_texts((first / "luong-to-transformer.svg").read_bytes())
    assert set(transformer["source_tokens"]) <= set(grid) and f"L{layers} · H{heads}" in grid
    assert "RNNenc (no attention)" in svg_texts((first / "fig2-bleu-by-length.svg").read_bytes())
    width, _, pages = pdf_page_size((first / "fig3a-rnnsearch.pdf").read_bytes())
    assert pages == 1 and width == SIZES["page"].width * 0.75
    index = (first / "figures.md").read_text()
    assert "python -m viz.paper_figures --out DIR" in index and all(f"`{n}`" in index for n in names)
    again = figures(tmp_path / "again", "--formats", "svg")
    for name in names:
        assert (again / f"{name}.svg").read_bytes() == (first / f"{name}.svg").read_bytes(), name
    done = subprocess.run([sys.executable, "-m", "viz.paper_figures", "--out", str(first)], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2 and "not empty" in done.stderr  # never writes over a folder's files


def test_the_figures_sentences_are_the_apps():
    """The paper's Figure 3 sentences and the landing sentence, as the app lists them."""
    from ui.examples import DEFAULT_SENTENCE, EXAMPLES
    from viz.paper_figures import FIG3, SENTENCE
    assert list(FIG3.values()) == [s for s, e in EXAMPLES.items() if e.domain.startswith("Paper, Fig. 3")]
    assert SENTENCE == DEFAULT_SENTENCE
