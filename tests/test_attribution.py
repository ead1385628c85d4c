"""Attribution beside attention (model/attribution.py) and edit-and-re-decode
(model/intervention.py), on the tests' tiny zoo and the tiny Marian."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from conftest import TINY_ZOO
from model.attention import Reweigh
from model.attribution import attribute_record, rank_correlation
from model.checkpoint import load_checkpoint
from model.intervention import Edit, redecode
from model.search import prepare_source, translate

SENTENCES = ["3 1 4 1 5", "9 2 6 5 3 5", "8 9 7 9", "3 2 3 8 4 6 2", "6 4 3 3 8 3 2 7"]


@pytest.fixture(scope="module")
def zoo_models(tiny_zoo):
    return {name: load_checkpoint(tiny_zoo / name)[:2] for name in TINY_ZOO}


@pytest.fixture(scope="module")
def marian(tiny_hf, tmp_path_factory):
    from model.hf import load_hf
    return load_hf(str(tiny_hf), metrics_root=tmp_path_factory.mktemp("no-metrics"))[:2]


def check_methods(model, vocab, text):
    """Every method: the record's shapes, the record's own log-probabilities, rows of relevance that sum to 1."""
    rec = translate(model, vocab, text)
    T, S = len(rec.target_ids), len(rec.source_tokens)
    for method in ("gxi", "ig", "knock-out", "input-occlusion"):
        if method == "knock-out" and not model.cfg.has_attention:
            with pytest.raises(ValueError, match="RNNenc"):
                attribute_record(model, vocab, rec, method)
            continue
        a = attribute_record(model, vocab, rec, method, steps=8)
        assert a.scores.shape == (T, S) and np.isfinite(a.scores).all()
        np.testing.assert_allclose(a.logprobs, rec.token_logprobs, atol=2e-4)  # the pass attributed is the record's
        sums = a.relevance.sum(1)  # 1, or 0 for a row no source piece moves
        assert np.all((np.abs(sums - 1) < 1e-5) | (sums == 0))
        if method in ("gxi", "ig"):
            assert a.prefix.shape == (T, T) and np.all(np.triu(a.prefix, 1) == 0)  # nothing on later inputs
            assert np.all((a.source_share >= 0) & (a.source_share <= 1))
    return rec


@pytest.mark.parametrize("name", list(TINY_ZOO))
def test_every_method_on_the_zoo(zoo_models, name):
    model, vocab = zoo_models[name]
    check_methods(model, vocab, SENTENCES[0])


def test_every_method_on_the_tiny_marian(marian):
    check_methods(*marian, "the cat sat on the mat")


def test_knocking_out_a_word_of_weight_zero_changes_nothing_at_that_step(zoo_models):
    """local-p's window leaves exact zeros: knocking such a word out of that step moves nothing."""
    model, vocab = zoo_models["luong-local"]
    text = "3 1 4 1 5 9 2 6 5 3 5 8 9 7"
    rec = translate(model, vocab, text)
    zeros = np.argwhere(rec.weights == 0)
    assert len(zeros), "the window should leave some positions at weight 0"
    a = attribute_record(model, vocab, rec, "knock-out")
    assert np.all(a.scores[rec.weights == 0] == 0)
    w = torch.tensor([[0.5, 0.0, 0.5], [0.2, 0.3, 0.5]])
    assert torch.equal(Reweigh(torch.tensor([1, 0]), torch.tensor([0.0, 1.0]))(w), w)


def test_reweigh_sets_renormalises_and_leaves_an_unchanged_row_alone():
    w = torch.softmax(torch.randn(2, 3, 1, 5), -1)  # B x heads x T x S
    out = Reweigh(torch.tensor([2, 0]), torch.tensor([0.5, 0.0]))(w)
    torch.testing.assert_close(out.sum(-1), torch.ones(2, 3, 1))
    torch.testing.assert_close(out[0, ..., 2], w[0, ..., 2] * 0.5)
    assert torch.all(out[1, ..., 0] == 0)
    torch.testing.assert_close(out[0, ..., [0, 1, 3, 4]] / w[0, ..., [0, 1, 3, 4]],
                               ((1 - out[0, ..., 2:3]) / (1 - w[0, ..., 2:3])).expand(-1, -1, 4))
    assert torch.equal(Reweigh(torch.tensor([1, 4]), torch.tensor([1.0, 1.0]))(w), w)
    whole = torch.tensor([[0.0, 1.0, 0.0]])
    torch.testing.assert_close(Reweigh(torch.tensor([1]), torch.tensor([0.0]))(whole), torch.tensor([[0.5, 0.0, 0.5]]))


def check_edits(model, vocab, text, reads_source=True):
    src = prepare_source(vocab, text)
    rec = translate(model, vocab, text)
    for step in range(min(3, len(rec.target_ids))):
        j = int(rec.weights[step].argmax())
        same = redecode(model, vocab, src, rec, Edit.of(rec, step, j, float(rec.weights[step, j])))
        assert same.edited.target_ids == rec.target_ids and not same.changed
        for name in ("token_logprobs", "weights", "contexts", "states", "topk_probs"):
            assert np.array_equal(getattr(same.edited, name), getattr(rec, name)), name
        assert np.all(same.delta == 0)
    knocked = redecode(model, vocab, src, rec, Edit.of(rec, 0, int(rec.weights[0].argmax())))
    assert (knocked.changed or not reads_source) and np.all(knocked.edited.weights[:, int(rec.weights[0].argmax())] == 0)
    np.testing.assert_allclose(knocked.edited.weights.sum(1), 1.0, atol=1e-5)
    if len(rec.target_ids) > 1:
        j = int(rec.weights[1].argmax())
        lowered = redecode(model, vocab, src, rec, Edit.of(rec, 1, j, 0.25))
        assert lowered.edited.weights[1, j] == pytest.approx(0.25, abs=1e-6)  # the shown weight is the one set
        np.testing.assert_array_equal(lowered.edited.weights[0], rec.weights[0])  # the steps before it as they were


