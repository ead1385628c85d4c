"""Decoding (model/search.py): the record, beam 1 = greedy, forced decoding, the beam tree and
its batched form, bad input, and one model shared by concurrent callers."""
from __future__ import annotations

from dataclasses import fields
import math

import numpy as np
import pytest

from model.checkpoint import load_checkpoint
from model.search import (beam_batch, beam_search, forced, greedy, greedy_batch, InputError, MAX_SOURCE_TOKENS,
                          prepare_source, translate)
from model.zoo import ZOO
from helpers.models import ALL_KINDS, random_model


@pytest.mark.parametrize("decoder,attention", ALL_KINDS)
def test_record_is_complete(vocab, decoder, attention):
    model = random_model(vocab, decoder, attention)
    rec = greedy(model, vocab, prepare_source(vocab, "1 2 3 4"), topk=3)
    T, S = len(rec.target_tokens), len(rec.source_tokens)
    assert rec.source_tokens[-1] == "</s>" and S == len(vocab.encode("1 2 3 4")) + 1
    assert rec.token_logprobs.shape == (T,) and rec.topk_probs.shape == (T, 3)
    assert rec.contexts.shape[0] == T and rec.states.shape == rec.query_states.shape == (T, 16)
    # the chosen token is the most probable one at every greedy step
    assert (rec.topk_ids[:, 0] == np.array(rec.target_ids)).all()
    if attention == "none":
        assert rec.weights is None and rec.energies is None
    else:
        assert rec.weights.shape == rec.energies.shape == (T, S)
        assert np.allclose(rec.weights.sum(1), 1.0, atol=1e-5)
    if decoder == "rnnsearch":  # the query is s_{i-1}: the previous step's state
        assert np.allclose(rec.query_states[1:], rec.states[:-1])
    if decoder == "luong":      # the query is s_i itself
        assert np.allclose(rec.query_states, rec.states)


@pytest.mark.parametrize("decoder,attention", ALL_KINDS)
def test_beam_one_equals_greedy(vocab, decoder, attention):
    model = random_model(vocab, decoder, attention, seed=3)
    srcs = [vocab.encode(s) for s in ["1 2 3", "9 9 8 7 1", "5"]]
    assert beam_batch(model, srcs, beam=1) == greedy_batch(model, srcs)


@pytest.mark.parametrize("name", ["rnnsearch", "luong-general", "luong-local", "rnnenc"])
def test_forced_decoding_reproduces_greedy_score(tiny_zoo, name):
    model, vocab, _ = load_checkpoint(tiny_zoo / name)
    src = prepare_source(vocab, "3 1 4 1 5")
    g = greedy(model, vocab, src)
    assert g.target_ids[-1] == vocab.sp.eos_id()  # a trained model ends its sentence
    f = forced(model, vocab, src, g.target_ids)
    assert f.target_ids == g.target_ids
    assert math.isclose(f.score, g.score, rel_tol=1e-6)
    assert (f.weights is None and g.weights is None) or np.allclose(f.weights, g.weights)


@pytest.mark.parametrize("name", ["rnnsearch", "luong-dot"])
def test_beam_search_tree_and_batch_agree(tiny_zoo, name):
    model, vocab, _ = load_checkpoint(tiny_zoo / name)
    src = prepare_source(vocab, "2 7 1 8")
    rec = beam_search(model, vocab, src, beam=4)
    assert rec.target_ids[:-1] == beam_batch(model, [src.ids], beam=4)[0]
    best_path = [n for n in rec.beam_tree if n.on_best_path and n.parent is not None]
    assert [n.token_id for n in sorted(best_path, key=lambda n: n.step)] == rec.target_ids
    assert not any(n.pruned for n in best_path)
    # the record is read off the beam's own steps; it holds what forced decoding computes
    f = forced(model, vocab, src, rec.target_ids)
    assert np.allclose(rec.token_logprobs, f.token_logprobs, atol=1e-5)
    assert np.allclose(rec.weights, f.weights, atol=1e-5) and np.allclose(rec.contexts, f.contexts, atol=1e-5)
    assert (rec.topk_ids[:, 0] == f.topk_ids[:, 0]).all()
    # beam search never scores below greedy by its own (length-normalised) criterion
    g = greedy(model, vocab, src)
    assert rec.score / len(rec.target_ids) >= g.score / len(g.target_ids) - 1e-6


