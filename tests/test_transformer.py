"""The small Transformer (model/transformer.py): step-by-step decoding computes what the
parallel pass does."""
from __future__ import annotations

import numpy as np
import torch

from model.data import Batch
from model.search import beam_search, forced, prepare_source
from helpers.models import random_model


def test_transformer_decodes_step_by_step_what_it_computes_in_parallel(vocab):
    """The cached one-position steps of decoding equal the teacher-forced pass over the whole
    target (causal mask); every head's weights are distributions; the record's "attention" is
    the shown layer's head average; decoder self-attention never looks ahead."""
    model = random_model(vocab, "transformer", "scaled-dot", seed=2)
    cfg = model.cfg
    src = prepare_source(vocab, "5 3 9 1 2")
    target = vocab.encode("2 1 9 3 5")
    rec = forced(model, vocab, src, target)
    batch = Batch([src.ids], [target])
    with torch.no_grad():
        logits, shown = model(batch.src, batch.src_len, batch.trg_in, return_weights=True)
    parallel = torch.log_softmax(logits[0], -1).gather(1, batch.trg_out[0].unsqueeze(1)).squeeze(1)
    assert np.allclose(parallel.numpy(), rec.token_logprobs, atol=1e-5)
    assert np.allclose(shown[0].numpy(), rec.weights, atol=1e-6)
    T, S = len(rec.target_ids), len(rec.source_tokens)
    assert rec.head_weights.shape == (T, cfg.layers, cfg.heads, S)
    assert np.allclose(rec.head_weights.sum(-1), 1.0, atol=1e-5)
    assert np.allclose(rec.weights, rec.head_weights[:, cfg.shown_layer].mean(1), atol=1e-6)
    assert rec.self_weights.shape == (T, cfg.layers, cfg.heads, T)
    assert np.allclose(rec.self_weights.sum(-1), 1.0, atol=1e-5)
    future = np.triu(np.ones((T, T), dtype=bool), 1)  # row i, columns > i
    assert (rec.self_weights.transpose(1, 2, 0, 3)[:, :, future] == 0).all()
    assert rec.encoder_attention.shape == (cfg.layers, cfg.heads, S, S)
    assert np.allclose(rec.encoder_attention.sum(-1), 1.0, atol=1e-5)
    heads = np.array(rec.to_json()["attention_heads"])  # [layers][heads][target][source]
    assert heads.shape == (cfg.layers, cfg.heads, T, S) and np.allclose(heads.sum(-1), 1.0, atol=1e-5)
    beam = beam_search(model, vocab, src, beam=3)
    assert beam.head_weights.shape[1:] == (cfg.layers, cfg.heads, S) and beam.encoder_attention is not None
