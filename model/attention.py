"""Attention mechanisms behind one contract.

Every scorer implements the same two methods, so a decoder never cares which one it holds:

    proj_keys = mech.compute_proj_keys(keys)          # once per sentence: (B, S, Hk) -> (B, S, K)
    energies  = mech.score(query, proj_keys, mask)    # every target step: (B, Hq) -> (B, S)

and one shared step turns energies into weights and a context vector (:func:`attend`):

    α_ij = exp(e_ij) / Σ_k exp(e_ik)        (Bahdanau eq. 6; Luong eq. 7)
    c_i  = Σ_j α_ij h_j                     (Bahdanau eq. 5; Luong §3.1)

The mechanisms differ only in ``score`` and in *where* the decoder calls it:
Bahdanau (RNNsearch) scores the previous decoder state s_{i-1} *before* the RNN step;
Luong scores the current state s_i *after* it (see ``model/decoders.py``).

Attention modules are shared: one loaded model serves every caller at once, so ``score``
and friends are pure functions of their arguments and the weights; nothing computed for a
call is stored on a module.

``mask`` is ``(B, S)`` boolean, True on real source tokens; padded positions get
energy −inf, so their weight is exactly 0 and padding never changes a result.
"""
from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn as nn
import torch.nn.functional as F

from .config import check_half_width


