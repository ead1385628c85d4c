"""The Hansards gold tokens written back as ordinary text (model.hansards), and the piece
ownership that carries attention back to the gold tokens (model.align.word_pieces)."""
from __future__ import annotations

import numpy as np
import pytest

from model.align import forced_alignment, word_pieces
from model.checkpoint import load_checkpoint
from model.hansards import as_typed, written_english, written_french
from model.search import PreparedSource, forced


def spans_text(written):
    raw = written.text.encode("utf-8")
    return [raw[b:e].decode("utf-8") for b, e in written.spans]


@pytest.mark.parametrize("tokens, text", [
    ("je ne partage pas le avis de le ministre .", "Je ne partage pas l'avis du ministre."),
    ("comme je le ai signalé à le chef de le opposition ,", "Comme je l'ai signalé au chef de l'opposition,"),
    ("ce ne est pas en isolant quelque un que on le aide à se réadapter .",
     "Ce n'est pas en isolant quelqu'un qu'on l'aide à se réadapter."),
    ("la question de les relations à les Canadiens", "La question des relations aux Canadiens"),
    ("peut - être , ce moment - ci", "Peut-être, ce moment-ci"),
    ("si il y a la hausse de le héros , le hôtel", "S'il y a la hausse du héros, l'hôtel"),
    ("( la motion est adoptée . )", "(la motion est adoptée.)"),
    ("je invoque le Règlement ; pourquoi ?", "J'invoque le Règlement ; pourquoi ?"),
    ("aujourd' hui lorsque il pleut", "Aujourd'hui lorsqu'il pleut"),
])
def test_french_is_written_back_as_ordinary_text(tokens, text):
    assert written_french(tokens.split()).text == text


def test_merged_words_share_their_span_and_every_token_keeps_one():
    tokens = "de le ministre , le avis".split()
    w = written_french(tokens)
    assert w.text == "Du ministre, l'avis"
    assert spans_text(w) == ["Du", "Du", "ministre", ",", "l'", "avis"]


def test_english_is_written_back_as_ordinary_text():
    w = written_english("mr. speaker , i say this : it is $ 25,000 ( or so ) - and a so - called 's .".split())
    assert w.text == "Mr. speaker, I say this: it is $25,000 (or so) - and a so-called's."
    assert spans_text(w)[:4] == ["Mr.", "speaker", ",", "I"]


def test_pieces_of_a_contraction_belong_to_both_tokens(tiny_zoo):
    vocab = load_checkpoint(tiny_zoo / "rnnsearch")[1]  # the toy vocabulary: letters fall back to bytes
    ids, owner = word_pieces(vocab, written_french("de le thé".split()))
    assert len(ids) == owner.shape[0] and owner.shape[1] == 3
    assert (owner.sum(1) >= 1).all() and (owner.sum(0) >= 1).all()  # every piece and every token is covered
    assert np.array_equal(owner[:, 0], owner[:, 1])  # `du` stands for `de` and `le`
    assert not (owner[:, 1] * owner[:, 2]).any()


def test_as_typed_is_the_word_by_word_encoding(tiny_zoo):
    vocab = load_checkpoint(tiny_zoo / "rnnsearch")[1]
    words = "1 22 333 4".split()
    ids, owner = word_pieces(vocab, as_typed(words))
    assert ids == [i for w in words for i in vocab.encode(w)]
    assert list(owner.argmax(1)) == [k for k, w in enumerate(words) for _ in vocab.encode(w)]


def test_hansards_forced_alignment_stays_on_the_gold_tokens(tiny_zoo):
    model, vocab = load_checkpoint(tiny_zoo / "luong-dot")[:2]
    english, french = "i 2 3 ,".split(), "de le 3 2 ,".split()
    result = forced_alignment(model, vocab, english, french, hansards=True)
    assert result.word_weights.shape == (5, 4) and result.word_logprobs.shape == (5,)
    assert np.allclose(result.word_weights[0], result.word_weights[1])  # both read from `du`
    assert {k for _, k in result.links} == set(range(5))
    rec = forced(model, vocab, PreparedSource("", vocab.encode("I 2 3,"), False), vocab.encode("Du 3 2,"))
    assert result.logprob == pytest.approx(rec.score, abs=1e-5)  # the written text is what was scored
    typed = forced_alignment(model, vocab, english, french)
    assert typed.logprob != pytest.approx(result.logprob, abs=1e-5)
