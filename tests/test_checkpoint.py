"""Checkpoints (model/checkpoint.py): a self-describing folder round-trips, and every way it can
be broken is refused with the file named."""
from __future__ import annotations

import json
import shutil

import pytest

from model.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from model.config import ModelConfig
from model.model import Seq2Seq
from model.search import greedy_batch
from helpers.models import random_model


def test_checkpoint_round_trip(tmp_path, vocab):
    model = random_model(vocab, "luong", "general", seed=6)
    save_checkpoint(tmp_path / "ck", model, vocab, {"name": "ck", "training": {"steps": 0}})
    loaded, v2, cfg = load_checkpoint(tmp_path / "ck")
    assert cfg["model"]["attention"] == "general" and len(v2) == len(vocab)
    src = vocab.encode("1 2 3")
    assert greedy_batch(loaded, [src]) == greedy_batch(model.half().float(), [src])  # fp16 storage


@pytest.fixture
def saved(tmp_path, vocab):
    save_checkpoint(tmp_path / "ck", random_model(vocab, "rnnsearch", "additive"), vocab, {"name": "ck"})
    return tmp_path / "ck"


def _corrupt_cases():
    def truncate(f):
        data = (f / "model.safetensors").read_bytes()
        (f / "model.safetensors").write_bytes(data[: len(data) // 2])

    def garbage(f):
        (f / "model.safetensors").write_bytes(b"\x00" * 100)

    def bad_json(f):
        (f / "config.json").write_text("{not json")

    def wrong_shape(f):
        cfg = json.loads((f / "config.json").read_text())
        cfg["model"]["dec_hidden"] = 24
        (f / "config.json").write_text(json.dumps(cfg))

    def bad_kind(f):
        cfg = json.loads((f / "config.json").read_text())
        cfg["model"]["decoder"] = "transformer"
        (f / "config.json").write_text(json.dumps(cfg))

    def wrong_vocab(f):
        cfg = json.loads((f / "config.json").read_text())
        cfg["model"]["vocab_size"] += 1
        (f / "config.json").write_text(json.dumps(cfg))

    return [
        ("missing weights", lambda f: (f / "model.safetensors").unlink(), "model.safetensors: missing"),
        ("missing config", lambda f: (f / "config.json").unlink(), "config.json: missing"),
        ("missing vocabulary", lambda f: (f / "spm.model").unlink(), "spm.model: missing"),
        ("truncated weights", truncate, "corrupt or truncated"),
        ("garbage weights", garbage, "corrupt or truncated"),
        ("invalid json", bad_json, "not valid JSON"),
        ("shape mismatch", wrong_shape, "has shape"),
        ("unknown decoder", bad_kind, "invalid model section"),
        ("vocabulary mismatch", wrong_vocab, "pieces but"),
        ("corrupt vocabulary", lambda f: (f / "spm.model").write_bytes(b"junk"), "cannot be read"),
    ]


@pytest.mark.parametrize("name,corrupt,message", _corrupt_cases(), ids=[c[0] for c in _corrupt_cases()])
def test_corrupt_checkpoint_errors_name_the_file(saved, name, corrupt, message):
    corrupt(saved)
    with pytest.raises(CheckpointError, match=message) as err:
        load_checkpoint(saved)
    assert str(saved) in str(err.value)


def test_missing_folder(tmp_path):
    with pytest.raises(CheckpointError, match="no such checkpoint folder"):
        load_checkpoint(tmp_path / "nope")


def test_copy_of_checkpoint_folder_is_self_describing(tmp_path, saved):
    shutil.copytree(saved, tmp_path / "elsewhere")
    model, _, cfg = load_checkpoint(tmp_path / "elsewhere")
    assert isinstance(model, Seq2Seq) and cfg["name"] == "ck"
    assert ModelConfig(**cfg["model"]) == model.cfg
