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
    (``compute_proj_keys``). Luong's ``concat`` score, v_a^T tanh(W_a [s_i ; h_j]), is the
    same function (split W_a into its s and h blocks), so :class:`LuongDecoder` uses this
    class for ``concat`` with s_i as the query.

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
        return energies.masked_fill(~mask, float("-inf"))


class DotAttention(AttentionMechanism):
    """Luong et al. 2015, eq. 8, ``dot``: e_ij = s_i^T h_j (no parameters).

    Our annotations are 2H wide (bi-GRU) and s_i is H wide, so the Luong decoder first maps
    every annotation through one linear "memory bridge" (2H -> H, see ``LuongDecoder``)
    shared by all its scores; ``dot`` is then well defined on the bridged annotations.
    """

    def score(self, query, proj_keys, mask):
        energies = torch.bmm(proj_keys, query.unsqueeze(2)).squeeze(2)  # B x S
        return energies.masked_fill(~mask, float("-inf"))


class GeneralAttention(AttentionMechanism):
    """Luong et al. 2015, eq. 8, ``general``: e_ij = s_i^T W_a h_j.

    W_a h_j is computed once per sentence, leaving a dot product per step.
    """

    def __init__(self, query_size: int, key_size: int):
        super().__init__()
        self.W_a = nn.Linear(key_size, query_size, bias=False)

    def compute_proj_keys(self, keys):
        return self.W_a(keys)  # W_a h_j: B x S x Hq

    def score(self, query, proj_keys, mask):
        energies = torch.bmm(proj_keys, query.unsqueeze(2)).squeeze(2)  # B x S
        return energies.masked_fill(~mask, float("-inf"))


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
        return energies.masked_fill(~mask, float("-inf"))


class LocalScore(NamedTuple):
    """What one local-p step computes (all per call, nothing kept on the module).

    energies: e'_ij, B x S (−inf outside the window); position: p_i, B;
    window_mass: Σ_j align(s_i, h̄_j) · exp(−(j − p_i)²/2σ²) over the window, B (≤ 1);
    None for the ``renormalised`` variant, whose context is the plain Σ_j α_ij h̄_j.
    """
    energies: torch.Tensor
    position: torch.Tensor
    window_mass: torch.Tensor | None


class LocalPAttention(AttentionMechanism):
    """Luong et al. 2015, §3.2, local-p (predictive alignment) around an inner score.

        p_i = S · sigmoid(v_p^T tanh(W_p s_i))                                    (eq. 9)
        a_i(j) = align(s_i, h̄_j) · exp(−(j − p_i)²/(2σ²)),  σ = D/2,  j ∈ [p_i − D, p_i + D]   (eq. 10)
        c_i = Σ_j a_i(j) h̄_j

    with align the inner score's softmax over the whole sentence (eq. 7). S is each sentence's own
    (unpadded) length; positions are 0-based, so p_i = (S−1) · sigmoid(…) ∈ [0, S−1].

    The weights a_i(j) of eq. 10 do not sum to 1; their sum, the *window mass* m_i, is
    what teaches W_p and v_p: it is largest when the Gaussian sits on the inner score's
    mass, so ∂m_i/∂p_i pulls p_i towards where the model attends. The record and every
    figure show the weights renormalised, α_ij = a_i(j) / m_i (rows sum to 1, as for
    every other mechanism), i.e. the softmax of e'_ij = e_ij − (j − p_i)²/(2σ²); and the
    context is computed as c_i = m_i · Σ_j α_ij h̄_j, which equals eq. 10's sum.

    Why the mass matters: with the Gaussian only renormalised into the softmax, the
    gradient reaching p_i is Cov_α(∂L/∂α_ij, j)/σ², near zero whenever α_i is peaked, and
    exactly zero from every position outside the window. p_i then got no signal towards
    the alignment: it drifted into the sigmoid's flat tail (shipped model: logits −5 to −7,
    p_i ≈ 0 on every step) and its window never moved.

    ``variant="renormalised"`` keeps the Gaussian inside the softmax only (no m_i, align
    over the window alone), for checkpoints trained that way; it is not for new training.

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
        self.D = window
        self.sigma = window / 2.0
        self.W_p = nn.Linear(query_size, query_size, bias=False)
        self.v_p = nn.Linear(query_size, 1, bias=False)

    def compute_proj_keys(self, keys):
        return self.inner.compute_proj_keys(keys)

    def set_half_width(self, D: float) -> None:
        """Training only (the window warm-up of ``train.window_warmup_steps``): D and σ = D/2.

        A served model is never widened: its D is the config's ``local_window``."""
        self.D, self.sigma = D, D / 2.0

    def predicted_position(self, query, mask):
        """p_i (eq. 9): query (B, H), mask (B, S) -> (B,)."""
        lengths = mask.sum(1).to(query.dtype)  # B
        return (lengths - 1) * torch.sigmoid(self.v_p(torch.tanh(self.W_p(query)))).squeeze(1)  # B

    def locate(self, query, proj_keys, mask) -> LocalScore:
        """Energies e'_ij, position p_i and window mass m_i of one step."""
        p = self.predicted_position(query, mask)  # B
        positions = torch.arange(mask.size(1), device=query.device, dtype=query.dtype).unsqueeze(0)  # 1 x S
        distance = positions - p.unsqueeze(1)  # B x S
        # the window always holds the source position nearest p_i, so a row is never all −inf
        outside = distance.abs() > self.D
        inner = self.inner.score(query, proj_keys, mask)  # align's energies, over the whole sentence (eq. 7)
        energies = (inner - distance.pow(2) / (2 * self.sigma ** 2)).masked_fill(outside, float("-inf"))
        if self.variant == "renormalised":  # the Gaussian only reweights inside the window: no mass
            return LocalScore(energies, p, None)
        window_mass = torch.exp(torch.logsumexp(energies, -1) - torch.logsumexp(inner, -1))  # m_i ∈ (0, 1]
        return LocalScore(energies, p, window_mass)

    def score(self, query, proj_keys, mask):
        return self.locate(query, proj_keys, mask).energies


def attend(energies: torch.Tensor, values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The shared softmax-and-context step.

    energies: (B, S) with −inf on padding; values: (B, S, Hv).
    Returns alignment weights α (B, S) and context vector c (B, Hv).
    """
    weights = F.softmax(energies, dim=-1)  # B x S, Bahdanau eq. 6
    context = torch.bmm(weights.unsqueeze(1), values).squeeze(1)  # B x Hv, Bahdanau eq. 5
    return weights, context


def attend_block(energies: torch.Tensor, values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`attend` for a block of queries at once: energies (…, T, S), values (…, S, Hv)
    -> weights (…, T, S) and contexts (…, T, Hv); Vaswani et al. 2017, eq. 1's softmax(·)V."""
    weights = F.softmax(energies, dim=-1)
    return weights, torch.matmul(weights, values)


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