class AttentionMechanism(nn.Module):
    """Base class: ``score(query (B,Hq), proj_keys (B,S,K), mask (B,S)) -> energies (B,S)``."""

    def compute_proj_keys(self, keys: torch.Tensor) -> torch.Tensor:
        """Project the annotations once per sentence. keys: (B, S, Hk) -> (B, S, K)."""
        return keys

    def score(self, query: torch.Tensor, proj_keys: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError


class AdditiveAttention(AttentionMechanism):
    """Bahdanau et al. 2014, eq. 6 and Appendix A.1.2 (the "alignment model"):

        e_ij = v_a^T tanh(W_a s_{i-1} + U_a h_j)

    ``U_a h_j`` does not depend on i, so it is computed once per sentence
    (``compute_proj_keys``). ``U_a`` carries a bias b_a that neither paper writes: the code
    computes v_a^T tanh(W_a s_{i-1} + U_a h_j + b_a). Luong's ``concat`` score,
    v_a^T tanh(W_a [s_i ; h̄_j]), is the same function up to that bias (split W_a into its s
    and h blocks: W_a [s ; h] = W_a^s s + W_a^h h), so :class:`LuongDecoder` uses this class
    for ``concat``, with s_i as the query and h̄_j = W_m h_j as the keys.

    Shapes: query (B, Hq), keys (B, S, Hk), energies (B, S); alignment size A.
    """

    def __init__(self, query_size: int, key_size: int, attention_size: int):
        super().__init__()
        self.W_a = nn.Linear(query_size, attention_size, bias=False)
        self.U_a = nn.Linear(key_size, attention_size, bias=True)
        self.v_a = nn.Linear(attention_size, 1, bias=False)

    def compute_proj_keys(self, keys):
        return self.U_a(keys)  # U_a h_j: B x S x A

    def score(self, query, proj_keys, mask):
        return self.score_projected(self.W_a(query), proj_keys, mask)

    def score_projected(self, projected_query, proj_keys, mask):
        """``score`` from W_a s (B x A) made elsewhere: decoding makes it in one product with
        the GRU's W_hh s_{i-1} (model/packed.py, ``FusedDeepOutputStep``)."""
        hidden = torch.tanh(projected_query.unsqueeze(1) + proj_keys)  # B x S x A
        energies = self.v_a(hidden).squeeze(2)  # B x S
        return torch.where(mask, energies, float("-inf"))  # one torch call: masked_fill(~mask) is two


class DotAttention(AttentionMechanism):
    """Luong et al. 2015, eq. 8, ``dot``: e_ij = s_i^T h̄_j (the score itself has no parameters).

    Our annotations are 2H wide (bi-GRU) and s_i is H wide, so the Luong decoder first maps
    every annotation through one learned linear "memory bridge", h̄_j = W_m h_j (2H -> H, see
    ``LuongDecoder``), whose output is both the keys and the values. The shipped ``dot``
    therefore scores e_ij = s_i^T (W_m h_j), a learned bilinear form, and ``general``
    (s_i^T W_a W_m h_j) is the same function class for the score with H x H more parameters;
    what W_a adds is keys that differ from the values.
    """

    def score(self, query, proj_keys, mask):
        energies = torch.bmm(proj_keys, query.unsqueeze(2)).squeeze(2)  # B x S
        return torch.where(mask, energies, float("-inf"))


class GeneralAttention(AttentionMechanism):
    """Luong et al. 2015, eq. 8, ``general``: e_ij = s_i^T W_a h̄_j.

    W_a h̄_j is computed once per sentence, leaving a dot product per step. In the Luong
    decoder h̄_j = W_m h_j, so the score is s_i^T W_a W_m h_j (see :class:`DotAttention`).
    """

    def __init__(self, query_size: int, key_size: int):
        super().__init__()
        self.W_a = nn.Linear(key_size, query_size, bias=False)

    def compute_proj_keys(self, keys):
        return self.W_a(keys)  # W_a h_j: B x S x Hq

    def score(self, query, proj_keys, mask):
        energies = torch.bmm(proj_keys, query.unsqueeze(2)).squeeze(2)  # B x S
        return torch.where(mask, energies, float("-inf"))


class ScaledDotAttention(AttentionMechanism):
    """Vaswani et al. 2017, eq. 1, one head: e_ij = q_i^T k_j / sqrt(d_k).

    This is Luong's ``dot`` score (eq. 8) with two changes: the query and the keys are
    learned projections of the states (q_i = W^Q s_i, k_j = W^K h_j, made by
    :class:`~model.transformer.MultiHeadAttention`), and the energies are divided by
    sqrt(d_k) so that their spread, and the softmax's sharpness, does not grow with the width.

    Shapes: one step, query (…, d_k) and proj_keys (…, S, d_k) -> energies (…, S); or a
    block of queries at once, query (…, T, d_k) -> energies (…, T, S) (training, and the
    encoder's self-attention). ``mask`` broadcasts to the energies; True where allowed.
    """

    def __init__(self, d_k: int):
        super().__init__()
        self.d_k = d_k

    def score(self, query, proj_keys, mask):
        one_step = query.dim() == proj_keys.dim() - 1
        q = query.unsqueeze(-2) if one_step else query  # … x T x d_k
        energies = torch.matmul(q, proj_keys.transpose(-1, -2)) / self.d_k ** 0.5  # … x T x S
        if one_step:
            energies = energies.squeeze(-2)
        return torch.where(mask, energies, float("-inf"))


class LocalScore(NamedTuple):
    """What one local-p step computes (all per call, nothing kept on the module).

    energies: e'_ij, B x S (−inf outside the window); position: p_i, B;
    window_mass: m_i = Σ_j align(s_i, h̄_j) · exp(−(j − p_i)²/2σ²) over the window, B (≤ 1),
    align the softmax over the whole sentence; None for the ``renormalised`` variant, whose
    context is the plain Σ_j α_ij h̄_j.
    """
    energies: torch.Tensor
    position: torch.Tensor
    window_mass: torch.Tensor | None


def window(position: torch.Tensor, mask: torch.Tensor, D: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Local-p's window around p_i: the Gaussian's log, −(j − p_i)²/(2σ²) with σ = D/2, and
    which positions lie outside [p_i − D, p_i + D]. position (B,), mask (B, S) -> (B, S), (B, S).

    With D ≥ 1 (:func:`check_half_width`) the window always holds the source position
    nearest p_i, so a row is never all −inf."""
    positions = torch.arange(mask.size(1), device=position.device, dtype=position.dtype).unsqueeze(0)  # 1 x S
    distance = positions - position.unsqueeze(1)  # B x S
    sigma = D / 2.0
    return -distance.pow(2) / (2 * sigma ** 2), distance.abs() > D


class LocalPForms(NamedTuple):
    """One local-p step in two forms, from the same energies e_ij and the same p_i.

    ``shipped``: align is the softmax over the **whole sentence**, then the Gaussian within
    the window, a_i(j) = softmax_{k = 1..S}(e_ik)_j · G_ij: what :class:`LocalPAttention`
    (variant ``eq10``) trains and decodes with. ``luong``: Luong et al. 2015's eq. 10 with
    a_t ∈ R^{2D+1}, align the softmax over the **window's positions** only,
    a_i(j) = softmax_{k ∈ window}(e_ik)_j · G_ij. Both vanish outside the window and are
    proportional inside it, so their renormalised rows (the α_ij every figure shows) coincide;
    they differ in their sums, the window masses, and so in the contexts c_i = Σ_j a_i(j) h̄_j,
    unless the window covers the whole sentence.

    *_weights: a_i(j), B x S; *_mass: Σ_j a_i(j), B; *_context: Σ_j a_i(j) h̄_j, B x Hv.
    """
    shipped_weights: torch.Tensor
    shipped_mass: torch.Tensor
    shipped_context: torch.Tensor
    luong_weights: torch.Tensor
    luong_mass: torch.Tensor
    luong_context: torch.Tensor


def local_p_forms(inner_energies: torch.Tensor, position: torch.Tensor, mask: torch.Tensor, D: float,
                  values: torch.Tensor) -> LocalPForms:
    """Both forms of local-p (:class:`LocalPForms`) from the inner score's energies e_ij
    (B, S; −inf on padding), the positions p_i (B,), the mask (B, S), the half-width D and
    the values h̄_j (B, S, Hv)."""
    log_gauss, outside = window(position, mask, D)

    def form(log_align):
        weights = torch.exp(log_align + log_gauss).masked_fill(outside | ~mask, 0.0)  # a_i(j): B x S
        return weights, weights.sum(-1), torch.bmm(weights.unsqueeze(1), values).squeeze(1)

    shipped = form(torch.log_softmax(inner_energies, -1))  # align over the whole sentence (eq. 7)
    luong = form(torch.log_softmax(inner_energies.masked_fill(outside, float("-inf")), -1))  # over the window (eq. 10)
    return LocalPForms(*shipped, *luong)


class LocalPAttention(AttentionMechanism):
    """Luong et al. 2015, §3.2, local-p (predictive alignment) around an inner score.

        p_i = S · sigmoid(v_p^T tanh(W_p s_i))                                    (eq. 9)
        a_i(j) = align(s_i, h̄_j) · exp(−(j − p_i)²/(2σ²)),  σ = D/2,  j ∈ [p_i − D, p_i + D]   (eq. 10)
        c_i = Σ_j a_i(j) h̄_j

    S is each sentence's own (unpadded) length; positions are 0-based, so
    p_i = (S−1) · sigmoid(…) ∈ [0, S−1].

    **Where the ``eq10`` variant departs from the paper.** In Luong's eq. 10 a_t ∈ R^{2D+1}:
    align is the inner score's softmax over the window's 2D + 1 positions. Here align is the
    softmax over the **whole sentence** (eq. 7), and the Gaussian is applied inside the
    window. Inside the window the two are proportional, so the renormalised weights below are
    the same; but their sums differ whenever the window does not cover the sentence, and so
    do the contexts. :func:`local_p_forms` computes both from the same e_ij and p_i, and the
    Step through page shows them side by side. The shipped ``luong-local`` was trained, and
    decodes, with the whole-sentence form.

    The weights a_i(j) do not sum to 1; their sum, the *window mass* m_i, is align's share
    inside the window times the Gaussian, and it is what teaches W_p and v_p: it is largest
    when the Gaussian sits on the inner score's mass, so ∂m_i/∂p_i pulls p_i towards where
    the model attends (with the paper's window-only softmax, attention outside the window
    would not lower m_i). The record and every figure show the weights renormalised,
    α_ij = a_i(j) / m_i (rows sum to 1, as for every other mechanism), i.e. the softmax over
    the window of e'_ij = e_ij − (j − p_i)²/(2σ²); and the context is computed as
    c_i = m_i · Σ_j α_ij h̄_j, which equals Σ_j a_i(j) h̄_j.

    Why the mass matters: with the Gaussian only renormalised into the softmax, the
    gradient reaching p_i is Cov_α(∂L/∂α_ij, j)/σ², near zero whenever α_i is peaked, and
    exactly zero from every position outside the window. p_i then got no signal towards
    the alignment: it drifted into the sigmoid's flat tail (shipped model: logits −5 to −7,
    p_i ≈ 0 on every step) and its window never moved.

    ``variant="renormalised"`` keeps the Gaussian inside the softmax only (no m_i), for
    checkpoints trained that way; it is not for new training.

    Modules are shared by every caller at once (the app serves a class from one process):
    :meth:`locate` returns p_i and m_i with the energies instead of storing them.
    """

    VARIANTS = ("eq10", "renormalised")

    def __init__(self, inner: AttentionMechanism, query_size: int, window: int = 10, variant: str = "eq10"):
        super().__init__()
        if variant not in self.VARIANTS:
            raise ValueError(f"local-p variant must be one of {self.VARIANTS}, got {variant!r}")
        self.inner = inner
        self.variant = variant
        self.set_half_width(window)
        self.W_p = nn.Linear(query_size, query_size, bias=False)
        self.v_p = nn.Linear(query_size, 1, bias=False)

    def compute_proj_keys(self, keys):
        return self.inner.compute_proj_keys(keys)

    def set_half_width(self, D: float) -> None:
        """Training only (the window warm-up of ``train.window_warmup_steps``): D and σ = D/2.

        A served model is never widened: its D is the config's ``local_window``. D below 1
        is refused: below 0.5 a row can have no position inside the window (NaN weights)."""
        check_half_width(D)
        self.D, self.sigma = D, D / 2.0

    def predicted_position(self, query, mask):
        """p_i (eq. 9): query (B, H), mask (B, S) -> (B,)."""
        lengths = mask.sum(1).to(query.dtype)  # B
        return (lengths - 1) * torch.sigmoid(self.v_p(torch.tanh(self.W_p(query)))).squeeze(1)  # B

    def locate(self, query, proj_keys, mask) -> LocalScore:
        """Energies e'_ij, position p_i and window mass m_i of one step."""
        p = self.predicted_position(query, mask)  # B
        log_gauss, outside = window(p, mask, self.D)  # B x S each
        inner = self.inner.score(query, proj_keys, mask)  # align's energies, over the whole sentence (eq. 7)
        energies = (inner + log_gauss).masked_fill(outside, float("-inf"))
        if self.variant == "renormalised":  # the Gaussian only reweights inside the window: no mass
            return LocalScore(energies, p, None)
        window_mass = torch.exp(torch.logsumexp(energies, -1) - torch.logsumexp(inner, -1))  # m_i ∈ (0, 1]
        return LocalScore(energies, p, window_mass)

    def score(self, query, proj_keys, mask):
        return self.locate(query, proj_keys, mask).energies


def attend(energies: torch.Tensor, values: torch.Tensor, reweigh=None) -> tuple[torch.Tensor, torch.Tensor]:
    """The shared softmax-and-context step.

    energies: (B, S) with −inf on padding; values: (B, S, Hv).
    Returns alignment weights α (B, S) and context vector c (B, Hv).
    ``reweigh``: an intervention (:class:`Reweigh`) applied to α before it makes c; None for
    ordinary decoding.
    """
    weights = F.softmax(energies, dim=-1)  # B x S, Bahdanau eq. 6
    if reweigh is not None:
        weights = reweigh(weights)
    context = torch.bmm(weights.unsqueeze(1), values).squeeze(1)  # B x Hv, Bahdanau eq. 5
    return weights, context


def attend_block(energies: torch.Tensor, values: torch.Tensor, reweigh=None) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`attend` for a block of queries at once: energies (…, T, S), values (…, S, Hv)
    -> weights (…, T, S) and contexts (…, T, Hv); Vaswani et al. 2017, eq. 1's softmax(·)V."""
    weights = F.softmax(energies, dim=-1)
    if reweigh is not None:
        weights = reweigh(weights)
    return weights, torch.matmul(weights, values)


class Reweigh:
    """An intervention on the alignment weights: for batch row b, source position j_b's weight is
    changed and the rest of the row rescaled so that it still sums to 1. Lowering (or knocking out)
    multiplies it by a factor r_b ≤ 1; raising moves it a share λ_b of the way to 1:

        α'_ij = min(1, r α_ij)   or   α'_ij = α_ij + λ (1 − α_ij),    α'_ik = α_ik (1 − α'_ij) / (1 − α_ij)   (k ≠ j)

    r = 0 knocks the position out (the softmax over the other positions: as if it were masked);
    r = w / ᾱ_ij lowers it to w; λ = (w − ᾱ_ij) / (1 − ᾱ_ij) raises it to w. Both maps are affine in
    α_ij, so applied to every head of a Transformer's layer they bring the heads' average ᾱ_ij to
    exactly w, and no head leaves [0, 1] (a factor r > 1 would be capped at 1 on a head and leave
    the average short). A row with r = 1 and λ = 0 comes back bit for bit, so an unchanged edit
    reproduces the record. A row that was all on j (nothing left to rescale) gets 1 − α'_ij spread
    evenly over its other positions.

    columns: (B,) source positions; ratios: (B,) factors r; lifts: (B,) shares λ (None: all 0; a
    row with λ > 0 is raised and its r is not used). Weights of any shape (B, …, S).
    every_layer: a Transformer applies it to every cross-attention layer (a knock-out: the
    position's keys and values gone), else only to the layer it shows (a weight set to w there).
    layer: else only to this 0-based decoder layer (the knock-out test, one layer at a time).
    """

    def __init__(self, columns: torch.Tensor, ratios: torch.Tensor, every_layer: bool = True,
                 lifts: torch.Tensor | None = None, layer: int | None = None):
        self.columns, self.ratios, self.every_layer, self.layer = columns, ratios, every_layer, layer
        self.lifts = torch.zeros_like(ratios) if lifts is None else lifts

    def acts_on(self, layer: int, shown: int) -> bool:
        """Whether decoder layer ``layer`` (0-based) is edited, ``shown`` being the shown layer's index."""
        if self.layer is not None:
            return layer == self.layer
        return self.every_layer or layer == shown

    def __call__(self, weights: torch.Tensor) -> torch.Tensor:
        B, S = weights.size(0), weights.size(-1)
        shape = (B,) + (1,) * (weights.dim() - 2)
        chosen = F.one_hot(self.columns.to(weights.device), S).bool().view(*shape, S)  # B x … x S
        ratio = self.ratios.to(weights).view(*shape, 1)
        lift = self.lifts.to(weights).view(*shape, 1)
        old = (weights * chosen).sum(-1, keepdim=True)  # α_ij: B x … x 1 (one term: exact)
        new = torch.where(lift > 0, old + lift * (1.0 - old), (old * ratio).clamp(max=1.0))
        rest = weights.masked_fill(chosen, 0.0).sum(-1, keepdim=True)  # Σ_k≠j α_ik (not 1 − α_ij: rounding)
        spread = (1.0 - new) / max(S - 1, 1)  # only where the row was all on j
        others = torch.where(rest > 0, weights * ((1.0 - new) / rest.clamp(min=1e-30)), spread)
        return torch.where((ratio == 1.0) & (lift == 0.0), weights, torch.where(chosen, new, others))


def build_attention(kind: str, query_size: int, key_size: int, attention_size: int,
                    local_window: int = 10, local_variant: str = "eq10") -> AttentionMechanism:
    """kind: ``additive`` | ``dot`` | ``general`` | ``concat`` | ``local-<score>`` (e.g. ``local-general``)
    | ``scaled-dot`` (one Transformer head; key_size is d_k)."""
    if kind.startswith("local-"):
        inner = build_attention(kind[len("local-"):], query_size, key_size, attention_size)
        return LocalPAttention(inner, query_size, local_window, local_variant)
    if kind in ("additive", "concat"):
        return AdditiveAttention(query_size, key_size, attention_size)
    if kind == "dot":
        if query_size != key_size:
            raise ValueError(f"dot attention needs query_size == key_size, got {query_size} and {key_size}")
        return DotAttention()
    if kind == "general":
        return GeneralAttention(query_size, key_size)
    if kind == "scaled-dot":
        return ScaledDotAttention(key_size)
    raise ValueError(f"unknown attention kind {kind!r}")
