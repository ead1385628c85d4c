"""Packed decoding weights (model/packed.py): the fast path decodes as the plain modules in
model/decoders.py do, trains, and repacks after an update."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from model.checkpoint import load_checkpoint
from model.data import Batch
from model.model import Seq2Seq
from model.search import beam_batch, beam_search, greedy, greedy_batch, prepare_source, translate
from helpers.models import ALL_KINDS, random_model


def _unpacked_copy(model, vocab, decoder, attention, seed):
    plain = random_model(vocab, decoder, attention, seed=seed)
    plain.load_state_dict(model.state_dict())
    return plain


@pytest.mark.parametrize("decoder,attention", ALL_KINDS)
def test_packed_decoding_equals_the_plain_modules(vocab, decoder, attention):
    from model.packed import pack_for_decoding, PackedGRUCell
    model = random_model(vocab, decoder, attention, seed=5)
    if not pack_for_decoding(model):
        pytest.skip("this torch build has no oneDNN packing")
    plain = _unpacked_copy(model, vocab, decoder, attention, seed=5)
    assert model.packed_output is not None and plain.packed_output is None
    src = prepare_source(vocab, "3 1 4 1 5 9 2")
    if decoder != "transformer":  # the Transformer packs its output layer only
        assert isinstance(model.decoder.rnn, PackedGRUCell) and not isinstance(plain.decoder.rnn, PackedGRUCell)
        with torch.no_grad():  # RNNsearch and RNNenc decode on their regrouped products (FusedDeepOutputStep)
            batch = Batch([src.ids])
            fused = model.encode(batch.src, batch.src_len)[1].values_and_products is not None
        assert fused == (decoder in ("rnnsearch", "rnnenc"))
    for run in (lambda m: greedy(m, vocab, src), lambda m: beam_search(m, vocab, src, beam=3)):
        a, b = run(model), run(plain)
        assert a.target_ids == b.target_ids
        assert np.allclose(a.token_logprobs, b.token_logprobs, atol=1e-5)
        assert np.allclose(a.states, b.states, atol=1e-5)
        assert (a.weights is None and b.weights is None) or np.allclose(a.weights, b.weights, atol=1e-5)
    srcs = [vocab.encode(s) for s in ["1 2 3", "9 9 8 7 1 0 2 2", "5"]]  # several rows per product
    assert greedy_batch(model, srcs) == greedy_batch(plain, srcs)
    assert beam_batch(model, srcs, beam=4) == beam_batch(plain, srcs, beam=4)


def test_packed_matrix_stacks_blocks_and_adds_on_both_paths():
    """Blocks (with a column slice and a missing bias) stacked into one product, with ``add``:
    the one-row plain copy and the packed copy (several rows) give x W^T + b + add."""
    from model.packed import PackedMatrix, packing_available
    if not packing_available():
        pytest.skip("this torch build has no oneDNN packing")
    torch.manual_seed(0)
    w1, b1, w2 = torch.randn(6, 10), torch.randn(6), torch.randn(4, 3)
    matrix = PackedMatrix(w1, b1, slice(3, 6), blocks=((w2, None, None),), one_row_copy=True)
    weight, bias = torch.cat([w1[:, 3:6], w2]), torch.cat([b1, torch.zeros(4)])
    with torch.no_grad():
        for rows in (1, 3):
            x, add = torch.randn(rows, 3), torch.randn(rows, 10)
            assert torch.allclose(matrix(x, add=add), x @ weight.T + bias + add, atol=1e-5)
            assert torch.allclose(matrix(x), x @ weight.T + bias, atol=1e-5)


def test_packed_model_still_trains_and_repacks_after_an_update(vocab):
    from model.packed import pack_for_decoding
    model = random_model(vocab, "rnnsearch", "additive", seed=6)
    if not pack_for_decoding(model):
        pytest.skip("this torch build has no oneDNN packing")
    plain = _unpacked_copy(model, vocab, "rnnsearch", "additive", seed=6)
    src = prepare_source(vocab, "8 6 7 5")
    greedy(model, vocab, src)  # packs the weights
    batch = Batch([vocab.encode("8 6 7 5"), vocab.encode("3 0 9")], [vocab.encode("5 7 6 8"), vocab.encode("9 0 3")])
    for m in (model, plain):  # one optimiser step each, with gradients: the ordinary modules run
        m.train()
        opt = torch.optim.SGD(m.parameters(), lr=0.5)
        torch.manual_seed(0)  # the same dropout masks for both
        loss, _ = m(batch.src, batch.src_len, batch.trg_in, batch.trg_out)
        loss.backward()
        opt.step()
        m.eval()
    for p, q in zip(model.parameters(), plain.parameters()):
        assert torch.allclose(p, q, atol=1e-6)
    # after the update the packed copies are stale; decoding must use the new weights
    a, b = greedy(model, vocab, src), greedy(plain, vocab, src)
    assert np.allclose(a.token_logprobs, b.token_logprobs, atol=1e-5) and a.target_ids == b.target_ids


@pytest.mark.parametrize("name", ["rnnsearch", "luong-concat"])
def test_loaded_checkpoint_decodes_like_the_plain_model(tiny_zoo, name):
    """A loaded checkpoint is packed and holds its embedding tables in fp16 (exact: the file
    stores fp16); its records equal those of a plain fp32 model with the same weights."""
    from model.packed import HalfStoredEmbedding
    model, vocab, _ = load_checkpoint(tiny_zoo / name)
    plain = Seq2Seq(model.cfg).eval()
    plain.load_state_dict({k: v.float() for k, v in model.state_dict().items()})
    if model.packed_output is None:
        pytest.skip("this torch build has no oneDNN packing")
    assert isinstance(model.trg_embed, HalfStoredEmbedding) and model.trg_embed.weight.dtype == torch.float16
    assert model.encoder.embed.weight.dtype == torch.float16
    assert model.decoder.rnn.weight_ih.dtype == torch.float16  # packed matrices' own copies too
    src = prepare_source(vocab, "2 7 1 8 2 8")
    for beam in (1, 4):
        a, b = translate(model, vocab, src.text, beam=beam), translate(plain, vocab, src.text, beam=beam)
        assert a.target_ids == b.target_ids
        assert np.allclose(a.token_logprobs, b.token_logprobs, atol=1e-5)
        assert np.allclose(a.contexts, b.contexts, atol=1e-5)
    # with gradients enabled the ordinary modules run, on the widened fp16-held weights
    batch = Batch([vocab.encode("2 7 1 8")], [vocab.encode("8 1 7 2")])
    with torch.enable_grad():
        la, _ = model(batch.src, batch.src_len, batch.trg_in, batch.trg_out)
        lb, _ = plain(batch.src, batch.src_len, batch.trg_in, batch.trg_out)
    assert torch.allclose(la, lb, rtol=1e-5)
