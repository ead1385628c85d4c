"""AppTest of From Luong to the Transformer (app_pages/luong_to_transformer.py)."""
from __future__ import annotations

import numpy as np

from model.checkpoint import load_checkpoint
from model.search import greedy, prepare_source
from helpers.apptest import array, chart, DIGITS, open_page, shapes


def test_luong_to_transformer_page(tiny_zoo):
    """The formula beside the Luong step's numbers, heatmaps whose rows sum to 1 and are the
    Transformer's own heads, the marked head, a head picker that changes the figure, and the
    encoder's self-attention."""
    at = open_page("luong_to_transformer", text=DIGITS)
    latex = " ".join(x.value for x in at.latex)
    assert r"s_i^\top \bar h_j" in latex and r"\frac{Q K^\top}{\sqrt{d_k}}" in latex and "W^O" in latex
    model, vocab = load_checkpoint(tiny_zoo / "transformer")[:2]
    record = greedy(model, vocab, prepare_source(vocab, DIGITS))
    grid = chart(at, "tf_grid")
    L, H = model.cfg.layers, model.cfg.heads
    assert len(grid["data"]) == L * H
    for n, trace in enumerate(grid["data"]):
        z = array(trace["z"])
        assert np.allclose(z.sum(1), 1.0, atol=1e-4)
        assert np.allclose(z, record.head_weights[:, n // H, n % H], atol=1e-5)
    assert len(shapes(grid, "marked head")) == 1  # the head closest to RNNsearch is framed
    luong = chart(at, "tf_heads")  # the Luong step's heads: rows sum to 1
    assert np.allclose(array(luong["data"][0]["z"]).sum(1), 1.0, atol=1e-6)
    before = array(chart(at, "tf_head_map")["data"][0]["z"])
    picker = at.selectbox(key="tf_head")
    other = next(o for o in picker.options if o != picker.value)
    at = picker.select(other).run()
    assert not at.exception
    after = array(chart(at, "tf_head_map")["data"][0]["z"])
    assert after.shape == before.shape and not np.allclose(after, before)
    assert np.allclose(after.sum(1), 1.0, atol=1e-4)
    encoder = array(chart(at, "tf_encoder")["data"][0]["z"])
    S = len(record.source_tokens)
    assert encoder.shape == (S, S) and np.allclose(encoder, record.encoder_attention[0, 0], atol=1e-5)
    at.slider(key="tf_step").set_value(2).run()
    assert not at.exception


def test_luong_to_transformer_bad_input_and_missing_models(tiny_zoo, tmp_path, monkeypatch):
    """Empty and markup input get the usual messages; without a Transformer or a Luong dot model
    the page says which section needs what, and shows the rest."""
    at = open_page("luong_to_transformer", text=DIGITS)
    at = at.text_area(key="transformer_text").input("   ").run()
    assert not at.exception and any("empty" in i.value for i in at.info)
    at = at.text_area(key="transformer_text").input("<b>1 2</b> 3").run()
    assert not at.exception and not any("empty" in i.value for i in at.info)
    partial = tmp_path / "checkpoints"
    partial.mkdir()
    for name in ("rnnsearch", "luong-dot"):
        (partial / name).symlink_to(tiny_zoo / name)
    monkeypatch.setenv("ATTN_EXPLORER_CHECKPOINTS", str(partial))
    at = open_page("luong_to_transformer", text=DIGITS)
    assert any("Transformer is not loaded" in i.value for i in at.info)
    assert chart(at, "tf_heads")  # the Luong sections are still drawn
