"""AppTest of the Beam search tree page (app_pages/beam_tree.py)."""
from __future__ import annotations

import html

from model.internals import beam_hypotheses
from model.search import beam_search, greedy, prepare_source
from helpers.apptest import array, chart, open_page


def test_beam_tree_chosen_path_is_the_beam_search_output(tiny):
    text = "1 2 3 4 5 6 7"
    at = open_page("beam_tree", text=text, model="rnnsearch", beam="4")
    model, vocab = tiny["rnnsearch"]
    rec = beam_search(model, vocab, prepare_source(vocab, text), beam=4)
    tree = chart(at, "beam_tree")
    path = next(t for t in tree["data"] if t["name"] == "chosen path" and "markers" in t["mode"])
    assert [html.unescape(t) for t in path["text"]] == rec.target_tokens
    assert len([t for t in tree["data"] if t["name"] == "pruned hypotheses"][0]["x"]) > 0  # greyed branches
    shown = chart(at, "beam_heatmap")
    assert [html.unescape(t) for t in shown["layout"]["yaxis"]["ticktext"]] == rec.target_tokens

    # choosing another hypothesis shows its own path and attention
    options = at.selectbox(key="beam_hypothesis").options
    assert options[0].startswith("★ chosen") and len(options) > 1
    at.selectbox(key="beam_hypothesis").set_value(1).run()
    other = beam_hypotheses(rec.beam_tree)[1]
    shown = chart(at, "beam_heatmap")
    assert [html.unescape(t) for t in shown["layout"]["yaxis"]["ticktext"]] == other.tokens
    assert array(shown["data"][0]["z"]).shape == (len(other.tokens), len(rec.source_tokens))

    at.slider(key="beam_k").set_value(1).run()  # k = 1 is greedy
    path = next(t for t in chart(at, "beam_tree")["data"] if t["name"] == "chosen path" and "markers" in t["mode"])
    assert [html.unescape(t) for t in path["text"]] == greedy(model, vocab, prepare_source(vocab, text)).target_tokens
