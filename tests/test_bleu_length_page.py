"""AppTest of the BLEU vs length page (app_pages/bleu_length.py): the shipped results' curves, and
the recompute button, the teacher's only."""
from __future__ import annotations

import numpy as np
import pandas as pd
from streamlit.testing.v1 import AppTest

from helpers.apptest import APP, array, figures, new_app, page, run, TIMEOUT


def test_bleu_vs_length_from_shipped_results(product):
    at = page("app_pages/bleu_length.py")
    table = pd.read_csv(product["results"])
    figs = [f for f in figures(at) if any(t.get("name") == "segments" for t in f["data"])]
    assert len(figs) == 2, "one figure for the test split, one for the stress set"
    for fig, set_name in zip(figs, ("test", "stress")):
        rows = table[table["set"] == set_name]
        lines = [t for t in fig["data"] if t.get("mode") == "lines+markers"]
        assert [t["name"] for t in lines] == ["RNNsearch (Bahdanau, additive)", "RNNenc (no attention)"]
        mine = rows[rows["model"] == "rnnsearch"].sort_values("min_words")
        np.testing.assert_allclose(array(lines[0]["y"]), mine["bleu"])
        assert list(lines[0]["x"]) == list(mine["bucket"])
        bands = [t for t in fig["data"] if t.get("fill") == "tonexty"]
        assert len(bands) == 2
        np.testing.assert_allclose(array(bands[0]["y"]), mine["ci_low"])
        bars = [t for t in fig["data"] if t["type"] == "bar"][0]
        np.testing.assert_array_equal(array(bars["y"]), mine["segments"])
    findings = [t for t in at.markdown.values if t.startswith("**Finding:**")]
    assert len(findings) == 2 and all("BLEU" in f or "Too few" in f for f in findings)
    assert len(at.dataframe) == 2
    button = at.button(key="bleu_recompute")
    assert button.disabled  # visitors read: a default server never recomputes
    assert any("scripts/evaluate_zoo.sh" in t and "signs in as the teacher" in t for t in at.caption.values)


def as_teacher(path: str) -> AppTest:
    """A page opened by the session signed in with the class store's teacher key."""
    from server.class_store import class_store
    at = run(new_app(APP, TIMEOUT))
    at.session_state["class_teacher_key"] = class_store().teacher_key()  # what the sign-in box keeps
    at.switch_page(path)
    return run(at)


def test_bleu_recompute_is_the_teachers_only(product, tmp_path, monkeypatch):
    """Without the teacher's key the button is disabled, and a click that reaches the server
    anyway (a crafted request, a key replaced meanwhile by New key) writes nothing."""
    from server.class_store import class_store
    monkeypatch.setenv("ATTN_EXPLORER_RESULTS", str(tmp_path))
    monkeypatch.setenv("ATTN_EXPLORER_ADMIN", "1")  # no longer a switch: a visitor still only reads
    assert page("app_pages/bleu_length.py").button(key="bleu_recompute").disabled
    at = as_teacher("app_pages/bleu_length.py")
    assert not at.button(key="bleu_recompute").disabled
    class_store().new_key(class_store().teacher_key())  # the key this tab holds stops counting
    run(at.button(key="bleu_recompute").click())
    assert not (tmp_path / "bleu_by_length.csv").exists()
    assert at.button(key="bleu_recompute").disabled


def test_bleu_recompute_button(product, tmp_path, monkeypatch):
    monkeypatch.setenv("ATTN_EXPLORER_RESULTS", str(tmp_path))
    at = as_teacher("app_pages/bleu_length.py")
    assert any("No measurements yet" in t for t in at.info.values)
    at.number_input(key="bleu_bootstrap").set_value(20)
    run(at.button(key="bleu_recompute").click())
    written = pd.read_csv(tmp_path / "bleu_by_length.csv")
    available = {"rnnsearch", "luong-general", "luong-dot", "luong-concat", "luong-local", "rnnenc", "transformer"}
    assert set(written["model"]) == available and set(written["set"]) == {"test", "stress"}
    assert written["ci_low"].notna().all()
    assert len([f for f in figures(at) if any(t.get("name") == "segments" for t in f["data"])]) == 2


def test_bleu_recompute_disabled_without_data(product, tmp_path, monkeypatch):
    monkeypatch.setenv("ATTN_EXPLORER_RESULTS", str(tmp_path))
    monkeypatch.setenv("ATTN_EXPLORER_DATA", str(tmp_path / "nowhere"))
    at = as_teacher("app_pages/bleu_length.py")
    assert at.button(key="bleu_recompute").disabled
    assert any("data is not here" in t for t in at.caption.values)
