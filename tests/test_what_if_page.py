"""AppTest of the What if page (app_pages/what_if.py)."""
from __future__ import annotations

import html

from model.search import greedy, prepare_source
from helpers.apptest import chart, DIGITS, open_page, shapes


def test_what_if_prefix_changes_the_continuation(tiny):
    at = open_page("what_if", text=DIGITS, model="rnnsearch")
    model, vocab = tiny["rnnsearch"]
    src = prepare_source(vocab, DIGITS)
    original = greedy(model, vocab, src)
    at.selectbox(key="whatif_position").set_value(1).run()
    alternative = at.selectbox(key="whatif_alternative_1").value
    assert alternative != original.target_ids[1]
    after = chart(at, "whatif_after")
    tokens = [html.unescape(t) for t in after["layout"]["yaxis"]["ticktext"]]
    expected = greedy(model, vocab, src, prefix=original.target_ids[:1] + [alternative])
    assert tokens == expected.target_tokens
    assert tokens[:2] == [original.target_tokens[0], vocab.id_to_piece(alternative)]  # the forced prefix
    assert tokens != original.target_tokens
    assert [s["y0"] for s in shapes(after, "forced prefix")] == [0.5]
    before = chart(at, "whatif_before")
    assert [html.unescape(t) for t in before["layout"]["yaxis"]["ticktext"]] == original.target_tokens

    # a typed word is forced piece by piece
    at.selectbox(key="whatif_alternative_1").set_value(-1).run()
    at.text_input(key="whatif_typed").set_value("9 9").run()
    tokens = [html.unescape(t) for t in chart(at, "whatif_after")["layout"]["yaxis"]["ticktext"]]
    assert tokens[:3] == [original.target_tokens[0], "▁9", "▁9"]
    assert tokens == greedy(model, vocab, src, prefix=original.target_ids[:1] + vocab.encode("9 9")).target_tokens
