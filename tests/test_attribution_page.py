"""AppTest of "Attention or attribution?" (app_pages/attribution.py) on the tiny zoo."""
from __future__ import annotations

import json

import numpy as np
from streamlit.testing.v1 import AppTest

from helpers.apptest import new_app

from conftest import ROOT
from ui.examples import DEFAULT_SENTENCE

APP = str(ROOT / "navigation.py")


def run(at) -> AppTest:
    at = at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def page(**params) -> AppTest:
    at = run(new_app(APP, 120))
    for k, v in params.items():
        at.query_params[k] = v
    at.switch_page("app_pages/attribution.py")
    return run(at)


def texts(at) -> str:
    return "\n".join(e.value for kind in ("markdown", "caption", "info", "success", "warning", "error")
                     for e in getattr(at, kind))


def test_attention_beside_attribution_and_knocking_out_the_most_attended_word(tiny_zoo):
    from ui.zoo_cache import cached_translate
    at = page(model="rnnsearch", text=DEFAULT_SENTENCE)
    record = cached_translate("rnnsearch", DEFAULT_SENTENCE, 1)
    charts = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    side = charts[0]
    assert [t["type"] for t in side["data"]] == ["heatmap"] * 3  # attention, attention knock-out, gradient × input
    attention = side["data"][0]["z"]
    z = np.asarray(attention) if not isinstance(attention, dict) else None
    if z is not None:
        np.testing.assert_allclose(z, record.weights, atol=1e-6)
    assert "Per-row rank correlation" in texts(at) and "disagree most" in texts(at)
    # the edit's defaults: step 1, its most-attended source piece, knocked out
    assert at.selectbox(key="attribution_edit_step").value == 0
    assert at.selectbox(key="attribution_edit_word_0").value == int(record.weights[0].argmax())
    said = texts(at)
    assert "knocked out from step 1" in said
    assert "The output changes from step" in said or "with other log-probabilities" in said
    # an edit to the weight it already has reproduces the record
    at.radio(key="attribution_edit_action").set_value("set its weight")
    at = run(at)
    assert "Nothing changed" in texts(at)


def test_integrated_gradients_are_offered_within_the_budget(tiny_zoo, monkeypatch):
    monkeypatch.setenv("ATTN_EXPLORER_ATTRIBUTION_WORDS", "1000")  # the budget, not the page's bound on words
    at = page(model="luong-dot", text="3 1 4")
    at.pills(key="attribution_methods").set_value(["ig"])
    at = run(at)
    assert "Integrated gradients' completeness gap" in texts(at)
    from model.attribution import BUDGET
    from ui.zoo_cache import cached_translate
    long = " ".join(["7 3 9 1"] * 30)
    record = cached_translate("rnnsearch", long, 1)
    T, S = len(record.target_tokens), len(record.source_tokens)
    assert T * (T + S) > BUDGET["ig"]
    at = page(model="rnnsearch", text=long)
    at.pills(key="attribution_methods").set_value(["ig"])
    at = run(at)
    assert "offered for shorter sentences" in texts(at)


def test_a_sentence_past_the_page_s_bound_is_cut_to_its_first_words_and_says_so(tiny_zoo, monkeypatch):
    """One run's work is bounded (server/costs.py): the first N words are attributed, and the page says so."""
    monkeypatch.setenv("ATTN_EXPLORER_ATTRIBUTION_WORDS", "12")
    long = " ".join(["7 3 9 1"] * 10)  # 40 words
    at = page(model="rnnsearch", text=long)
    assert "Attribution here takes at most 12 words: the first 12 are shown (of 40)" in texts(at)
    from ui.zoo_cache import cached_translate
    cut = cached_translate("rnnsearch", " ".join(long.split()[:12]), 1)
    side = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert len(side["data"][0]["x"]) == len(cut.source_tokens)  # the attention's columns: the cut sentence's pieces
    assert at.query_params["text"] == long  # the link keeps what was typed


def test_the_page_lists_only_models_with_attention(tiny_zoo):
    at = page(model="rnnenc", text=DEFAULT_SENTENCE)
    assert at.selectbox(key="attribution_model").value != "rnnenc"
    assert "rnnenc" not in at.selectbox(key="attribution_model").options


