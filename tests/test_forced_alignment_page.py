"""AppTest of the Forced alignment page (app_pages/forced_alignment.py)."""
from __future__ import annotations

import numpy as np
import pytest

from model.align import forced_alignment
from model.search import forced, prepare_source
from helpers.apptest import APP, chart, DIGITS, new_app, open_page


def test_forced_alignment_shows_per_word_probabilities(tiny, tmp_path, monkeypatch):
    gold = tmp_path / "gold"
    gold.mkdir()
    (gold / "enfr.src-tgt").write_text("1 2 3 4 5 ||| 5 4 3 2 1\n", encoding="utf-8")
    (gold / "enfr.gold").write_text("1-5 2-4 3-3 4-2 5p1\n", encoding="utf-8")
    monkeypatch.setenv("ATTN_EXPLORER_GOLD", str(gold))
    at = new_app(APP, 60)
    at.run()
    at.switch_page("app_pages/forced_alignment.py")
    at.run()
    at.number_input(key="fa_number").set_value(1).run()
    assert not at.exception
    model, vocab = tiny["rnnsearch"]
    table = at.dataframe[0].value
    assert list(table["French word"]) == "5 4 3 2 1".split()
    rec = forced(model, vocab, prepare_source(vocab, DIGITS), vocab.encode("5 4 3 2 1"))
    assert np.allclose(table["p(word)"], np.exp(rec.token_logprobs[:5]), atol=1e-6)
    metrics = {m.label: m.value for m in at.metric}
    assert "AER (this sentence)" in metrics
    result = forced_alignment(model, vocab, DIGITS.split(), "5 4 3 2 1".split())
    a_s = len(result.links & {(0, 4), (1, 3), (2, 2), (3, 1)})
    a_p = len(result.links & {(0, 4), (1, 3), (2, 2), (3, 1), (4, 0)})
    assert float(metrics["AER (this sentence)"]) == pytest.approx(1 - (a_s + a_p) / (5 + 4), abs=1e-3)
    names = {t.get("name") for t in chart(at, "fa_alignment")["data"]}
    assert {"sure", "possible", "missed", "wrong"} <= names
    assert any("reads them**: 1 2 3 4 5  \n**→** 5 4 3 2 1" in m for m in at.markdown.values)  # what the model reads

    # a sentence pair of one's own, and no gold set at all
    monkeypatch.setenv("ATTN_EXPLORER_GOLD", str(tmp_path / "nowhere"))
    at = open_page("forced_alignment")
    assert any("missing" in i.value for i in at.info)
    at.text_input(key="fa_english").set_value("1 2 3").run()
    at.text_input(key="fa_french").set_value("3 2 1 1").run()
    assert list(at.dataframe[0].value["French word"]) == ["3", "2", "1", "1"]
    assert ((at.dataframe[0].value["p(word)"] > 0) & (at.dataframe[0].value["p(word)"] <= 1)).all()
