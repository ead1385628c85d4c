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

``mask`` is ``(B, S)`` boolean, True on real source tokens; padded positions get
energy −inf, so their weight is exactly 0 and padding never changes a result.
"""
from __future__ import annotations

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
        the GRU's W_hh s_{i-1} (model/packed.py, ``fuse_rnnsearch_products``)."""
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


class LocalPAttention(AttentionMechanism):
    """Luong et al. 2015, §3.2, local-p (predictive alignment) around an inner score.

        p_i = S · sigmoid(v_p^T tanh(W_p s_i))                     (eq. 9)
        a_i(j) = align(s_i, h_j) · exp(-(j - p_i)^2 / (2σ^2)),  σ = D/2   (eq. 10)

    restricted to the window [p_i − D, p_i + D]. S is each sentence's own (unpadded)
    length; our positions are 0-based, so the code computes p_i = (S−1) · sigmoid(…) ∈ [0, S−1].

    One deviation, so that every mechanism obeys the same contract (weights sum to 1):
    the Gaussian is added to the energies in log space, ``e'_ij = e_ij − (j−p_i)^2/(2σ^2)``,
    before the shared softmax. That equals eq. 10 renormalised over the window; Luong's
    eq. 10 leaves the product unnormalised.
    """

    def __init__(self, inner: AttentionMechanism, query_size: int, window: int = 10):
        super().__init__()
        self.inner = inner
        self.D = window
        self.sigma = window / 2.0
        self.W_p = nn.Linear(query_size, query_size, bias=False)
        self.v_p = nn.Linear(query_size, 1, bias=False)
        self.last_position: torch.Tensor | None = None  # p_i of the last call, (B,), for the decoding record

    def compute_proj_keys(self, keys):
        return self.inner.compute_proj_keys(keys)

    def predicted_position(self, query, mask):
        lengths = mask.sum(1).to(query.dtype)  # B
        return (lengths - 1) * torch.sigmoid(self.v_p(torch.tanh(self.W_p(query)))).squeeze(1)  # B

    def score(self, query, proj_keys, mask):
        p = self.predicted_position(query, mask)  # B
        self.last_position = p.detach()
        positions = torch.arange(mask.size(1), device=query.device, dtype=query.dtype).unsqueeze(0)  # 1 x S
        distance = positions - p.unsqueeze(1)  # B x S
        energies = self.inner.score(query, proj_keys, mask) - distance.pow(2) / (2 * self.sigma ** 2)
        outside = distance.abs() > self.D
        # the window always holds the source position nearest p_i, so a row is never all −inf
        return energies.masked_fill(outside, float("-inf"))


def attend(energies: torch.Tensor, values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The shared softmax-and-context step.

    energies: (B, S) with −inf on padding; values: (B, S, Hv).
    Returns alignment weights α (B, S) and context vector c (B, Hv).
    """
    weights = F.softmax(energies, dim=-1)  # B x S, Bahdanau eq. 6
    context = torch.bmm(weights.unsqueeze(1), values).squeeze(1)  # B x Hv, Bahdanau eq. 5
    return weights, context


def build_attention(kind: str, query_size: int, key_size: int, attention_size: int,
                    local_window: int = 10) -> AttentionMechanism:
    """kind: ``additive`` | ``dot`` | ``general`` | ``concat`` | ``local-<score>`` (e.g. ``local-general``)."""
    if kind.startswith("local-"):
        inner = build_attention(kind[len("local-"):], query_size, key_size, attention_size)
        return LocalPAttention(inner, query_size, local_window)
    if kind in ("additive", "concat"):
        return AdditiveAttention(query_size, key_size, attention_size)
    if kind == "dot":
        if query_size != key_size:
            raise ValueError(f"dot attention needs query_size == key_size, got {query_size} and {key_size}")
        return DotAttention()
    if kind == "general":
        return GeneralAttention(query_size, key_size)
    raise ValueError(f"unknown attention kind {kind!r}")
