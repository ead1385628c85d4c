"""Small random models of every kind (untrained: for what holds by construction, whatever the weights)."""
from __future__ import annotations

import torch

from model.model import build_model
from model.toy import tiny_config
from model.zoo import KINDS

ALL_KINDS = list(KINDS.values())  # (decoder, attention) of every model of the zoo


def random_model(vocab, decoder, attention, seed=0):
    torch.manual_seed(seed)
    return build_model(tiny_config(vocab, decoder, attention, size=16)).eval()