@pytest.mark.parametrize("name", ["rnnsearch", "luong-dot", "luong-local", "transformer"])
def test_an_unchanged_edit_reproduces_the_record(zoo_models, name):
    # the toy local-p writes </s> at once, with the same probability whatever the source
    check_edits(*zoo_models[name], SENTENCES[3], reads_source=name != "luong-local")


def test_edits_on_the_tiny_marian(marian):
    check_edits(*marian, "the parliament adopted the new policy")


def test_edits_say_what_they_cannot_do(zoo_models):
    model, vocab = zoo_models["rnnenc"]
    with pytest.raises(ValueError, match="no attention"):
        Edit.of(translate(model, vocab, SENTENCES[0]), 0, 0)
    model, vocab = zoo_models["rnnsearch"]
    rec = translate(model, vocab, SENTENCES[0])
    with pytest.raises(ValueError, match="outside"):
        Edit.of(rec, 99, 0)
    with pytest.raises(ValueError, match="between 0 and 1"):
        Edit.of(rec, 0, 0, 1.5)


def test_rank_correlation():
    a = np.array([[0.1, 0.2, 0.7], [0.5, 0.3, 0.2]])
    np.testing.assert_allclose(rank_correlation(a, a), 1.0)
    np.testing.assert_allclose(rank_correlation(a, -a), -1.0)


def test_the_figures_pass_plotlys_validation_and_show_one_scale():
    from viz.attribution import logprob_change, row_correlations, side_by_side
    from viz.fast_figure import validated
    source, target = ["▁the", "<b>", "</s>"], ["▁le", "</s>"]
    alpha = np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]])
    fig = validated(side_by_side({"attention α": alpha, "attention knock-out": alpha[:, ::-1]}, source, target)).to_dict()
    assert [t["type"] for t in fig["data"]] == ["heatmap", "heatmap"]
    assert fig["layout"]["coloraxis"]["cmin"] == 0 and fig["layout"]["coloraxis"]["cmax"] == 1
    assert "&lt;b&gt;" in fig["layout"]["xaxis"]["ticktext"]  # markup in a token shows as typed
    validated(row_correlations({"attention knock-out": np.array([0.5, np.nan])}, target))
    validated(logprob_change(target, np.array([-0.5, 0.1]), 0))
    with pytest.raises(ValueError):
        side_by_side({"bad": alpha[:, :2]}, source, target)


@pytest.mark.parametrize("method", ["gxi", "ig", "knock-out", "input-occlusion"])
def test_align_scores_an_attribution_against_the_gold(tiny_zoo, tmp_path, capsys, method):
    import pandas as pd
    from model.align import main
    gold = tmp_path / "gold"
    gold.mkdir()
    (gold / "enfr.src-tgt").write_text("1 2 3 ||| 3 2 1\n4 5 6 7 ||| 7 6 5 4\n", encoding="utf-8")
    (gold / "enfr.gold").write_text("1-3 2-2 3-1\n1-4 2-3 3-2 4-1\n", encoding="utf-8")
    out = tmp_path / "aer.csv"
    assert main(["--checkpoint", str(tiny_zoo / "rnnsearch"), "--gold", str(gold), "--method", method,
                 "--csv", str(out)]) == 0
    assert f"({method}, 2 sentences" in capsys.readouterr().out
    row = pd.read_csv(out).iloc[0]
    assert row["method"] == method and 0 <= row["aer"] <= 1
    assert main(["--checkpoint", str(tiny_zoo / "rnnsearch"), "--gold", str(gold), "--method", method,
                 "--write-metrics"]) == 1  # an attribution's AER is not the model's attention AER


@pytest.mark.parametrize("method", ["ig", "knock-out", "input-occlusion"])
def test_align_scores_a_hugging_face_models_attribution(tiny_hf, tmp_path, capsys, method):
    from conftest import ROOT
    from model.align import main
    gold = ROOT.parent / "shared" / "data" / "hansards-align"
    assert main(["--checkpoint", f"hf:{tiny_hf}", "--gold", str(gold), "--limit", "3", "--method", method,
                 "--results", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "AER" in out and f"({method}, 3 sentences" in out


@pytest.mark.parametrize("method", ["gxi", "ig", "knock-out", "input-occlusion"])
def test_an_attribution_calls_check_between_passes_and_stops_where_it_raises(zoo_models, method):
    """As a decoder does between steps: the page's check (a newer request, a run past its seconds,
    server/lanes.py) is called before each pass, and what it raises ends the attribution there."""
    model, vocab = zoo_models["rnnsearch"]
    rec = translate(model, vocab, SENTENCES[4])
    calls = []
    attribute_record(model, vocab, rec, method, steps=None if method == "ig" else 8, check=lambda: calls.append(1))
    T = len(rec.target_ids)
    # knock-out: one call per target step; occlusion: one per batch of 8 sentence copies; gradients: one per pass
    least = {"knock-out": T, "input-occlusion": -(-(len(rec.source_tokens) + 1) // 8), "gxi": 1, "ig": 1}[method]
    assert len(calls) >= least

    class Stop(Exception):
        pass

    def stop_at_second():
        calls.append(2)
        if calls.count(2) > (1 if method in ("knock-out", "input-occlusion") else 0):
            raise Stop()
    with pytest.raises(Stop):
        attribute_record(model, vocab, rec, method, steps=None if method == "ig" else 8, check=stop_at_second)
