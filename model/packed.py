"""Decoding-time weight layout: the per-step matrix products on oneDNN pre-packed weights.

Why: at decoding time every target step multiplies a handful of rows (1 for greedy, k for
beam search) by every decoder matrix and by the 8k x 256 output matrix. On the CPUs the
benchmarks run on, the default fp32 path re-packs the weight on every call for a few rows.
Packing once per loaded model makes decoding, beam search above all, several times faster,
with the same fp32 arithmetic (results agree to ~1e-6; tests/test_packed.py checks it).
docs/performance.md gives the measured figures and the commands that produce them.

What: :func:`pack_for_decoding` gives the decoder's ``nn.Linear`` and ``nn.GRUCell``
modules a packed copy of their weights, and the output layer an fp32 copy of W^T in MKL's
layout (``PackedMatrix(transposed=True)``: faster there than packed). To pay for those copies in
memory, the packed matrices' own parameters and the two embedding tables (read a row at a
time) are then held in fp16 when that is exact (it is for every shipped checkpoint: they
are stored in fp16) and widened back to fp32 where they are used: the same numbers, half
the memory.

Two more decoding-only layouts (docs/performance.md, "A greedy RNNsearch step"): a one-row
product on a small decoder matrix runs on a plain fp32 copy (``PackedMatrix(one_row_copy=True)``),
and RNNsearch's and RNNenc's seven per-step products are regrouped into four, one
decoding-step object (:class:`FusedDeepOutputStep`, which Seq2Seq.step calls in place of the
decoder's recurrence and readout). ``python bench/step_cost.py`` measures a greedy step and
each of its products; ``python bench/translate_speed.py`` the whole translation.

The packed path is taken only under ``torch.no_grad()`` on CPU; with gradients enabled
the modules run their ordinary ``forward`` (on widened weights), so a packed model still
computes the same loss. If the weights change after packing (an optimiser step), the
stale copy is re-made on the next call. A model whose weights are *not* exact in fp16 (a
freshly trained one) keeps them in fp32 and trains as usual. When this torch build has no
oneDNN, nothing is packed.

The GRU cell is written out so that its two products can use packed weights; it is
exactly ``nn.GRUCell`` (PyTorch's gate order r, z, n):
    r = σ(W_ir x + b_ir + W_hr h + b_hr),  z = σ(W_iz x + b_iz + W_hz h + b_hz)
    n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn)),  h' = (1 − z) ⊙ n + z ⊙ h
"""
from __future__ import annotations

import ctypes
import functools
from dataclasses import replace

import torch
import torch.nn as nn
import torch.nn.functional as F

from .attention import attend
from .decoders import DeepOutputDecoder, Memory, Step

_ROWS_HINT = 5  # the beam size the packing is tuned for; any number of rows works


