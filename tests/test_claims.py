"""What the app says about the math, checked against what the models compute.

Every test here is one statement a page, the README or a doc makes about the models: its
docstring names the source, and where the statement is a caption the test first requires
that caption's text (:func:`says`), so editing the caption without the model, or the
model without the caption, fails the suite. The numbers are recomputed on the suite's
tiny checkpoints (tests/conftest.py) or read from a shipped record (metrics.json, the
safetensors header).
"""
from __future__ import annotations

import json
import re

import numpy as np
import pytest
import torch

from conftest import ROOT
from model.attention import AdditiveAttention, GeneralAttention, LocalPAttention, local_p_forms
from model.config import ModelConfig
from model.data import Batch
from model.internals import annotation_values, local_p_steps, memory_bridge, recomputed_energies
from model.search import beam_search, greedy, prepare_source
from model.zoo import zoo_names
from model.vocabulary import BOS_ID

DIGITS = "1 2 3 4 5 6 7"
LONG = "1 2 3 4 5 6 7 8 9"  # 10 positions with </s>: wider than the tiny local-p's window (D = 4)
ATTENDING = tuple(zoo_names(attending=True))


def says(source: str, *texts: str) -> None:
    """The file ``source`` (a page, the README, a doc) holds each of ``texts`` verbatim; in
    Python source, a caption's string literals split over lines count as one string."""
    content = (ROOT / source).read_text(encoding="utf-8")
    if source.endswith(".py"):
        content = re.sub(r'"\s*\n\s*(?:[rf]{1,2})?"', "", content)
    for text in texts:
        assert text in content, f"{source} no longer says: {text!r}"


def record(tiny, name: str, text: str = DIGITS):
    model, vocab = tiny[name]
    source = prepare_source(vocab, text)
    return model, source, greedy(model, vocab, source)


@torch.no_grad()
def encoded(model, source):
    batch = Batch([list(source.ids)])
    return model.encoder(batch.src, batch.src_len)


def finite_close(a, b, atol=1e-4) -> bool:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return bool((np.isfinite(a) == np.isfinite(b)).all()
                and np.allclose(np.where(np.isfinite(a), a, 0), np.where(np.isfinite(b), b, 0), atol=atol, rtol=1e-4))


# -- the scores -----------------------------------------------------------------------------------
@torch.no_grad()
def test_concat_is_the_additive_score_up_to_a_bias():
    """Compare ("concat … is the additive score up to a bias"), Step through (concat's + b_a),
    design.md: v_a^T tanh(W_a [s ; h] + b_a) with W_a = [W_a^s, W_a^h] is AdditiveAttention's
    score; without U_a's bias it is Luong's concat exactly, and the bias is there."""
    says("app_pages/compare.py", "is the additive score up to a bias")
    says("app_pages/step_through.py", r"e_{ij} = v_a^\top \tanh\left(W_a [s_i ; \bar h_j] + b_a\right)")
    torch.manual_seed(0)
    att = AdditiveAttention(5, 6, 7)
    s, h, mask = torch.randn(3, 5), torch.randn(3, 4, 6), torch.ones(3, 4, dtype=torch.bool)
    W = torch.cat([att.W_a.weight, att.U_a.weight], 1)  # W_a [s ; h] = W_a^s s + W_a^h h
    s_h = torch.cat([s.unsqueeze(1).expand(-1, 4, -1), h], -1)  # [s ; h_j]: 3 x 4 x 11
    concat = torch.tanh(s_h @ W.T + att.U_a.bias) @ att.v_a.weight.squeeze(0)
    assert torch.allclose(att.score(s, att.compute_proj_keys(h), mask), concat, atol=1e-5)
    assert att.U_a.bias is not None and att.U_a.bias.abs().sum() > 0  # the bias neither paper writes
    with torch.no_grad():
        att.U_a.bias.zero_()
    luong = torch.tanh(s_h @ W.T) @ att.v_a.weight.squeeze(0)
    assert torch.allclose(att.score(s, att.compute_proj_keys(h), mask), luong, atol=1e-5)


@torch.no_grad()
def test_dot_scores_through_the_learned_memory_bridge(tiny):
    """Compare ("our dot scores $s_i^\\top W_m h_j$"), Models and Step through (dot's
    s_i^T W_m h_j), design.md: the energies of luong-dot are s_i · (W_m h_j) with h_j the
    bi-GRU annotations, W_m is a learned parameter, and W_m h_j is also what c_i averages."""
    says("app_pages/compare.py", r"So our dot scores $s_i^\top W_m h_j$")
    says("app_pages/step_through.py", r"e_{ij} = s_i^\top \bar h_j = s_i^\top W_m h_j")
    model, source, rec = record(tiny, "luong-dot")
    W_m = model.decoder.W_m.weight.float()
    assert model.decoder.W_m.weight.requires_grad and model.decoder.W_m.bias is None
    h = encoded(model, source).annotations[0]  # S x 2H
    bridged = h @ W_m.T  # h̄_j = W_m h_j: S x H
    assert np.allclose(rec.energies, rec.query_states @ bridged.numpy().T, atol=1e-4)
    assert np.allclose(rec.contexts, rec.weights @ bridged.numpy(), atol=1e-4)  # the values are the keys
    assert not np.allclose(W_m[:, :W_m.shape[0]].numpy(), np.eye(W_m.shape[0]), atol=0.1)  # learned, not a copy


@torch.no_grad()
def test_general_is_dot_with_W_a_before_the_bridge(tiny):
    """Compare ("$s_i^\\top W_a W_m h_j$, is the same function class"), Step through:
    luong-general's energies are s_i^T W_a W_m h_j."""
    says("app_pages/compare.py", r"$s_i^\top W_a W_m h_j$, is the same function class for the score")
    says("app_pages/step_through.py", r"e_{ij} = s_i^\top W_a \bar h_j = s_i^\top W_a W_m h_j")
    model, source, rec = record(tiny, "luong-general")
    W_m, W_a = model.decoder.W_m.weight.float(), model.decoder.attention.W_a.weight.float()
    keys = (encoded(model, source).annotations[0] @ W_m.T @ W_a.T).numpy()  # W_a W_m h_j
    assert np.allclose(rec.energies, rec.query_states @ keys.T, atol=1e-4)


def test_shipped_memory_bridge_and_general_sizes():
    """Compare ("512 → 256 in the shipped models", "65,536 more parameters"), design.md
    (131,072 parameters): read from the shipped weights' safetensors headers."""
    says("app_pages/compare.py", "(512 → 256 in the shipped models, no bias)", "$W_a$'s 65,536 more parameters")
    says("docs/design.md", "(512 → 256, no bias, 131,072 parameters)")
    from safetensors import safe_open
    shapes = {}
    for name in ("luong-dot", "luong-general"):
        path = ROOT / "checkpoints" / name / "model.safetensors"
        if not path.exists():
            pytest.skip("shipped checkpoints not present")
        with safe_open(str(path), "pt") as f:
            shapes[name] = {k: tuple(f.get_slice(k).get_shape()) for k in f.keys()}
    assert shapes["luong-dot"]["decoder.W_m.weight"] == (256, 512)
    assert "decoder.W_m.bias" not in shapes["luong-dot"]
    assert not any(k.startswith("decoder.attention.") for k in shapes["luong-dot"])  # dot's own score: none
    assert int(np.prod(shapes["luong-general"]["decoder.attention.W_a.weight"])) == 65_536
    assert int(np.prod(shapes["luong-general"]["decoder.W_m.weight"])) == 131_072


def test_models_page_names_the_bridge(tiny):
    """Models ("Memory bridge W_m"): the numbers it prints come from the model itself."""
    says("app_pages/models.py", "**Memory bridge W_m**", "a learned bilinear score, not a parameter-free one")
    model, _ = tiny["luong-dot"]
    bridge = memory_bridge(model)
    assert (bridge.rows, bridge.cols) == (model.cfg.dec_hidden, 2 * model.cfg.enc_hidden)
    assert bridge.parameters == bridge.rows * bridge.cols and bridge.score_parameters == 0
    assert memory_bridge(tiny["luong-general"][0]).score_parameters == model.cfg.dec_hidden ** 2
    assert memory_bridge(tiny["rnnsearch"][0]) is None


# -- where the decoders score -----------------------------------------------------------------------
def test_rnnsearch_scores_the_previous_state(tiny):
    """Step through ("attention reads the *previous* state, *before* the RNN step"), README
    ("RNNsearch, which reads s_{i−1}"): the query of step i is the state of step i − 1, and
    scoring it again gives the decoder's energies; scoring s_i instead does not."""
    says("app_pages/step_through.py", "attention reads the *previous* state, *before* the RNN step")
    says("README.md", "RNNsearch, which reads")
    model, source, rec = record(tiny, "rnnsearch")
    assert np.array_equal(rec.query_states[1:], rec.states[:-1])
    assert finite_close(recomputed_energies(model, source.ids, rec.query_states), rec.energies)
    assert not finite_close(recomputed_energies(model, source.ids, rec.states), rec.energies, atol=1e-2)


def test_luong_scores_the_current_state(tiny):
    """Step through ("the RNN step comes *first*; attention reads the *current* state")."""
    says("app_pages/step_through.py", "the RNN step comes *first*; attention reads the *current* state")
    for name in ("luong-dot", "luong-general", "luong-concat", "luong-local"):
        _, _, rec = record(tiny, name)
        assert np.array_equal(rec.query_states, rec.states), name


