"""Decoding: greedy, beam search and forced decoding, all returning one record.

A :class:`DecodingRecord` is what a teacher shows: source and target pieces and, for every
target step i, the energies e_ij, the alignment weights α_ij (summing to 1 over the
unpadded source), the context vector c_i, the query state (s_{i-1} for RNNsearch, s_i for
Luong), the decoder state s_i and the top-k next tokens. Beam search adds its hypothesis
tree. Everything in the record is numpy, so ``viz/`` never needs torch.

Batched entry points (:func:`greedy_batch`, :func:`beam_batch`) serve evaluation.
"""
from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field, fields

import numpy as np
import torch

from .data import Batch
from .decoders import Step
from .model import Seq2Seq
from .vocabulary import BOS_ID, EOS_ID, Vocabulary

MAX_SOURCE_TOKENS = 120  # subword pieces the encoder reads; longer input is truncated, with notice
MAX_BEAM = 10  # the widest beam the app offers: the tree stays readable and a search stays well under a second


def max_output_length(src_len: int) -> int:
    """Longest output allowed for a source of src_len pieces (French runs ~1.2× English)."""
    return int(src_len * 2 + 10)


def model_device(model) -> torch.device:
    """Where the model's weights live (ours, or a model made elsewhere: ``model/hf.py``)."""
    return next(model.parameters()).device


class InputError(ValueError):
    """Input the model cannot translate (e.g. empty after cleaning); the message is for users."""


@dataclass
class PreparedSource:
    text: str            # cleaned text actually translated
    ids: list[int]       # subword ids (EOS excluded), at most MAX_SOURCE_TOKENS
    truncated: bool      # True if the input was cut to fit
    notices: list[str] = field(default_factory=list)


def prepare_source(vocab: Vocabulary, text: str, max_tokens: int = MAX_SOURCE_TOKENS) -> PreparedSource:
    """Clean user text and cut it to the encoder's limit, saying what was done.

    Control characters are replaced by spaces (they carry no meaning to the model and can
    hide in pasted text); everything else, markup and emoji included, is kept verbatim:
    SentencePiece's byte fallback represents any character.
    """
    if text is None:
        text = ""
    notices = []
    cleaned = "".join(" " if unicodedata.category(ch) in ("Cc", "Cf") and ch not in "\u200d" else ch for ch in text)
    if cleaned != text:
        notices.append("Control characters were replaced by spaces.")
    cleaned = " ".join(cleaned.split())
    if not cleaned:
        raise InputError("The text is empty: type an English sentence to translate.")
    ids = vocab.encode(cleaned)
    truncated = len(ids) > max_tokens
    if truncated:
        # cut at the last word boundary that fits, so no word is split in half
        ids = ids[:max_tokens]
        pieces = vocab.pieces(ids)
        starts = [k for k, p in enumerate(pieces) if p.startswith("\u2581")]
        if starts and starts[-1] > 0 and len(ids) == max_tokens:
            ids = ids[:starts[-1]]
        kept = vocab.decode(ids)
        notices.append(f"The text was too long: only the first {len(ids)} subword pieces "
                       f"(about {len(kept.split())} words) were translated.")
        cleaned = kept
    return PreparedSource(text=cleaned, ids=ids, truncated=truncated, notices=notices)


@dataclass
class BeamNode:
    """One hypothesis prefix in the beam-search tree."""
    id: int
    parent: int | None   # None for the root (BOS)
    step: int            # 0 for the root; a node at step i holds target token y_i
    token: str
    token_id: int
    logprob: float       # log p(token | prefix)
    score: float         # cumulative log-probability of the prefix
    attention: list[float] | None   # α_i for this step (None for the root or RNNenc)
    finished: bool = False          # ended with EOS
    on_best_path: bool = False      # an ancestor of (or) the returned hypothesis
    pruned: bool = False            # no finished hypothesis descends from it


