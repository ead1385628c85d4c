"""Decoding-time weight layout: the per-step matrix products on oneDNN pre-packed weights.

Why: at decoding time every target step multiplies a handful of rows (1 for greedy, k for
beam search) by every decoder matrix and by the 8k x 256 output matrix. On this CPU the
default fp32 path re-packs the weight on every call for a few rows (measured, one core: a
5 x 256 by 256 x 8000 product takes 680 µs; the same product on weights packed once, 146 µs).
Packing once per loaded model makes beam search about 2x faster and greedy about 1.5x,
with the same fp32 arithmetic (results agree to ~1e-6; tests/test_engine.py checks it).

What: :func:`pack_for_decoding` gives the decoder's ``nn.Linear`` and ``nn.GRUCell``
modules and the output layer a packed copy of their weights. To pay for those copies in
memory, the packed matrices' own parameters and the two embedding tables (read a row at a
time) are then held in fp16 when that is exact (it is for every shipped checkpoint: they
are stored in fp16) and widened back to fp32 where they are used: the same numbers, half
the memory.

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

import torch
import torch.nn as nn
import torch.nn.functional as F

_ROWS_HINT = 5  # the beam size the packing is tuned for; any number of rows works


class PackedMatrix:
    """A weight (out x in) and bias packed once for y = x W^T + b; re-packed if W changes."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None):
        self.weight, self.bias = weight, bias
        self._packed, self._version = None, None

    def usable(self, x: torch.Tensor) -> bool:
        return not torch.is_grad_enabled() and x.device.type == "cpu" and x.dtype == torch.float32

    def pack(self) -> None:
        """(Re-)make the packed copy if there is none or the weights changed since."""
        version = (self.weight._version, None if self.bias is None else self.bias._version)
        if self._packed is None or self._version != version:
            weight = self.weight.detach().float()  # an fp16-held matrix (see HalfStoredEmbedding) widens exactly
            self._packed = torch.ops.mkldnn._reorder_linear_weight(weight, _ROWS_HINT)
            self._version = version

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        self.pack()
        rows = x.reshape(-1, x.size(-1))
        bias = None if self.bias is None else self.bias.detach()
        y = torch.ops.mkldnn._linear_pointwise(rows, self._packed, bias, "none", [], "")
        return y.view(*x.shape[:-1], y.size(-1))


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
        i_r, i_z, i_n = self.packed_ih(x).chunk(3, -1)
        h_r, h_z, h_n = self.packed_hh(h).chunk(3, -1)
        r = torch.sigmoid(i_r + h_r)
        z = torch.sigmoid(i_z + h_z)
        n = torch.tanh(i_n + r * h_n)
        return n + z * (h - n)


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
    """Pack the decoder's matrices and the output layer of a Seq2Seq in place.

    Returns False (and changes nothing) where this torch build cannot pack. The encoder is
    left alone: it runs once per sentence through ``nn.GRU``'s own fused kernel.
    """
    if not packing_available():
        return False
    matrices = []
    for module in model.decoder.modules():
        if type(module) is nn.Linear:
            module.__class__ = PackedLinear
            module.packed = PackedMatrix(module.weight, module.bias)
            matrices.append(module.packed)
            _hold_in_fp16(module.weight)
        elif type(module) is nn.GRUCell:
            module.__class__ = PackedGRUCell
            module.packed_ih = PackedMatrix(module.weight_ih, module.bias_ih)
            module.packed_hh = PackedMatrix(module.weight_hh, module.bias_hh)
            matrices += [module.packed_ih, module.packed_hh]
            _hold_in_fp16(module.weight_ih)
            _hold_in_fp16(module.weight_hh)
    model.packed_output = PackedMatrix(model.W_o, model.output_bias)
    matrices.append(model.packed_output)
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


def release_free_memory() -> None:
    """Return freed heap memory to the OS (glibc's malloc_trim): without it, the process
    keeps the pages of freed temporaries (allocator fragmentation), and the app's resident
    memory grows by the size of every model's fp32 staging copy. A no-op elsewhere."""
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass

