"""The pages with a model made elsewhere beside the zoo (ATTN_EXPLORER_HF_MODELS): the tiny
MarianMT of ``hf_tiny`` next to the tiny zoo, through AppTest. Each view that the issue names
draws the adapter's own record; Step through lists only our models and says why; a name that
cannot be loaded leaves every page working and is named on it."""
from __future__ import annotations

import numpy as np
import pytest

from helpers.apptest import APP, array, heatmaps, new_app, page, run, texts, TIMEOUT, toy_test_split, translate_app

TEXT = "the cat sat on the mat"
MISSING = "no-such-org/opus-mt-en-xx"
PAGES = ["app_pages/translate.py", "app_pages/compare.py", "app_pages/bleu_length.py", "app_pages/models.py",
         "app_pages/step_through.py", "app_pages/worked_example.py", "app_pages/beam_tree.py",
         "app_pages/what_if.py", "app_pages/forced_alignment.py", "app_pages/luong_to_transformer.py"]


@pytest.fixture(scope="module")
def hf_app(tiny_zoo, tiny_hf, tmp_path_factory, monkeypatch_module):
    """The app with the tiny Marian configured, evaluated for real (model.evaluate: its metrics.json
    under RESULTS/hf/ and its rows in the BLEU-by-length CSV)."""
    from ui import zoo_cache
    from model.evaluate import main as evaluate_main
    tmp = tmp_path_factory.mktemp("hf-app")
    data, results = toy_test_split(tmp / "data", n=12), tmp / "results"
    assert evaluate_main(["--checkpoint", f"hf:{tiny_hf}", "--data", str(data / "test.tsv"), "--bootstrap", "20",
                          "--no-perplexity", "--write-metrics", "--results", str(results),
                          "--length-csv", str(results / "bleu_by_length.csv")]) == 0
    monkeypatch_module.setenv("ATTN_EXPLORER_RESULTS", str(results))
    monkeypatch_module.setenv("ATTN_EXPLORER_DATA", str(data))
    monkeypatch_module.setenv("ATTN_EXPLORER_HF_MODELS", str(tiny_hf))
    zoo_cache._load_zoo.clear()
    yield {"name": f"hf:{tiny_hf}", "results": results}
    zoo_cache._load_zoo.clear()


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


def record(name: str, text: str = TEXT, beam: int = 1):
    from ui.zoo_cache import cached_translate
    return cached_translate(name, text, beam)


def test_translate_draws_the_models_own_attention(hf_app):
    name = hf_app["name"]
    at = translate_app(TEXT, model=name)
    assert at.selectbox(key="translate_model").value == name
    rec = record(name)
    (fig,) = heatmaps(at)
    np.testing.assert_allclose(array(fig["data"][0]["z"]), rec.weights, atol=1e-6)
    said = " ".join(texts(at))
    assert "**French** (tiny-marian (en→fr, Hugging Face)" in said
    assert "not yet chosen by AER" in said and "layer 2 of 3" in said


def test_compare_beside_rnnsearch_with_a_layer_and_head_picker(hf_app):
    name = hf_app["name"]
    at = page("app_pages/compare.py", text=TEXT, models=f"rnnsearch,{name}", view="pieces")
    titles = [f["layout"]["title"]["text"] for f in heatmaps(at)]
    assert any(t.startswith("RNNsearch") for t in titles) and any("tiny-marian" in t for t in titles)
    at.selectbox(key=f"compare_head_{name}").set_value((0, 1))
    run(at)
    rec = record(name)
    (fig,) = [f for f in heatmaps(at) if "tiny-marian" in f["layout"]["title"]["text"]]
    assert "layer 1, head 2" in fig["layout"]["title"]["text"]
    np.testing.assert_allclose(array(fig["data"][0]["z"]), rec.head_weights[:, 0, 1], atol=1e-6)
    assert list(at.dataframe[0].value["translation"])[1] == rec.translation