def test_exercise_captions_cite_the_tanh_form_and_the_query_rightly(tiny):
    """Exercises (teaching/exercises.py): the tanh form is Bahdanau's appendix A.1.2 (eq. 6 only
    names a(s_{i−1}, h_j)); every model's row i is the attention used to choose word i, the
    difference being that RNNsearch's query s_{i−1} has not read y_{i−1} while Luong's s_i has
    (s_i is the state after the step that read y_{i−1}, s_{i−1} the one before it); and the
    Transformer scales the dot product, not q_i."""
    from teaching.exercises import SCORES, TELLS
    says("teaching/exercises.py", "Bahdanau additive (appendix A.1.2)", "eq. 6 only names it a(s_{i−1}, h_j)",
         "Bahdanau's s_{i−1} has not yet read the previous word y_{i−1}, while Luong's s_i has",
         "the dot product q_i·k_j is scaled by 1/√d_k (Vaswani eq. 1)")
    assert "(eq. 6)" not in SCORES["additive"] and "scaled by 1/√d_k, Vaswani" not in TELLS["transformer"]
    assert "to choose word i:" not in TELLS["rnnsearch"]
    _, _, bahdanau = record(tiny, "rnnsearch")
    assert np.array_equal(bahdanau.query_states[1:], bahdanau.states[:-1])  # step i's query: before reading y_{i−1}
    _, _, luong = record(tiny, "luong-general")
    assert np.array_equal(luong.query_states, luong.states)  # step i's query: after reading y_{i−1}


@pytest.mark.parametrize("name", ["rnnsearch", "luong-dot", "luong-general", "luong-concat", "luong-local"])
def test_step_through_recomputed_energies_match_the_decoders(tiny, name):
    """Step through ("Scored again here from the query state by the model's own attention
    module, $e_{ij}$ differs from the decoder's by at most …"): the recomputation it shows."""
    says("app_pages/step_through.py", "Scored again here from the query state by the model's own attention module")
    model, source, rec = record(tiny, name)
    assert finite_close(recomputed_energies(model, source.ids, rec.query_states), rec.energies)


@torch.no_grad()
def test_deep_output_reads_s_i_as_eq_4(tiny):
    """Step through ("The deep output reads $s_i$ … as eq. 4 … A.2.2 writes $U_o s_{i-1}$"),
    design.md: maxout(U_o s_i + V_o E y_{i-1} + C_o c_i) gives the record's token
    probabilities; with s_{i-1} in its place it does not."""
    says("app_pages/step_through.py", "The deep output reads $s_i$, the state after the step, as eq. 4's",
          "Appendix A.2.2 writes $U_o s_{i-1}$ there.")
    says("docs/design.md", "as Bahdanau et al.'s eq. 4 does")
    model, _, rec = record(tiny, "rnnsearch")
    dec = model.decoder
    previous = torch.tensor([BOS_ID, *rec.target_ids[:-1]])
    emb, c = model.trg_embed(previous).float(), torch.as_tensor(rec.contexts)

    def logprobs(states):
        t = dec.maxout(dec.U_o(torch.as_tensor(states)) + dec.V_o(emb) + dec.C_o(c))
        out = torch.log_softmax(model.logits(t).float(), -1)
        return out[torch.arange(len(rec.target_ids)), torch.tensor(rec.target_ids)].numpy()

    assert np.allclose(logprobs(rec.states), rec.token_logprobs, atol=1e-4)
    assert not np.allclose(logprobs(rec.query_states), rec.token_logprobs, atol=1e-2)


@torch.no_grad()
def test_luong_attentional_state(tiny):
    """Step through ("⑤ Attentional state (eq. 5)", h̃_i = tanh(W_c [c_i ; s_i]))."""
    says("app_pages/step_through.py", r"\tilde h_i = \tanh\left(W_c [c_i ; s_i]\right)")
    model, _, rec = record(tiny, "luong-general")
    joined = torch.as_tensor(np.concatenate([rec.contexts, rec.states], 1))
    assert np.allclose(torch.tanh(model.decoder.W_c(joined)).numpy(), rec.attentional, atol=1e-5)


@torch.no_grad()
def test_rnnenc_reads_one_fixed_context(tiny):
    """Step through (c = [→h_{T_x} ; ←h_1], "The fixed c is the same at every step"), Compare,
    design.md (a bidirectional encoder, stronger than Cho et al.'s)."""
    says("app_pages/step_through.py", r"c = [\overrightarrow{h}_{T_x} ; \overleftarrow{h}_1]",
         "The fixed c is the same at every step")
    says("app_pages/compare.py", "It is a stronger baseline than Cho et al.'s")
    says("app_pages/bleu_length.py", "a stronger baseline than the paper's RNNencdec")
    model, source, rec = record(tiny, "rnnenc")
    enc = encoded(model, source)
    assert model.encoder.rnn.bidirectional
    c = torch.cat([enc.forward_last, enc.backward_first], -1)[0].numpy()
    assert rec.weights is None and np.allclose(rec.contexts, c[None, :], atol=1e-5)


# -- the weights ------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ATTENDING)
def test_rows_sum_to_one(tiny, name):
    """Step through ("$\\sum_j \\alpha_{ij}$ = 1.0000" on every step), search.py (α summing to
    1 over the unpadded source), Compare (α from 0 to 1 on one scale)."""
    says("app_pages/step_through.py", r"$\\sum_j \\alpha_{{{i}j}}$ = {weights.sum():.4f}")
    _, _, rec = record(tiny, name)
    assert np.allclose(rec.weights.sum(1), 1.0, atol=1e-5) and (rec.weights >= 0).all()


