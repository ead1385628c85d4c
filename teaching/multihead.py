"""From Luong's ``dot`` to multi-head attention, in numbers (numpy only; the "From Luong to
the Transformer" page shows them).

Luong et al. 2015 (eq. 8, 7) score one decoder state s_i against every annotation h̄_j:

    e_ij = s_i^T h̄_j,   α_ij = softmax_j(e_ij),   c_i = Σ_j α_ij h̄_j

Vaswani et al. 2017 (eq. 1) write the same step with a query, keys and values,

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V,   Q = s_i W^Q,  K = H̄ W^K,  V = H̄ W^V

so with W^Q = W^K = W^V = I and no scale it *is* Luong's step (:func:`as_query_keys_values`
checks that on the model's own numbers). Several heads (§3.2.2) split the d dimensions into
h slices of d_k = d/h; each head scores and averages on its own slice. A dot product is a
sum over dimensions, so the h heads' unscaled energies add up to Luong's energy exactly:
the heads divide one score into h scores, and each gets its own softmax. With learned W^Q_k,
W^K_k each head can look for something else; here the slices are what one Luong model learned.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    z = np.exp(x - x.max(axis=axis, keepdims=True))
    return z / z.sum(axis=axis, keepdims=True)


@dataclass
class QKVStep:
    """One decoder step of Luong ``dot``, rewritten as attention with queries, keys and values.

    energies: s_i^T h̄_j (S); weights, context: Luong's α_i (S) and c_i (d).
    qkv_energies, qkv_context: the same step as softmax(QK^T)V with identity projections.
    scaled_weights: softmax(QK^T / sqrt(d)) (S), the Transformer's scale on one head of width d.
    head_energies, head_weights: h heads on d/h-wide slices, scaled by sqrt(d/h) (h x S);
    head_contexts: each head's Σ_j α^(k)_ij v^(k)_j (h x d/h), joined: [head_1 ; … ; head_h] (d).
    """
    energies: np.ndarray
    weights: np.ndarray
    context: np.ndarray
    qkv_energies: np.ndarray
    qkv_context: np.ndarray
    scaled_weights: np.ndarray
    head_energies: np.ndarray
    head_weights: np.ndarray
    head_contexts: np.ndarray
    heads: int

    @property
    def d(self) -> int:
        return len(self.context)

    @property
    def d_k(self) -> int:
        return self.d // self.heads


def as_query_keys_values(query: np.ndarray, values: np.ndarray, heads: int = 4) -> QKVStep:
    """query: s_i (d,); values: the annotations h̄_j (S x d) -> the step three ways.

    ``heads`` must divide d. Nothing is learned or made up here: every number is a function
    of the two inputs, which come from a trained Luong ``dot`` model's decoding record."""
    query, values = np.asarray(query, dtype=np.float64), np.asarray(values, dtype=np.float64)
    d = query.shape[0]
    if d % heads:
        raise ValueError(f"{heads} heads do not divide d = {d}")
    energies = values @ query  # e_ij = s_i^T h̄_j (Luong eq. 8, dot)
    weights = softmax(energies)
    Q, K, V = query[None, :], values, values  # W^Q = W^K = W^V = I
    qkv_energies = (Q @ K.T)[0]
    d_k = d // heads
    q_heads, k_heads = query.reshape(heads, d_k), values.reshape(len(values), heads, d_k).transpose(1, 0, 2)
    head_energies = np.einsum("hd,hsd->hs", q_heads, k_heads) / np.sqrt(d_k)  # h x S
    head_weights = softmax(head_energies)
    head_contexts = np.einsum("hs,hsd->hd", head_weights, k_heads)  # h x d_k
    return QKVStep(energies=energies, weights=weights, context=weights @ values, qkv_energies=qkv_energies,
                   qkv_context=(softmax(qkv_energies[None, :]) @ V)[0],
                   scaled_weights=softmax(energies / np.sqrt(d)), head_energies=head_energies,
                   head_weights=head_weights, head_contexts=head_contexts, heads=heads)


def head_agreement(head_words: np.ndarray, reference_words: np.ndarray) -> np.ndarray:
    """How often each head's most-attended source word is the reference model's.

    head_words: layers x heads x T x S word-level attention; reference_words: T x S (e.g.
    RNNsearch's attention forced along the same translation). Returns layers x heads, the
    share of target words whose argmax source word agrees."""
    ours = head_words.argmax(-1)  # L x h x T
    theirs = reference_words.argmax(-1)  # T
    return (ours == theirs).mean(-1)
