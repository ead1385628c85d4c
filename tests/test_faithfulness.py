"""model/faithfulness.py: the knock-out test with its controls, at matched α, with intervals.

What holds by construction (which piece each control removes, what the curve counts, that the
removals are the attribution methods' own, that the matched effect compares removals of the same
α, that every interval holds its estimate) is tested on the tiny models; that the shipped models
use the piece their attention points at is a property of their weights, tested on them."""
from __future__ import annotations

import json
import random

import numpy as np
import pytest
import torch

from conftest import ROOT
from model.attribution import attribute
from model.checkpoint import load_checkpoint
from model.faithfulness import (BINS, CONTROLS, LEVELS, MATCH_WIDTH, Clusters, analyse, draw_controls, is_top,
                                knock_out_test, main, removal_matrices, removals)
from model.search import prepare_source, translate

SENTENCES = ["3 1 4 1 5", "9 2 6 5 3 5", "8 9 7 9", "3 2 3 8 4 6 2", "6 4 3 3 8 3 2 7"]
# more sentences of digits, so that argmax and other pieces of the same α occur (the matched comparison)
_draw = random.Random(1)
MORE = [" ".join(str(_draw.randint(0, 9)) for _ in range(_draw.randint(4, 9))) for _ in range(12)]
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
        assert list(picks["second_apart"])[:2] == [2, 0]  # not the argmax's neighbour: 1 (step 0), 1 or 3 (step 1)
        assert list(picks["position"]) == [2, 0, 0]  # another step's argmax: 2 for step 0, 0 for steps 1 and 2
        for i in range(3):
            for name in ("second", "second_apart", "proportional", "threshold", "position", "uniform"):
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


def test_the_cli_reports_every_control_at_every_level_and_states_its_sample(tiny_zoo, tmp_path, capsys):
    data, out = toy_data(tmp_path), tmp_path / "faithfulness.json"
    args = ["--data", str(data), "--origin", "newstest2014", "--limit", "4", "--out", str(out), "--resamples", "200"]
    assert main([*args, "--checkpoint", str(tiny_zoo / "rnnsearch"), "--checkpoint", str(tiny_zoo / "rnnenc"),
                 "--json"]) == 0
    printed = capsys.readouterr()
    assert "RNNenc" in printed.err
    result = json.loads(printed.out)
    assert result["sample"] == {"data": str(data), "origin": "newstest2014", "first": 4, "min_words": 1,
                                "max_words": None, "seed": 0, "decoding": "greedy"}
    assert [r["model"] for r in result["models"]] == ["rnnsearch"]
    r = result["models"][0]
    assert r["sentences"] == 4 and r["layers"] is None  # an RNN: one attention, no layers
    assert "knock_out_shown" not in r and {"knock_out", "input_occlusion", "input_random"} <= set(r)
    for level in ("knock_out", "input_occlusion", "input_random"):
        controls, curve = r[level]["controls"], r[level]["curve"]
        assert set(controls) == set(CONTROLS) and set(r[level]["paired"]) == set(CONTROLS) - {"most"}
        assert controls["most"]["steps"] == controls["second"]["steps"] == r["steps"]
        assert all(c["changed"] is None or 0 <= c["changed"] <= 1 for c in controls.values())
        assert controls["most"]["mean_alpha"] >= controls["second"]["mean_alpha"]  # the argmax, by definition
        if controls["threshold"]["steps"]:
            assert controls["threshold"]["mean_alpha"] >= result["threshold"]
            paired = r[level]["paired"]["threshold"]  # compared on the same steps, not on all of them
            assert paired["steps"] == controls["threshold"]["steps"]
            assert paired["difference"] == pytest.approx(paired["most"] - paired["control"], abs=2e-4)
        assert [(b["alpha_from"], b["alpha_to"]) for b in curve] == list(zip(BINS[:-1], BINS[1:]))
        assert all(b["pairs"] == b["pairs_most"] + b["pairs_others"] for b in curve)
        assert sum(b["pairs_most"] for b in curve) == r["steps"]  # one argmax a step
    placement = r["placement"]
    assert placement["second_apart"]["steps"] == 0 or min_distance(placement["second_apart"]) >= 2
    pairs = sum(b["pairs"] for b in r["knock_out"]["curve"])
    lengths = [len(s.split()) + 1 for s in SENTENCES[:4]]  # the source pieces (one per digit here) and EOS
    assert pairs == sum(len(m["alpha"]) * S for m, S in zip(
        [removal_matrices(*load_checkpoint(tiny_zoo / "rnnsearch")[:2], s) for s in SENTENCES[:4]], lengths))
    # --out merges: a second model joins the file, a model run again replaces its entry
    assert main([*args, "--checkpoint", str(tiny_zoo / "luong-dot")]) == 0
    assert main([*args, "--checkpoint", str(tiny_zoo / "luong-dot")]) == 0
    assert "at matched α the argmax adds" in capsys.readouterr().out
    saved = json.loads(out.read_text(encoding="utf-8"))
    assert [m["model"] for m in saved["models"]] == ["rnnsearch", "luong-dot"] and saved["sample"]["first"] == 4


