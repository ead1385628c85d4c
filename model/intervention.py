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
  every head's α^(k)_ij changed by the same affine map, solved from the shown average ᾱ_ij so
  that the average becomes exactly w: lowered, α^(k)_ij · w / ᾱ_ij; raised,
  α^(k)_ij + λ (1 − α^(k)_ij) with λ = (w − ᾱ_ij) / (1 − ᾱ_ij) (:class:`~model.attention.Reweigh`).
  A head's own weight is not w; the average the page shows is, and the edited record says the
  value reached.

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
        return cls(step, position, None if weight is None else float(weight), float(record.weights[step, position]))

    def reweigh(self, i: int) -> Reweigh | None:
        """The edit of step i's weights, or None where the edit does not act: a factor w / ᾱ_ij to
        lower (0 to knock out), a share λ = (w − ᾱ_ij) / (1 − ᾱ_ij) of the way to 1 to raise."""
        if i < self.step or (self.weight is not None and i > self.step):
            return None
        wanted = 0.0 if self.weight is None else self.weight
        ratio, lift = 1.0, 0.0  # float64: exactly 1.0 and 0.0 for an unchanged weight
        if wanted > self.shown:
            lift = (wanted - self.shown) / (1.0 - self.shown)
        elif wanted < self.shown:
            ratio = wanted / self.shown
        return Reweigh(torch.tensor([self.position]), torch.tensor([ratio], dtype=torch.float64),
                       every_layer=self.weight is None, lifts=torch.tensor([lift], dtype=torch.float64))


    def describe(self, record: DecodingRecord) -> str:
        word, token = record.source_tokens[self.position], record.target_tokens[self.step]
        if self.weight is None:
            return f"«{word}» knocked out from step {self.step + 1} («{token}») on"
        return f"α of «{word}» at step {self.step + 1} («{token}») asked to go from {self.shown:.3f} to {self.weight:.3f}"


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
    def reached(self) -> float:
        """The shown α_ij at the edited step after the edit (a Transformer's head average): what the
        edit did, to be printed instead of the value asked."""
        return float(self.edited.weights[self.edit.step, self.edit.position])

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
