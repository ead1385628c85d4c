"""AppTest of the Translate page (app_pages/translate.py) on the tiny zoo: the heatmap's z is the
decoding record's α (T x S, rows summing to 1), its labels the record's tokens; user text is never
markup; bad input and broken or missing checkpoints get a clear message."""
from __future__ import annotations

import shutil

import numpy as np

from helpers.apptest import array, escaped, figures, heatmaps, record_of, run, texts, translate_app


def test_link_opens_translate_with_heatmap_drawn(product):
    """/?text=I%20will%20eat. shows the translation and its heatmap with no click."""
    at = translate_app("I will eat.")
    rec = record_of("rnnsearch", "I will eat.")
    assert at.text_area(key="translate_text").value == "I will eat."
    assert any(rec.translation in t for t in at.markdown.values)
    (fig,) = heatmaps(at)
    trace = fig["data"][0]
    z = array(trace["z"])
    assert z.shape == (len(rec.target_tokens), len(rec.source_tokens))
    np.testing.assert_allclose(z, rec.weights, atol=1e-6)
    np.testing.assert_allclose(z.sum(1), 1.0, atol=1e-4)
    assert (trace["zmin"], trace["zmax"]) == (0.0, 1.0) and trace["colorscale"]
    assert fig["layout"]["xaxis"]["ticktext"] == escaped(rec.source_tokens)
    assert fig["layout"]["yaxis"]["ticktext"] == escaped(rec.target_tokens)
    assert "%{z:.3f}" in trace["hovertemplate"] and "customdata" in trace
    probabilities = [f for f in figures(at) if f["data"][0]["type"] == "bar"][0]
    np.testing.assert_allclose(array(probabilities["data"][0]["y"]), np.exp(rec.token_logprobs), atol=1e-6)
    assert at.query_params["text"] == "I will eat." and at.query_params["model"] == "rnnsearch"
    labels = [b.proto.label for b in at.get("download_button")]
    assert "Download attention matrix (CSV)" in labels and "Download figure (HTML)" in labels
    # the top-5 table is built only once its expander is opened
    assert not at.dataframe
    at.session_state["translate_alternatives"] = True
    table = run(at).dataframe[0].value
    assert list(table["token"]) == rec.target_tokens
    np.testing.assert_allclose(table["p"], np.round(np.exp(rec.token_logprobs), 3))
    assert table["next best tokens"][0].startswith(rec.topk_tokens[0][0])


def test_typed_sentence_words_view_and_beam(product):
    at = translate_app("I will eat.")
    text = "3 1 4 1 5 9 2 6"
    run(at.text_area(key="translate_text").input(text))
    rec = record_of("rnnsearch", text)
    (fig,) = heatmaps(at)
    np.testing.assert_allclose(array(fig["data"][0]["z"]), rec.weights, atol=1e-6)
    assert at.query_params["text"] == text

    from model.analysis import merge_to_words
    run(at.segmented_control(key="translate_view").set_value("words"))
    words, src_words, tgt_words = merge_to_words(rec.weights, rec.source_tokens, rec.target_tokens)
    (fig,) = heatmaps(at)
    np.testing.assert_allclose(array(fig["data"][0]["z"]), words, atol=1e-6)
    assert fig["layout"]["xaxis"]["ticktext"] == escaped(src_words)
    assert any("summed" in t and "averaged" in t for t in at.caption.values), "the word rule is stated"
    assert at.query_params["view"] == "words"

    run(at.segmented_control(key="translate_method").set_value("beam search"))
    beam = record_of("rnnsearch", text, 5)
    assert beam.method == "beam"
    (fig,) = heatmaps(at)
    np.testing.assert_allclose(array(fig["data"][0]["z"]),
                               merge_to_words(beam.weights, beam.source_tokens, beam.target_tokens)[0], atol=1e-6)
    assert at.query_params["beam"] == "5"

    run(at.selectbox(key="translate_model").set_value("rnnenc"))
    assert not heatmaps(at), "RNNenc has no attention to draw"
    assert any("RNNenc has no attention" in t for t in at.info.values)

    run(at.selectbox(key="translate_model").set_value("transformer"))
    transformer = record_of("transformer", text, 5)
    (fig,) = heatmaps(at)  # the shown layer's heads averaged, and the page says so
    np.testing.assert_allclose(array(fig["data"][0]["z"]), merge_to_words(
        transformer.weights, transformer.source_tokens, transformer.target_tokens)[0], atol=1e-6)
    assert any("layer 2 with its heads averaged" in t for t in at.caption.values)  # the toy shows its last