@pytest.mark.parametrize("name", ["rnnsearch", "luong-dot", "luong-general", "luong-concat", "luong-local"])
def test_context_is_the_weighted_sum(tiny, name):
    """Step through ("The decoder's own $c_i$ and this sum differ by at most …: the same
    numbers"; local-p: "times the window mass $m_i$"), attention.py (c_i = Σ_j α_ij h_j)."""
    says("app_pages/step_through.py", "and this sum differ by", "times the window mass $m_{{{i}}}$")
    from model.internals import annotation_values
    model, source, rec = record(tiny, name)
    mass = rec.window_masses[:, None] if rec.window_masses is not None else 1.0
    assert np.allclose(mass * rec.weights @ annotation_values(model, source.ids), rec.contexts, atol=1e-4)


def test_local_p_weights_vanish_outside_the_window(tiny):
    """Step through ("only tokens within D = … of it get weight", p_i among "positions
    0…S−1"): on a sentence wider than the window, α_ij = 0 wherever |j − p_i| > D."""
    says("app_pages/step_through.py", "of it get weight", "(positions 0…{len(record.source_tokens) - 1})")
    model, _, rec = record(tiny, "luong-local", LONG)
    S, D = len(rec.source_tokens), model.cfg.local_window
    assert S > 2 * D + 1
    far = np.abs(np.arange(S)[None, :] - rec.positions[:, None]) > D
    assert far.any() and (rec.weights[far] == 0).all()
    assert ((rec.positions >= 0) & (rec.positions <= S - 1)).all()


U32 = float(np.finfo(np.float32).eps) / 2  # float32's unit roundoff: one rounding's relative error, 2⁻²⁴


def float32_gap(size, roundings: int):
    """How far two float32 computations of one quantity may lie apart when they round in another
    order (another batch shape, another CPU's kernels): each of ``roundings`` steps errs by at most
    u times the size of what it rounds (Higham 2002, §3.1: a sum of n products, |δ| ≤ n·u·Σ|x_k y_k|),
    and the two computations err independently."""
    return 2 * roundings * U32 * np.asarray(size, dtype=float)


@torch.no_grad()
def local_p_gaps(model, source, rec) -> dict[str, np.ndarray]:
    """Float32 gaps (:func:`float32_gap`) between a local-p record and its steps recomputed in another
    batch shape. e_ij = q_i·k_j sums H products, of size Σ_k |q_ik k_jk|; p_i = (S−1)·σ(v_p·tanh(W_p q_i))
    sums H products twice, and σ' ≤ 1/4; e'_ij = e_ij − (j − p_i)²/2σ² moves by |j − p_i|/σ² per unit of
    p_i. The softmax, the window mass (exp of a difference of log-sum-exps, each as large as the largest
    |e'|) and the weights a_i(j) then move by at most twice the row's largest energy gap, relatively."""
    attention = model.decoder.attention
    batch = Batch([list(source.ids)])
    memory = model.encode(batch.src, batch.src_len)[1]
    q = torch.tensor(rec.query_states)  # T x H
    keys = memory.proj_keys[0]  # S x H
    H, S = q.shape[1], keys.shape[0]
    sizes = (q.abs() @ keys.abs().T).numpy()  # T x S: Σ_k |q_ik k_jk|
    W_p, v_p = attention.W_p.weight.float(), attention.v_p.weight.float()[0].abs().numpy()  # held in fp16, exactly
    hidden = float32_gap((q.abs() @ W_p.abs().T).numpy(), H)  # T x H: W_p q_i
    position = (S - 1) / 4 * (float32_gap(torch.tanh(q @ W_p.T).abs().numpy() @ v_p, H) + hidden @ v_p)  # T
    distance = np.abs(np.arange(S)[None, :] - rec.positions[:, None])  # T x S
    largest = np.abs(np.where(np.isfinite(rec.energies), rec.energies, 0)).max(axis=1)  # T
    energies = float32_gap(sizes, H) + distance / attention.sigma ** 2 * position[:, None] \
        + float32_gap(largest, 4)[:, None]  # the Gaussian's log, the log-sum-exps
    relative = 2 * energies.max(axis=1)  # T: softmax, mass, a_i(j)
    return {"energies": energies, "position": position, "relative": relative}


