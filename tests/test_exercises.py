"""Checking each exercise kind (teaching/exercises.py): right, wrong, within the tolerance;
partial credit and named slips; which-mechanism levels; local-p's tell-tale sign."""
from __future__ import annotations

import numpy as np
import pytest

from model.align import read_gold
from teaching.exercises import (alignment_exercise, alignment_pool, check_step, CURATED, MECHANISMS, score_alignment,
                                step_exercise, TOLERANCE, which_exercise)
from teaching.worked_example import general_attention, random_inputs
from server.settings import gold


def test_the_same_seed_is_the_same_exercise():
    assert step_exercise(5).inputs.annotations.tolist() == step_exercise(5).inputs.annotations.tolist()
    assert {step_exercise(s).score for s in range(3)} == {"dot", "general", "additive"}
    assert [(step_exercise(s).score, step_exercise(s).words) for s in range(3)] == [("dot", 2), ("general", 3),
                                                                                    ("additive", 4)]
    assert which_exercise(3, list(MECHANISMS), ["a b", "c d"]) == which_exercise(3, list(MECHANISMS), ["a b", "c d"])
    assert alignment_exercise(0, None) is CURATED[1] and alignment_exercise(2, None) is CURATED[0]  # levels 1, 3


def test_the_hansards_pool_is_short_gold_pairs():
    pairs = read_gold(gold())
    pool = alignment_pool(pairs)
    assert len(pool) > len(CURATED) + 20
    for p in pool[len(CURATED):]:
        assert 5 <= len(p.english) <= 10 and 5 <= len(p.french) <= 10 and p.sure <= p.possible
        assert all(i < len(p.english) and k < len(p.french) for i, k in p.possible)


@pytest.mark.parametrize("seed", [0, 1, 2, 7])
def test_compute_one_step_right_within_tolerance_and_wrong(seed):
    ex = step_exercise(seed)
    truth = ex.solution()
    e, a, c = truth.energies.ravel(), truth.weights.ravel(), truth.context.ravel()
    assert check_step(ex, e, a, c).right
    assert check_step(ex, np.round(e, 2), np.round(a, 2), np.round(c, 2)).right  # two decimals, as asked
    near = check_step(ex, e + 0.9 * TOLERANCE, a - 0.9 * TOLERANCE, c)
    assert near.right
    wrong_alpha = a.copy()
    wrong_alpha[1] += 3 * TOLERANCE
    check = check_step(ex, e, wrong_alpha, c)
    assert not check.right and check.wrong_parts() == ["α"] and check.weights.tolist().count(False) == 1
    assert not check.weights[1]
    missing = check_step(ex, [None] * len(e), a, c)
    assert not missing.right and not missing.energies.any()
    assert not check_step(ex, e[:-1], a, c).right  # too few numbers


@pytest.mark.parametrize("seed", [0, 1, 2, 5])
def test_partial_credit_judges_alpha_and_c_from_the_students_own_numbers(seed):
    """e right but e_2 wrong, α = softmax of the student's e, c from that α: e_2 is marked
    wrong, α and c right (consistent with the student's e)."""
    from teaching.worked_example import softmax
    ex = step_exercise(seed)
    e = np.round(ex.solution().energies.ravel(), 2)
    e[1] += 0.4
    alpha = softmax(e.reshape(-1, 1)).ravel()
    check = check_step(ex, e, np.round(alpha, 2), np.round(alpha @ ex.inputs.annotations, 2))
    assert check.energies.tolist() == [j != 1 for j in range(ex.words)]
    assert check.weights.all() and check.context.all() and not check.right and check.wrong_parts() == ["e"]


def test_common_slips_are_named():
    from teaching.exercises import step_slips
    general = step_exercise(1)
    s, H, W = general.inputs.decoder_state, general.inputs.annotations, general.general_weights
    truth = general.solution()
    transposed = H @ W @ s
    assert any("W transposed" in x for x in check_step(general, transposed, truth.weights, truth.context).slips)
    additive = step_exercise(2)
    x, h = additive.inputs, 2
    no_tanh = (x.decoder_state @ x.W[:h] + x.annotations @ x.W[h:]) @ x.v
    assert any("tanh forgotten" in m for m in step_slips(additive, no_tanh.ravel(), None, None))
    t = additive.solution()
    found = check_step(additive, t.energies.ravel(), np.ones(4), t.energies.ravel() @ x.annotations).slips
    assert any("wrong axis" in m for m in found) and any("context from e" in m for m in found)
    assert check_step(additive, t.energies.ravel(), t.weights.ravel(), t.context.ravel()).slips == ()