@pytest.mark.parametrize("name", ["rnnsearch", "luong-concat", "rnnenc"])
@pytest.mark.parametrize("k", [2, 5])
def test_vectorised_beam_equals_the_tree_search(tiny_zoo, name, k):
    """beam_batch (evaluation) and _beam (the app's tree) are the same search."""
    from model.search import _beam
    model, vocab, _ = load_checkpoint(tiny_zoo / name)
    srcs = [vocab.encode(s) for s in ["1 2 3", "9 8 7 6 5 4 3 2", "5", "4 4 4 1"]]
    assert beam_batch(model, srcs, beam=k) == _beam(model, srcs, k, 1.0, keep_tree=False)[0]


@pytest.fixture(scope="module")
def small(vocab):
    return random_model(vocab, "rnnsearch", "additive"), vocab


def test_empty_input_is_a_clear_error(small):
    model, vocab = small
    for text in ["", "   ", "\n\t", "\x00\x01"]:
        with pytest.raises(InputError, match="empty"):
            translate(model, vocab, text)


def test_long_input_is_truncated_with_notice(small):
    model, vocab = small
    rec = translate(model, vocab, "1 2 3 " * 1700)  # ~5,000 characters
    assert rec.truncated and any("too long" in n for n in rec.notices)
    assert len(rec.source_tokens) <= MAX_SOURCE_TOKENS + 1


def test_unknown_characters_markup_and_control_characters(small):
    model, vocab = small
    rec = translate(model, vocab, "1 😀 <script>alert(1)</script> é")
    assert "<0xF0>" in rec.source_tokens  # the emoji survives as its UTF-8 bytes
    assert rec.source_text == "1 😀 <script>alert(1)</script> é"
    rec = translate(model, vocab, "1\x072\x1b3")
    assert any("Control characters" in n for n in rec.notices) and rec.source_text == "1 2 3"


def _record_fields(rec) -> dict:
    """Everything a decoding record holds, arrays as bytes, the beam tree node by node."""
    out = {}
    for f in fields(rec):
        value = getattr(rec, f.name)
        if isinstance(value, np.ndarray):
            value = (value.dtype.str, value.shape, value.tobytes())
        elif f.name == "beam_tree" and value is not None:
            value = [tuple((k, (tuple(v) if isinstance(v, list) else v)) for k, v in vars(n).items()) for n in value]
        out[f.name] = value
    return out


def test_decoding_is_pure_under_concurrent_callers(tiny_zoo):
    """The app shares each loaded model among every browser session: decoding must keep no
    per-call state on a module. Every model, greedy and beam, decoded from 4 threads at once,
    must give exactly the records of one thread (translation, weights, energies, positions,
    log-probs, states, top-k, tree)."""
    from concurrent.futures import ThreadPoolExecutor
    models = {name: load_checkpoint(tiny_zoo / name)[:2] for name in ZOO}
    sentences = ["1 2 3 4 5 6 7 8 9", "9 9 1", "4 8 1 5 1 6 2 3 0 7 7 2", "5"]
    jobs = [(name, text, beam) for name in models for text in sentences for beam in (1, 3)]

    def run(job):
        name, text, beam = job
        model, vocab = models[name]
        return _record_fields(translate(model, vocab, text, beam=beam))

    alone = {job: run(job) for job in jobs}
    assert any(alone[("luong-local", t, 1)]["positions"] is not None for t in sentences)
    shuffled = [jobs[i] for i in np.random.default_rng(0).permutation(len(jobs))] * 3
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(run, shuffled))
    for job, rec in zip(shuffled, together):
        assert rec == alone[job], job
