"""Small random models of every kind (untrained: for what holds by construction, whatever the weights)."""
from __future__ import annotations

import torch

from model.model import build_model
from model.toy import tiny_config

ALL_KINDS = [("rnnsearch", "additive"), ("luong", "dot"), ("luong", "general"), ("luong", "concat"),
             ("luong", "local-general"), ("rnnenc", "none"), ("transformer", "scaled-dot")]


def random_model(vocab, decoder, attention, seed=0):
    torch.manual_seed(seed)
    return build_model(tiny_config(vocab, decoder, attention, size=16)).eval()
