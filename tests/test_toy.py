"""The toy task (model/toy.py): real models trained for seconds on digit reversal learn the task, and
their attention becomes anti-diagonal (target step i looks at source position S−1−i)."""
from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from model.data import Batch
from model.search import forced, PreparedSource
from model.toy import tiny_config, toy_accuracy, toy_pair, train_toy
from model.vocabulary import PAD_ID

SPREAD = True  # each training on the next free worker (tests/conftest.py)


def token_accuracy(model, vocab, n=200, seed=5) -> float:
    """Teacher-forced next-token accuracy on fresh reversal pairs."""
    rng = random.Random(seed)
    pairs = [toy_pair("reverse", rng) for _ in range(n)]
    b = Batch(vocab.encode_batch([p[0] for p in pairs]), vocab.encode_batch([p[1] for p in pairs]))
    with torch.no_grad():
        pred = model(b.src, b.src_len, b.trg_in).argmax(-1)
    real = b.trg_out != PAD_ID
    return float((pred[real] == b.trg_out[real]).float().mean())


def anti_diagonal_share(model, vocab) -> float:
    probe = "1 2 3 4 5 6 7"
    rec = forced(model, vocab, PreparedSource(probe, vocab.encode(probe), False), vocab.encode("7 6 5 4 3 2 1"))
    n = 7  # one piece per digit; ignore the </s> row and column
    return float((rec.weights[:n, :n].argmax(1) == np.arange(n)[::-1]).mean())


@pytest.mark.slow
@pytest.mark.parametrize("decoder,attention,lr,steps", [
    ("rnnsearch", "additive", 0.01, 250),
    ("luong", "general", 0.005, 450),
])
def test_attention_model_learns_to_reverse(vocab, decoder, attention, lr, steps):
    model = train_toy(tiny_config(vocab, decoder, attention), vocab, "reverse", steps=steps, lr=lr, seed=0)
    assert token_accuracy(model, vocab) > 0.9
    assert anti_diagonal_share(model, vocab) >= 6 / 7
    if decoder == "rnnsearch":
        assert toy_accuracy(model, vocab, "reverse") > 0.9  # whole sentences exactly right


@pytest.mark.slow
def test_transformer_learns_to_reverse_and_its_shown_layer_aligns(vocab):
    """No recurrence: order comes only from the positional encodings, yet the shown
    cross-attention layer (the toy's last, heads averaged) finds the anti-diagonal."""
    model = train_toy(tiny_config(vocab, "transformer", "scaled-dot"), vocab, "reverse", steps=400, lr=0.003, seed=0)
    model.eval()
    assert token_accuracy(model, vocab) > 0.9
    assert anti_diagonal_share(model, vocab) >= 6 / 7
    assert toy_accuracy(model, vocab, "reverse") > 0.6  # whole sentences (0.78 at this seed)


def test_the_kept_tiny_zoo_is_one_checkpoint_of_each_kind():
    """tests/fixtures/tiny_zoo/ (``python scripts/make_tiny_zoo.py``) holds a checkpoint folder per
    kind of model.toy.TINY_ZOO, each the kind it is named for, sharing one vocabulary file."""
    import json
    from conftest import TINY_CHECKPOINTS
    from model.toy import TINY_ZOO
    assert sorted(p.name for p in TINY_CHECKPOINTS.iterdir()) == sorted(TINY_ZOO)
    for name, (decoder, attention) in TINY_ZOO.items():
        folder = TINY_CHECKPOINTS / name
        assert sorted(p.name for p in folder.iterdir()) == ["config.json", "model.safetensors", "spm.model"]
        model = json.loads((folder / "config.json").read_text())["model"]
        assert (model["decoder"], model["attention"]) == (decoder, attention)
    assert len({(TINY_CHECKPOINTS / n / "spm.model").read_bytes() for n in TINY_ZOO}) == 1
