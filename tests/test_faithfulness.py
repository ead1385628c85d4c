"""model/faithfulness.py: the knock-out test, matched on what the removal leaves, per Transformer layer,
on random samples, with intervals.

What holds by construction (which piece each control removes, what a removal leaves, that the matched
pairs lie within the calipers and the effect is their difference, that one layer's knock-out edits that
layer alone, that the sample is random and nested, that every interval holds its estimate) is tested on
the tiny models; that the shipped models use the piece their attention points at is a property of their
weights, tested on them."""
from __future__ import annotations

import json
import random
import re

import numpy as np
import pytest
import torch

from conftest import ROOT
from model.attribution import attribute, decode_states, knocked_out_steps
from model.checkpoint import load_checkpoint
from model.faithfulness import (knock_out_test, layer_level, main, removal_matrices, removals, source_sentences)
from model.faithfulness_report import report
from model.faithfulness_stats import (CALIPERS, CONTROLS, DRAWN, MIN_PAIRS, Clusters, analyse, draw_controls,
                                      left_after, match_sentence, matched_effect, median)
from model.search import prepare_source, translate

SENTENCES = ["3 1 4 1 5", "9 2 6 5 3 5", "8 9 7 9", "3 2 3 8 4 6 2", "6 4 3 3 8 3 2 7"]
# more sentences of digits, so that argmax and other removals alike in what they leave occur (the matching)
_draw = random.Random(1)
MORE = [" ".join(str(_draw.randint(0, 9)) for _ in range(_draw.randint(4, 9))) for _ in range(12)]
NEWSTEST = ROOT.parent / "shared" / "data" / "enfr-broad" / "test.tsv.gz"


def toy_data(tmp_path):
    data = tmp_path / "test.tsv"
    data.write_text("en\tfr\torigin\n" + "".join(f"{s}\t{' '.join(s.split()[::-1])}\tnewstest2014\n" for s in SENTENCES)
                    + "1 2 3\t3 2 1\tother\n", encoding="utf-8")
    return data


def test_the_controls_remove_what_they_say():
    w = np.array([[0.70, 0.20, 0.06, 0.04, 0.00],
                  [0.10, 0.05, 0.80, 0.05, 0.00],
                  [0.00, 0.00, 1.00, 0.00, 0.00]])
    picks = draw_controls(w, np.random.default_rng(0), threshold=0.05, draws=200)
    assert list(picks["most"]) == [0, 2, 2] and list(picks["second"])[:2] == [1, 0]
    assert list(picks["second_apart"])[:2] == [2, 0]  # not the argmax's neighbour: 1 (step 0), 1 or 3 (step 1)
    for name in DRAWN:
        assert picks[name].shape == (200, 3)  # a draw per resample
        assert not (picks[name][:, :2] == picks["most"][:2]).any()
    assert (w[[0, 1], picks["proportional"][:, :2]] > 0).all()  # drawn ∝ α: never α = 0
    assert (w[[0, 1], picks["threshold"][:, :2]] >= 0.05).all()
    assert (picks["proportional"][:, 2] == -1).all() and (picks["threshold"][:, 2] == -1).all()  # nothing left
    assert (picks["uniform"][:, 2] >= 0).all()  # the uniform draw also takes pieces of α = 0
    share = (picks["proportional"][:, 0] == 1).mean()  # 0.20 of the 0.30 left at step 0
    assert 0.55 < share < 0.8
    assert len(set(picks["uniform"][:, 0])) == 4  # drawn again: every other piece comes up


def test_what_a_removal_leaves_is_the_row_renormalised():
    w = np.array([[0.5, 0.3, 0.2], [1.0, 0.0, 0.0]])
    largest, entropy = left_after(w)
    assert largest[0, 0] == pytest.approx(0.6) and largest[0, 1] == pytest.approx(0.5 / 0.7)
    q = np.array([0.5, 0.3]) / 0.8
    assert entropy[0, 2] == pytest.approx(-(q * np.log(q)).sum())
    assert largest[1, 0] == pytest.approx(0.5) and entropy[1, 0] == pytest.approx(np.log(2))  # spread evenly
    assert largest[1, 1] == pytest.approx(1.0) and entropy[1, 1] == pytest.approx(0.0)


