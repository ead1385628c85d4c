"""The server's warm exporter (``viz/export.py``: :class:`~viz.export.Exporter`): one child per
process keeps Kaleido's Chromium open between exports, and a child that dies or overruns is
killed with its browser and replaced on the next export. Behaviour only: the times are
``bench/export_speed.py``'s."""
from __future__ import annotations

import os
import signal

import pytest

import viz.export as export
from helpers.export import needs_browser, SOURCE, svg_texts, TARGET, WEIGHTS
from viz.export import ExportError, export_image, SIZES
from viz.heatmap import alignment_heatmap

pytestmark = pytest.mark.browser


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


@pytest.fixture
def fresh():
    export._EXPORTER.stop()
    yield export._EXPORTER
    export._EXPORTER.stop()


@needs_browser
def test_later_exports_reuse_the_one_browser(fresh):
    fig = alignment_heatmap(WEIGHTS, SOURCE, TARGET)
    first = export_image(fig, "svg", SIZES["page"])
    child = fresh.proc.pid
    pdf, again = export_image(fig, "pdf", SIZES["page"]), export_image(fig, "svg", SIZES["page"])
    assert fresh.proc.pid == child and fresh.served == 3  # one child, one browser, three figures
    assert pdf.startswith(b"%PDF") and again == first and set(SOURCE) <= set(svg_texts(again))


@needs_browser
def test_a_dead_browser_is_replaced_on_the_next_export(fresh):
    fig = alignment_heatmap(WEIGHTS, SOURCE, TARGET)
    export_image(fig, "svg", SIZES["page"])
    child = fresh.proc.pid
    os.killpg(child, signal.SIGKILL)  # the child and its Chromium, as an out-of-memory kill would
    fresh.proc.wait()
    assert export_image(fig, "pdf", SIZES["page"]).startswith(b"%PDF")
    assert fresh.proc.pid != child and fresh.proc.poll() is None


@needs_browser
def test_an_overrun_kills_the_browser_and_the_next_export_works(fresh):
    fig = alignment_heatmap(WEIGHTS, SOURCE, TARGET)
    export_image(fig, "svg", SIZES["page"])
    child = fresh.proc.pid
    with pytest.raises(ExportError, match="longer than"):
        export_image(fig, "png", SIZES["slide"], timeout=0.001)
    assert fresh.proc is None and not alive(child)  # killed with its process group
    assert set(SOURCE) <= set(svg_texts(export_image(fig, "svg", SIZES["page"])))


def test_a_browser_that_cannot_start_says_so(fresh, tmp_path):
    fake = tmp_path / "chromium"
    fake.write_text("#!/bin/sh\nexit 3\n")
    fake.chmod(0o755)
    with pytest.raises(ExportError, match="export failed|longer than"):
        export_image(alignment_heatmap(WEIGHTS, SOURCE, TARGET), "svg", browser=str(fake), timeout=20)
    assert fresh.proc is None