@dataclass
class DecodingRecord:
    method: str                    # greedy | beam | forced
    source_text: str
    source_tokens: list[str]       # pieces + "</s>"
    target_tokens: list[str]       # pieces + "</s>" if generated
    target_ids: list[int]
    translation: str
    token_logprobs: np.ndarray     # T
    energies: np.ndarray | None    # T x S  (None for RNNenc; Transformer: the shown layer's heads' mean)
    weights: np.ndarray | None     # T x S
    contexts: np.ndarray           # T x C
    query_states: np.ndarray       # T x H
    states: np.ndarray             # T x H
    topk_ids: np.ndarray           # T x k
    topk_probs: np.ndarray         # T x k
    topk_tokens: list[list[str]]
    positions: np.ndarray | None = None  # T, local-p predicted positions p_i
    window_masses: np.ndarray | None = None  # T, local-p window mass m_i (c_i = m_i Σ_j α_ij h̄_j)
    attentional: np.ndarray | None = None  # T x H, Luong's attentional state h̃_i (Luong eq. 5)
    # Transformer only: cross-attention of every layer and head (``weights`` is one layer's head average),
    # decoder self-attention (row i over y_0 … y_i, zeros beyond) and encoder self-attention
    head_weights: np.ndarray | None = None       # T x L x heads x S
    self_weights: np.ndarray | None = None       # T x L x heads x T
    encoder_attention: np.ndarray | None = None  # L x heads x S x S
    truncated: bool = False
    notices: list[str] = field(default_factory=list)
    beam_size: int = 1
    beam_tree: list[BeamNode] | None = None

    @property
    def score(self) -> float:
        return float(self.token_logprobs.sum())

    @property
    def has_attention(self) -> bool:
        return self.weights is not None

    def to_json(self) -> dict:
        """The translate CLI's --json view."""
        return {"translation": self.translation, "source_tokens": self.source_tokens,
                "target_tokens": self.target_tokens,
                "attention": None if self.weights is None else np.round(self.weights, 6).tolist(),
                "score": round(self.score, 6), "truncated": self.truncated, "notices": self.notices,
                "method": self.method, "beam_size": self.beam_size,
                # local-p only: the predicted centre p_i of each target token's window (Luong eq. 9)
                "positions": None if self.positions is None else np.round(self.positions, 4).tolist(),
                # Transformer only: [layers][heads][target][source]; "attention" is one layer's head average
                "attention_heads": None if self.head_weights is None
                else np.round(self.head_weights.transpose(1, 2, 0, 3), 6).tolist()}


# ----------------------------------------------------------------------------------------------
# single sentence, with record
# ----------------------------------------------------------------------------------------------
@torch.no_grad()
def _run_steps(model: Seq2Seq, src_ids: list[int], choose, max_len: int, topk: int, prefix: list[int] = (),
               edit=None, check=None):
    """Drive the decoder for one sentence, recording every step.

    ``choose(i, logprobs) -> token id or None`` (logprobs: 1 x V); None stops. A ``prefix`` is
    forced first. ``edit(i)``: the edit of step i's attention, or None (model/intervention.py).
    ``check()``, if given, is called before every step and raises to abandon the decoding (the
    server's: the rerun that asked for it was superseded).
    """
    device = model_device(model)
    batch = Batch([src_ids]).to(device)
    _, memory, state = model.encode(batch.src, batch.src_len)
    prev = torch.tensor([BOS_ID], device=device)
    steps, tokens, rows = [], [], []
    for i in range(max_len):
        if check is not None:
            check()
        logprobs, state, step = (model.step(prev, state, memory) if edit is None  # 1 x V: one sentence
                                 else model.step(prev, state, memory, edit(i)))
        tok = prefix[i] if i < len(prefix) else choose(i, logprobs)
        if tok is None:
            break
        steps.append(step)
        tokens.append(int(tok))
        rows.append(logprobs)
        if tok == EOS_ID:
            break
        prev = torch.tensor([tok], device=device)
    encoder_attention = _encoder_attention(memory)
    if not rows:
        return steps, tokens, [], [], encoder_attention
    # the per-step bookkeeping once for all steps (one top-k, one copy), not inside the loop
    logprobs = torch.cat(rows)  # T x V
    logps = logprobs.gather(1, torch.tensor(tokens, device=device).unsqueeze(1)).squeeze(1).tolist()
    top = logprobs.topk(topk, dim=-1)
    ids, probs = top.indices.cpu().numpy(), top.values.exp().cpu().numpy()
    return steps, tokens, logps, list(zip(ids, probs)), encoder_attention


def _encoder_attention(memory) -> np.ndarray | None:
    """The Transformer's encoder self-attention of sentence 0, L x heads x S x S (None for RNNs)."""
    return None if memory.encoder_attention is None else memory.encoder_attention[0].float().cpu().numpy()


