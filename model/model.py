"""The encoder–decoder: one encoder, one of three decoders, one output layer."""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from .config import ModelConfig
from .decoders import build_decoder, Memory, Step
from .encoders import Encoder, EncoderOutput
from .loss import output_cross_entropy
from .vocabulary import PAD_ID


class Seq2Seq(nn.Module):
    """p(y_i | y_<i, x) = softmax(W_o t_i + b_o), t_i from the decoder's readout.

    With ``tie_embeddings`` W_o is the target embedding matrix E (Press & Wolf 2017), which
    needs the readout size to equal the embedding size; otherwise a projection bridges them.
    Source and target embeddings are separate matrices over the one joint vocabulary.
    """

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.encoder = Encoder(cfg.vocab_size, cfg.emb_size, cfg.enc_hidden, cfg.dropout)
        self.trg_embed = nn.Embedding(cfg.vocab_size, cfg.emb_size, padding_idx=PAD_ID)
        self.decoder = build_decoder(cfg)
        self.dropout = nn.Dropout(cfg.dropout)
        out = self.decoder.output_size
        self.pre_output = nn.Linear(out, cfg.emb_size, bias=False) if (cfg.tie_embeddings and out != cfg.emb_size) else None
        self.output_bias = nn.Parameter(torch.zeros(cfg.vocab_size))
        self.output_weight = None if cfg.tie_embeddings else nn.Parameter(
            torch.randn(cfg.vocab_size, out) * out ** -0.5)
        self.packed_output = None  # W_o packed for decoding (model/packed.py), set by pack_for_decoding
        self.fused_step = None     # RNNsearch / RNNenc decoding on regrouped products, likewise
        # N(0, 1/E) embeddings: with tied output weights, N(0, 1) would start the logits
        # at a scale of sqrt(E) and the loss far above log V
        for emb in (self.encoder.embed, self.trg_embed):
            nn.init.normal_(emb.weight, 0.0, cfg.emb_size ** -0.5)
            with torch.no_grad():
                emb.weight[PAD_ID].zero_()

    # -- pieces used by training and by search -------------------------------------------------
    def encode(self, src: torch.Tensor, src_len: torch.Tensor) -> tuple[EncoderOutput, Memory, dict]:
        enc = self.encoder(src, src_len)
        memory = self.decoder.prepare(enc)
        if self.fused_step is not None:
            memory = self.fused_step.prepare(memory)
        return enc, memory, self.decoder.init_state(enc)

    @property
    def W_o(self) -> torch.Tensor:
        """The output matrix, V x E: the target embeddings when tied."""
        return self.trg_embed.weight if self.output_weight is None else self.output_weight

    def output_features(self, features: torch.Tensor) -> torch.Tensor:
        """Readout t_i (…, O) -> the vector the output matrix multiplies (…, E)."""
        x = self.dropout(features) if self.training else features  # skips a module call per decoding step
        return self.pre_output(x) if self.pre_output is not None else x

    def logits(self, features: torch.Tensor) -> torch.Tensor:
        """features: (…, O) -> logits over the vocabulary (…, V)."""
        x = self.output_features(features)
        if self.packed_output is not None and self.packed_output.usable(x):
            return self.packed_output(x)
        return F.linear(x, self.W_o.to(x.dtype), self.output_bias)  # .to: W_o may be held in fp16 (packed.py)

    def step(self, prev_tokens: torch.Tensor, state: dict, memory: Memory,
             reweigh=None) -> tuple[torch.Tensor, dict, Step]:
        """One decoder step for search. prev_tokens: (B,) -> log-probabilities (B, V).
        ``reweigh``: an edit of α_i (model/attention.py, :class:`~model.attention.Reweigh`)."""
        prev_emb = self.trg_embed(prev_tokens)  # B x E
        if memory.values_and_products is not None:  # RNNsearch / RNNenc on regrouped products (model/packed.py)
            features, state, step = self.fused_step(prev_emb, state, memory, reweigh)
        else:
            state, step = self.decoder.recurrence(prev_emb, state, memory, reweigh)
            features = self.decoder.readout(prev_emb, *self.decoder.readout_inputs(step))
        logits = self.logits(features)
        if logits.dtype != torch.float32:  # a bf16 model's; on fp32, .float() would be one more torch call a step
            logits = logits.float()
        return F.log_softmax(logits, dim=-1), state, step

    # -- training ---------------------------------------------------------------------------------
    def forward(self, src, src_len, trg_in, trg_out=None, label_smoothing: float = 0.0, return_weights: bool = False):
        """Teacher-forced pass. src: B x S, trg_in: B x T (BOS y_1 … y_{T-1}).

        With ``trg_out`` (B x T, y_1 … EOS) returns (summed loss, target tokens) through the
        fused output layer (model/loss.py); without, logits B x T x V. With
        ``return_weights`` also α: B x T x S. The recurrence runs step by step; the readout
        and the output layer run once over all T steps.
        """
        _, memory, state = self.encode(src, src_len)
        emb = self.dropout(self.trg_embed(trg_in))  # B x T x E
        firsts, seconds, weights = [], [], []
        # unbind once: indexing emb[:, i] in the loop would make autograd build and sum a
        # full B x T x E zero-padded gradient at every step (quadratic in T)
        for emb_i in emb.unbind(1):
            state, step = self.decoder.recurrence(emb_i, state, memory)
            a, b = self.decoder.readout_inputs(step)
            firsts.append(a)
            seconds.append(b)
            if return_weights and step.weights is not None:
                weights.append(step.weights)
        features = self.decoder.readout(emb, torch.stack(firsts, 1), torch.stack(seconds, 1))  # B x T x O
        if trg_out is not None:
            out = output_cross_entropy(self.output_features(features), self.W_o.to(features.dtype), self.output_bias,
                                       trg_out, label_smoothing)
        else:
            out = self.logits(features)
        if return_weights:
            return out, (torch.stack(weights, 1) if weights else None)
        return out

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())


def build_model(cfg: ModelConfig) -> nn.Module:
    """The model a config describes: :class:`Seq2Seq` for the RNN decoders, or the
    :class:`~model.transformer.Transformer`; both speak the same interface."""
    if cfg.decoder == "transformer":
        from .transformer import Transformer  # imported here: transformer.py builds on this module's neighbours
        return Transformer(cfg)
    return Seq2Seq(cfg)
