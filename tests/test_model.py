"""The encoder–decoder (model/model.py, model/decoders.py): shapes and padding invariance for
every kind, and the bf16 autocast loss."""
from __future__ import annotations

import math

import pytest
import torch

from model.data import Batch
from model.model import build_model
from model.search import greedy_batch
from model.toy import tiny_config
from helpers.models import ALL_KINDS, random_model


@pytest.mark.parametrize("decoder,attention", ALL_KINDS)
def test_shapes_and_padding_invariance(vocab, decoder, attention):
    """A sentence decodes the same alone and in a batch beside a longer one."""
    model = random_model(vocab, decoder, attention)
    short, long_ = vocab.encode("1 2 3"), vocab.encode("4 5 6 7 8 9 1 2 3")
    trg = vocab.encode("3 2 1")
    alone = Batch([short], [trg])
    both = Batch([short, long_], [trg, vocab.encode("9 8 7 6 5 4 3 2 1")])
    with torch.no_grad():
        logits_alone, w_alone = model(alone.src, alone.src_len, alone.trg_in, return_weights=True)
        logits_both, w_both = model(both.src, both.src_len, both.trg_in, return_weights=True)
    T = alone.trg_in.size(1)
    assert logits_alone.shape == (1, T, len(vocab))
    assert torch.allclose(logits_alone[0], logits_both[0, :T], atol=1e-5)
    if attention != "none":
        S = alone.src.size(1)
        assert w_alone.shape == (1, T, S)
        assert torch.allclose(w_alone[0], w_both[0, :T, :S], atol=1e-6)
        assert (w_both[0, :, S:] == 0).all()
    assert greedy_batch(model, [short]) == greedy_batch(model, [short, long_])[:1]


@pytest.mark.parametrize("decoder,attention", [("rnnsearch", "additive"), ("luong", "local-general"),
                                               ("transformer", "scaled-dot")])
def test_bf16_autocast_loss_is_the_float32_loss(vocab, decoder, attention):
    """train.precision bfloat16: the forward pass under bf16 autocast gives the float32 loss to
    about 1%, the output softmax stays float32, and every gradient reaches the float32 weights."""
    torch.manual_seed(0)
    model = build_model(tiny_config(vocab, decoder, attention, size=16)).eval()  # no dropout: one network twice
    torch.manual_seed(1)
    src, trg = ([[int(t) for t in torch.randint(4, len(vocab), (n,))] for n in lens] for lens in ((5, 7), (6, 4)))
    batch = Batch(src, trg)
    exact, n = model(batch.src, batch.src_len, batch.trg_in, batch.trg_out, 0.1)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        approx, n_bf16 = model(batch.src, batch.src_len, batch.trg_in, batch.trg_out, 0.1)
    assert n == n_bf16 and approx.dtype == torch.float32
    assert math.isclose(float(approx.detach()), float(exact.detach()), rel_tol=0.01)
    approx.backward()
    grads = [p.grad for p in model.parameters() if p.requires_grad]
    assert all(g is not None and g.dtype == torch.float32 and torch.isfinite(g).all() for g in grads)