def _record(vocab, src: PreparedSource, method, steps, tokens, logps, tops, encoder_attention=None,
            **extra) -> DecodingRecord:
    def stack(name):
        vals = [getattr(s, name) for s in steps]
        if not vals or vals[0] is None:
            return None
        if name == "self_weights":  # step i attends over i + 1 positions: pad to T with zeros (the future)
            vals = [torch.nn.functional.pad(v, (0, len(vals) - v.size(-1))) for v in vals]
        return torch.cat(vals, 0).float().cpu().numpy()

    k = tops[0][0].shape[0] if tops else 0
    return DecodingRecord(
        method=method, source_text=src.text,
        source_tokens=vocab.pieces(src.ids) + ["</s>"],
        target_tokens=[vocab.id_to_piece(t) if t != EOS_ID else "</s>" for t in tokens],
        target_ids=tokens, translation=vocab.decode(tokens),
        token_logprobs=np.array(logps, dtype=np.float64),
        energies=stack("energies"), weights=stack("weights"), contexts=stack("context"),
        query_states=stack("query"), states=stack("state"),
        topk_ids=np.stack([t[0] for t in tops]) if tops else np.zeros((0, k), int),
        topk_probs=np.stack([t[1] for t in tops]) if tops else np.zeros((0, k)),
        topk_tokens=[[vocab.id_to_piece(int(i)) for i in t[0]] for t in tops],
        positions=stack("position"), window_masses=stack("window_mass"), attentional=stack("attentional"),
        head_weights=stack("head_weights"), self_weights=stack("self_weights"), encoder_attention=encoder_attention,
        truncated=src.truncated, notices=list(src.notices), **extra)


def greedy(model: Seq2Seq, vocab: Vocabulary, src: PreparedSource, topk: int = 5,
           prefix: list[int] = (), max_len: int | None = None, edit=None, check=None) -> DecodingRecord:
    """Greedy decoding: y_i = argmax p(y | y_<i, x). A ``prefix`` of target ids is forced
    first and the model continues from there ("what if"); ``edit(i)`` edits step i's attention
    (model/intervention.py)."""
    model.eval()
    max_len = max_len or max_output_length(len(src.ids) + 1)
    out = _run_steps(model, src.ids, lambda i, lp: int(lp.argmax()), max(max_len, len(prefix) + 1), topk, prefix,
                     edit, check)
    return _record(vocab, src, "greedy" if not prefix else "prefix", *out)


def forced(model: Seq2Seq, vocab: Vocabulary, src: PreparedSource, target_ids: list[int],
           topk: int = 5, append_eos: bool = True, edit=None) -> DecodingRecord:
    """Forced decoding: score a given target (ids; EOS appended if missing, unless
    ``append_eos`` is False, for a hypothesis cut at the length limit) and record the
    attention the model uses for it (edited by ``edit(i)`` where given, as in :func:`greedy`)."""
    model.eval()
    ends = bool(target_ids) and target_ids[-1] == EOS_ID
    target = list(target_ids) + ([EOS_ID] if append_eos and not ends else [])
    out = _run_steps(model, src.ids, lambda i, lp: None, len(target), topk, prefix=target, edit=edit)
    return _record(vocab, src, "forced", *out)


def translate(model: Seq2Seq, vocab: Vocabulary, text: str, beam: int = 1, topk: int = 5,
              length_penalty: float = 1.0, check=None) -> DecodingRecord:
    """Text in, record out: greedy for beam ≤ 1, else beam search (with its tree). ``check()``:
    called before every step, raises to abandon (see ``_run_steps``)."""
    src = prepare_source(vocab, text)
    if beam <= 1:
        return greedy(model, vocab, src, topk, check=check)
    return beam_search(model, vocab, src, beam, topk, length_penalty, check=check)


@torch.no_grad()
def beam_search(model: Seq2Seq, vocab: Vocabulary, src: PreparedSource, beam: int = 5, topk: int = 5,
                length_penalty: float = 1.0, check=None) -> DecodingRecord:
    """Beam search for one sentence, keeping the whole hypothesis tree.

    Hypotheses are ranked at the end by log p(y|x) / |y|^length_penalty (length
    normalisation; 0 turns it off). The returned record holds, step by step, the best
    hypothesis' own steps: the numbers the beam computed along the chosen path.
    """
    model.eval()
    best, tree, trace = _beam(model, [src.ids], beam, length_penalty, keep_tree=True, topk=topk, check=check)
    path = sorted((n for n in tree if n.on_best_path and n.parent is not None), key=lambda n: n.step)
    if path:
        # the record of the chosen hypothesis, read off the beam's own steps (no second decoding)
        steps, tops = [], []
        for node in path:
            step, top_ids, top_probs = trace.steps[node.step - 1]
            row = trace.rows[node.id]
            steps.append(Step(**{f.name: (None if getattr(step, f.name) is None else getattr(step, f.name)[row:row + 1])
                                 for f in fields(Step)}))
            tops.append((top_ids[row], top_probs[row]))
        rec = _record(vocab, src, "beam", steps, [n.token_id for n in path], [n.logprob for n in path], tops,
                      trace.encoder_attention)
    else:
        rec = forced(model, vocab, src, best[0], topk)
    rec.method, rec.beam_size = "beam", beam
    for node in tree:
        node.token = "<s>" if node.parent is None else (vocab.id_to_piece(node.token_id)
                                                         if node.token_id != EOS_ID else "</s>")
    rec.beam_tree = tree
    return rec


