"""What the teaching pages show beyond the decoding record, computed by the model itself.

A :class:`~model.search.DecodingRecord` holds, per target step, the energies, the weights,
the context vector and (Luong) the attentional state. To show the context vector *as a
weighted sum*, c_i = Σ_j α_ij h_j (Bahdanau eq. 5; Luong eq. 7), the page also needs the
vectors being averaged: :func:`annotation_values`. :func:`recomputed_energies` scores the
record's query states again with the model's own attention (the Step through page's
e_ij, checked against the decoder's); :func:`local_p_steps` recomputes local-p's steps
before the Gaussian and in both forms (the shipped one and Luong's eq. 10). The rest reads
a beam search's tree.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .attention import LocalPAttention, local_p_forms
from .data import Batch
from .decoders import Memory
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


def _source_memory(model: Seq2Seq, source_ids: list[int]) -> Memory:
    """The decoder's memory of one source (EOS appended by the encoder, as in search)."""
    model.eval()
    batch = Batch([list(source_ids)]).to(model.output_bias.device)
    return model.encode(batch.src, batch.src_len)[1]


def _queries(memory: Memory, query_states: np.ndarray) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The T query states as a batch of T, beside the one sentence's keys and mask repeated T times."""
    # a copy: the app hands in a cached record's read-only array, which torch must not share
    query = torch.tensor(np.asarray(query_states), dtype=memory.proj_keys.dtype, device=memory.proj_keys.device)
    T = query.size(0)
    return query, memory.proj_keys.expand(T, -1, -1), memory.mask.expand(T, -1)


@torch.no_grad()
def recomputed_energies(model: Seq2Seq, source_ids: list[int], query_states: np.ndarray) -> np.ndarray | None:
    """e_ij scored again from a record's query states (T x H: s_{i-1} for RNNsearch, s_i for
    Luong) with the decoder's own attention module, ``score(query, proj_keys, mask)``: T x S
    (local-p: e'_ij, with the Gaussian, −inf outside the window). None for RNNenc and the
    Transformer, whose queries are not one state per step."""
    if model.cfg.decoder not in ("rnnsearch", "luong"):
        return None
    memory = _source_memory(model, source_ids)
    return model.decoder.attention.score(*_queries(memory, query_states)).float().cpu().numpy()


@dataclass
class LocalPSteps:
    """Local-p's steps recomputed from a record's query states s_i (T steps, S source positions).

    inner_energies: e_ij of the inner score, before the Gaussian (T x S); positions: p_i (T);
    energies: e'_ij = e_ij − (j − p_i)²/2σ² in the window, −inf outside (T x S), the record's;
    shipped_*/luong_*: the two forms of :class:`~model.attention.LocalPForms`, weights a_i(j)
    (T x S), mass Σ_j a_i(j) (T) and context Σ_j a_i(j) h̄_j (T x H); D: the half-width."""
    inner_energies: np.ndarray
    positions: np.ndarray
    energies: np.ndarray
    shipped_weights: np.ndarray
    shipped_mass: np.ndarray
    shipped_context: np.ndarray
    luong_weights: np.ndarray
    luong_mass: np.ndarray
    luong_context: np.ndarray
    D: float


@torch.no_grad()
def local_p_steps(model: Seq2Seq, source_ids: list[int], query_states: np.ndarray) -> LocalPSteps | None:
    """Every step of a local-p record again, before the Gaussian and in both forms; None for
    any other model."""
    attention = getattr(getattr(model, "decoder", None), "attention", None)
    if not isinstance(attention, LocalPAttention):
        return None
    memory = _source_memory(model, source_ids)
    query, proj_keys, mask = _queries(memory, query_states)
    located = attention.locate(query, proj_keys, mask)
    inner = attention.inner.score(query, proj_keys, mask)  # T x S, before the Gaussian
    forms = local_p_forms(inner, located.position, mask, attention.D, memory.values.expand(query.size(0), -1, -1))
    numpy = {name: t.float().cpu().numpy() for name, t in forms._asdict().items()}
    return LocalPSteps(inner_energies=inner.float().cpu().numpy(), positions=located.position.float().cpu().numpy(),
                       energies=located.energies.float().cpu().numpy(), D=float(attention.D), **numpy)


@dataclass
class MemoryBridge:
    """What a Luong model's scores are made of (``LuongDecoder``): h̄_j = W_m h_j, a learned
    ``rows`` x ``cols`` matrix (``parameters`` numbers, no bias) whose output is both the keys
    and the values; ``score``: the inner score (dot, general, concat), ``score_parameters``:
    the numbers the score itself learns on top of W_m (W_a; for concat W_a, U_a, b_a and
    v_a), local-p's W_p and v_p not counted."""
    rows: int
    cols: int
    parameters: int
    score: str
    score_parameters: int


def memory_bridge(model: Seq2Seq) -> MemoryBridge | None:
    """The memory bridge of a Luong model; None for every other model."""
    decoder = getattr(model, "decoder", None)
    if model.cfg.decoder != "luong" or decoder is None:
        return None
    attention = decoder.attention
    inner = attention.inner if isinstance(attention, LocalPAttention) else attention
    rows, cols = decoder.W_m.weight.shape
    return MemoryBridge(rows=rows, cols=cols, parameters=decoder.W_m.weight.numel(),
                        score=model.cfg.attention.removeprefix("local-"),
                        score_parameters=sum(p.numel() for p in inner.parameters()))


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