def test_example_picker_and_unknown_model_in_link(product):
    at = translate_app("I will eat.", model="no-such-model")
    assert any("no\\-such\\-model" in w and "not available" in w for w in at.warning.values)
    example = "The agreement on the European Economic Area was signed in August 1992."
    run(at.selectbox(key="translate_example").set_value(example))
    assert at.text_area(key="translate_text").value == example
    assert at.query_params["text"] == example
    shown = record_of(at.selectbox(key="translate_model").value, example)
    assert heatmaps(at)[0]["layout"]["xaxis"]["ticktext"] == escaped(shown.source_tokens)
    # the paper's sentence comes with its published translation and how far ours is from it
    from ui.examples import EXAMPLES
    from model.metrics import sentence_chrf
    reference = EXAMPLES[example].reference
    assert any(t.startswith("**A human translation**") and "zone économique européenne" in t for t in at.markdown.values)
    chrf = sentence_chrf(shown.translation, reference)
    assert any(f"chrF of the model's translation against it: {chrf:.0f} " in t for t in at.caption.values)
    # a sentence the shipped models are known to garble says so; a sentence without a note does not
    assert EXAMPLES[example].note in at.info.values
    run(at.selectbox(key="translate_example").set_value("I will eat."))
    assert not any("European Economic Area" in t for t in at.info.values)


def test_empty_input_gives_a_hint(product):
    at = translate_app("I will eat.")
    run(at.text_area(key="translate_text").input("   "))
    assert not heatmaps(at)
    assert any("empty" in t for t in at.info.values)
    assert not at.error


def test_over_length_input_is_cut_with_notice(product):
    at = translate_app(" ".join(["7"] * 400))
    assert any("too long" in t for t in at.warning.values)
    (fig,) = heatmaps(at)
    from model.search import MAX_SOURCE_TOKENS
    assert array(fig["data"][0]["z"]).shape[1] <= MAX_SOURCE_TOKENS + 1


def test_markup_is_text_and_unknown_characters_survive(product):
    text = "<script>alert('x')</script> <b>bold</b> & café 😀 1 2"
    at = translate_app(text)
    # the sentence box keeps it verbatim; nothing on the page renders it as markup
    assert at.text_area(key="translate_text").value == text
    for t in texts(at):
        assert "<script" not in t and "<b>" not in t
    fig = heatmaps(at)[0]
    labels = fig["layout"]["xaxis"]["ticktext"]
    assert all("<" not in label for label in labels)
    assert "&lt;0xF0&gt;" in labels, "the emoji survives as visible byte pieces"
    assert any("byte" in t for t in at.info.values)
    run(at.segmented_control(key="translate_view").set_value("words"))
    labels = heatmaps(at)[0]["layout"]["xaxis"]["ticktext"]
    assert "&lt;script&gt;alert('x')&lt;/script&gt;" in labels and "😀" in labels and "café" in labels


def test_broken_checkpoint_is_listed_and_the_rest_work(product):
    at = translate_app("1 2 3")
    assert any("broken" in w and "corrupt" in w for w in at.warning.values)
    assert "broken" not in at.selectbox(key="translate_model").options
    assert heatmaps(at)


def test_missing_checkpoint_folders(product, tmp_path, monkeypatch):
    """Only some folders present, one without its config: those are unavailable, with reasons."""
    shutil.copytree(product["zoo"] / "rnnsearch", tmp_path / "rnnsearch")
    shutil.copytree(product["zoo"] / "luong-dot", tmp_path / "luong-dot")
    (tmp_path / "luong-dot" / "config.json").unlink()
    monkeypatch.setenv("ATTN_EXPLORER_CHECKPOINTS", str(tmp_path))
    at = translate_app("1 2 3")
    warnings = " ".join(at.warning.values)
    assert "not found" in warnings and "config.json" in warnings
    assert at.selectbox(key="translate_model").options == ["RNNsearch (Bahdanau, additive)"]
    assert heatmaps(at)
    at.switch_page("app_pages/models.py")
    run(at)
    assert any("luong-dot" in e or "config.json" in e for e in at.error.values)
