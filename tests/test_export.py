"""Figures for slides and papers (``viz/export.py``): SVG, PDF and PNG drawn by Kaleido in
Debian's Chromium, the server's export in a child process with its timeout, one export at a
time, and a server without a browser saying why.

Kaleido starts a browser per call, so the figures are drawn in one browser (the module fixture
``drawn``).
"""
from __future__ import annotations

import pytest

from viz.export import (CHROMIUM, ExportError, export_image, export_unavailable, plotly_config, print_ready, render,
                        SIZES)
from viz.heatmap import alignment_heatmap
from helpers.export import HAS_BROWSER, needs_browser, pdf_page_size, SOURCE, svg_texts, TARGET, WEIGHTS

pytestmark = pytest.mark.browser


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
