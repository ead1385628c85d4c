"""The three decoders: RNNsearch (Bahdanau), Luong (global / local-p, input feeding), RNNenc.

All share one interface, so search (greedy, beam, forced) does not care which it drives:

    memory = dec.prepare(enc)                                  # once per sentence
    state  = dec.init_state(enc)                               # s_0 (and h̃_0 for Luong)
    state, step = dec.recurrence(E y_{i-1}, state, memory)     # one target step (``reweigh``:
                                                               # an edit of α_i, model/attention.py)
    features = dec.readout(E y_{i-1}, step)                    # -> output layer -> p(y_i)

``recurrence`` is where the mechanisms differ: *where* attention is called and with which
state. ``readout`` is stateless, so training runs the recurrence in a Python loop and the
readout once over all steps as one large matrix product.
"""
from __future__ import annotations

from dataclasses import dataclass, fields

import torch
import torch.nn as nn

from .attention import attend, build_attention, LocalPAttention
from .config import ModelConfig
from .encoders import EncoderOutput


@dataclass
class Memory:
    """What the decoder reads from the source, computed once per sentence.

    values: B x S x Hv (the vectors averaged into c_i), proj_keys: B x S x K,
    mask: B x S, fixed_context: B x C (RNNenc only).
    values_and_products: set only when decoding on the fused step (``model/packed.py``,
    :class:`~model.packed.FusedDeepOutputStep`): [h_j ; W_ih^c h_j ; C_o h_j],
    B x S x (C + 3H + 2M), or for RNNenc the same of its fixed c, B x (C + 3H + 2M).
    layer_keys: Transformer only, every decoder layer's cross-attention keys and values,
    B x L x 2 x heads x S x d_k; encoder_attention: its encoder self-attention, B x L x heads x S x S.
    """
    values: torch.Tensor | None = None
    proj_keys: torch.Tensor | None = None
    mask: torch.Tensor | None = None
    fixed_context: torch.Tensor | None = None
    values_and_products: torch.Tensor | None = None
    layer_keys: torch.Tensor | None = None
    encoder_attention: torch.Tensor | None = None

    def index_select(self, idx: torch.Tensor) -> Memory:
        return Memory(**{f.name: (None if getattr(self, f.name) is None else getattr(self, f.name).index_select(0, idx))
                         for f in fields(self)})


@dataclass
class Step:
    """One target step i, batched. energies/weights are None for RNNenc.

    query: the state attention was computed from (s_{i-1} Bahdanau, s_i Luong), B x H
    state: s_i after the step, B x H; context: c_i, B x C
    energies, weights: e_ij and α_ij = softmax_j(e_ij), B x S (local-p: e'_ij, the score plus the
    Gaussian's log, −inf outside the window). Transformer: weights is the shown layer's heads'
    α^(k)_ij averaged, and energies the same heads' energies e^(k)_ij averaged; the softmax of
    that mean is *not* the weights shown (a mean of softmaxes is not the softmax of the mean)
    position: p_i of local-p, B
    window_mass: m_i of local-p (eq. 10's weights sum to it; c_i = m_i Σ_j α_ij h̄_j), B
    attentional: h̃_i (Luong only), B x H
    head_weights: Transformer only, every layer's and head's cross-attention, B x L x heads x S
    (``weights`` is one layer's heads averaged); self_weights: its decoder self-attention over
    y_0 … y_{i-1}, B x L x heads x i
    """
    query: torch.Tensor
    state: torch.Tensor
    context: torch.Tensor
    energies: torch.Tensor | None = None
    weights: torch.Tensor | None = None
    position: torch.Tensor | None = None
    window_mass: torch.Tensor | None = None
    attentional: torch.Tensor | None = None
    head_weights: torch.Tensor | None = None
    self_weights: torch.Tensor | None = None


