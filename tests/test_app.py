"""AppTest (streamlit.testing.v1) for the product pages: Translate, Compare, BLEU vs
length and Models, on the tiny checkpoints the suite trains itself (``tiny_zoo``).

Tiny models know only digits, so their French is nonsense; the tests check structure and
data: the heatmap's z is the decoding record's α (T x S, rows summing to 1), its axis
labels are the record's tokens, and user text is never rendered as markup.
"""
from __future__ import annotations

import base64
import json
import random
import shutil
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from conftest import ROOT

APP = str(ROOT / "navigation.py")
TIMEOUT = 60


# -- helpers ------------------------------------------------------------------------------------
def array(value) -> np.ndarray:
    """A Plotly JSON array: a plain list, or Plotly 6+'s typed array {dtype, bdata, shape}."""
    if isinstance(value, dict) and "bdata" in value:
        a = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
        return a.reshape([int(n) for n in str(value["shape"]).split(",")]) if "shape" in value else a
    return np.asarray(value)


def figures(at: AppTest) -> list[dict]:
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


def heatmaps(at: AppTest) -> list[dict]:
    """Every heatmap figure on the page (as figure JSON)."""
    return [f for f in figures(at) if f["data"] and f["data"][0]["type"] == "heatmap"]


def texts(at: AppTest) -> list[str]:
    """Everything the page says in markdown-like elements."""
    return [e.value for kind in ("markdown", "caption", "info", "warning", "error", "success", "subheader", "title")
            for e in getattr(at, kind)]