# ----------------------------------------------------------------------------------------------
# batched, for evaluation
# ----------------------------------------------------------------------------------------------
@torch.no_grad()
def greedy_batch(model: Seq2Seq, src: list[list[int]]) -> list[list[int]]:
    """Greedy decoding of a batch of source id lists; returns target ids without EOS."""
    model.eval()
    device = model_device(model)
    batch = Batch(src).to(device)
    _, memory, state = model.encode(batch.src, batch.src_len)
    B = len(src)
    prev = torch.full((B,), BOS_ID, dtype=torch.long, device=device)
    # each sentence's own limit, so a result never depends on the other sentences in its batch
    max_lens = torch.tensor([max_output_length(len(s) + 1) for s in src])
    out: list[list[int]] = [[] for _ in range(B)]
    live = torch.arange(B)  # the sentences still decoding; a finished one leaves the batch, so a
    for t in range(int(max_lens.max())):  # long runaway output costs its own steps only
        logprobs, state, _ = model.step(prev, state, memory)
        prev = logprobs.argmax(-1)
        for b, token in zip(live.tolist(), prev.tolist()):
            out[b].append(token)
        going = ((prev.cpu() != EOS_ID) & (t + 1 < max_lens[live])).nonzero().flatten()
        if len(going) == 0:
            break
        if len(going) < len(live):
            rows = going.to(device)
            state = {n: v.index_select(0, rows) for n, v in state.items()}
            memory = memory.index_select(rows)
            live, prev = live[going], prev.index_select(0, rows)
    return [row[:-1] if row and row[-1] == EOS_ID else row for row in out]


@torch.no_grad()
def beam_batch(model: Seq2Seq, src: list[list[int]], beam: int = 5, length_penalty: float = 1.0) -> list[list[int]]:
    """Batched beam search for evaluation: the same search as :func:`_beam` (same candidates,
    same finished hypotheses, same choice), vectorised over the batch and without the tree."""
    model.eval()
    k, alpha = beam, length_penalty
    device = model_device(model)
    batch = Batch(src).to(device)
    B = len(src)
    _, memory, state = model.encode(batch.src, batch.src_len)
    rows = torch.arange(B, device=device).repeat_interleave(k)
    memory = memory.index_select(rows)
    state = {n: t.index_select(0, rows) for n, t in state.items()}
    scores = torch.full((B, k), float("-inf"))
    scores[:, 0] = 0.0
    prev = torch.full((B * k,), BOS_ID, dtype=torch.long, device=device)
    history = torch.zeros(B, k, 0, dtype=torch.long)
    max_lens = torch.tensor([max_output_length(len(s) + 1) for s in src])
    best_score = torch.full((B,), float("-inf"))
    best_hyp: list[list[int]] = [[] for _ in range(B)]
    n_finished = torch.zeros(B, dtype=torch.long)
    # the sentences still searching (their indices into src); a finished sentence's rows
    # leave the batch, so the products run on live hypotheses only
    ids = torch.arange(B)
    V = model.cfg.vocab_size
    for t in range(int(max_lens.max())):
        logprobs, state, _ = model.step(prev, state, memory)
        cand = (scores.view(-1, 1) + logprobs.cpu()).view(len(ids), k * V)
        top_scores, top_idx = cand.topk(2 * k, dim=1)  # live x 2k, best first
        origin, tokens = top_idx // V, top_idx % V
        is_eos = (tokens == EOS_ID) & (top_scores > float("-inf"))
        # an EOS candidate counts only if fewer than k live candidates rank above it (as in _beam)
        alive_before = torch.cumsum((~is_eos).long(), 1) - (~is_eos).long()
        finishing = is_eos & (alive_before < k)
        if finishing.any():
            norm = top_scores / float(t + 1) ** alpha
            norm = norm.masked_fill(~finishing, float("-inf"))
            cand_best, cand_pos = norm.max(1)
            for b in (cand_best > best_score[ids]).nonzero().flatten().tolist():
                best_score[ids[b]] = cand_best[b]
                best_hyp[ids[b]] = history[b, origin[b, cand_pos[b]]].tolist()
            n_finished[ids] += finishing.sum(1)
        # the best k non-EOS candidates stay alive
        alive_scores = top_scores.masked_fill(is_eos, float("-inf"))
        keep_scores, keep_pos = alive_scores.topk(k, dim=1)  # live x k
        keep_origin = origin.gather(1, keep_pos)
        keep_tokens = tokens.gather(1, keep_pos)
        history = torch.cat([history.gather(1, keep_origin.unsqueeze(2).expand(-1, -1, history.size(2))),
                             keep_tokens.unsqueeze(2)], 2)
        at_limit = t + 1 >= max_lens[ids]
        if at_limit.any():  # out of length: the live hypotheses finish as they are
            norm = keep_scores / float(t + 1) ** alpha
            cand_best, cand_pos = norm.max(1)
            for b in (at_limit & (cand_best > best_score[ids])).nonzero().flatten().tolist():
                best_score[ids[b]] = cand_best[b]
                best_hyp[ids[b]] = history[b, cand_pos[b]].tolist()
        live = (~at_limit & (n_finished[ids] < k)).nonzero().flatten()  # positions in this step's batch
        if len(live) == 0:
            break
        reorder = (live.unsqueeze(1) * k + keep_origin[live]).view(-1).to(device)  # rows that continue
        state = {n: v.index_select(0, reorder) for n, v in state.items()}
        if len(live) < len(ids):
            memory = memory.index_select((live.unsqueeze(1) * k + torch.arange(k)).view(-1).to(device))
        ids, scores, history = ids[live], keep_scores[live], history[live]
        prev = keep_tokens[live].reshape(-1).to(device)
    return best_hyp


