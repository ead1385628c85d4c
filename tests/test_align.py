"""The align command (python -m model.align): AER on the gold format, every Transformer head
scored, RNNenc refused."""
from __future__ import annotations

import json
import shutil

from helpers.cli import run
import pytest
from model.align import forced_alignment
from model.search import forced, prepare_source
from helpers.apptest import DIGITS


@pytest.mark.slow
def test_align_on_gold_format(tiny_checkpoint, tmp_path):
    gold = tmp_path / "gold"
    gold.mkdir()
    (gold / "enfr.src-tgt").write_text("1 2 3 ||| 3 2 1\n4 5 ||| 5 4\n")
    (gold / "enfr.gold").write_text("1-3 2-2 3-1\n1-2 2p1\n")
    js = json.loads(run("-m", "model.align", "--checkpoint", str(tiny_checkpoint), "--gold", str(gold),
                        "--json").stdout)
    assert 0.0 <= js["aer"] <= 1.0 and js["sentences"] == 2 and js["sure"] == 4
    assert js["aer"] < 0.5  # the reversal model's attention is anti-diagonal, as the gold links are


@pytest.mark.slow
def test_align_scores_every_transformer_head(tiny_zoo, tmp_path):
    gold = tmp_path / "gold"
    gold.mkdir()
    (gold / "enfr.src-tgt").write_text("1 2 3 ||| 3 2 1\n4 5 6 7 ||| 7 6 5 4\n")
    (gold / "enfr.gold").write_text("1-3 2-2 3-1\n1-4 2-3 3-2 4-1\n")
    folder = tmp_path / "transformer"
    shutil.copytree(tiny_zoo / "transformer", folder)
    js = json.loads(run("-m", "model.align", "--checkpoint", str(folder), "--gold", str(gold), "--json",
                        "--write-metrics").stdout)
    heads = js["heads"]
    layers, n_heads = 2, 4  # model.toy.tiny_config
    assert len(heads["rows"]) == layers * n_heads + layers + 1  # every head, each layer's mean, all
    assert heads["best"]["aer"] == min(r["aer"] for r in heads["rows"])
    assert heads["shown"]["layer"] == 2 and heads["shown"]["head"] == "mean"  # the toy shows its last layer
    assert heads["shown"]["aer"] == js["aer"]  # the record's attention is that layer's head average
    metrics = json.loads((folder / "metrics.json").read_text())
    assert metrics["alignment"]["steps"] == json.loads((folder / "config.json").read_text())["training"]["steps"] > 0
    stored = metrics["alignment_heads"]
    assert set(stored) == {"written", "as_given"} and stored["written"]["best"]["aer"] <= stored["written"]["shown"]["aer"]


def test_align_refuses_rnnenc(tiny_zoo, tmp_path):
    gold = tmp_path / "g"
    gold.mkdir()
    (gold / "enfr.src-tgt").write_text("1 ||| 1\n")
    (gold / "enfr.gold").write_text("1-1\n")
    proc = run("-m", "model.align", "--checkpoint", str(tiny_zoo / "rnnenc"), "--gold", str(gold), check=False)
    assert proc.returncode == 1 and "no attention" in proc.stderr


def test_forced_alignment_word_probabilities(tiny):
    model, vocab = tiny["rnnsearch"]
    result = forced_alignment(model, vocab, DIGITS.split(), "5 4 3 2 1".split())
    rec = forced(model, vocab, prepare_source(vocab, DIGITS), vocab.encode("5 4 3 2 1"))
    assert result.word_logprobs.shape == (5,)
    assert result.logprob == pytest.approx(rec.score, abs=1e-5)
    assert result.word_weights.shape == (5, 5)  # the </s> row and column are left out, as in model.align
    assert (result.word_weights.sum(1) <= 1 + 1e-6).all()
    assert {k for _, k in result.links} == set(range(5))
