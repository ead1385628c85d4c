"""The one encoder every model of the zoo shares (Bahdanau et al. 2014, §3.2).

A bidirectional GRU reads the source x_1..x_S forwards and backwards; each annotation
concatenates both states, h_j = [→h_j ; ←h_j], so it summarises the words before *and*
after x_j.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


@dataclass
class EncoderOutput:
    annotations: torch.Tensor   # h_j = [→h_j ; ←h_j]: B x S x 2H_enc (zeros on padding)
    mask: torch.Tensor          # B x S, True on real tokens
    backward_first: torch.Tensor  # ←h_1, the backward RNN's state at the first word: B x H_enc
    forward_last: torch.Tensor    # →h_S, the forward RNN's state at the last real word: B x H_enc


class Encoder(nn.Module):
    """Embeddings + bidirectional GRU.

    src: (B, S) token ids, ``lengths``: (B,) real lengths. Sequences are packed, so a
    padded position never feeds the recurrence: a sentence's annotations do not depend on
    what else is in its batch.
    """

    def __init__(self, vocab_size: int, emb_size: int, hidden: int, dropout: float, pad_id: int = 0):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, emb_size, padding_idx=pad_id)
        self.rnn = nn.GRU(emb_size, hidden, batch_first=True, bidirectional=True)
        self.dropout = nn.Dropout(dropout)
        self.hidden = hidden

    def forward(self, src: torch.Tensor, lengths: torch.Tensor) -> EncoderOutput:
        return self.annotate(self.dropout(self.embed(src)), lengths)  # B x S x E in

    def annotate(self, x: torch.Tensor, lengths: torch.Tensor) -> EncoderOutput:
        """The bi-GRU over embedded words x (B, S, E): attribution (model/attribution.py) enters here."""
        if bool((lengths == x.size(1)).all()):  # no padding (one sentence): packing would change nothing
            annotations, h_n = self.rnn(x)  # B x S x 2H
        else:
            packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
            out, h_n = self.rnn(packed)
            annotations, _ = pad_packed_sequence(out, batch_first=True, total_length=x.size(1))  # B x S x 2H
        mask = torch.arange(x.size(1), device=x.device).unsqueeze(0) < lengths.unsqueeze(1)
        # h_n: 2 x B x H; [0] forward final (at each sentence's last real word), [1] backward final (at word 1)
        return EncoderOutput(annotations=annotations, mask=mask,
                             backward_first=h_n[1], forward_last=h_n[0])