class PackedMatrix:
    """A weight (out x in) and bias packed once for y = x W^T + b; re-packed if W changes.

    ``blocks`` stacks more weights below the first, each with its own bias (or none) and
    optionally only some of its input columns: one product then computes several of the
    papers' matrices at once (see :class:`FusedDeepOutputStep`). ``add`` adds a tensor
    to the product inside the same call.

    ``one_row_copy`` also keeps the weight unpacked, in fp32, for products of a single row
    (greedy decoding): there MKL's plain product beats the packed one, whose call has
    ~13 µs of fixed cost (bench/step_cost.py), while for several rows (beam search, batches)
    the packed copy is 2–5x faster. Worth its memory for the decoder's small matrices only.

    ``transposed`` keeps, instead of the packed copy, an fp32 copy of W^T (in x out) for MKL's
    x W^T: for the 8,000-row output layer, which is read from memory at every step whatever
    the layout, that is faster than the packed product for one row (``one_row_us`` in
    bench/step_cost.py), in the same memory.
    """

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None,
                 columns: slice | None = None, blocks: tuple = (), one_row_copy: bool = False,
                 transposed: bool = False):
        self.blocks = ((weight, bias, columns),) + tuple(blocks)
        self._tensors = [t for w, b, _ in self.blocks for t in (w, b) if t is not None]
        self.one_row_copy, self.transposed = one_row_copy, transposed
        self.out = sum(w.size(0) for w, _, _ in self.blocks)  # the product's width: every block's rows
        self._packed, self._plain, self._bias, self._version = None, None, None, None

    def usable(self, x: torch.Tensor) -> bool:
        return not torch.is_grad_enabled() and x.device.type == "cpu" and x.dtype == torch.float32

    def pack(self) -> None:
        """(Re-)make the packed copy if there is none or the weights changed since."""
        version = tuple(t._version for t in self._tensors)
        if self._packed is None or self._version != version:
            # an fp16-held matrix (see HalfStoredEmbedding) widens exactly
            weights = [w.detach().float()[:, cols or slice(None)] for w, _, cols in self.blocks]
            weight = weights[0] if len(weights) == 1 else torch.cat(weights)
            self._packed = (weight.t().contiguous() if self.transposed
                            else torch.ops.mkldnn._reorder_linear_weight(weight, _ROWS_HINT))
            self._plain = weight.contiguous() if self.one_row_copy else None
            biases = [b.detach().float() if b is not None else w.new_zeros(w.size(0), dtype=torch.float32)
                      for (_, b, _), w in zip(self.blocks, weights)]
            self._bias = (None if all(b is None for _, b, _ in self.blocks)
                          else biases[0] if len(biases) == 1 else torch.cat(biases))
            self._version = version

    def __call__(self, x: torch.Tensor, add: torch.Tensor | None = None) -> torch.Tensor:
        """x W^T + b (+ add); x: (…, in), add: (…, out)."""
        self.pack()
        # a decoding step's input is already B x in: no reshape there, each torch call costs
        # microseconds and hands the GIL to the server's other threads (docs/performance.md)
        flat = x.dim() == 2
        rows = x if flat else x.reshape(-1, x.size(-1))
        if add is not None and add.dim() != 2:
            add = add.reshape(rows.size(0), -1)
        if self._plain is not None and rows.size(0) == 1:
            y = F.linear(rows, self._plain, self._bias)
            if add is not None:
                y = y + add
        elif self.transposed:
            y = rows @ self._packed if self._bias is None else torch.addmm(self._bias, rows, self._packed)
            if add is not None:
                y = y + add
        elif add is not None:
            y = torch.ops.mkldnn._linear_pointwise.binary(rows, add, self._packed, self._bias, "add")
        else:
            y = torch.ops.mkldnn._linear_pointwise(rows, self._packed, self._bias, "none", [], "")
        return y if flat else y.view(*x.shape[:-1], y.size(-1))


class PackedLinear(nn.Linear):
    """``nn.Linear`` that uses its packed weight when decoding (see the module docstring)."""
    packed: PackedMatrix

    def forward(self, x):
        if self.packed.usable(x):
            return self.packed(x)
        return F.linear(x, self.weight.to(x.dtype), self.bias)  # .to: the weight may be held in fp16


class PackedGRUCell(nn.GRUCell):
    """``nn.GRUCell`` whose two products use packed weights when decoding."""
    packed_ih: PackedMatrix
    packed_hh: PackedMatrix

    def forward(self, x, h=None):
        if h is None or not self.packed_ih.usable(x):
            if self.weight_ih.dtype == x.dtype:
                return super().forward(x, h)
            # weights held in fp16 (pack_for_decoding): widen them for the ordinary cell
            h = x.new_zeros(x.size(0), self.hidden_size) if h is None else h
            return torch.gru_cell(x, h, self.weight_ih.to(x.dtype), self.weight_hh.to(x.dtype),
                                  self.bias_ih, self.bias_hh)
        return gru_gates(self.packed_ih(x), self.packed_hh(h), h)