class Maxout(nn.Module):
    """t_i = max(t̃_{i,2k-1}, t̃_{i,2k}) (Bahdanau A.2.2, Goodfellow et al. 2013)."""

    def forward(self, x):
        return x.view(*x.shape[:-1], x.size(-1) // 2, 2).max(-1).values


class DeepOutputDecoder(nn.Module):
    """What RNNsearch and RNNenc share (Bahdanau et al. 2014, Appendix A.2.2): a GRU fed
    [E y_{i-1} ; c_i], its first state from the encoder, and the deep output

        s_0 = tanh(W_s ←h_1)
        t_i = maxout(U_o s_i + V_o E y_{i-1} + C_o c_i)

    The deep output reads s_i, the state after the step, as eq. 4 does,
    p(y_i | y_<i, x) = g(y_{i-1}, s_i, c_i); Appendix A.2.2 writes U_o s_{i-1} there instead.
    Bahdanau's own later dl4mt/Nematus code also reads s_i: the output then sees c_i through
    the recurrence as well as directly. Subclasses say where c_i comes from.
    """

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.W_s = nn.Linear(cfg.enc_hidden, cfg.dec_hidden)
        # registered here, between W_s and the GRU, so that parameters keep their order (an
        # optimiser's saved state is indexed by it)
        self.attention = self.build_attention(cfg)
        self.rnn = nn.GRUCell(cfg.emb_size + self.context_size, cfg.dec_hidden)
        self.U_o = nn.Linear(cfg.dec_hidden, 2 * cfg.maxout_size)
        self.V_o = nn.Linear(cfg.emb_size, 2 * cfg.maxout_size, bias=False)
        self.C_o = nn.Linear(self.context_size, 2 * cfg.maxout_size, bias=False)
        self.maxout = Maxout()
        self.output_size = cfg.maxout_size

    @property
    def context_size(self) -> int:
        return 2 * self.cfg.enc_hidden  # c_i (or c) lives in the annotations' space

    def build_attention(self, cfg: ModelConfig) -> nn.Module | None:
        return None

    def init_state(self, enc: EncoderOutput) -> dict:
        return {"s": torch.tanh(self.W_s(enc.backward_first))}  # s_0: B x H

    def readout_inputs(self, step: Step) -> tuple[torch.Tensor, torch.Tensor]:
        return step.state, step.context

    def readout(self, prev_emb, state_i, context_i):
        """Deep output; works on any leading shape (B or B x T)."""
        return self.maxout(self.U_o(state_i) + self.V_o(prev_emb) + self.C_o(context_i))


class RNNsearchDecoder(DeepOutputDecoder):
    """Bahdanau et al. 2014, §3.1 and Appendix A.2.2 (RNNsearch).

    Attention comes *before* the RNN step and reads the previous state:
        e_ij = v_a^T tanh(W_a s_{i-1} + U_a h_j)                  (eq. 6, A.1.2)
        α_ij = softmax_j(e_ij);  c_i = Σ_j α_ij h_j               (eq. 5, 6)
        s_i  = GRU(s_{i-1}, [E y_{i-1} ; c_i])                    (eq. 4, A.2.2)
        t_i  = maxout(U_o s_i + V_o E y_{i-1} + C_o c_i)          (eq. 4's s_i; A.2.2's deep output
                                                                   writes s_{i-1}, see DeepOutputDecoder)
        s_0  = tanh(W_s ←h_1)                                     (A.2.2)

    Decoding on a CPU runs the same equations on regrouped products
    (``model/packed.py``, :class:`~model.packed.FusedDeepOutputStep`); training and this
    ``recurrence`` are the plain modules.
    """

    def build_attention(self, cfg: ModelConfig) -> nn.Module:
        return build_attention("additive", cfg.dec_hidden, self.context_size, cfg.attention_size)

    def prepare(self, enc: EncoderOutput) -> Memory:
        return Memory(values=enc.annotations, proj_keys=self.attention.compute_proj_keys(enc.annotations),
                      mask=enc.mask)

    def recurrence(self, prev_emb, state, memory, reweigh=None):
        s_prev = state["s"]
        energies = self.attention.score(s_prev, memory.proj_keys, memory.mask)  # B x S
        weights, context = attend(energies, memory.values, reweigh)  # B x S, B x 2H
        s = self.rnn(torch.cat([prev_emb, context], dim=-1), s_prev)  # B x H
        return {"s": s}, Step(query=s_prev, state=s, context=context, energies=energies, weights=weights)


class RNNencDecoder(DeepOutputDecoder):
    """The no-attention baseline, RNNenc (after Cho et al. 2014; Bahdanau et al. 2014, §4.2).

    The source is squeezed into one fixed vector c = [→h_S ; ←h_1] (both directions' final
    states), fed to every decoder step and to the output layer in place of c_i:
        s_i = GRU(s_{i-1}, [E y_{i-1} ; c]);   t_i = maxout(U_o s_i + V_o E y_{i-1} + C_o c)

    This is a stronger baseline than Cho et al.'s RNN Encoder–Decoder, whose encoder is one
    forward RNN and whose c is a summary of its last state: here the encoder is the attention
    models' bidirectional GRU, and c holds both directions' final states.
    """

    def prepare(self, enc):
        return Memory(mask=enc.mask, fixed_context=torch.cat([enc.forward_last, enc.backward_first], dim=-1))

    def recurrence(self, prev_emb, state, memory, reweigh=None):  # no α to edit
        c = memory.fixed_context  # B x 2H, the same at every step
        s = self.rnn(torch.cat([prev_emb, c], dim=-1), state["s"])
        return {"s": s}, Step(query=state["s"], state=s, context=c)


class LuongDecoder(nn.Module):
    """Luong et al. 2015, §3 (global attention, §3.1; local-p, §3.2; input feeding, §3.3).

    The RNN step comes *first*; attention then reads the *current* state:
        s_i  = GRU(s_{i-1}, [E y_{i-1} ; h̃_{i-1}])                 (input feeding, §3.3)
        e_ij = score(s_i, h̄_j): dot s_i^T h̄_j | general s_i^T W_a h̄_j | concat v_a^T tanh(W_a [s_i ; h̄_j])  (eq. 8)
        α_ij = softmax_j(e_ij);  c_i = Σ_j α_ij h̄_j                  (eq. 7)
        h̃_i  = tanh(W_c [c_i ; s_i])                                 (eq. 5)
        p(y_i | y_<i, x) = softmax(W_s h̃_i)                          (eq. 6)

    Memory bridge: the bi-GRU annotations are 2H_enc wide and s_i is H wide, so ``dot``
    would be undefined. Every Luong model first maps each annotation through one learned
    linear layer, h̄_j = W_m h_j (2H_enc -> H, no bias), and attends over h̄_j with whichever
    score; h̄_j is both the keys and the values. So the shipped ``dot`` scores
    e_ij = s_i^T W_m h_j (learned, 2H_enc x H parameters) and ``general`` s_i^T W_a W_m h_j.
    s_0 = tanh(W_s ←h_1) as in RNNsearch, so all models share the encoder and its bridge; h̃_0 = 0.
    """

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        H = cfg.dec_hidden
        self.W_s = nn.Linear(cfg.enc_hidden, H)
        self.W_m = nn.Linear(2 * cfg.enc_hidden, H, bias=False)
        self.attention = build_attention(cfg.attention, H, H, cfg.attention_size, cfg.local_window, cfg.local_p)
        self.rnn = nn.GRUCell(cfg.emb_size + H, H)
        self.W_c = nn.Linear(2 * H, H, bias=False)
        self.output_size = H

    @property
    def context_size(self) -> int:
        return self.cfg.dec_hidden

    def prepare(self, enc):
        values = self.W_m(enc.annotations)  # h̄_j: B x S x H
        return Memory(values=values, proj_keys=self.attention.compute_proj_keys(values), mask=enc.mask)

    def init_state(self, enc):
        s0 = torch.tanh(self.W_s(enc.backward_first))
        return {"s": s0, "h_tilde": torch.zeros_like(s0)}

    def recurrence(self, prev_emb, state, memory, reweigh=None):
        s = self.rnn(torch.cat([prev_emb, state["h_tilde"]], dim=-1), state["s"])  # B x H
        position = window_mass = None
        if isinstance(self.attention, LocalPAttention):
            energies, position, window_mass = self.attention.locate(s, memory.proj_keys, memory.mask)
            weights, context = attend(energies, memory.values, reweigh)
            if window_mass is not None:  # Σ_j a_i(j) h̄_j, Luong eq. 10 (see LocalPAttention)
                context = window_mass.unsqueeze(1) * context
        else:
            energies = self.attention.score(s, memory.proj_keys, memory.mask)  # B x S
            weights, context = attend(energies, memory.values, reweigh)  # B x S, B x H
        h_tilde = torch.tanh(self.W_c(torch.cat([context, s], dim=-1)))  # B x H
        return ({"s": s, "h_tilde": h_tilde},
                Step(query=s, state=s, context=context, energies=energies, weights=weights,
                     position=position, window_mass=window_mass, attentional=h_tilde))

    def readout_inputs(self, step: Step):
        return step.attentional, step.context

    def readout(self, prev_emb, h_tilde, context_i):
        return h_tilde  # the attentional state goes straight to W_s (eq. 6)


def build_decoder(cfg: ModelConfig) -> nn.Module:
    return {"rnnsearch": RNNsearchDecoder, "luong": LuongDecoder, "rnnenc": RNNencDecoder}[cfg.decoder](cfg)
