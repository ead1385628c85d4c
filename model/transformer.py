"""The Transformer (Vaswani et al. 2017), small and pre-norm, behind the zoo's interface.

What it keeps from Luong: the decoder's state is the *query*, the source annotations are
the *keys* and *values*, the score is a dot product (:class:`~model.attention.ScaledDotAttention`,
Luong's ``dot`` on learned projections, divided by sqrt(d_k)), and the context is the
weighted sum of the values (:func:`~model.attention.attend`). What it adds:

    head_k = softmax(Q W^Q_k (K W^K_k)^T / sqrt(d_k)) V W^V_k           (eq. 1)
    MultiHead(Q, K, V) = [head_1 ; … ; head_h] W^O                       (§3.2.2)

several heads per layer, N layers, and *self*-attention in the encoder (each source
position attends to every other) and in the decoder (each target position to the ones
before it), with no recurrence: position comes from sinusoidal encodings added to the
embeddings (§3.5). Every sub-layer is pre-norm, x + Dropout(F(LayerNorm(x))) (Xiong et
al. 2020: trains without a long warm-up), and each stack ends with a LayerNorm.

The model speaks the zoo's one interface (``encode``, ``step``, ``forward``, ``logits``),
so greedy, beam and forced decoding, training, evaluation and alignment need no change.
Decoding caches each decoder layer's self-attention keys and values (the ``state``) and
the cross-attention keys and values of the source (the ``memory``), so a step costs one
new position. Modules are shared and stateless at decoding: the caches are returned.
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from .attention import ScaledDotAttention, attend_block
from .config import ModelConfig
from .decoders import Memory, Step
from .loss import output_cross_entropy
from .vocabulary import PAD_ID


def sinusoidal_positions(length: int, d_model: int, device=None, dtype=torch.float32) -> torch.Tensor:
    """PE(pos, 2k) = sin(pos / 10000^(2k/d)), PE(pos, 2k+1) = cos(…)  (§3.5): (length, d_model)."""
    pos = torch.arange(length, device=device, dtype=dtype).unsqueeze(1)
    rate = torch.exp(torch.arange(0, d_model, 2, device=device, dtype=dtype) * (-math.log(10000.0) / d_model))
    pe = torch.zeros(length, d_model, device=device, dtype=dtype)
    pe[:, 0::2] = torch.sin(pos * rate)
    pe[:, 1::2] = torch.cos(pos * rate)
    return pe


class MultiHeadAttention(nn.Module):
    """§3.2.2: h heads of scaled dot-product attention on learned projections, joined by W^O.

    ``keys_values(x)``: (B, S, d) -> K, V (B, h, S, d_k), once per sentence for cross-attention.
    ``forward(x, K, V, mask)``: queries x (B, T, d) -> output (B, T, d), weights (B, h, T, S).
    """

    def __init__(self, d_model: int, heads: int):
        super().__init__()
        self.heads, self.d_k = heads, d_model // heads
        self.W_Q = nn.Linear(d_model, d_model)
        self.W_K = nn.Linear(d_model, d_model)
        self.W_V = nn.Linear(d_model, d_model)
        self.W_O = nn.Linear(d_model, d_model)
        self.score = ScaledDotAttention(self.d_k)

    def split(self, x: torch.Tensor) -> torch.Tensor:
        """(B, T, d) -> (B, h, T, d_k)."""
        return x.view(x.size(0), x.size(1), self.heads, self.d_k).transpose(1, 2)

    def keys_values(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.split(self.W_K(x)), self.split(self.W_V(x))

    def forward(self, x, K, V, mask, reweigh=None):
        Q = self.split(self.W_Q(x))  # B x h x T x d_k
        energies = self.score.score(Q, K, mask)  # B x h x T x S
        weights, heads = attend_block(energies, V, reweigh)  # B x h x T x S, B x h x T x d_k
        joined = heads.transpose(1, 2).reshape(x.size(0), x.size(1), -1)  # [head_1 ; … ; head_h]: B x T x d
        return self.W_O(joined), energies, weights


class FeedForward(nn.Module):
    """FFN(x) = max(0, x W_1 + b_1) W_2 + b_2  (eq. 2)."""

    def __init__(self, d_model: int, d_ff: int, dropout: float):
        super().__init__()
        self.W_1, self.W_2, self.dropout = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model), nn.Dropout(dropout)

    def forward(self, x):
        return self.W_2(self.dropout(F.relu(self.W_1(x))))


class EncoderLayer(nn.Module):
    """Self-attention over the source, then the feed-forward block, each pre-norm and residual."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        d = cfg.emb_size
        self.self_norm, self.self_attention = nn.LayerNorm(d), MultiHeadAttention(d, cfg.heads)
        self.ff_norm, self.feed_forward = nn.LayerNorm(d), FeedForward(d, cfg.ff_size, cfg.dropout)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x, mask):
        """x: B x S x d, mask: B x 1 x 1 x S -> (B x S x d, self-attention weights B x h x S x S)."""
        y = self.self_norm(x)
        out, _, weights = self.self_attention(y, *self.self_attention.keys_values(y), mask)
        x = x + self.dropout(out)
        return x + self.dropout(self.feed_forward(self.ff_norm(x))), weights


class DecoderLayer(nn.Module):
    """Masked self-attention over the target so far, cross-attention to the source, feed-forward."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        d = cfg.emb_size
        self.self_norm, self.self_attention = nn.LayerNorm(d), MultiHeadAttention(d, cfg.heads)
        self.cross_norm, self.cross_attention = nn.LayerNorm(d), MultiHeadAttention(d, cfg.heads)
        self.ff_norm, self.feed_forward = nn.LayerNorm(d), FeedForward(d, cfg.ff_size, cfg.dropout)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x, self_K, self_V, self_mask, cross_K, cross_V, cross_mask, reweigh=None):
        """x: B x T x d; self_K/V: B x h x T' x d_k (T' ≥ T when decoding from a cache);
        ``reweigh``: an edit of the cross-attention weights (model/attention.py).
        Returns x, (cross query B x T x d, cross energies and weights B x h x T x S,
        cross output B x T x d, self weights B x h x T x T')."""
        y = self.self_norm(x)
        out, _, self_weights = self.self_attention(y, self_K, self_V, self_mask)
        x = x + self.dropout(out)
        query = self.cross_norm(x)
        context, energies, weights = self.cross_attention(query, cross_K, cross_V, cross_mask, reweigh)
        x = x + self.dropout(context)
        x = x + self.dropout(self.feed_forward(self.ff_norm(x)))
        return x, (query, energies, weights, context, self_weights)


class Transformer(nn.Module):
    """Encoder–decoder Transformer with tied target embeddings and output matrix (§3.4).

    d_model = ``cfg.emb_size``; N = ``cfg.layers`` in each stack; h = ``cfg.heads``.
    The record's ``weights`` (what the app shows as "the" attention) is layer
    ``cfg.shown_layer``'s cross-attention averaged over its heads, (1/h) Σ_k α^(k)_ij;
    ``head_weights`` keeps every layer and head. Its ``energies`` are the same heads'
    energies averaged, (1/h) Σ_k e^(k)_ij: a mean of softmaxes is not the softmax of the
    mean, so softmax_j of these energies is not the weights shown.
    """

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        d = cfg.emb_size
        self.src_embed = nn.Embedding(cfg.vocab_size, d, padding_idx=PAD_ID)
        self.trg_embed = nn.Embedding(cfg.vocab_size, d, padding_idx=PAD_ID)
        self.encoder_layers = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.layers))
        self.decoder_layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.layers))
        self.encoder_norm, self.decoder_norm = nn.LayerNorm(d), nn.LayerNorm(d)
        self.dropout = nn.Dropout(cfg.dropout)
        self.output_bias = nn.Parameter(torch.zeros(cfg.vocab_size))
        self.output_weight = None if cfg.tie_embeddings else nn.Parameter(torch.randn(cfg.vocab_size, d) * d ** -0.5)
        self.shown = cfg.shown_layer % cfg.layers
        self.packed_output = None  # W_o packed for decoding (model/packed.py), set by pack_for_decoding
        self.fused_step = None
        for emb in (self.src_embed, self.trg_embed):  # N(0, 1/d), times sqrt(d) at the input (§3.4)
            nn.init.normal_(emb.weight, 0.0, d ** -0.5)
            with torch.no_grad():
                emb.weight[PAD_ID].zero_()

    @property
    def W_o(self) -> torch.Tensor:
        return self.trg_embed.weight if self.output_weight is None else self.output_weight

    def embed(self, embedding: nn.Embedding, ids: torch.Tensor, start: int = 0) -> torch.Tensor:
        """E x · sqrt(d) + PE, positions start … start + T − 1: (B, T) -> (B, T, d)."""
        return self.positioned(embedding(ids), start)

    def positioned(self, vectors: torch.Tensor, start: int = 0) -> torch.Tensor:
        """Token embeddings E x (B, T, d) -> E x · sqrt(d) + PE (§3.4, §3.5)."""
        d = self.cfg.emb_size
        x = vectors * d ** 0.5
        return self.dropout(x + sinusoidal_positions(start + x.size(1), d, x.device, x.dtype)[start:])

    # -- pieces used by search --------------------------------------------------------------------
    def encode(self, src: torch.Tensor, src_len: torch.Tensor,
               src_vectors: torch.Tensor | None = None) -> tuple[None, Memory, dict]:
        """Encoder stack (from ``src_vectors``, B x S x d token embeddings, where given: attribution
        enters there, model/attribution.py); memory holds the final annotations, every decoder layer's cross K and V
        (B x L x 2 x h x S x d_k) and the encoder's self-attention (B x L x h x S x S).
        The state is the decoder's empty self-attention cache: per layer n, keys ``K{n}`` and
        values ``V{n}``, B x h x 0 x d_k (one tensor each, so a step appends to it with one copy)."""
        mask = torch.arange(src.size(1), device=src.device).unsqueeze(0) < src_len.unsqueeze(1)  # B x S
        x = self.positioned(self.src_embed(src) if src_vectors is None else src_vectors)
        self_weights = []
        for layer in self.encoder_layers:
            x, w = layer(x, mask[:, None, None, :])
            self_weights.append(w)
        annotations = self.encoder_norm(x)  # B x S x d
        layer_keys = torch.stack([torch.stack(layer.cross_attention.keys_values(annotations), 1)
                                  for layer in self.decoder_layers], 1)  # B x L x 2 x h x S x d_k
        memory = Memory(values=annotations, mask=mask, layer_keys=layer_keys,
                        encoder_attention=torch.stack(self_weights, 1))
        h, d_k = self.cfg.heads, self.cfg.emb_size // self.cfg.heads
        empty = annotations.new_zeros(src.size(0), h, 0, d_k)
        return None, memory, {name: empty for n in range(self.cfg.layers) for name in (f"K{n}", f"V{n}")}

    def logits(self, features: torch.Tensor) -> torch.Tensor:
        if self.packed_output is not None and self.packed_output.usable(features):
            return self.packed_output(features)
        return F.linear(features, self.W_o, self.output_bias)

    def step(self, prev_tokens: torch.Tensor, state: dict, memory: Memory,
             reweigh=None) -> tuple[torch.Tensor, dict, Step]:
        """One target position i from the cache of positions 0 … i−1. prev_tokens: (B,) ->
        log-probabilities (B, V). Self-attention needs no mask: the cache holds only the past.
        ``reweigh`` edits the heads' cross-attention of every layer, of the shown one or of one named (model/attention.py)."""
        x = self.embed(self.trg_embed, prev_tokens.unsqueeze(1), start=state["K0"].size(2))  # B x 1 x d
        cross_mask = memory.mask[:, None, None, :]  # B x 1 x 1 x S
        new_state, per_layer = {}, []
        for n, layer in enumerate(self.decoder_layers):
            K_new, V_new = layer.self_attention.keys_values(layer.self_norm(x))  # B x h x 1 x d_k
            K = new_state[f"K{n}"] = torch.cat([state[f"K{n}"], K_new], 2)  # B x h x (i + 1) x d_k
            V = new_state[f"V{n}"] = torch.cat([state[f"V{n}"], V_new], 2)
            self_mask = torch.ones(1, 1, 1, K.size(2), dtype=torch.bool, device=x.device)
            edit = reweigh if reweigh is None or reweigh.acts_on(n, self.shown) else None
            x, seen = layer(x, K, V, self_mask, memory.layer_keys[:, n, 0], memory.layer_keys[:, n, 1], cross_mask,
                            edit)
            per_layer.append(seen)
        features = self.decoder_norm(x)[:, 0]  # B x d
        query, energies, weights, context, _ = per_layer[self.shown]
        step = Step(query=query[:, 0], state=features, context=context[:, 0],
                    # heads averaged, each after its own softmax: B x S (softmax(energies) is not weights)
                    energies=energies[:, :, 0].mean(1), weights=weights[:, :, 0].mean(1),
                    head_weights=torch.stack([w[:, :, 0] for _, _, w, _, _ in per_layer], 1),  # B x L x h x S
                    self_weights=torch.stack([s[:, :, 0] for *_, s in per_layer], 1))  # B x L x h x i
        return F.log_softmax(self.logits(features).float(), dim=-1), new_state, step

    # -- training ---------------------------------------------------------------------------------
    def forward(self, src, src_len, trg_in, trg_out=None, label_smoothing: float = 0.0, return_weights: bool = False):
        """Teacher-forced pass over all T positions at once (the parallelism the RNNs lack).
        src: B x S, trg_in: B x T. Returns what :meth:`Seq2Seq.forward` returns."""
        _, memory, _ = self.encode(src, src_len)
        features, shown = self.decode(memory, self.embed(self.trg_embed, trg_in))
        if trg_out is not None:
            out = output_cross_entropy(features, self.W_o, self.output_bias, trg_out, label_smoothing)
        else:
            out = self.logits(features)
        return (out, shown) if return_weights else out

    def decode(self, memory: Memory, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The decoder stack over all T positions at once, causally masked: positioned target
        embeddings x (B, T, d) -> features (B, T, d) and the shown layer's head-averaged
        cross-attention (B, T, S)."""
        T = x.size(1)
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()[None, None]  # 1 x 1 x T x T
        cross_mask = memory.mask[:, None, None, :]
        shown = None
        for n, layer in enumerate(self.decoder_layers):
            y = layer.self_norm(x)
            K, V = layer.self_attention.keys_values(y)
            x, seen = layer(x, K, V, causal, memory.layer_keys[:, n, 0], memory.layer_keys[:, n, 1], cross_mask)
            if n == self.shown:
                shown = seen[2].mean(1)  # B x T x S
        return self.decoder_norm(x), shown

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