def test_local_p_shipped_form_is_what_the_model_computes(tiny):
    """Step through (the two forms side by side: "The shipped context is the decoder's own
    $c_i$"), attention.py, design.md: the whole-sentence form's weights are the record's
    renormalised α times m_i, its context the record's c_i; Luong's eq. 10 form renormalises
    to the same α. The recomputation runs the T steps as one batch, the decoder one at a time:
    the two agree within float32's rounding of the sums involved (:func:`local_p_gaps`)."""
    says("app_pages/step_through.py", "The shipped context is the", "softmax over the **whole sentence**")
    model, source, rec = record(tiny, "luong-local", LONG)
    steps = local_p_steps(model, source.ids, rec.query_states)
    gap = local_p_gaps(model, source, rec)
    finite = np.isfinite(rec.energies)
    assert (np.isfinite(steps.energies) == finite).all()
    assert (np.abs(steps.energies[finite] - rec.energies[finite]) <= gap["energies"][finite]).all()
    assert (np.abs(steps.positions - rec.positions) <= gap["position"]).all()
    assert (np.abs(steps.shipped_mass - rec.window_masses) <= gap["relative"] * rec.window_masses).all()
    shipped = rec.weights * rec.window_masses[:, None]
    assert (np.abs(steps.shipped_weights - shipped) <= gap["relative"][:, None] * shipped).all()
    sizes = np.abs(steps.shipped_weights) @ np.abs(annotation_values(model, source.ids))  # T x H: Σ_j |a_i(j)| |h̄_j|
    summed = float32_gap(1, len(rec.source_tokens))  # the context's own sum over S positions
    assert (np.abs(steps.shipped_context - rec.contexts) <= (gap["relative"][:, None] + summed) * sizes).all()
    renormalised = steps.luong_weights / steps.luong_mass[:, None]
    assert (np.abs(renormalised - rec.weights) <= gap["relative"][:, None] * rec.weights).all()
    assert (steps.luong_mass >= steps.shipped_mass * (1 - gap["relative"])).all()  # eq. 10's softmax loses nothing outside


def test_local_p_forms_differ_unless_the_window_covers_the_sentence():
    """attention.py, design.md ("their masses and contexts differ whenever align has mass
    outside the window"): Luong's eq. 10 normalises align over the 2D + 1 window positions."""
    says("docs/design.md", "a_t ∈ R^{2D+1}, i.e. align is the softmax over the window's 2D + 1 positions only")
    torch.manual_seed(1)
    energies, values = torch.randn(2, 12), torch.randn(2, 12, 3)
    mask, p = torch.ones(2, 12, dtype=torch.bool), torch.tensor([5.3, 2.0])
    narrow = local_p_forms(energies, p, mask, 2, values)
    inside = (torch.arange(12)[None, :] - p[:, None]).abs() <= 2
    window_softmax = torch.softmax(energies.masked_fill(~inside, float("-inf")), -1)
    gauss = torch.exp(-(torch.arange(12)[None, :] - p[:, None]) ** 2 / (2 * 1.0 ** 2)) * inside
    assert torch.allclose(narrow.luong_weights, window_softmax * gauss, atol=1e-6)
    assert torch.allclose(narrow.shipped_weights, torch.softmax(energies, -1) * gauss, atol=1e-6)
    assert (narrow.luong_context - narrow.shipped_context).abs().max() > 0.05
    wide = local_p_forms(energies, p, mask, 12, values)  # the window covers the sentence
    assert torch.allclose(wide.luong_context, wide.shipped_context, atol=1e-6)


@pytest.mark.parametrize("bad", [0, 0.3, 0.99])
def test_half_width_below_one_is_refused(bad):
    """design.md ("The config and `set_half_width` refuse a half-width D below 1"),
    config.py (local_window "at least 1")."""
    says("docs/design.md", "The config and `set_half_width` refuse a half-width D below 1")
    with pytest.raises(ValueError, match="half-width"):
        ModelConfig(decoder="luong", attention="local-general", local_window=bad)
    att = LocalPAttention(GeneralAttention(4, 4), 4, window=2)
    with pytest.raises(ValueError, match="half-width"):
        att.set_half_width(bad)
    assert att.D == 2  # refused, unchanged
    att.set_half_width(1)  # one position either side: every row still holds a position
    weights = torch.softmax(att.score(torch.randn(3, 4), torch.randn(3, 9, 4), torch.ones(3, 9, dtype=torch.bool)), -1)
    assert torch.isfinite(weights).all()


# -- the Transformer ------------------------------------------------------------------------------
def test_transformer_shown_attention_is_the_mean_of_its_heads(tiny):
    """Step through ("③ The attention shown: heads averaged", α = (1/h) Σ_k α^(k)), decoders.py
    and design.md (the energies are the heads' energies averaged, whose softmax is not the
    weights shown)."""
    says("app_pages/step_through.py", r"\alpha_{ij} = \frac{1}{h} \sum_k \alpha^{(k)}_{ij}")
    says("docs/design.md", "so the\n  softmax of that mean is not the weights shown")
    model, _, rec = record(tiny, "transformer")
    shown = model.cfg.shown_layer % model.cfg.layers
    heads = rec.head_weights[:, shown]  # T x h x S
    assert np.allclose(rec.weights, heads.mean(1), atol=1e-6)
    # each head's energies are log α^(k) up to a constant per step: their mean is the record's, up to one
    offset = rec.energies - np.log(heads).mean(1)
    assert np.allclose(offset, offset[:, :1], atol=1e-3)
    softmax = np.exp(rec.energies - rec.energies.max(1, keepdims=True))
    assert np.abs(softmax / softmax.sum(1, keepdims=True) - rec.weights).max() > 1e-3