def escaped(tokens: list[str]) -> list[str]:
    return [t.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") for t in tokens]


def record_of(model: str, text: str, beam: int = 1):
    """What the model itself says, to compare the page's figures against."""
    from ui.zoo import cached_translate
    return cached_translate(model, text, beam)


def run(at) -> AppTest:
    """Run the app (or rerun it after a widget change) and fail on any exception."""
    at = at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def translate_app(text: str | None = None, **params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    if text is not None:
        at.query_params["text"] = text
    for k, v in params.items():
        at.query_params[k] = v
    return run(at)


def page(path: str, **params) -> AppTest:
    """A page other than the default one, opened with the given URL parameters."""
    at = run(AppTest.from_file(APP, default_timeout=TIMEOUT))  # AppTest switches pages only after a first run
    for k, v in params.items():
        at.query_params[k] = v
    at.switch_page(path)
    return run(at)


# -- fixtures -----------------------------------------------------------------------------------
def toy_test_split(folder, n: int = 60, seed: int = 5):
    """A test.tsv of digit-reversal pairs, 1–14 digits, from two corpora, as model.data reads it."""
    from model.toy import toy_pair
    rng = random.Random(seed)
    rows = ["en\tfr\torigin"]
    for k in range(n):
        src, trg = toy_pair("reverse", rng, 1, 14)
        rows.append(f"{src}\t{trg}\t{'toy-a' if k % 2 else 'toy-b'}")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "test.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def product(tiny_zoo, tmp_path_factory, monkeypatch_module):
    """The tiny zoo evaluated for real (``python -m model.evaluate`` on a toy test split:
    metrics.json and the BLEU-by-length CSV), plus a training log, and the app pointed at them."""
    from model.evaluate import main as evaluate_main
    from ui import zoo as zoo_cache
    tmp = tmp_path_factory.mktemp("product")
    data = toy_test_split(tmp / "data")
    results = tmp / "results"
    for name in ("rnnsearch", "rnnenc"):
        for stress in ([], ["--stress"]):
            assert evaluate_main(["--checkpoint", str(tiny_zoo / name), "--data", str(data / "test.tsv"),
                                  "--bootstrap", "50", "--no-perplexity", "--write-metrics",
                                  "--length-csv", str(results / "bleu_by_length.csv"), *stress]) == 0
    pd.DataFrame({"epoch": [0.5, 1.0, 1.5], "steps": [40, 80, 120], "train_loss": [2.1, 1.4, 0.9],
                  "dev_loss": [2.0, 1.5, 1.1], "dev_bleu": [3.0, 20.0, 41.5], "tokens_per_second": [900, 950, 940],
                  "lr": [1e-3] * 3, "minutes": [0.01, 0.02, 0.03]}).to_csv(tiny_zoo / "rnnsearch" / "train_log.csv",
                                                                         index=False)
    gold = tmp / "gold"  # a toy gold alignment set, scored for real into rnnsearch's metrics.json
    gold.mkdir()
    (gold / "enfr.src-tgt").write_text("1 2 3 ||| 3 2 1 .\n4 5 ||| 5 4\n", encoding="utf-8")
    (gold / "enfr.gold").write_text("1-3 2-2 3-1\n1-2 2p1\n", encoding="utf-8")
    from model.align import main as align_main
    assert align_main(["--checkpoint", str(tiny_zoo / "rnnsearch"), "--gold", str(gold), "--write-metrics"]) == 0
    # local-p's position tracking, measured for real (evaluate --positions), for its Models card
    assert evaluate_main(["--checkpoint", str(tiny_zoo / "luong-local"), "--data", str(data / "test.tsv"),
                          "--positions", "--min-pieces", "3", "--write-metrics"]) == 0
    local = tiny_zoo / "luong-local" / "config.json"  # a warm-started model's card says from what
    config = json.loads(local.read_text())
    config["training"]["initialised_from"] = {"checkpoint": "checkpoints/luong-general",
                                              "fresh": ["decoder.attention.W_p.weight", "decoder.attention.v_p.weight"]}
    local.write_text(json.dumps(config))
    dot = tiny_zoo / "luong-dot" / "config.json"  # a fine-tuned model's card lists its training stages
    config = json.loads(dot.read_text())
    config["training"]["stages"] = [
        {"steps": 9143, "total_minutes_run": 277.0, "best_dev_bleu": 26.9, "train": {"lr": 0.001}},
        {"steps": 2400, "total_minutes_run": 95.04, "best_dev_bleu": 28.1, "train": {"lr": 0.00025, "oversample":
         {"tatoeba": 3, "newstest2012": 2}}, "initialised_from": {"checkpoint": "checkpoints/luong-dot", "fresh": []},
         "averaged": {"snapshots_at_steps": [1800, 2400], "dev_bleu_by_count": {"2": 28.1}}},
        {"steps": 3638, "total_minutes_run": 7.0, "best_dev_bleu": 30.7, "train": {"lr": 0.0005, "oversample":
         {"tatoeba": 3}}, "initialised_from": {"checkpoint": "checkpoints/luong-dot", "fresh": []},
         "machine": "Xeon, 16 cores, 2 torch thread(s), torch 2.11.0+cu130, device cuda:0 (NVIDIA H200), 1 process(es)"}]
    dot.write_text(json.dumps(config))
    monkeypatch_module.setenv("ATTN_EXPLORER_RESULTS", str(results))
    monkeypatch_module.setenv("ATTN_EXPLORER_DATA", str(data))
    zoo_cache._load_zoo.clear()  # metrics.json is read when the zoo loads
    from model.zoo import DISPLAY_NAMES
    yield {"data": data, "results": results / "bleu_by_length.csv", "zoo": tiny_zoo, "display": DISPLAY_NAMES}
    zoo_cache._load_zoo.clear()


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


# -- Translate ----------------------------------------------------------------------------------
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


def test_first_visit_waits_for_the_server_warm_up(product, monkeypatch):
    """The first page does nothing alongside app.py's warm-up thread: it translates its own
    sentence only once the warm-up's translation is done (server/loading.py)."""
    import threading
    import time
    import app as server
    from ui import zoo as zoo_cache
    from ui.examples import DEFAULT_SENTENCE
    from server.loading import models_loaded, warm_up
    spans, real = {}, zoo_cache.translate

    def traced(model, vocab, text, **kw):
        start = time.monotonic()
        if text == DEFAULT_SENTENCE:
            time.sleep(1.0)  # a slow warm-up: the page must not start meanwhile
        record = real(model, vocab, text, **kw)
        spans[text] = (start, time.monotonic())
        return record

    monkeypatch.setattr(zoo_cache, "translate", traced)
    monkeypatch.setattr(warm_up, "started", True)
    zoo_cache._load_zoo.clear()
    zoo_cache._cached_translate.clear()
    models_loaded.clear()
    warm_up.figures_ready.clear()
    warm_up.finished.clear()
    thread = threading.Thread(target=server.warm_up)
    try:
        thread.start()
        at = translate_app("3 1 4")
        thread.join()
        assert [f["data"][0]["type"] for f in figures(at)] == ["heatmap", "bar"]
        assert spans[DEFAULT_SENTENCE][1] <= spans["3 1 4"][0]
    finally:
        thread.join()
        zoo_cache._cached_translate.clear()


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


def test_examples_cover_every_domain():
    from ui.examples import DEFAULT_SENTENCE, EXAMPLES
    domains = {e.domain.split(",")[0] for e in EXAMPLES.values()}
    assert {"Everyday", "Image caption", "Parliament", "News"} <= domains
    assert sum(e.domain.startswith("Paper, Fig. 3") for e in EXAMPLES.values()) == 4
    assert DEFAULT_SENTENCE in EXAMPLES
    assert all(e.reference for e in EXAMPLES.values() if e.domain.startswith(("News", "Paper")))


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


# -- Compare ------------------------------------------------------------------------------------
def test_compare_side_by_side(product):
    text = "1 2 3 4 5 6"
    at = page("app_pages/compare.py", text=text)
    chosen = at.multiselect(key="compare_models").value
    assert {"rnnsearch", "luong-dot", "luong-general", "luong-concat", "rnnenc"} <= set(chosen)
    from model.analysis import diagonality, entropy, merge_to_words
    records = {n: record_of(n, text) for n in chosen}
    attending = [n for n in chosen if records[n].has_attention]
    maps = [f for f in heatmaps(at) if f["data"][0]["zmin"] == 0.0]
    assert len(maps) == len(attending)
    assert {(f["data"][0]["zmin"], f["data"][0]["zmax"], json.dumps(f["data"][0]["colorscale"])) for f in maps} \
        == {(0.0, 1.0, json.dumps(maps[0]["data"][0]["colorscale"]))}, "one shared colour scale"
    words = {n: merge_to_words(records[n].weights, records[n].source_tokens, records[n].target_tokens)
             for n in attending}
    titled = {f["layout"]["title"]["text"]: f for f in maps}
    for n in attending:  # the default view is whole words
        f = titled[product["display"][n]]
        np.testing.assert_allclose(array(f["data"][0]["z"]), words[n][0], atol=1e-6)
        assert f["layout"]["yaxis"]["ticktext"] == escaped(words[n][2])

    translations = at.dataframe[0].value
    assert list(translations["translation"]) == [records[n].translation for n in chosen]
    numbers = at.dataframe[1].value
    np.testing.assert_allclose(numbers["mean entropy (nats)"], [entropy(words[n][0]).mean() for n in attending],
                               atol=1e-3)
    np.testing.assert_allclose(numbers["diagonality"], [diagonality(words[n][0]) for n in attending], atol=1e-3)
    assert numbers.filter(like="argmax agrees").iloc[0, 0] == 1.0
    # every pair's agreement is built only once its expander is opened
    assert len(at.dataframe) == 2
    at.session_state["compare_pairs"] = True
    pairs = run(at).dataframe[2].value
    assert list(pairs.index) == list(pairs.columns) == [product["display"][n] for n in attending]
    np.testing.assert_allclose(np.diag(pairs.to_numpy(dtype=float)), 1.0)
    np.testing.assert_allclose(pairs.iloc[:, 0], numbers.filter(like="argmax agrees").iloc[:, 0], atol=1e-9)
    assert any("additive" in t and "multiplicative" in t and "s_{i-1}" in t for t in at.markdown.values)
    assert at.query_params["models"] == ",".join(chosen)

    # the difference view, built once its expander is opened: α_A − α_B over the steps where the
    # two targets coincide
    assert not [f for f in heatmaps(at) if f["data"][0]["zmin"] == -1.0]
    assert "compare_diff_a" not in [s.key for s in at.selectbox]
    at.session_state["compare_difference_open"] = True
    run(at)
    a, b = attending[0], attending[1]
    run(at.selectbox(key="compare_diff_a").set_value(a))
    run(at.selectbox(key="compare_diff_b").set_value(b))
    ta, tb = words[a][2], words[b][2]
    same = next((k for k in range(min(len(ta), len(tb))) if ta[k] != tb[k]), min(len(ta), len(tb)))
    diff = [f for f in heatmaps(at) if f["data"][0]["zmin"] == -1.0]
    if same:
        np.testing.assert_allclose(array(diff[0]["data"][0]["z"]), words[a][0][:same] - words[b][0][:same], atol=1e-6)
    else:
        assert not diff and any("differ from the first token" in t for t in at.info.values)


def test_compare_from_link_and_bad_input(product):
    at = page("app_pages/compare.py", text="4 4 2", models="rnnsearch,luong-general", view="pieces")
    assert at.multiselect(key="compare_models").value == ["rnnsearch", "luong-general"]
    maps = {f["layout"]["title"]["text"]: f for f in heatmaps(at) if f["data"][0]["zmin"] == 0.0}
    assert list(maps) == ["RNNsearch (Bahdanau, additive)", "Luong global, general"]
    rec = record_of("luong-general", "4 4 2")
    np.testing.assert_allclose(array(maps["Luong global, general"]["data"][0]["z"]), rec.weights, atol=1e-6)
    assert maps["Luong global, general"]["layout"]["xaxis"]["ticktext"] == escaped(rec.source_tokens)
    run(at.text_area(key="compare_text").input(""))
    assert any("empty" in t for t in at.info.values) and not heatmaps(at)
    run(at.multiselect(key="compare_models").set_value([]))
    assert any("Choose two or more" in t for t in at.info.values)


# -- BLEU vs length -----------------------------------------------------------------------------
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
    at = run(AppTest.from_file(APP, default_timeout=TIMEOUT))
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
    class_store().new_key(class_store().teacher_key())  # the key this session holds stops counting
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


# -- Models -------------------------------------------------------------------------------------
def test_models_cards(product):
    at = page("app_pages/models.py")
    overview = at.dataframe[0].value
    assert len(overview) == 8 and list(overview["status"]).count("unavailable") == 1
    metrics = json.loads((product["zoo"] / "rnnsearch" / "metrics.json").read_text())
    row = overview[overview["model"] == "RNNsearch (Bahdanau, additive)"].iloc[0]
    assert row["enfr test BLEU"] == metrics["test"]["bleu"] and row["stress BLEU"] == metrics["stress"]["bleu"]
    dot = overview[overview["model"] == "Luong global, dot"].iloc[0]  # CPU and GPU minutes apart, every stage
    assert (dot["training, CPU (min)"], dot["training, GPU (min)"]) == (277.0 + 95.04, 7.0)
    assert any("broken" in e and "corrupt" in e for e in at.error.values)
    values = [m.value for m in at.metric]
    assert f"{metrics['test']['bleu']:.2f}" in values
    curves = [f for f in figures(at) if any(t.get("name") == "dev BLEU" for t in f["data"])]
    assert len(curves) == 1
    np.testing.assert_allclose(array([t for t in curves[0]["data"] if t["name"] == "dev BLEU"][0]["y"]),
                               [3.0, 20.0, 41.5])
    alignment = [d.value for d in at.dataframe if "written text" in d.value.columns]
    assert len(alignment) == 1 and list(alignment[0].columns) == ["", "written text", "tokens as given"]
    assert list(alignment[0]["written text"]) == [f"{metrics['alignment'][k]:.3f}" for k in ("aer", "precision", "recall")]
    assert alignment[0]["tokens as given"][0] == f"{metrics['alignment']['as_given']['aer']:.3f}"
    started = [v for d in at.dataframe for k, v in zip(d.value.iloc[:, 0], d.value.iloc[:, -1]) if k == "started from"]
    assert started == ["checkpoints/luong-general (fresh: decoder.attention.W_p.weight, decoder.attention.v_p.weight)"]
    stages = {k: v for d in at.dataframe for k, v in zip(d.value.iloc[:, 0], d.value.iloc[:, -1])
              if str(k).startswith("stage ")}
    assert stages == {"stage 1: from scratch": "9,143 steps, 277.0 min, lr 0.001, dev BLEU 26.90",
                      "stage 2: mixed fine-tuning": "2,400 steps, 95.0 min, lr 0.00025, dev BLEU 28.10; "
                                                    "tatoeba ×3, newstest2012 ×2; the mean of its last 2 evaluations",
                      "stage 3: mixed fine-tuning on a GPU": "3,638 steps, 7.0 min, lr 0.0005, dev BLEU 30.70; tatoeba ×3"}
    tracking = json.loads((product["zoo"] / "luong-local" / "metrics.json").read_text())["position_tracking"]
    shown = [t for t in at.markdown.values if t.startswith("**Predicted position p_i")]
    assert len(shown) == 1 and shown[0].startswith("**Predicted position p_i against the alignment before the Gaussian**")
    for figure in (f"mean Spearman ρ {tracking['spearman_align']:.3f}, against {tracking['chance_align']:.3f} with "
                   "p_i shuffled within each sentence (chance)", f"over {tracking['scored']} greedy translations of "
                   f"{tracking['set']} sources of 3–40 pieces", f"the weights shown, ρ is {tracking['spearman_weights']:.3f}",
                   f"{100 * tracking['window_share']['mean']:.1f}% of align's mass"):
        assert figure in shown[0]
    assert "moves exactly" not in shown[0]  # Spearman's ρ = 1 is the same order, not the same place
    bridges = [t for t in at.markdown.values if t.startswith("**Memory bridge W_m**")]
    assert len(bridges) == 4 and all("32 × 64 matrix (2,048 parameters" in t for t in bridges)  # dot, general, concat, local


def shown_cells(table) -> pd.DataFrame:
    """A st.dataframe's cells as the browser shows them: a Styler's display values where the page
    formats the table, else the values themselves as text."""
    styler = table.proto.arrow_data.styler
    if not styler.display_values:
        return table.value.astype(str)
    from streamlit import dataframe_util
    shown = dataframe_util.convert_arrow_bytes_to_pandas_df(styler.display_values)
    return shown.set_axis(table.value.columns, axis=1)


def test_models_page_shows_a_missing_figure_as_a_dash_and_the_data_set_by_name(product):
    concat = product["zoo"] / "luong-concat" / "config.json"  # trained, as the shipped zoo is, on a shared folder
    saved = concat.read_text()
    config = json.loads(saved)
    config["training"]["data"] = "../shared/data/enfr-broad"
    concat.write_text(json.dumps(config))
    from ui import zoo as zoo_cache
    zoo_cache._load_zoo.clear()
    try:
        at = page("app_pages/models.py")
    finally:
        concat.write_text(saved)
        zoo_cache._load_zoo.clear()
    overview, shown = at.dataframe[0].value, shown_cells(at.dataframe[0])
    row = list(overview["model"]).index("Luong global, concat")
    assert overview["training data"][row] == "enfr-broad" and overview["training data"][0] == "toy:reverse"
    assert shown["newstest2014 BLEU"].tolist() == ["—"] * len(overview)  # evaluated on no model here
    evaluated = json.loads((product["zoo"] / "rnnsearch" / "metrics.json").read_text())["test"]["bleu"]
    bleu = dict(zip(overview["model"], shown["enfr test BLEU"]))
    assert bleu["RNNsearch (Bahdanau, additive)"] == f"{evaluated:.2f}" and bleu["Luong global, concat"] == "—"
    every_cell = [str(v) for d in at.dataframe for v in shown_cells(d).to_numpy().ravel()]
    assert "None" not in every_cell and "nan" not in every_cell and "—" in every_cell
    facts = {k: v for d in at.dataframe for k, v in zip(d.value.iloc[:, 0], d.value.iloc[:, -1])}
    assert facts["data"] in ("toy:reverse", "enfr-broad") and not any("../shared" in str(v) for v in every_cell)
    assert "—" in [m.value for m in at.metric]  # a model not evaluated: its BLEU card says so, not "None"


# -- the layering: viz/ never needs torch, product pages hold no model code ---------------------
def test_server_warm_up_fills_the_shared_model_cache(tiny_zoo, monkeypatch):
    """app.py's start-up hook loads the zoo into the cache the pages read, so the first page
    does not load it again."""
    import app as server
    from ui import zoo as zoo_cache
    loads = []
    real_load = zoo_cache.load_zoo
    monkeypatch.setattr(zoo_cache, "load_zoo", lambda root, **kw: loads.append(root) or real_load(root, **kw))
    zoo_cache._load_zoo.clear()
    try:
        server.warm_up()
        assert loads == [str(tiny_zoo)]
        assert zoo_cache.zoo()["rnnsearch"].available and loads == [str(tiny_zoo)]  # a cache hit
    finally:
        zoo_cache._load_zoo.clear()


def test_the_first_visit_imports_no_torch_before_the_page():
    """navigation.py runs its own imports (the warm-up state, the class panel) while the server's
    warm-up thread is still importing torch (server/loading.py): they must not import it too."""
    code = ("import sys, streamlit, server.loading, ui.class_session; "
            "assert 'torch' not in sys.modules, 'the first visit imported torch'")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=120)


def test_viz_imports_no_torch():
    code = ("import sys, viz.heatmap, viz.bleu, viz.curves, viz.export, viz.latex, viz.paper_figures; "
            "assert 'torch' not in sys.modules, 'viz imported torch'")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=120)