def test_hints_and_workings_show_every_intermediate_number():
    from teaching.exercises import step_hints, step_workings
    ex = step_exercise(2)  # additive
    t = ex.solution()
    hints = step_hints(ex)
    assert len(hints) == 2 and "W_a s" in hints[0] and f"{t.energies.ravel()[0]:.2f}" in hints[1]
    names = [name for name, _ in step_workings(ex)]
    assert names[:4] == ["W_a s", "U_a h_j", "W_a s + U_a h_j", r"\tanh(W_a s + U_a h_j)"]
    assert {r"\exp(e_j)", r"\Sigma = \sum_k \exp(e_k)", r"\alpha_j h_j"} <= set(names)
    values = dict(step_workings(ex))
    assert np.allclose(values[r"\exp(e_j)"].sum(), values[r"\Sigma = \sum_k \exp(e_k)"])


def test_general_score_is_s_W_h():
    inputs = random_inputs(3, words=3, hidden=3)
    W = np.arange(9.0).reshape(3, 3) / 10
    steps = general_attention(inputs, W)
    expected = [inputs.decoder_state @ W @ h for h in inputs.annotations]
    assert np.allclose(steps.energies.ravel(), expected) and steps.weights.sum() == pytest.approx(1.0)


def test_predict_the_alignment_scores_against_gold_and_model():
    pair = CURATED[1]  # Where is the train station ? -> Où est la gare ?
    perfect = score_alignment(set(pair.sure), pair, set(pair.sure))
    assert perfect.aer == 0 and perfect.model_agreement == 1 and not perfect.missed and not perfect.wrong
    shifted = {(i, (k + 1) % len(pair.french)) for i, k in pair.sure}
    bad = score_alignment(shifted, pair, set(pair.sure))
    assert bad.aer > 0.5 and bad.wrong and bad.missed


def test_model_agreement_is_precision_and_recall_and_model_links_split_by_the_gold():
    from teaching.exercises import model_links_against_gold
    pair = CURATED[1]  # Where is the train station ? -> Où est la gare ?
    model_links = {(0, 0), (1, 1), (2, 2), (4, 3), (5, 4)}
    everything = {(i, k) for i in range(len(pair.english)) for k in range(len(pair.french))}
    greedy_marks = score_alignment(everything, pair, model_links)
    assert greedy_marks.model_agreement == 1 and greedy_marks.model_precision == pytest.approx(5 / len(everything))
    right, wrong = model_links_against_gold({(0, 0)}, model_links | {(0, 4)}, pair)
    assert right == [(1, 1), (2, 2), (4, 3), (5, 4)] and wrong == [(0, 4)]


def test_which_mechanism_draws_only_loaded_models():
    ex = which_exercise(1, ["rnnsearch"], ["x"])
    assert (ex.model, ex.sentence, ex.answer) == ("rnnsearch", "x", "additive")


def test_which_mechanism_asks_what_a_heatmap_can_show():
    """Levels 1 and 2 ask the family, drawn family first (the three Luong global scores are one
    answer of four), level 2 on long sentences; level 3 the exact score; the cues are measured."""
    from collections import Counter
    from teaching.exercises import attention_cues, FAMILY_OF, LONG_WORDS
    sentences = ["a b c", " ".join(["w"] * 20)]
    drawn = [which_exercise(s, list(MECHANISMS), sentences) for s in range(300)]
    assert {e.question for e in drawn[0::3]} == {"family"} and {e.question for e in drawn[2::3]} == {"mechanism"}
    assert all(len(e.sentence.split()) >= LONG_WORDS for e in drawn[1::3])
    families = Counter(FAMILY_OF[e.model] for e in drawn[0::3])
    assert len(families) == 4 and max(families.values()) < 2 * min(families.values())
    cues = attention_cues(np.array([[1.0, 0.0], [0.5, 0.5]]))
    assert cues["sharpness"] == 0.75 and cues["zeros"] == 0.25 and cues["entropy"] == pytest.approx(np.log(2) / 2)
    with pytest.raises(ValueError):
        which_exercise(1, ["rnnenc"], ["x"])


def test_local_p_tell_is_true_of_the_model(tiny_zoo):
    """TELLS["luong-local"] says every cell outside the window is exactly 0 in the heatmap:
    the record's weights (what the heatmap draws) on the tiny local-p, over a sentence wider
    than its window."""
    from model.checkpoint import load_checkpoint
    from teaching.exercises import TELLS
    from model.search import greedy, prepare_source
    assert "every cell outside it is exactly 0" in TELLS["luong-local"]
    model, vocab, _ = load_checkpoint(tiny_zoo / "luong-local")
    rec = greedy(model, vocab, prepare_source(vocab, "1 2 3 4 5 6 7 8 9 1 2 3"))
    D = model.cfg.local_window
    distance = np.abs(np.arange(rec.weights.shape[1])[None, :] - rec.positions[:, None])
    assert (distance > D).any(), "the sentence must be wider than the window"
    assert (rec.weights[distance > D] == 0).all() and np.allclose(rec.weights.sum(1), 1)