def test_transformer_packs_only_its_output_layer(tiny):
    """design.md ("Only its output layer is packed")."""
    says("docs/design.md", "**Only its output layer is packed.**")
    from model.packed import PackedGRUCell, PackedLinear, packing_available
    if not packing_available():
        pytest.skip("this torch build cannot pack")
    model, _ = tiny["transformer"]
    assert model.packed_output is not None and model.fused_step is None
    assert not any(isinstance(m, (PackedLinear, PackedGRUCell)) for m in model.modules())


# -- search and the worked example ------------------------------------------------------------------
@pytest.mark.parametrize("name", ["rnnsearch", "luong-local", "transformer"])
def test_beam_one_is_greedy(tiny, name):
    """Beam tree ("k = 1 is greedy decoding: a tree with a single surviving branch")."""
    says("app_pages/beam_tree.py", "k = 1 is greedy decoding")
    model, vocab = tiny[name]
    source = prepare_source(vocab, DIGITS)
    beam, best = beam_search(model, vocab, source, 1), greedy(model, vocab, source)
    assert beam.target_ids == best.target_ids and beam.score == pytest.approx(best.score, abs=1e-4)
    assert np.allclose(beam.weights, best.weights, atol=1e-5)


def test_worked_example_counts():
    """Worked example ("Additive attention learns 2·4·3 + 3 = 27 numbers"; the toy dot
    product "on its own learns none")."""
    says("app_pages/worked_example.py", "learns 2·4·3 + 3 = 27 numbers", "the dot product on its own learns none")
    from teaching.worked_example import cost
    additive, dot = cost()
    assert additive["parameters"] == 27 and dot["parameters"] == 0


def test_multihead_energies_add_up_to_luongs():
    """From Luong to the Transformer ("the heads' energies (times $\\sqrt{d_k}$) add up to
    Luong's exactly"), multihead.py."""
    says("app_pages/luong_to_transformer.py", "energies (times $\\\\sqrt{{d_k}}$) add up")
    from teaching.multihead import as_query_keys_values
    rng = np.random.default_rng(0)
    step = as_query_keys_values(rng.normal(size=16), rng.normal(size=(5, 16)), heads=4)
    assert np.allclose(step.head_energies.sum(0) * np.sqrt(step.d_k), step.energies)
    assert np.allclose(step.qkv_context, step.context)


# -- the figures in the README and the docs ---------------------------------------------------------
def test_local_p_tracking_figures_are_the_shipped_record():
    """README (local-p's line) and results.md: ρ against the alignment before the Gaussian,
    its chance level and the ρ against the weights shown are those of the shipped
    metrics.json (python -m model.evaluate --positions); nothing calls the shipped form
    "eq. 10 as written"."""
    path = ROOT / "checkpoints" / "luong-local" / "metrics.json"
    if not path.exists():
        pytest.skip("shipped checkpoints not present")
    tracking = json.loads(path.read_text())["position_tracking"]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    line = re.search(r"- \*\*Local-p\*\*.*?\n(?=- |\n)", readme, re.S).group(0)
    for figure in (f"**{tracking['spearman_align']:.3f}**", f"{tracking['chance_align']:.3f} by chance",
                   f"{tracking['spearman_weights']:.3f}", f"{tracking['scored']:,}"):
        assert figure in line, figure
    says("docs/results.md", f"**{tracking['spearman_align']:.3f}**", f"chance level of {tracking['chance_align']:.3f}")
    for source in ("README.md", "docs/design.md", "docs/results.md", "model/config.py", "model/attention.py",
                   "configs/luong-local.yaml", "app_pages/step_through.py", "app_pages/models.py"):
        assert not re.search(r"\bas written\b", (ROOT / source).read_text(encoding="utf-8")), source


# -- attention against attribution: the knock-out test and integrated gradients (docs/attribution.md) --
FAITHFULNESS = ("results/attribution/faithfulness.json", "results/attribution/faithfulness_hansards.json")
# words once stronger than the numbers (issue #71): the matched comparison rests on the removals that find a
# partner, not on "every other removal"; not every figure had an interval; the "position" control was no match;
# a degenerate interval is not an estimate; "agree" is a tolerance; a knock-out also gives the weight away
OVERSTATED = ("every other removal of the same weight", "every rate, mean and median", "position-matched",
              "+0.0 [+0.0, +0.0]", "on every step the most-attended piece also holds most of the attribution",
              "how much the step uses what its attention reads at j")


