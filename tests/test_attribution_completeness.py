"""Integrated gradients' completeness (model/attribution.py) and the figure the page prints of it
(app_pages/attribution.py).

What holds by construction is tested on the tiny models: Captum's delta is Σ_j a_ij − (f(x) − f(x')),
with f(x') computed here on its own, to float32's rounding of the sums involved. How small the gap
is for a given number of points is a property of the learned weights, so it is tested on the
shipped checkpoints, which every host shares."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest
import torch

from helpers.apptest import new_app

from conftest import ROOT
from model.attribution import (IG_TARGET_GAP, complete_integrated_gradients, embeddings, gradient_attribution,
                               own_step_logprob)
from model.checkpoint import load_checkpoint
from model.data import Batch
from model.search import translate

EPS32 = float(np.finfo(np.float32).eps)
SHIPPED_TEXT = "The European Parliament adopted the new policy on Tuesday."


def at_baseline(model, src_ids, target_ids) -> np.ndarray:
    """f(x') = log p(y_i | x'), every token embedding zero, computed apart from Captum."""
    T = len(target_ids)
    batch = Batch([src_ids])
    src_vec, trg_vec = embeddings(model, batch.src, torch.tensor([[2] + list(target_ids[:-1])]))
    f = own_step_logprob(model, batch.src, torch.tensor(target_ids))
    with torch.no_grad():
        return f(torch.zeros_like(src_vec).expand(T, -1, -1), torch.zeros_like(trg_vec).expand(T, -1, -1),
                 torch.arange(T)).numpy()


@pytest.mark.parametrize("name", ["rnnsearch", "luong-general", "transformer"])
@pytest.mark.parametrize("steps", [8, 20])
def test_captums_delta_is_the_gap_to_f_x_minus_f_baseline(tiny_zoo, name, steps):
    """δ_i = Σ_j a_ij (source and prefix) − (f(x) − f(x')) for every step, whatever the model learned:
    the bound is float32's worst-case rounding of a sum of (S + T) · E terms of the sizes involved."""
    model, vocab = load_checkpoint(tiny_zoo / name)[:2]
    for text in ("3 1 4 1 5", "8 9 7 9"):
        rec = translate(model, vocab, text)
        src_ids = vocab.encode(text)
        a = gradient_attribution(model, src_ids, rec.target_ids, "ig", steps)
        base = at_baseline(model, src_ids, rec.target_ids)
        np.testing.assert_array_equal(a.at_baseline, base)  # the Attribution's f(x') is the one computed apart
        attributed = a.scores.sum(1) + a.prefix.sum(1)
        terms = (len(src_ids) + 1 + len(rec.target_ids)) * model.cfg.emb_size
        bound = EPS32 * terms * (np.abs(a.scores).sum(1) + np.abs(a.prefix).sum(1) + np.abs(a.logprobs) + np.abs(base))
        assert np.all(np.abs(a.delta - (attributed - (a.logprobs - base))) <= bound)
        gaps = np.abs(a.delta) / np.abs(a.logprobs - base)
        np.testing.assert_allclose(a.step_gaps, gaps, rtol=1e-6)
        assert a.completeness_gap == pytest.approx(np.abs(a.delta).sum() / np.abs(a.logprobs - base).sum(), rel=1e-6)


def shipped(name):
    folder = ROOT / "checkpoints" / name
    if not (folder / "model.safetensors").exists():
        pytest.skip(f"the shipped {name} is not in checkpoints/")
    return load_checkpoint(folder)[:2]


def test_the_shipped_rnnsearch_is_complete_within_1_percent_at_20_points():
    model, vocab = shipped("rnnsearch")
    rec = translate(model, vocab, SHIPPED_TEXT)
    a = gradient_attribution(model, vocab.encode(SHIPPED_TEXT), rec.target_ids, "ig", 20)
    assert a.completeness_gap <= IG_TARGET_GAP  # 0.45 % on this sentence


@pytest.mark.slow
def test_the_shipped_transformer_needs_more_points_and_gets_them():
    """At 20 points the Transformer's gap is above 1 % (3.5 % on this sentence); the page's schedule
    goes on to 50 (0.8 %) and stops there."""
    model, vocab = shipped("transformer")
    rec = translate(model, vocab, SHIPPED_TEXT)
    src_ids = vocab.encode(SHIPPED_TEXT)
    assert gradient_attribution(model, src_ids, rec.target_ids, "ig", 20).completeness_gap > IG_TARGET_GAP
    a = complete_integrated_gradients(model, src_ids, rec.target_ids)
    assert a.steps > 20 and a.completeness_gap <= IG_TARGET_GAP


def test_the_pages_completeness_figure_is_captums_delta_over_f_x_minus_f_baseline(tiny_zoo):
    from ui.zoo_cache import cached_translate
    at = new_app(str(ROOT / "navigation.py"), 120).run()
    at.query_params.update(model="luong-dot", text="3 1 4 1 5")
    at.switch_page("app_pages/attribution.py")
    at = at.run()
    at.pills(key="attribution_methods").set_value(["ig"])
    at = at.run()
    assert not at.exception, [e.value for e in at.exception]
    caption = next(c.value for c in at.caption if "completeness gap" in c.value)
    points, shown = re.search(r"\((\d+) points\).*?= ([0-9.]+)%", caption).groups()
    record = cached_translate("luong-dot", "3 1 4 1 5", 1)
    model, vocab = load_checkpoint(tiny_zoo / "luong-dot")[:2]
    src_ids = vocab.encode("3 1 4 1 5")
    a = gradient_attribution(model, src_ids, record.target_ids, "ig", int(points))
    expected = np.abs(a.delta).sum() / np.abs(a.logprobs - at_baseline(model, src_ids, record.target_ids)).sum()
    assert shown == f"{100 * expected:.2f}"
    table = next(t.value for t in at.dataframe if "f(x) − f(x')" in t.value.columns)
    assert len(table) == len(record.target_ids)


def test_the_aer_command_prints_the_gap_in_total_per_sentence_and_per_step(tiny_zoo, tmp_path, capsys):
    """``python -m model.align --method ig --ig-steps N``: the points asked, and the gap as the page reads
    it, in total over the corpus (Σ |δ_i| / Σ |f(x) − f(x')| over every step), per sentence and per step."""
    from model.align import forced_alignment, main, read_gold
    gold = tmp_path / "gold"
    gold.mkdir()
    (gold / "enfr.src-tgt").write_text("1 2 3 ||| 3 2 1\n4 5 6 7 ||| 7 6 5 4\n", encoding="utf-8")
    (gold / "enfr.gold").write_text("1-3 2-2 3-1\n1-4 2-3 3-2 4-1\n", encoding="utf-8")
    checkpoint = str(tiny_zoo / "rnnsearch")
    assert main(["--checkpoint", checkpoint, "--gold", str(gold), "--method", "ig", "--ig-steps", "7", "--json"]) == 0
    c = json.loads(capsys.readouterr().out)["completeness"]
    model, vocab = load_checkpoint(tiny_zoo / "rnnsearch")[:2]
    parts = [forced_alignment(model, vocab, p.english, p.french, True, "ig", 7).attribution for p in read_gold(gold)]
    assert c["points"] == 7 and all(a.steps == 7 for a in parts)
    steps = np.concatenate([a.step_gaps for a in parts])
    total = sum(np.abs(a.delta).sum() for a in parts) / sum(np.abs(a.logprobs - a.at_baseline).sum() for a in parts)
    assert c["steps"] == steps.size and c["gap_total"] == pytest.approx(total, abs=1e-5)
    assert c["gap_step_median"] == pytest.approx(np.median(steps), abs=1e-5)
    assert c["steps_above_1pct"] == pytest.approx((steps > 0.01).mean(), abs=1e-4)
    assert c["gap_sentence_max"] == pytest.approx(max(a.completeness_gap for a in parts), abs=1e-5)
    assert main(["--checkpoint", checkpoint, "--gold", str(gold), "--method", "ig", "--ig-steps", "7"]) == 0
    assert "integrated gradients, 7 points: completeness gap" in capsys.readouterr().out