@dataclass
class BeamTrace:
    """What beam search keeps to build the chosen hypothesis' record without re-decoding:
    per step the batched Step and each row's top-k (ids, probs); per tree node its row."""
    steps: list = field(default_factory=list)
    rows: dict = field(default_factory=dict)
    encoder_attention: np.ndarray | None = None


def _beam_start(model: Seq2Seq, src: list[list[int]], k: int):
    """Encode B sentences and lay each out as k rows (B·k in all), only the first live:
    (memory, state, scores B x k, prev B·k, the first input token of every row)."""
    batch = Batch(src)
    B = len(src)
    _, memory, state = model.encode(batch.src, batch.src_len)
    rows = torch.arange(B).repeat_interleave(k)  # B·k: which sentence each row belongs to
    memory = memory.index_select(rows)
    state = {n: t.index_select(0, rows) for n, t in state.items()}
    scores = torch.full((B, k), float("-inf"))
    scores[:, 0] = 0.0  # only one live hypothesis at the start
    return memory, state, scores, torch.full((B * k,), BOS_ID, dtype=torch.long)


def _tree_node(tree: list[BeamNode], trace: BeamTrace, parent: int, t: int, row: int, tok: int,
               logprob: float, score: float, step_weights: list | None) -> int:
    """Add a candidate to the hypothesis tree: token ``tok`` after node ``parent`` at step t,
    proposed by row ``row`` (log p(tok), the hypothesis' score, that row's attention)."""
    node = len(tree)
    att = None if step_weights is None else step_weights[row]
    tree.append(BeamNode(node, parent, t + 1, "", tok, logprob, score, att, finished=tok == EOS_ID))
    trace.rows[node] = row
    return node


