"""AppTest of the Compare page (app_pages/compare.py) on the tiny zoo."""
from __future__ import annotations

import json

import numpy as np

from helpers.apptest import array, escaped, heatmaps, page, record_of, run


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