def test_no_phrase_stronger_than_its_numbers_stands_in_the_docs_pages_or_model():
    """None of OVERSTATED in docs/, app_pages/ or model/ (captions split over lines count as one string);
    a matched figure in the docs never has a degenerate interval (it reads "not estimable" instead)."""
    for folder in ("docs", "app_pages", "model"):
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix not in (".py", ".md"):
                continue
            text = path.read_text(encoding="utf-8")
            if path.suffix == ".py":
                text = re.sub(r'"\s*\n\s*(?:[rf]{1,2})?"', "", text)
            text = " ".join(text.split())
            for phrase in OVERSTATED:
                assert phrase not in text, f"{path.relative_to(ROOT)} says {phrase!r}"
    doc = (ROOT / "docs" / "attribution.md").read_text(encoding="utf-8")
    for line in doc.splitlines():
        if "matched effect" in line or "argmax − partner" in line:
            assert not re.search(r"\[([-+]?\d+\.\d+), \1\]", line), line
    says("app_pages/attribution.py", "the weight removed moves onto the other pieces in proportion",
         "so the weight removed moves onto the other pieces in proportion to their α")


@pytest.mark.parametrize("path", FAITHFULNESS)
def test_the_knock_out_sections_are_the_shipped_results(path):
    """docs/attribution.md, "The knock-out test, matched on what the removal leaves": every table and
    every sentence under each sample's marker is what ``model.faithfulness_report.report`` makes of the
    shipped results file (the Models page prints the same ``findings``); each sample is random, and the
    doc gives its size, seed and command."""
    from model.faithfulness_report import report
    result = json.loads((ROOT / path).read_text(encoding="utf-8"))
    doc = (ROOT / "docs" / "attribution.md").read_text(encoding="utf-8")
    after = doc.split(f"<!-- faithfulness: {path} -->", 1)
    assert len(after) == 2, f"docs/attribution.md has no section for {path}"
    section = after[1].split("\n## ", 1)[0].split("<!-- faithfulness", 1)[0]
    for block in report(result).split("\n\n"):
        assert block in section, f"docs/attribution.md no longer says, for {path}: {block[:120]!r}"
    sample = result["sample"]
    assert sample["sampling"].startswith(f"random: {sample['sentences']} of the")
    flags = f"--min-words {sample['min_words']}" + (f" --max-words {sample['max_words']}" if sample["max_words"] else "")
    says("docs/attribution.md", f"{flags} --sample {sample['sentences']} --seed {sample['seed']}")
    assert {m["model"] for m in result["models"]} == set(ATTENDING)  # every attention model of the zoo
    assert all(m["sentences"] == result["models"][0]["sentences"] for m in result["models"])


def test_the_replication_table_is_the_shipped_results_side_by_side():
    """docs/attribution.md's replication table and the findings that hold on both corpora are
    ``report(newstest2014, Hansards)`` of the shipped results."""
    from model.faithfulness_report import report
    news, hansards = (json.loads((ROOT / p).read_text(encoding="utf-8")) for p in FAITHFULNESS)
    doc = (ROOT / "docs" / "attribution.md").read_text(encoding="utf-8")
    section = doc.split("<!-- faithfulness-replication -->", 1)[1].split("\n## ", 1)[0]
    for block in report(news, hansards).split("\n\n"):
        assert block in section, f"docs/attribution.md no longer says: {block[:120]!r}"
    assert news["sample"]["origin"] == "newstest2014" and "hansards-align" in hansards["sample"]["gold"]


def test_the_models_page_prints_the_findings_of_the_shipped_results():
    """The Models page's sentences about the knock-out test are ``findings(result)``, made from the numbers,
    for each results file it finds, not prose of its own."""
    says("app_pages/models.py", 'st.markdown("\\n".join(f"- {line}" for line in findings(result)))',
         'knock_out_tables(result, "newstest2014")', '"faithfulness_hansards.json"')
    page = (ROOT / "app_pages" / "models.py").read_text(encoding="utf-8")
    for overclaim in ("adds little", "faithful account", "fair controls", "comparable weight", "the word itself"):
        assert overclaim not in page, overclaim


def test_a_knock_out_renormalises_so_removing_a_small_weight_can_raise_log_p(tiny):
    """docs/attribution.md and findings: "the weight of the piece removed goes to the other pieces in
    proportion, most of it to the argmax, so removing a piece of small α can raise log p(y_i)"."""
    from model.attention import Reweigh
    from model.faithfulness import RENORMALISED, removal_matrices
    from model.faithfulness_stats import is_top
    says("docs/attribution.md", "weight of the piece removed goes to the other pieces in proportion, most of it to the "
                                "argmax, so\nremoving a piece of small α can *raise* log p(y_i)")
    assert "goes to the other pieces in proportion, most of it to the argmax" in RENORMALISED
    alpha = torch.softmax(torch.randn(1, 7, dtype=torch.float64) * 2, -1)
    j = int(alpha[0].argsort()[2])
    after = Reweigh(torch.tensor([j]), torch.zeros(1))(alpha)
    gain = (after - alpha)[0]
    expected = alpha[0] * alpha[0, j] / (1 - alpha[0, j])
    expected[j] = -alpha[0, j]
    assert torch.allclose(gain, expected) and int(gain.argmax()) == int(alpha[0].argmax())
    model, vocab = tiny["rnnsearch"]
    raised = 0
    for text in (DIGITS, LONG, "3 1 4 1 5 9 2 6"):
        s = removal_matrices(model, vocab, text)
        raised += int(((s["knock_out"]["drop"] < 0) & ~is_top(s["alpha"])).sum())
    assert raised > 0