def _beam(model: Seq2Seq, src: list[list[int]], k: int, alpha: float, keep_tree: bool, topk: int = 5, check=None):
    """Batched beam search over B sentences × k hypotheses, flattened to B·k rows.

    At each step every live hypothesis proposes its top 2k continuations; those ending in
    EOS join the sentence's finished list (score normalised by length^alpha), the best k
    others stay alive. A sentence stops once it has k finished hypotheses (or at its
    maximum length, when the live ones are finished as they are). With k = 1 this is
    exactly greedy decoding.
    """
    B = len(src)
    memory, state, scores, prev = _beam_start(model, src, k)
    history = [[[] for _ in range(k)] for _ in range(B)]  # token ids per live hypothesis
    node_of = [[0] * k for _ in range(B)]                  # tree node id of each live hypothesis (B == 1)
    finished: list[list[tuple[float, list[int], int]]] = [[] for _ in range(B)]
    max_lens = [max_output_length(len(s) + 1) for s in src]
    active = [True] * B
    tree = [BeamNode(0, None, 0, "<s>", BOS_ID, 0.0, 0.0, None)] if keep_tree else None
    trace = BeamTrace(encoder_attention=_encoder_attention(memory)) if keep_tree else None
    K = max(topk, 2 * k) if keep_tree else 2 * k  # each row's best tokens: the record's top-k and the candidates
    dead = (float("-inf"), 0, EOS_ID, [], 0)  # (score, origin, token, hypothesis, tree node) of an empty row
    for t in range(max(max_lens)):
        if check is not None:  # abandon between steps (see _run_steps)
            check()
        logprobs, state, step = model.step(prev, state, memory)  # B·k x V
        # A hypothesis' score is the same for all its continuations, so the sentence's 2k best
        # (score + log p) are among its rows' own 2k best tokens: one top-K per row serves the
        # record's alternatives and the candidates, and the sentence's choice is among k·2k
        # numbers, not k·V.
        row_top = logprobs.topk(K)  # B·k x K, each row sorted
        if keep_tree:
            trace.steps.append((step, row_top.indices[:, :topk].cpu().numpy(), row_top.values[:, :topk].exp().cpu().numpy()))
        row_scores, row_tokens = row_top.values[:, :2 * k], row_top.indices[:, :2 * k]
        cand = (scores.view(-1, 1) + row_scores).view(B, k * 2 * k)
        top_scores, top_pos = cand.topk(2 * k, dim=1)  # B x 2k: positions in the rows' lists
        # the step's numbers as Python lists, each in one call: reading tensors element by element
        # is a torch call each (microseconds, and the GIL handed to the server's other threads)
        top_scores, top_pos, row_tokens = top_scores.tolist(), top_pos.tolist(), row_tokens.tolist()
        if keep_tree:
            row_scores = row_scores.tolist()
            step_weights = None if step.weights is None else step.weights.tolist()
        alive: list[list[tuple]] = [[] for _ in range(B)]  # per sentence: its live hypotheses, as ``dead``
        for b in range(B):
            if not active[b]:
                continue
            for sc, pos in zip(top_scores[b], top_pos[b]):
                if sc == float("-inf") or len(alive[b]) >= k:
                    break
                origin, j = divmod(pos, 2 * k)  # the live hypothesis, and its j-th best token
                row = b * k + origin
                tok = row_tokens[row][j]
                hyp = history[b][origin] + [tok]
                node = _tree_node(tree, trace, node_of[b][origin], t, row, tok, row_scores[row][j], sc,
                                  step_weights) if keep_tree else None
                if tok == EOS_ID:
                    finished[b].append((sc / (len(hyp) ** alpha), hyp[:-1], node))
                else:
                    alive[b].append((sc, origin, tok, hyp, node))
            if len(finished[b]) >= k or t + 1 >= max_lens[b]:
                if t + 1 >= max_lens[b]:
                    finished[b] += [(sc / (len(hyp) ** alpha), hyp, node) for sc, _, _, hyp, node in alive[b]]
                active[b] = False
                alive[b] = [(float("-inf"), *rest) for _, *rest in alive[b]]  # its rows decode on, unread
        if not any(active):
            break
        alive = [a + [dead] * (k - len(a)) for a in alive]
        scores = torch.tensor([[h[0] for h in a] for a in alive])
        history, node_of = [[h[3] for h in a] for a in alive], [[h[4] for h in a] for a in alive]
        reorder = torch.tensor([b * k + h[1] for b, a in enumerate(alive) for h in a])
        state = {n: v.index_select(0, reorder) for n, v in state.items()}
        prev = torch.tensor([h[2] for a in alive for h in a])
    best = [max(f, key=lambda h: h[0]) if f else (0.0, [], None) for f in finished]  # (score, ids, tree node)
    if keep_tree:
        _mark_tree(tree, best[0][2], [f[2] for f in finished[0]])
    return [hyp for _, hyp, _ in best], tree, trace


def _mark_tree(tree: list[BeamNode], best_node: int | None, finished_nodes: list[int]) -> None:
    """Flag the chosen path and the branches that led to no finished hypothesis."""
    alive = set()
    for n in finished_nodes:
        while n is not None and n not in alive:
            alive.add(n)
            n = tree[n].parent
    for node in tree:
        node.pruned = node.id not in alive
    n = best_node
    while n is not None:
        tree[n].on_best_path = True
        n = tree[n].parent
