"""Intervene and re-decode: edit the alignment weights α_i and let the model decode again.

An :class:`Edit` changes one source position j's weight: at one target step i (set α_ij to a
value w; the rest of the row rescaled to 1 − w), or at every step from i on (knocked out,
α_ij = 0, the row renormalised over the other positions). The model then decodes again from
step i with the edited weights: steps before i are the original tokens, forced; from i on,
greedy. Where the edit acts is the attention's one seam, :func:`model.attention.attend` (its
``reweigh`` argument, :class:`~model.attention.Reweigh`):

- RNNsearch and Luong: the edited α_i makes the context c_i = Σ_j α_ij h_j that feeds the
  step (RNNsearch's GRU and deep output, Luong's h̃_i and its input feeding);
- our Transformer and a Hugging Face model: the cross-attention weights are edited before they
  multiply the values (``model/hf.py``, :func:`~model.hf.eager_attention`): a knock-out in every
  layer and head (the position's keys and values gone); a weight set to w in the shown layer,
  each head's α^(k)_ij scaled by the same factor w / α_ij, so the shown head average becomes w.

An edit to the value the record already has changes nothing, bit for bit (the factor is 1):
the re-decoded record is the original one. RNNenc has no α to edit.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .attention import Reweigh
from .search import DecodingRecord, forced, greedy, PreparedSource
from .vocabulary import EOS_ID


@dataclass(frozen=True)
class Edit:
    """step i and source position j (0-based, as the record's rows and columns); ``weight``: the
    new α_ij at step i only, or None to knock j out at step i and every step after it; ``shown``:
    the record's α_ij there (the weight the factor w / α_ij is taken against)."""
    step: int
    position: int
    weight: float | None
    shown: float

    @classmethod
    def of(cls, record: DecodingRecord, step: int, position: int, weight: float | None = None) -> Edit:
        if record.weights is None:
            raise ValueError("this model has no attention to edit (RNNenc)")
        if not (0 <= step < len(record.target_ids) and 0 <= position < len(record.source_tokens)):
            raise ValueError(f"step {step} or source position {position} is outside the record")
        if weight is not None and not 0.0 <= weight <= 1.0:
            raise ValueError(f"a weight is between 0 and 1, not {weight}")
        if weight and record.weights[step, position] == 0:
            raise ValueError(f"«{record.source_tokens[position]}» has weight 0 at step {step + 1} (outside local-p's "
                             "window): there is nothing to scale up in the heads; knock it out or pick another step")
        return cls(step, position, None if weight is None else float(weight), float(record.weights[step, position]))

    def reweigh(self, i: int) -> Reweigh | None:
        """The edit of step i's weights, or None where the edit does not act."""
        if i < self.step or (self.weight is not None and i > self.step):
            return None
        wanted = 0.0 if self.weight is None else self.weight
        ratio = wanted / self.shown if self.shown > 0 else 0.0  # float64: exactly 1.0 for an unchanged weight
        return Reweigh(torch.tensor([self.position]), torch.tensor([ratio], dtype=torch.float64),
                       every_layer=self.weight is None)

    def describe(self, record: DecodingRecord) -> str:
        word, token = record.source_tokens[self.position], record.target_tokens[self.step]
        if self.weight is None:
            return f"«{word}» knocked out from step {self.step + 1} («{token}») on"
        return f"α of «{word}» at step {self.step + 1} («{token}») set from {self.shown:.3f} to {self.weight:.3f}"


@dataclass
class Redecoded:
    """The result of an edit: ``edited``, the new greedy continuation from the edited step (its
    heatmap is the edited attention); ``rescored``, the original tokens force-decoded under the
    edit, so ``delta`` (T) is each original token's change in log-probability."""
    edit: Edit
    original: DecodingRecord
    edited: DecodingRecord
    rescored: DecodingRecord

    @property
    def delta(self) -> np.ndarray:
        return self.rescored.token_logprobs - self.original.token_logprobs

    @property
    def changed(self) -> bool:
        """True if the output or any of its log-probabilities changed."""
        return (self.edited.target_ids != self.original.target_ids
                or not np.array_equal(self.edited.token_logprobs, self.original.token_logprobs))

    @property
    def first_difference(self) -> int | None:
        """The first step whose token differs, or None if the outputs are the same."""
        for i, (a, b) in enumerate(zip(self.original.target_ids, self.edited.target_ids)):
            if a != b:
                return i
        same = len(self.original.target_ids) == len(self.edited.target_ids)
        return None if same else min(len(self.original.target_ids), len(self.edited.target_ids))


def redecode(model, vocab, src: PreparedSource, original: DecodingRecord, edit: Edit, topk: int = 5) -> Redecoded:
    """Decode again from ``edit.step``: the original tokens before it forced, the edit applied,
    then greedy; and the original tokens rescored under the same edit."""
    prefix = list(original.target_ids[:edit.step])
    edited = greedy(model, vocab, src, topk, prefix=prefix, edit=edit.reweigh)
    ended = bool(original.target_ids) and original.target_ids[-1] == EOS_ID
    rescored = forced(model, vocab, src, original.target_ids, topk, append_eos=ended, edit=edit.reweigh)
    return Redecoded(edit, original, edited, rescored)