def min_distance(row: dict) -> float:
    return row["median_distance"]


@pytest.fixture(scope="module")
def tiny_transformer_test(tiny_zoo):
    """The whole analysis on the tiny Transformer, 17 sentences of digits: the result, the model, the
    vocabulary and the raw removals it was made from."""
    model, vocab = load_checkpoint(tiny_zoo / "transformer")[:2]
    sentences = removals(model, vocab, SENTENCES + MORE)
    return analyse(sentences, resamples=300), model, vocab, sentences


def every_estimate(result: dict):
    """(where, value, interval) for every estimate of the result that has an interval."""
    for level in LEVELS:
        if level not in result:
            continue
        for name, row in result[level]["controls"].items():
            for key in ("changed", "drop", "drop_median", "rises"):
                yield f"{level} {name} {key}", row[key], row[f"{key}_ci"]
        for name, row in result[level]["paired"].items():
            yield f"{level} most − {name}", row["difference"], row["difference_ci"]
        m = result[level]["matched"]
        for key in ("effect", "changed_most", "changed_others"):
            yield f"{level} matched {key}", m[key], m[f"{key}_ci"]


def test_every_interval_holds_its_estimate(tiny_transformer_test):
    result = tiny_transformer_test[0]
    seen = 0
    for where, value, ci in every_estimate(result):
        if value is None:
            assert ci is None, where
            continue
        assert ci is not None and ci[0] <= value <= ci[1], (where, value, ci)
        seen += 1
    assert seen >= 4 * (4 * len(CONTROLS) + len(CONTROLS) - 1 + 3) - 8  # nearly every one is defined here
    knock = result["knock_out"]["controls"]["most"]
    assert knock["changed_ci"][1] > knock["changed_ci"][0]  # an interval, not a point: sentences differ


def test_the_matched_effect_compares_removals_of_the_same_alpha(tiny_transformer_test):
    """Recomputed from the raw removals without the module's binning: per bin of width 0.01, the
    argmax pieces against the others; the bins' α differ by at most 0.01, and the effect is their
    weighted difference of rates."""
    result, _, _, sentences = tiny_transformer_test
    assert len(sentences) == len(SENTENCES + MORE)
    for level in ("knock_out", "knock_out_shown"):
        m = result[level]["matched"]
        assert m["bins"] >= 3 and m["pairs_most"] >= 5 and m["pairs_others"] >= 5, m  # a comparison, not a gap
        alpha = np.concatenate([(s["removed"].get(level, s["alpha"])).ravel() for s in sentences])
        top = np.concatenate([is_top(s["alpha"]).ravel() for s in sentences])
        changed = np.concatenate([s[level]["changed"].ravel() for s in sentences]).astype(float)
        bins = np.floor(alpha / MATCH_WIDTH).astype(int).clip(max=int(1 / MATCH_WIDTH) - 1)
        weights, effect, gaps = [], [], []
        for b in set(bins[top]) & set(bins[~top]):
            a, o = top & (bins == b), ~top & (bins == b)
            gaps.append(abs(alpha[a].mean() - alpha[o].mean()))
            weights.append(a.sum() * o.sum() / (a.sum() + o.sum()))
            effect.append(changed[a].mean() - changed[o].mean())
        assert max(gaps) <= 0.01 and m["largest_alpha_gap"] == pytest.approx(max(gaps), abs=1e-4)
        assert abs(m["alpha_most"] - m["alpha_others"]) <= 0.01
        assert m["effect"] == pytest.approx(np.average(effect, weights=weights), abs=1e-4)
        assert m["bins"] == len(weights)