def test_a_matched_partner_takes_and_leaves_about_the_same_and_prefers_the_same_step():
    rng = np.random.default_rng(3)
    for _ in range(20):
        w = rng.dirichlet(np.full(9, 0.3), size=12)
        partner = match_sentence(w)
        T, S = w.shape
        largest, entropy = left_after(w)
        features = np.stack([w.ravel(), largest.ravel(), entropy.ravel()], 1)
        for i, p in enumerate(partner):
            mine = i * S + w[i].argmax()
            if p < 0:
                continue
            assert p != mine and p % S != w[p // S].argmax()  # never an argmax removal
            gap = np.abs(features[p] - features[mine])
            assert (gap <= np.array([CALIPERS["alpha"], CALIPERS["largest_left"], CALIPERS["entropy_left"]])).all()
    tie = np.array([[0.45, 0.45, 0.10], [0.9, 0.05, 0.05]])
    assert match_sentence(tie)[0] == 1  # the same step's removal of the tied piece
    assert match_sentence(np.array([[0.9, 0.05, 0.05], [0.8, 0.1, 0.1]]))[0] == -1  # nothing takes 0.9


@pytest.fixture(scope="module")
def tiny_transformer_test(tiny_zoo):
    """The whole analysis on the tiny Transformer, 17 sentences of digits: the result, the model, the
    vocabulary and the raw removals it was made from."""
    model, vocab = load_checkpoint(tiny_zoo / "transformer")[:2]
    sentences = removals(model, vocab, SENTENCES + MORE)
    return analyse(sentences, resamples=300, shown=model.cfg.shown_layer), model, vocab, sentences


def test_the_matched_effect_is_the_pairs_difference(tiny_transformer_test):
    """Recomputed from the raw removals: per argmax removal its partner, the coverage, and the effect the
    mean of (argmax changed − partner changed) over the pairs; below MIN_PAIRS pairs no effect."""
    result, model, _, sentences = tiny_transformer_test
    for level in ("knock_out", layer_level(0), layer_level(1), "input_random"):
        m = result[level]["matched"]
        pairs, mine_changed, their_changed, steps = 0, [], [], 0
        for s in sentences:
            w = s["weights"].get(level, s["alpha"])
            partner = match_sentence(w)
            changed = s[level]["changed"].ravel().astype(float)
            top = np.arange(len(w)) * w.shape[1] + w.argmax(1)
            ok = partner >= 0
            mine_changed += list(changed[top[ok]])
            their_changed += list(changed[partner[ok]])
            pairs += int(ok.sum())
            steps += len(w)
        assert m["pairs"] == pairs and m["argmax_removals"] == steps == result["steps"]
        assert m["coverage"] == pytest.approx(pairs / steps, abs=1e-4)
        assert m["estimable"] == (pairs >= MIN_PAIRS)
        if m["estimable"]:
            assert m["effect"] == pytest.approx(np.mean(mine_changed) - np.mean(their_changed), abs=1e-4)
            assert abs(m["alpha_most"] - m["alpha_partner"]) <= CALIPERS["alpha"]
            assert abs(m["largest_most"] - m["largest_partner"]) <= CALIPERS["largest_left"]
        else:
            assert "effect" not in m
    few = matched_effect(Clusters(len(sentences), 50), sentences, "knock_out", min_pairs=10 ** 6)
    assert not few["estimable"] and "effect" not in few and few["coverage"] is not None
    assert few["status"] == f"not estimable: {few['pairs']} pairs < {10 ** 6}"


def test_one_layers_knock_out_edits_that_layer_alone(tiny_transformer_test):
    """knock_out_layer<n>: the position removed from layer n's heads only, its weights that layer's head
    average; the shown layer's is the page's shown-layer knock-out, and the layers differ."""
    result, model, vocab, _ = tiny_transformer_test
    text = SENTENCES[3]
    rec = translate(model, vocab, text)
    s = removal_matrices(model, vocab, text)
    src = prepare_source(vocab, text)
    decoded = decode_states(model, src.ids, rec.target_ids)
    ids = torch.tensor(rec.target_ids)
    every = [list(range(len(src.ids) + 1))] * len(ids)
    shown_only = knocked_out_steps(model, decoded, every, ids, every_layer=False)[0]
    own = decoded[2].gather(1, ids.unsqueeze(1))
    np.testing.assert_allclose(s[layer_level(model.shown)]["drop"], (own - shown_only).numpy(), atol=1e-6)
    np.testing.assert_allclose(s["weights"][layer_level(model.shown)], rec.weights, atol=1e-6)
    np.testing.assert_allclose(s["weights"]["knock_out"], rec.head_weights.mean((1, 2)), atol=1e-6)
    for n in range(model.cfg.layers):
        np.testing.assert_allclose(s["weights"][layer_level(n)], rec.head_weights[:, n].mean(1), atol=1e-6)
    assert not np.allclose(s[layer_level(0)]["drop"], s[layer_level(1)]["drop"])
    assert not np.allclose(s[layer_level(0)]["drop"], s["knock_out"]["drop"])
    layers = result["layers"]
    assert [r["shown"] for r in layers] == [n == model.shown for n in range(model.cfg.layers)]
    assert layers[model.shown]["argmax_agrees"] == 1.0


def every_estimate(x, where=""):
    """(where, value, interval) for every estimate of a result that has an interval."""
    if isinstance(x, dict):
        for k, v in x.items():
            if k.endswith("_ci") and k[:-3] in x:
                yield f"{where}.{k[:-3]}", x[k[:-3]], v
            elif isinstance(v, (dict, list)):
                yield from every_estimate(v, f"{where}.{k}")
    elif isinstance(x, list):
        for k, v in enumerate(x):
            yield from every_estimate(v, f"{where}[{k}]")


def test_every_figure_has_an_interval_that_holds_it(tiny_transformer_test):
    result = tiny_transformer_test[0]
    seen = 0
    for where, value, ci in every_estimate(result):
        if value is None:
            assert ci is None, where
            continue
        assert ci is not None and ci[0] - 1e-9 <= value <= ci[1] + 1e-9, (where, value, ci)
        seen += 1
    assert seen > 150
    for control in result["knock_out"]["controls"].values():  # no figure without its interval
        assert all(f"{k}_ci" in control for k in ("changed", "drop", "drop_median", "rises", "top5_share",
                                                   "median_alpha", "mean_alpha"))
    knock = result["knock_out"]["controls"]["most"]
    assert knock["changed_ci"][1] > knock["changed_ci"][0]  # an interval, not a point: sentences differ


def test_the_controls_are_drawn_again_in_every_resample():
    """One sentence: resampling sentences alone cannot move a figure, the control's draws do."""
    clusters = Clusters(1, 200)
    fixed, drawn = np.array([1.0, 0.0, 0.0, 1.0]), np.random.default_rng(0).integers(0, 2, (200, 4)).astype(float)
    assert clusters.mean([fixed])["ci"] == [0.5, 0.5]
    ci = clusters.mean([drawn])["ci"]
    assert ci[1] - ci[0] >= 0.5
    assert clusters.statistic([drawn], median)["ci"][1] > clusters.statistic([drawn], median)["ci"][0]


def test_a_constant_per_sentence_has_a_point_interval():
    clusters = Clusters(5, 100)
    parts = [np.full(k + 1, 0.25) for k in range(5)]
    assert clusters.mean(parts)["ci"] == [0.25, 0.25] and clusters.statistic(parts, median)["ci"] == [0.25, 0.25]
    e = Clusters(3, 100).mean([np.array([0.0, 1.0]), np.array([1.0]), np.array([0.0])])
    assert e["value"] == 0.5 and 0 <= e["ci"][0] < 0.5 < e["ci"][1] <= 1


def test_the_sample_is_random_seeded_and_nested(tmp_path):
    data = tmp_path / "test.tsv"
    rows = [f"{n} 1 2 3 4 5\tx\tnewstest2014\n" for n in range(40)]
    data.write_text("en\tfr\torigin\n" + "".join(rows), encoding="utf-8")
    small, population = source_sentences(str(data), "newstest2014", 10, seed=0)
    large, _ = source_sentences(str(data), "newstest2014", 20, seed=0)
    every, _ = source_sentences(str(data), "newstest2014", None)
    assert population == 40 and len(small) == 10 and set(small) <= set(large)
    assert small != every[:10]  # not the first N
    assert [every.index(t) for t in small] == sorted(every.index(t) for t in small)  # in the corpus's order
    assert source_sentences(str(data), "newstest2014", 10, seed=1)[0] != small


def test_the_cli_states_its_sample_and_reuses_its_cache(tiny_zoo, tmp_path, capsys):
    data, out, cache = toy_data(tmp_path), tmp_path / "faithfulness.json", tmp_path / "cache"
    args = ["--data", str(data), "--origin", "newstest2014", "--sample", "4", "--out", str(out), "--resamples", "100",
            "--cache", str(cache)]
    assert main([*args, "--checkpoint", str(tiny_zoo / "rnnsearch"), "--checkpoint", str(tiny_zoo / "rnnenc"),
                 "--json"]) == 0
    printed = capsys.readouterr()
    assert "RNNenc" in printed.err
    result = json.loads(printed.out)
    sample = result["sample"]
    assert sample["sentences"] == 4 and sample["population"] == 5 and sample["seed"] == 0
    assert sample["sampling"].startswith("random: 4 of the 5 sentences") and "default_rng(0)" in sample["sampling"]
    assert result["min_pairs"] == MIN_PAIRS and set(result["controls"]) == set(CONTROLS)
    r = result["models"][0]
    assert r["model"] == "rnnsearch" and r["sentences"] == 4 and r["layers"] is None
    assert {"knock_out", "input_occlusion", "input_random"} <= set(r) and layer_level(0) not in r
    for level in ("knock_out", "input_occlusion", "input_random"):
        m = r[level]["matched"]
        assert {"coverage", "coverage_ci", "pairs", "argmax_removals", "estimable", "unmatched_changed"} <= set(m)
        assert sum(b["pairs_most"] for b in r[level]["curve"]) == r["steps"]  # one argmax a step
    assert main([*args, "--checkpoint", str(tiny_zoo / "rnnsearch"), "--json"]) == 0
    again = capsys.readouterr()
    assert "4 sentences' removals read from" in again.err and "0 to compute" in again.err
    assert json.loads(again.out)["models"][0]["knock_out"] == r["knock_out"]  # the same numbers from the cache
    assert main([*args, "--checkpoint", str(tiny_zoo / "luong-dot")]) == 0  # --out merges
    saved = json.loads(out.read_text(encoding="utf-8"))
    assert [m["model"] for m in saved["models"]] == ["rnnsearch", "luong-dot"]


def test_the_report_says_coverage_not_estimable_and_how_to_read_the_intervals(tiny_zoo, tmp_path, capsys):
    data = toy_data(tmp_path)
    files = []
    for seed in (0, 1):
        files.append(tmp_path / f"f{seed}.json")
        assert main(["--data", str(data), "--origin", "newstest2014", "--sample", "5", "--seed", str(seed),
                     "--resamples", "100", "--checkpoint", str(tiny_zoo / "rnnsearch"), "--out", str(files[-1])]) == 0
    result = json.loads(files[0].read_text(encoding="utf-8"))
    text = report(result)
    m = result["models"][0]["knock_out"]["matched"]
    assert f"({m['pairs']:,} / {m['argmax_removals']:,})" in text  # the coverage beside the matched figure
    assert ("not estimable" in text) == any(not result["models"][0][lv]["matched"]["estimable"]
                                            for lv in ("knock_out", "input_occlusion", "input_random"))
    assert "random: 5 of the 5 sentences" in text and "exploratory" in text
    n = int(text.split("This section holds ")[1].split(" ")[0])
    assert n == len(re.findall(r"\[-?\d", text.split("*How to read the intervals.*")[0])) > 20  # the count is the text's
    capsys.readouterr()
    assert main(["--report", *map(str, files)]) == 0
    both = capsys.readouterr().out
    assert "Replication" in both and "| on both |" in both and "matched effect (points), attention knock-out" in both


@pytest.mark.slow
def test_the_shipped_luong_dot_uses_the_piece_its_attention_points_at(tmp_path, capsys):
    """A property of the shipped weights (every host has them): on 3 random newstest2014 sentences,
    removing the most-attended piece changes the word far more often than removing the second-most
    attended one, in the attention and at both input levels."""
    if not (ROOT / "checkpoints" / "luong-dot" / "model.safetensors").exists() or not NEWSTEST.exists():
        pytest.skip("the shipped luong-dot or ../shared/data/enfr-broad is not here")
    assert main(["--checkpoint", str(ROOT / "checkpoints" / "luong-dot"), "--data", str(NEWSTEST),
                 "--origin", "newstest2014", "--sample", "3", "--max-words", "20", "--resamples", "100",
                 "--json"]) == 0
    r = json.loads(capsys.readouterr().out)["models"][0]
    for level in ("knock_out", "input_occlusion", "input_random"):
        c = r[level]["controls"]
        assert c["most"]["changed"] > 2 * c["second"]["changed"] + 0.1, (level, c)


@pytest.mark.slow
def test_the_analysis_runs_on_a_model_made_elsewhere(tiny_hf, tmp_path):
    """The tiny random-weight Marian (tests/helpers/hf_tiny.py): every level, a knock-out per layer, its
    layers reported. Its numbers mean nothing else."""
    from model.hf import load_hf
    model, vocab = load_hf(str(tiny_hf), metrics_root=tmp_path)[:2]
    result = knock_out_test(model, vocab, ["the cat sat on the mat", "the parliament adopted the new policy"],
                            resamples=50)
    assert {"knock_out", "input_occlusion", "input_random"} <= set(result)
    assert {layer_level(n) for n in range(model.cfg.layers)} <= set(result)
    assert result["steps"] == result["knock_out"]["controls"]["most"]["steps"] > 0
    assert len(result["layers"]) == model.cfg.layers


def test_the_removals_are_the_attribution_methods_own(tiny_zoo):
    model, vocab = load_checkpoint(tiny_zoo / "rnnsearch")[:2]
    text = SENTENCES[3]
    m = removal_matrices(model, vocab, text)
    rec = translate(model, vocab, text)
    src = prepare_source(vocab, text)
    np.testing.assert_array_equal(m["alpha"], rec.weights)
    for level, method in (("knock_out", "knock-out"), ("input_occlusion", "input-occlusion")):
        a = attribute(model, src.ids, rec.target_ids, method)
        np.testing.assert_allclose(m[level]["drop"], a.scores, atol=1e-5)
        assert m[level]["changed"].shape == rec.weights.shape
