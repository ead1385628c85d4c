"""Shared fixtures. The suite trains its own tiny checkpoints (seconds, on a toy task), so
it never depends on the shipped ones being present, and the app never sees a fake model."""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
torch.set_num_threads(1)  # small models: one thread is fastest and leaves a core for the rest

from model.toy import make_tiny_checkpoint  # noqa: E402

TINY_ZOO = {
    "rnnsearch": ("rnnsearch", "additive"),
    "luong-general": ("luong", "general"),
    "luong-dot": ("luong", "dot"),
    "luong-concat": ("luong", "concat"),
    "luong-local": ("luong", "local-general"),
    "rnnenc": ("rnnenc", "none"),
    "transformer": ("transformer", "scaled-dot"),
}


@pytest.fixture(scope="session")
def tiny_zoo(tmp_path_factory) -> Path:
    """A checkpoints/ folder with every zoo model trained tiny on digit reversal
    (plus one deliberately broken folder, ``broken``), and the app pointed at it."""
    root = tmp_path_factory.mktemp("checkpoints")
    for name, (decoder, attention) in TINY_ZOO.items():
        make_tiny_checkpoint(root / name, decoder, attention, steps=120)
    broken = root / "broken"
    shutil.copytree(root / "rnnsearch", broken)
    (broken / "model.safetensors").write_bytes((broken / "model.safetensors").read_bytes()[:1000])
    os.environ["ATTN_EXPLORER_CHECKPOINTS"] = str(root)
    return root


@pytest.fixture(scope="session")
def tiny_checkpoint(tiny_zoo) -> Path:
    return tiny_zoo / "rnnsearch"


@pytest.fixture(scope="session")
def tiny_hf(tmp_path_factory) -> Path:
    """A MarianMT made here (``hf_tiny``: random weights, SentencePiece models trained on toy
    sentences, English → French), saved with ``save_pretrained``: a model "made elsewhere"."""
    from hf_tiny import tiny_marian
    return tiny_marian(tmp_path_factory.mktemp("hf") / "tiny-marian")