def test_models_page_shows_the_knock_out_test_and_aer_by_method(tiny_zoo, tmp_path, monkeypatch):
    """The Models page's table is what the two CLIs wrote (here on the tiny zoo and toy data)."""
    from model.align import main as align_main
    from model.faithfulness import main as knock_main
    folder = tmp_path / "results" / "attribution"
    folder.mkdir(parents=True)
    data = tmp_path / "test.tsv"
    data.write_text("en\tfr\torigin\n3 1 4 1 5\t5 1 4 1 3\tnewstest2014\n8 9 7 9\t9 7 9 8\tnewstest2014\n",
                    encoding="utf-8")
    assert knock_main(["--checkpoint", str(tiny_zoo / "rnnsearch"), "--data", str(data), "--origin",
                       "newstest2014", "--out", str(folder / "faithfulness.json")]) == 0
    gold = tmp_path / "gold"
    gold.mkdir()
    (gold / "enfr.src-tgt").write_text("1 2 3 ||| 3 2 1\n", encoding="utf-8")
    (gold / "enfr.gold").write_text("1-3 2-2 3-1\n", encoding="utf-8")
    for method in ("attention", "knock-out", "input-occlusion"):
        assert align_main(["--checkpoint", str(tiny_zoo / "rnnsearch"), "--gold", str(gold), "--method", method,
                           "--csv", str(folder / "aer.csv")]) == 0
    monkeypatch.setenv("ATTN_EXPLORER_RESULTS", str(tmp_path / "results"))
    at = run(new_app(APP, 120))
    at.switch_page("app_pages/models.py")
    at = run(at)
    knock = json.loads((folder / "faithfulness.json").read_text(encoding="utf-8"))["models"][0]
    for level in ("knock_out", "input_random"):  # the level picked shows its controls
        at.radio(key="knock_out_level_newstest2014").set_value(level)
        at = run(at)
        tables = [t.value for t in at.dataframe]
        shown = [t for t in tables if "second-most attended" in t.columns]
        assert len(shown) == 1
        c = knock[level]["controls"]["most"]
        assert shown[0].iloc[0]["model"] == "rnnsearch" and shown[0].iloc[0]["steps"] == knock["steps"]
        assert shown[0].iloc[0]["most-attended"] == (
            f"{100 * c['changed']:.1f} [{100 * c['changed_ci'][0]:.1f}, {100 * c['changed_ci'][1]:.1f}] "
            f"(α {c['median_alpha']:.2f} [{c['median_alpha_ci'][0]:.2f}, {c['median_alpha_ci'][1]:.2f}])")
    matched = next(t for t in tables if "coverage (pairs / argmax removals)" in t.columns)
    assert list(matched["level"]) == ["attention knock-out", "input, zero vector", "input, random piece"]
    m = knock["knock_out"]["matched"]
    assert matched.iloc[0]["coverage (pairs / argmax removals)"].endswith(
        f"({m['pairs']:,} / {m['argmax_removals']:,})")
    said = texts(at)
    assert "Matched on what the removal leaves" in said and "log p(y_i) rises on" in said
    assert "random: 2 of the 2 sentences" in said
    aer = next(t for t in tables if "attention knock-out (1 pairs)" in t.columns)
    assert set(aer.columns) == {"model", "attention (1 pairs)", "attention knock-out (1 pairs)",
                                "input occlusion (1 pairs)"}
    assert "Attention against attribution" in [s.value for s in at.subheader]


def test_a_raised_weight_prints_the_value_it_reached(tiny_zoo):
    """The page says the value the edit reached (the Transformer's head average), beside the value asked."""
    from ui.zoo_cache import cached_translate
    at = page(model="transformer", text="3 1 4 1 5")
    record = cached_translate("transformer", "3 1 4 1 5", 1)
    j = int(record.weights[0].argmin())  # the least-attended piece, raised to 0.9
    at.selectbox(key="attribution_edit_word_0").set_value(j)
    at.radio(key="attribution_edit_action").set_value("set its weight")
    at = run(at)
    at.slider(key=f"attribution_edit_weight_0_{j}").set_value(0.9)
    at = run(at)
    said = texts(at).replace("\\", "")  # markdown escapes in plain()
    assert f"from {record.weights[0, j]:.3f} to 0.900; reached 0.900" in said
    assert "not the" not in said