def test_the_integrated_gradients_caption_is_the_gap_computed(tiny):
    """The attribution page: "Σ_i |Σ_j a_ij + Σ_k a_ik − (f(x) − f(x'))| … over Σ_i |f(x) − f(x')|", the
    prefix scores included, is ``Attribution.completeness_gap``; per step, ``step_gaps``."""
    from model.attribution import gradient_attribution
    says("app_pages/attribution.py", "Σ_i |Σ_j a_ij + Σ_k a_ik − (f(x) − f(x'))|", "over Σ_i |f(x) − f(x')|",
         "The points are chosen for the total, not for every step.")
    model, vocab = tiny["rnnsearch"]
    _, source, rec = record(tiny, "rnnsearch")
    a = gradient_attribution(model, list(source.ids), rec.target_ids, "ig", steps=5)
    attributed = a.logprobs - a.at_baseline
    per_step = a.scores.sum(1) + a.prefix.sum(1) - attributed
    np.testing.assert_allclose(per_step, a.delta, atol=1e-4)
    assert a.completeness_gap == pytest.approx(np.abs(per_step).sum() / np.abs(attributed).sum(), rel=1e-3)
    np.testing.assert_allclose(a.step_gaps, np.abs(a.delta) / np.abs(attributed), rtol=1e-6)


def test_the_readme_line_on_the_knock_out_test_is_the_shipped_result():
    """README ("The most-attended piece matters; more than its weight is rarely testable"): the unmatched
    rate's range, the matched coverage's range (and that it is low), and how many models' matched intervals
    include 0, on the newstest2014 sample."""
    from model.faithfulness_report import span
    result = json.loads((ROOT / FAITHFULNESS[0]).read_text(encoding="utf-8"))
    models = result["models"]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    line = re.search(r"- \*\*The most-attended piece matters; more than its weight is rarely testable\*\*.*?\n(?=- |\n)",
                     readme, re.S).group(0)
    line = " ".join(line.split())
    matched = [m["knock_out"]["matched"] for m in models]
    estimable = [x for x in matched if x["estimable"]]
    assert max(x["coverage"] for x in matched) < 0.5  # "rarely": most argmax removals find no partner
    including = sum(x["effect_ci"][0] <= 0 <= x["effect_ci"][1] for x in estimable)
    for figure in (f"changes the word at {span([m['knock_out']['controls']['most']['changed'] for m in models])}",
                   f"only {span([x['coverage'] for x in matched])} of the argmax removals",
                   f"include 0 for {including} of the {len(estimable)} models",
                   f"{result['sample']['sentences']} random newstest2014 sentences"):
        assert figure in line, (figure, line)
    says("README.md", "attention beside 4 attributions on one scale")


def ig_rows(result: dict) -> list[str]:
    """docs/attribution.md's table of the Transformer's integrated gradients at more points."""
    rows = [f"**The Transformer's integrated gradients at more points** (`results/attribution/ig_transformer.json`: "
            f"`model.align --method ig --ig-steps 20|100`, the first {result['first']} gold pairs, written-text "
            "reading):", "",
            "| points | AER | gap in total | per sentence: median, largest | per step: median, 95th percentile | "
            "steps above 1 % |", "| --- | --- | --- | --- | --- | --- |"]
    for r in result["runs"]:
        c = r["completeness"]
        rows.append(f"| {c['points']} | {r['aer']:.3f} | {100 * c['gap_total']:.2f} % | "
                    f"{100 * c['gap_sentence_median']:.2f} %, {100 * c['gap_sentence_max']:.2f} % | "
                    f"{100 * c['gap_step_median']:.2f} %, {100 * c['gap_step_p95']:.2f} % | "
                    f"{100 * c['steps_above_1pct']:.0f} % of {c['steps']} |")
    return rows


def test_the_transformers_integrated_gradients_at_more_points_are_the_shipped_run():
    """docs/attribution.md: the Transformer's IG AER and completeness gaps at 20 and at 100 points are those
    of results/attribution/ig_transformer.json, and the sentence after them follows them: "total gap within
    1 % at 100 points, every sentence's too, though a quarter of the steps stay above 1 %; its AER hardly
    moves on these 10 pairs"."""
    result = json.loads((ROOT / "results" / "attribution" / "ig_transformer.json").read_text(encoding="utf-8"))
    says("docs/attribution.md", "\n".join(ig_rows(result)),
         "total gap within 1 % at 100 points, every sentence's too, though a quarter of\nthe steps stay above 1 %; "
         "its AER hardly moves on these 10 pairs")
    few, many = (r["completeness"] for r in result["runs"])
    assert few["points"] == 20 and many["points"] == 100 and few["gap_total"] > 0.01
    assert many["gap_total"] <= 0.01 and many["gap_sentence_max"] <= 0.01 and 0.2 <= many["steps_above_1pct"] <= 0.3
    assert abs(result["runs"][1]["aer"] - result["runs"][0]["aer"]) < 0.03