def _imports(path) -> set[str]:
    import ast
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    return names


PAGE_FILES = sorted(p.name for p in (ROOT / "app_pages").glob("*.py") if p.name != "__init__.py")
UI_FILES = sorted(f"../ui/{p.name}" for p in (ROOT / "ui").glob("*.py") if p.name != "__init__.py")
VIZ_FILES = sorted(p.name for p in (ROOT / "viz").glob("*.py"))
SERVER_FILES = sorted(f"../server/{p.name}" for p in (ROOT / "server").glob("*.py") if p.name != "__init__.py")
SHARED_RESOURCES = {"../ui/zoo.py", "../server/limits.py", "emerge.py",  # the zoo, the server's limits, the toy vocabulary
                    "../server/class_store.py"}  # the class store's engine and connection pool


@pytest.mark.parametrize("page_file", PAGE_FILES + UI_FILES + SERVER_FILES + ["../navigation.py", "../app.py"])
def test_pages_only_wire(page_file):
    """Pages wire model/ to viz/: no torch of their own, no process-wide settings, and
    shared resources only where the server owns them."""
    path = ROOT / "app_pages" / page_file
    source = path.read_text(encoding="utf-8")
    assert "torch" not in _imports(path) and "torch." not in source
    assert "set_num_threads" not in source and "os.environ[" not in source and "os.putenv" not in source
    if page_file not in SHARED_RESOURCES:
        assert "st.cache_resource" not in source, "models are loaded once, in ui/zoo.py"


@pytest.mark.parametrize("viz_file", VIZ_FILES)
def test_viz_knows_no_torch_and_no_streamlit(viz_file):
    imports = _imports(ROOT / "viz" / viz_file)
    assert not imports & {"torch", "streamlit", "model", "app_pages", "ui"}, imports


def test_small_type_only_where_the_brackets_pair_up():
    """Step through's notes quote tokens; one with a lone bracket would end ``:small[…]`` early."""
    from ui.widgets import plain, small
    assert small("goes to `▁the`: the framed row") == ":small[goes to `▁the`: the framed row]"
    assert small("goes to `[` and `]`") == ":small[goes to `[` and `]`]"
    assert small("goes to `](`: the framed row") == "goes to `](`: the framed row"
    assert small("goes to `[x`") == "goes to `[x`"
    assert small(f"the token {plain('](')} is fed back in").startswith(":small[")  # escaped brackets pair with none
