"""What the teaching pages show beyond the decoding record, computed by the model itself.

A :class:`~model.search.DecodingRecord` holds, per target step, the energies, the weights
and the context vector. To show the context vector *as a weighted sum*, c_i = Σ_j α_ij h_j
(Bahdanau eq. 5; Luong eq. 7), the page also needs the vectors being averaged, and for
Luong the attentional state h̃_i = tanh(W_c [c_i ; s_i]) (Luong eq. 5) that feeds the output.
:func:`decoder_internals` replays the same decoder steps as search does (``Seq2Seq.encode``
and ``Seq2Seq.step``) and keeps those tensors, as numpy.

:func:`forced_alignment` scores a given French sentence word by word and turns its
attention into word links, with the rule of ``model.align`` (rows averaged over a French
word's pieces, columns summed over an English word's pieces; each French word links to its
most-attended English word).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .align import word_pieces
from .analysis import links_from_attention, merge_to_words
from .data import Batch
from .model import Seq2Seq
from .search import DecodingRecord, forced, PreparedSource
from .vocabulary import BOS_ID, Vocabulary, WORD_BOUNDARY


@dataclass
class DecoderInternals:
    """values: S x C, the vectors c_i averages (h_j for RNNsearch, h̄_j = W_m h_j for Luong;
    None for RNNenc, which has none); attentional: T x H, h̃_i (Luong only, else None)."""
    values: np.ndarray | None
    attentional: np.ndarray | None


@torch.no_grad()
def decoder_internals(model: Seq2Seq, source_ids: list[int], target_ids: list[int]) -> DecoderInternals:
    """Replay the decoder over a given target (as forced decoding does) and keep what the
    record leaves out. ``source_ids`` exclude EOS (the encoder appends it, as in search)."""
    model.eval()
    batch = Batch([list(source_ids)])
    _, memory, state = model.encode(batch.src, batch.src_len)
    prev = torch.tensor([BOS_ID])
    attentional = []
    for token in target_ids:
        _, state, step = model.step(prev, state, memory)
        if step.attentional is not None:
            attentional.append(step.attentional[0])
        prev = torch.tensor([int(token)])
    values = None if memory.values is None else memory.values[0].float().numpy()  # S x C
    return DecoderInternals(values=values,
                            attentional=torch.stack(attentional).float().numpy() if attentional else None)


def annotation_values(model: Seq2Seq, source_ids: list[int]) -> np.ndarray | None:
    """The vectors the context vector averages, S x C (source pieces + EOS); None for RNNenc."""
    return decoder_internals(model, source_ids, []).values


@dataclass
class ForcedAlignment:
    """A given French sentence scored under the model, at the word level.

    word_logprobs[k]: log p of French word k (the sum over its pieces' log-probabilities);
    eos_logprob: log p(</s>) after the last word; word_weights: French words x English words
    (None for RNNenc); links: {(English i, French k)}, 0-indexed, as the gold files use.
    """
    english: list[str]
    french: list[str]
    record: DecodingRecord
    word_logprobs: np.ndarray
    eos_logprob: float
    word_weights: np.ndarray | None
    links: set[tuple[int, int]]

    @property
    def logprob(self) -> float:
        return float(self.word_logprobs.sum() + self.eos_logprob)


def forced_alignment(model: Seq2Seq, vocab: Vocabulary, english: list[str], french: list[str]) -> ForcedAlignment:
    """Force-decode French words given English words, as ``python -m model.align`` does."""
    if not english or not french:
        raise ValueError("both sentences need at least one word")
    src_ids, src_owner = word_pieces(vocab, english)
    trg_ids, trg_owner = word_pieces(vocab, french)
    rec = forced(model, vocab, PreparedSource(" ".join(english), src_ids, False), trg_ids)
    word_logprobs = np.zeros(len(french))
    np.add.at(word_logprobs, trg_owner, rec.token_logprobs[:len(trg_ids)])
    word_weights, links = None, set()
    if rec.weights is not None:
        weights = rec.weights[:len(trg_ids), :len(src_ids)]  # drop the EOS row and column
        word_weights, _, _ = merge_to_words(weights, _word_marks(src_owner), _word_marks(trg_owner))
        links = links_from_attention(word_weights)
    return ForcedAlignment(english=list(english), french=list(french), record=rec, word_logprobs=word_logprobs,
                           eos_logprob=float(rec.token_logprobs[len(trg_ids)]), word_weights=word_weights,
                           links=links)


def _word_marks(owner: list[int]) -> list[str]:
    """Stand-in pieces that open a word exactly where the owner changes (for merge_to_words)."""
    return [WORD_BOUNDARY + "x" if k == 0 or owner[k] != owner[k - 1] else "x" for k in range(len(owner))]


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
