"""What the teaching pages show beyond the decoding record, computed by the model itself.

A :class:`~model.search.DecodingRecord` holds, per target step, the energies, the weights,
the context vector and (Luong) the attentional state. To show the context vector *as a
weighted sum*, c_i = Σ_j α_ij h_j (Bahdanau eq. 5; Luong eq. 7), the page also needs the
vectors being averaged: :func:`annotation_values`. The rest reads a beam search's tree.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .data import Batch
from .model import Seq2Seq


@torch.no_grad()
def annotation_values(model: Seq2Seq, source_ids: list[int]) -> np.ndarray | None:
    """The vectors the context vector averages, S x C (source pieces + EOS): h_j for
    RNNsearch, h̄_j = W_m h_j for Luong; None for RNNenc, which has none, and for the
    Transformer, whose context sums each head's W^V h_j and then mixes them by W^O.
    ``source_ids`` exclude EOS (the encoder appends it, as in search)."""
    if model.cfg.decoder == "transformer":
        return None
    model.eval()
    batch = Batch([list(source_ids)]).to(model.output_bias.device)
    _, memory, _ = model.encode(batch.src, batch.src_len)
    return None if memory.values is None else memory.values[0].float().cpu().numpy()


@dataclass
class Hypothesis:
    """One finished hypothesis of a beam-search tree: the path from the root to ``node``."""
    node: int
    path: list[int]          # node ids, root excluded, in step order
    tokens: list[str]
    logprob: float           # log p(y | x), the sum over the path
    normalised: float        # logprob / |y|^length_penalty, the ranking beam search uses
    chosen: bool             # the hypothesis beam search returned


def beam_path(tree: list, node: int) -> list[int]:
    """Node ids from the first target token down to ``node`` (the root, <s>, excluded)."""
    path = []
    while tree[node].parent is not None:
        path.append(node)
        node = tree[node].parent
    return path[::-1]


def beam_hypotheses(tree: list, length_penalty: float = 1.0) -> list[Hypothesis]:
    """The hypotheses a beam search finished, best first, ranked as ``search._beam`` ranks
    them (log-probability over length^length_penalty, </s> counted). A hypothesis cut at the
    maximum length has no </s> node; the chosen one is then its deepest best-path node."""
    ends = {n.id for n in tree if n.finished}
    best_path = [n for n in tree if n.on_best_path and n.parent is not None]
    if best_path:
        ends.add(max(best_path, key=lambda n: n.step).id)
    out = []
    for end in ends:
        path = beam_path(tree, end)
        out.append(Hypothesis(node=end, path=path, tokens=[tree[n].token for n in path], logprob=tree[end].score,
                              normalised=tree[end].score / max(1, len(path)) ** length_penalty,
                              chosen=tree[end].on_best_path))
    return sorted(out, key=lambda h: (not h.chosen, -h.normalised))


def path_attention(tree: list, path: list[int]) -> np.ndarray | None:
    """α of every step along a path (len(path) x S): what the decoder attended to on the way."""
    if not path or tree[path[0]].attention is None:
        return None
    return np.array([tree[n].attention for n in path])