def test_bleu_vs_length_and_models_card_read_its_evaluation(hf_app):
    at = page("app_pages/bleu_length.py")
    traces = [t.get("name") for f in at.get("plotly_chart") for t in __import__("json").loads(f.proto.spec)["data"]]
    assert "tiny-marian (en→fr, Hugging Face)" in traces
    at.switch_page("app_pages/models.py")
    run(at)
    said = " ".join(texts(at))
    assert "tiny-marian (en→fr, Hugging Face)" in said and "Trained elsewhere" in said
    facts = [df.value for df in at.dataframe if "setting" in df.value]
    assert any("English → French" in list(f["value"]) and "3 layers × 2 heads" in list(f["value"]) for f in facts)


def test_teaching_views_take_the_model(hf_app):
    name = hf_app["name"]
    rec = record(name)
    at = page("app_pages/beam_tree.py", text=TEXT, model=name)
    assert at.selectbox(key="beam_model").value == name
    at.switch_page("app_pages/what_if.py")
    run(at)
    assert at.selectbox(key="whatif_model").value == name and heatmaps(at)
    at.switch_page("app_pages/forced_alignment.py")
    run(at)
    assert at.selectbox(key="fa_model").value == name and heatmaps(at)  # English → French: offered
    at.switch_page("app_pages/luong_to_transformer.py")
    run(at)
    at.selectbox(key="tf_model").set_value(name)
    run(at)
    grid = [f for f in at.get("plotly_chart") if '"L1' in f.proto.spec or "layer 1" in f.proto.spec]
    assert grid and "tiny-marian" in " ".join(texts(at))
    assert rec.head_weights.shape[1:3] == (3, 2)


def test_step_through_lists_only_our_models_and_says_why(hf_app):
    at = page("app_pages/step_through.py", text=TEXT)
    assert "tiny-marian (en→fr, Hugging Face)" not in at.selectbox(key="step_model").options
    assert "RNNsearch (Bahdanau, additive)" in at.selectbox(key="step_model").options
    assert any("made elsewhere" in c for c in texts(at))


def test_an_unloadable_name_is_named_and_every_page_renders(hf_app, tiny_hf, monkeypatch):
    from ui import zoo_cache
    monkeypatch.setenv("ATTN_EXPLORER_HF_MODELS", f"{tiny_hf},{MISSING}")
    zoo_cache._load_zoo.clear()
    try:
        at = run(new_app(APP, TIMEOUT))
        for path in PAGES:
            at.switch_page(path)
            run(at)
            if path != "app_pages/worked_example.py":  # the one page that loads no model at all
                said = " ".join(texts(at))
                assert MISSING in said and "not in the local Hugging Face cache" in said, path
    finally:
        zoo_cache._load_zoo.clear()


def test_another_language_pair_is_not_called_french(hf_app, tiny_hf, tmp_path, monkeypatch):
    """An English → German model: Translate says German and shows no French reference; Forced
    alignment (the Hansards gold is English–French) does not offer it."""
    from ui import zoo_cache
    from helpers.hf_tiny import save_marian
    spm_dir = tiny_hf.parent / f"{tiny_hf.name}_spm"
    de = save_marian(tmp_path / "tiny-en-de", spm_dir / "source.model", spm_dir / "target.model", target_lang="de")
    monkeypatch.setenv("ATTN_EXPLORER_HF_MODELS", str(de))
    zoo_cache._load_zoo.clear()
    try:
        example = "The company lost 15,237 customers during the fourth quarter."  # has a French reference
        at = translate_app(example, model=f"hf:{de}")
        said = " ".join(texts(at))
        assert "**German** (tiny-en-de (en→de, Hugging Face)" in said and "A human translation" not in said
        assert "French" not in " ".join(m.value for m in at.markdown)
        assert heatmaps(at)[0]["layout"]["yaxis"]["title"]["text"] == "target (German)"
        at.switch_page("app_pages/forced_alignment.py")
        run(at)
        assert "tiny-en-de (en→de, Hugging Face)" not in at.selectbox(key="fa_model").options
    finally:
        zoo_cache._load_zoo.clear()