def gru_gates(input_gates: torch.Tensor, hidden_gates: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    """``nn.GRUCell``'s update from its two products, W_ih x + b_ih and W_hh h + b_hh
    (B x 3H each, gates r, z, n), in few operations: each costs microseconds at one row."""
    H = h.size(-1)
    input_rz, input_n = input_gates.split((2 * H, H), -1)
    hidden_rz, hidden_n = hidden_gates.split((2 * H, H), -1)
    r, z = torch.sigmoid(input_rz + hidden_rz).chunk(2, -1)
    n = torch.tanh(torch.addcmul(input_n, r, hidden_n))
    return torch.lerp(n, h, z)  # (1 − z) ⊙ n + z ⊙ h


class HalfStoredEmbedding(nn.Embedding):
    """``nn.Embedding`` whose table is held in fp16 (exactly: see :func:`pack_for_decoding`)
    and whose looked-up rows are returned in fp32. For decoding only: gradients would
    update the fp16 table."""

    def forward(self, x):
        return super().forward(x).float()


def _hold_in_fp16(param: nn.Parameter) -> bool:
    """Hold a parameter in fp16 if that loses nothing (every value of an fp16 checkpoint)."""
    weight = param.data
    if weight.dtype == torch.float32 and torch.equal(weight.half().float(), weight):
        param.data = weight.half()
        return True
    return False


@functools.cache  # one probe per process, not one per loaded model
def packing_available() -> bool:
    if not torch.backends.mkldnn.is_available():
        return False
    try:
        probe = PackedMatrix(torch.ones(3, 2), torch.zeros(3))
        with torch.no_grad():
            return bool(torch.allclose(probe(torch.ones(1, 2)), torch.full((1, 3), 2.0)))
    except (RuntimeError, AttributeError):
        return False


def pack_for_decoding(model: nn.Module) -> bool:
    """Pack the decoder's matrices and the output layer of a Seq2Seq in place (of a Transformer,
    the output layer).

    Returns False (and changes nothing) where this torch build cannot pack. The encoder is
    left alone: it runs once per sentence through ``nn.GRU``'s own fused kernel.
    """
    if not packing_available():
        return False
    if not hasattr(model, "decoder"):  # the Transformer: its output layer only (its one-row products
        # on 256-wide matrices are as fast plain, see PackedMatrix; the 8k-row output layer is ~5x faster
        # held once in its product's layout than re-packed on every call, torch's default)
        model.packed_output = PackedMatrix(model.W_o, model.output_bias, transposed=True)
        with torch.no_grad():
            model.packed_output.pack()
        return True
    matrices = []
    for module in model.decoder.modules():
        if type(module) is nn.Linear and module.out_features > 1:  # not RNNsearch's v_a: a vector, cheapest as it is
            module.__class__ = PackedLinear
            module.packed = PackedMatrix(module.weight, module.bias, one_row_copy=True)
            matrices.append(module.packed)
            _hold_in_fp16(module.weight)
        elif type(module) is nn.GRUCell:
            module.__class__ = PackedGRUCell
            module.packed_ih = PackedMatrix(module.weight_ih, module.bias_ih, one_row_copy=True)
            module.packed_hh = PackedMatrix(module.weight_hh, module.bias_hh, one_row_copy=True)
            matrices += [module.packed_ih, module.packed_hh]
            _hold_in_fp16(module.weight_ih)
            _hold_in_fp16(module.weight_hh)
    model.packed_output = PackedMatrix(model.W_o, model.output_bias, transposed=True)
    matrices.append(model.packed_output)
    if isinstance(model.decoder, DeepOutputDecoder):  # RNNsearch and RNNenc
        model.fused_step = FusedDeepOutputStep(model.decoder)
        unused = {id(m) for m in model.fused_step.replaced}
        matrices = [m for m in matrices if id(m) not in unused] + model.fused_step.matrices
    for embedding in (model.encoder.embed, model.trg_embed):
        if _hold_in_fp16(embedding.weight):
            embedding.__class__ = HalfStoredEmbedding
    # pack now, not on first use: a loaded model is for decoding, and the caller can then hand
    # the fp32 weights just freed (held in fp16 from here on) and the packing's staging copies
    # back to the OS in one go (release_free_memory)
    with torch.no_grad():
        for packed in matrices:
            packed.pack()
    return True


class FusedDeepOutputStep:
    """One decoding step of RNNsearch or RNNenc on regrouped products: the same equations
    as ``RNNsearchDecoder.recurrence`` then ``readout`` (``model/decoders.py``), in four
    products instead of seven.

    A step multiplies s_{i-1} by W_hh and, for the attention, W_a; [E y_{i-1} ; c_i] by the
    GRU's input matrix W_ih; and, in the deep output, s_i, E y_{i-1} and c_i by U_o, V_o and
    C_o. Split W_ih by columns into its E y and c blocks, then
        [W_hh ; W_a] s_{i-1} + [b_hh ; 0]                       one product
        [W_ih^y ; V_o] E y_{i-1}                                one product
        [W_ih^c ; C_o] c_i + b = Σ_j α_ij ([W_ih^c ; C_o] h_j + b),   b = [b_ih ; b_o]
    the last because c_i = Σ_j α_ij h_j (eq. 5) and Σ_j α_ij = 1: the c-side product is made
    once per sentence, for every annotation h_j (:meth:`prepare`), and a step reads it through
    the same weights α_ij that make c_i, one small S-row product in place of a 1,280 x 512
    matrix read from memory (2.6 MB per step). For RNNenc c is fixed, and its product is
    simply made once. Same arithmetic up to fp32 rounding (tests/test_packed.py compares the
    records); the fourth product is U_o s_i, and the output layer is the fifth.
    """

    def __init__(self, decoder: nn.Module):
        self.decoder = decoder
        emb, rnn, attention = decoder.cfg.emb_size, decoder.rnn, decoder.attention  # RNNenc: no attention
        self.state_products = PackedMatrix(  # [W_hh ; W_a] s_{i-1} + [b_hh ; 0]
            rnn.weight_hh, rnn.bias_hh, one_row_copy=True,
            blocks=((attention.W_a.weight, None, None),) if attention is not None else ())
        self.embedding_products = PackedMatrix(rnn.weight_ih, None, slice(0, emb), one_row_copy=True,
                                               blocks=((decoder.V_o.weight, None, None),))  # [W_ih^y ; V_o] E y_{i-1}
        self.context_products = PackedMatrix(rnn.weight_ih, rnn.bias_ih, slice(emb, None),  # [W_ih^c ; C_o] h_j + b
                                             blocks=((decoder.C_o.weight, decoder.U_o.bias, None),))
        self.deep_output = PackedMatrix(decoder.U_o.weight, None, one_row_copy=True)  # U_o s_i; its bias is in b
        self.matrices = [self.state_products, self.embedding_products, self.context_products, self.deep_output]
        # the plain modules' own packed copies, made unused by these (packed only if the plain path runs)
        self.replaced = [rnn.packed_ih, rnn.packed_hh, decoder.V_o.packed, decoder.C_o.packed, decoder.U_o.packed]
        if attention is not None:
            self.replaced.append(attention.W_a.packed)

    def prepare(self, memory: Memory) -> Memory:
        """The once-per-sentence products: [v ; W_ih^c v + b_ih ; C_o v + b_o] for each vector v
        the context averages (h_j, or RNNenc's fixed c); unchanged where the packed path does
        not apply (gradients on, another device)."""
        values = memory.values if memory.values is not None else memory.fixed_context
        if not self.context_products.usable(values):
            return memory
        return replace(memory, values_and_products=torch.cat([values, self.context_products(values)], dim=-1))

    def __call__(self, prev_emb, state, memory, reweigh=None):
        """``recurrence`` then ``readout``: returns (t_i, state, Step) like Seq2Seq.step's two calls."""
        decoder, s_prev = self.decoder, state["s"]
        gates, C = 3 * decoder.cfg.dec_hidden, decoder.context_size
        # [W_hh s_{i-1} + b_hh ; W_a s_{i-1}], split once (each torch call costs microseconds)
        from_state, query = self.state_products(s_prev).split([gates, self.state_products.out - gates], -1)
        if decoder.attention is not None:  # α_i and Σ_j α_ij [h_j ; W_ih^c h_j + b_ih ; C_o h_j + b_o]
            energies = decoder.attention.score_projected(query, memory.proj_keys, memory.mask)
            weights, read = attend(energies, memory.values_and_products, reweigh)  # an edited α still sums to 1
        else:  # RNNenc: c and its products, made once per sentence
            energies = weights = None
            read = memory.values_and_products
        context, context_products = read.split([C, read.size(-1) - C], -1)
        # [W_ih ; V_o C_o] [E y_{i-1} ; c_i] + [b_ih ; b_o]: the GRU's input side, then the deep output's
        to_gates, to_output = self.embedding_products(prev_emb, add=context_products).split(
            [gates, self.embedding_products.out - gates], -1)
        s = gru_gates(to_gates, from_state, s_prev)  # B x H
        t = decoder.maxout(self.deep_output(s, add=to_output))  # deep output of s_i (eq. 4)
        return t, {"s": s}, Step(query=s_prev, state=s, context=context, energies=energies, weights=weights)


def release_free_memory() -> None:
    """Return freed heap memory to the OS (glibc's malloc_trim): without it, the process
    keeps the pages of freed temporaries (allocator fragmentation), and the app's resident
    memory grows by the size of every model's fp32 staging copy. A no-op elsewhere."""
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass

