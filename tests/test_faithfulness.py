"""model/faithfulness.py: the knock-out test with its controls, at the attention and the input level.

What holds by construction (which piece each control removes, what the curve counts, that the
removals are the attribution methods' own) is tested on the tiny models; that the shipped models
use the piece their attention points at is a property of their weights, tested on them."""
from __future__ import annotations

import json
import random

import numpy as np
import pytest

from conftest import ROOT
from model.attribution import attribute
from model.checkpoint import load_checkpoint
from model.faithfulness import BINS, CONTROLS, draw_controls, main, removal_matrices
from model.search import prepare_source, translate

SENTENCES = ["3 1 4 1 5", "9 2 6 5 3 5", "8 9 7 9", "3 2 3 8 4 6 2", "6 4 3 3 8 3 2 7"]
NEWSTEST = ROOT.parent / "shared" / "data" / "enfr-broad" / "test.tsv.gz"


def toy_data(tmp_path):
    data = tmp_path / "test.tsv"
    data.write_text("en\tfr\torigin\n" + "".join(f"{s}\t{' '.join(s.split()[::-1])}\tnewstest2014\n" for s in SENTENCES)
                    + "1 2 3\t3 2 1\tother\n", encoding="utf-8")
    return data


def test_the_controls_remove_what_they_say():
    alpha = np.array([[0.70, 0.20, 0.06, 0.04, 0.00],
                      [0.10, 0.05, 0.80, 0.05, 0.00],
                      [0.00, 0.00, 1.00, 0.00, 0.00]])
    for seed in range(20):
        picks = draw_controls(alpha, random.Random(seed), threshold=0.05)
        assert list(picks["most"]) == [0, 2, 2] and list(picks["second"])[:2] == [1, 0]
        for i in range(3):
            for name in ("second", "proportional", "threshold", "uniform"):
                assert picks[name][i] != picks["most"][i]
        assert all(alpha[i, j] > 0 for i, j in enumerate(picks["proportional"][:2]))  # drawn ∝ α: never α = 0
        assert all(alpha[i, j] >= 0.05 for i, j in enumerate(picks["threshold"][:2]))
        assert picks["proportional"][2] == -1 and picks["threshold"][2] == -1  # nothing left to draw from


@pytest.mark.parametrize("name", ["rnnsearch", "transformer"])
def test_the_removals_are_the_attribution_methods_own(tiny_zoo, name):
    model, vocab = load_checkpoint(tiny_zoo / name)[:2]
    text = SENTENCES[3]
    m = removal_matrices(model, vocab, text)
    rec = translate(model, vocab, text)
    src = prepare_source(vocab, text)
    np.testing.assert_array_equal(m["alpha"], rec.weights)
    for level, method in (("knock_out", "knock-out"), ("input_occlusion", "input-occlusion")):
        a = attribute(model, src.ids, rec.target_ids, method)
        np.testing.assert_allclose(m[level]["drop"], a.scores, atol=1e-5)
        assert m[level]["changed"].shape == rec.weights.shape


def test_the_cli_reports_every_control_at_both_levels_and_states_its_sample(tiny_zoo, tmp_path, capsys):
    data, out = toy_data(tmp_path), tmp_path / "faithfulness.json"
    args = ["--data", str(data), "--origin", "newstest2014", "--limit", "4", "--out", str(out)]
    assert main([*args, "--checkpoint", str(tiny_zoo / "rnnsearch"), "--checkpoint", str(tiny_zoo / "rnnenc"),
                 "--json"]) == 0
    printed = capsys.readouterr()
    assert "RNNenc" in printed.err
    result = json.loads(printed.out)
    assert result["sample"] == {"data": str(data), "origin": "newstest2014", "first": 4, "seed": 0,
                                "decoding": "greedy"}
    assert [r["model"] for r in result["models"]] == ["rnnsearch"]
    r = result["models"][0]
    assert r["sentences"] == 4
    for level in ("knock_out", "input_occlusion"):
        controls, curve = r[level]["controls"], r[level]["curve"]
        assert set(controls) == set(CONTROLS)
        assert controls["most"]["steps"] == controls["second"]["steps"] == r["steps"]
        assert all(c["changed"] is None or 0 <= c["changed"] <= 1 for c in controls.values())
        assert controls["most"]["mean_alpha"] >= controls["second"]["mean_alpha"]  # the argmax, by definition
        if controls["threshold"]["steps"]:
            assert controls["threshold"]["mean_alpha"] >= result["threshold"]
        assert [(b["alpha_from"], b["alpha_to"]) for b in curve] == list(zip(BINS[:-1], BINS[1:]))
        assert all(b["pairs"] == b["pairs_most"] + b["pairs_others"] for b in curve)
        assert sum(b["pairs_most"] for b in curve) >= r["steps"]  # one argmax a step at least (ties: more)
    pairs = sum(b["pairs"] for b in r["knock_out"]["curve"])
    lengths = [len(s.split()) + 1 for s in SENTENCES[:4]]  # the source pieces (one per digit here) and EOS
    assert pairs == sum(len(m["alpha"]) * S for m, S in zip(
        [removal_matrices(*load_checkpoint(tiny_zoo / "rnnsearch")[:2], s) for s in SENTENCES[:4]], lengths))
    # --out merges: a second model joins the file, a model run again replaces its entry
    assert main([*args, "--checkpoint", str(tiny_zoo / "luong-dot")]) == 0
    assert main([*args, "--checkpoint", str(tiny_zoo / "luong-dot")]) == 0
    assert "luong-dot: word changes" in capsys.readouterr().out
    saved = json.loads(out.read_text(encoding="utf-8"))
    assert [m["model"] for m in saved["models"]] == ["rnnsearch", "luong-dot"] and saved["sample"]["first"] == 4


def test_the_shipped_luong_dot_uses_the_piece_its_attention_points_at(tmp_path, capsys):
    """A property of the shipped weights (every host has them): on the first 5 newstest2014
    sentences, removing the most-attended piece changes the word far more often than removing the
    second-most attended one, in the attention (72 % against 7 %) and at the input (74 % against 18 %)."""
    if not (ROOT / "checkpoints" / "luong-dot" / "model.safetensors").exists() or not NEWSTEST.exists():
        pytest.skip("the shipped luong-dot or ../shared/data/enfr-broad is not here")
    assert main(["--checkpoint", str(ROOT / "checkpoints" / "luong-dot"), "--data", str(NEWSTEST),
                 "--origin", "newstest2014", "--limit", "5", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)["models"][0]
    for level in ("knock_out", "input_occlusion"):
        c = r[level]["controls"]
        assert c["most"]["changed"] > 2 * c["second"]["changed"] + 0.1, (level, c)