def test_the_transformer_reports_the_weight_its_knock_out_removes(tiny_transformer_test, tiny_zoo):
    """Every-layer knock-out removes the mean α over layers and heads; the shown-layer one the shown α."""
    result, model, vocab, _ = tiny_transformer_test
    rec = translate(model, vocab, SENTENCES[3])
    s = removal_matrices(model, vocab, SENTENCES[3])
    np.testing.assert_allclose(s["removed"]["knock_out"], rec.head_weights.mean((1, 2)), atol=1e-6)
    np.testing.assert_allclose(s["layers"][:, model.shown], rec.weights, atol=1e-6)
    assert not np.array_equal(s["knock_out"]["drop"], s["knock_out_shown"]["drop"])  # two different edits
    layers = result["layers"]
    assert len(layers) == model.cfg.layers + 1 and layers[model.shown]["argmax_agrees"] == 1.0
    assert result["knock_out"]["controls"]["most"]["median_alpha"] == pytest.approx(
        layers[-1]["median_alpha_at_shown_argmax"], abs=1e-4)


def test_the_random_piece_control_replaces_the_piece_by_another_pieces_embedding(tiny_zoo):
    """input_random: copy j's embedding is another vocabulary piece's (never a special one), so its
    drops differ from the zero vector's; with the same seed, the same pieces."""
    from model.attribution import SPECIAL, random_piece_embeddings
    model, vocab = load_checkpoint(tiny_zoo / "rnnsearch")[:2]
    drawn = random_piece_embeddings(model, 200, torch.Generator().manual_seed(0))
    table = model.encoder.embed.weight.float()
    nearest = torch.cdist(drawn, table).argmin(1)
    assert bool((nearest >= SPECIAL).all()) and len(set(nearest.tolist())) > 100
    torch.testing.assert_close(drawn, table[nearest].detach())  # each one a piece's own embedding
    a = removal_matrices(model, vocab, SENTENCES[3], torch.Generator().manual_seed(0))
    b = removal_matrices(model, vocab, SENTENCES[3], torch.Generator().manual_seed(0))
    np.testing.assert_array_equal(a["input_random"]["drop"], b["input_random"]["drop"])
    assert not np.allclose(a["input_random"]["drop"], a["input_occlusion"]["drop"])


def test_a_constant_per_sentence_has_a_point_interval():
    clusters = Clusters(5, 100)
    parts = [np.full(k + 1, 0.25) for k in range(5)]
    assert clusters.mean(parts) == (0.25, [0.25, 0.25]) and clusters.median(parts) == (0.25, [0.25, 0.25])
    value, ci = Clusters(3, 100).mean([np.array([0.0, 1.0]), np.array([1.0]), np.array([0.0])])
    assert value == 0.5 and 0 <= ci[0] < 0.5 < ci[1] <= 1


@pytest.mark.slow
def test_the_shipped_luong_dot_uses_the_piece_its_attention_points_at(tmp_path, capsys):
    """A property of the shipped weights (every host has them): on the first 3 newstest2014
    sentences, removing the most-attended piece changes the word far more often than removing the
    second-most attended one, in the attention and at both input levels."""
    if not (ROOT / "checkpoints" / "luong-dot" / "model.safetensors").exists() or not NEWSTEST.exists():
        pytest.skip("the shipped luong-dot or ../shared/data/enfr-broad is not here")
    assert main(["--checkpoint", str(ROOT / "checkpoints" / "luong-dot"), "--data", str(NEWSTEST),
                 "--origin", "newstest2014", "--limit", "3", "--resamples", "100", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)["models"][0]
    for level in ("knock_out", "input_occlusion", "input_random"):
        c = r[level]["controls"]
        assert c["most"]["changed"] > 2 * c["second"]["changed"] + 0.1, (level, c)


@pytest.mark.slow
def test_the_analysis_runs_on_a_model_made_elsewhere(tiny_hf, tmp_path):
    """The tiny random-weight Marian (tests/helpers/hf_tiny.py): every level, its layers reported, and the
    shown-layer knock-out a different edit from the every-layer one. Its numbers mean nothing else."""
    from model.hf import load_hf
    model, vocab = load_hf(str(tiny_hf), metrics_root=tmp_path)[:2]
    result = knock_out_test(model, vocab, ["the cat sat on the mat", "the parliament adopted the new policy"],
                            resamples=50)
    assert {"knock_out", "knock_out_shown", "input_occlusion", "input_random"} <= set(result)
    assert result["steps"] == result["knock_out"]["controls"]["most"]["steps"] > 0
    assert len(result["layers"]) == model.cfg.layers + 1  # every decoder layer, and all of them together
