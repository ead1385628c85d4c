"""The pages script (navigation.py): the first visit's loading chart, and no torch imported
before the page runs."""
from __future__ import annotations

import subprocess
import sys

from conftest import ROOT
from helpers.apptest import figures, run, texts, translate_app


def test_first_visit_loading_chart_is_gone_once_the_page_is_drawn(product):
    """While the models load, navigation.py shows an empty chart (so the browser starts
    Plotly early); the finished page holds only its own figures."""
    from server.loading import models_loaded
    models_loaded.clear()
    at = translate_app("I will eat.")
    assert models_loaded.is_set()
    assert [f["data"][0]["type"] for f in figures(at)] == ["heatmap", "bar"]
    models_loaded.clear()  # and when the page stops early (st.stop on empty input)
    run(at.text_area(key="translate_text").input("  "))
    assert not figures(at) and any("empty" in t for t in texts(at))


def test_the_first_visit_imports_no_torch_before_the_page():
    """navigation.py runs its own imports (the warm-up state, the class panel) while the server's
    warm-up thread is still importing torch (server/loading.py): they must not import it too."""
    code = ("import sys, streamlit, server.loading, ui.class_panel; "
            "assert 'torch' not in sys.modules, 'the first visit imported torch'")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=120)
