"""Numbers about an attention matrix, in numpy only (the app and ``viz/`` use them too).

Conventions: a matrix ``weights`` is T x S, row i = α_i over the source for target step i.
Subword pieces follow SentencePiece: a piece starting with "▁" starts a new word.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from .vocabulary import WORD_BOUNDARY

SPECIAL = {"</s>", "<s>", "<pad>", "<unk>"}


def word_groups(pieces: list[str]) -> tuple[list[str], list[int]]:
    """Whole words from subword pieces, and each piece's word index.

    A piece starting with "▁" opens a word; byte-fallback pieces (<0xF0> …) are decoded
    back into their character; "</s>" stays a word of its own.
    """
    words: list[list[str]] = []
    index = []
    open_word = False  # may the next piece continue the current word?
    for p in pieces:
        if p in SPECIAL or not open_word or p.startswith(WORD_BOUNDARY):
            words.append([])
        words[-1].append(p)
        index.append(len(words) - 1)
        open_word = p not in SPECIAL
    return [_join_pieces(w) for w in words], index


def _join_pieces(pieces: list[str]) -> str:
    if len(pieces) == 1 and pieces[0] in SPECIAL:
        return pieces[0]
    raw = b""
    for p in pieces:
        if len(p) == 6 and p.startswith("<0x") and p.endswith(">"):
            raw += bytes([int(p[3:5], 16)])
        else:
            raw += p.replace(WORD_BOUNDARY, " ").encode("utf-8")
    return raw.decode("utf-8", errors="replace").strip() or WORD_BOUNDARY


def merge_to_words(weights: np.ndarray, source_pieces: list[str], target_pieces: list[str]):
    """Word-level attention: the rule stated on the Translate page.

    Over a *source* word's pieces the weights are **summed** (the attention mass the word
    receives, so each row still sums to 1); over a *target* word's pieces the rows are
    **averaged** (the word's attention is the mean of its pieces' attention).
    Returns (matrix T_words x S_words, source words, target words).
    """
    src_words, src_index = word_groups(source_pieces)
    tgt_words, tgt_index = word_groups(target_pieces)
    src_owner = np.zeros((weights.shape[1], len(src_words)))
    src_owner[np.arange(weights.shape[1]), src_index] = 1.0
    tgt_owner = np.zeros((weights.shape[0], len(tgt_words)))
    tgt_owner[np.arange(weights.shape[0]), tgt_index] = 1.0
    return merge_by_owner(weights, src_owner, tgt_owner), src_words, tgt_words


def merge_by_owner(weights: np.ndarray, src_owner: np.ndarray, tgt_owner: np.ndarray) -> np.ndarray:
    """The same rule for any piece→word ownership: piece attention (T pieces x S pieces) to
    word attention (T words x S words), with owner[p, w] = 1 where piece p belongs to word w
    (a piece may belong to two words: ``du`` stands for Hansards' ``de le``)."""
    rows = tgt_owner.T / tgt_owner.sum(0)[:, None]
    return rows @ weights @ src_owner


def entropy(weights: np.ndarray) -> np.ndarray:
    """Entropy (nats) of each row α_i: 0 = all mass on one source token, log S = uniform."""
    w = np.clip(weights, 1e-12, 1.0)
    return -(weights * np.log(w)).sum(-1)


def diagonality(weights: np.ndarray) -> float:
    """How monotone-diagonal the alignment is, in [0, 1].

    1 − mean |expected source position − proportional target position|, with both
    positions scaled to [0, 1]: 1 means step i attends where i/T falls in the source.
    """
    T, S = weights.shape
    if T < 2 or S < 2:
        return 1.0
    expected = (weights * np.arange(S)).sum(1) / (S - 1)
    proportional = np.arange(T) / (T - 1)
    return float(1 - np.abs(expected - proportional).mean())


def argmax_agreement(a: np.ndarray, b: np.ndarray) -> float:
    """Share of target steps whose most-attended source position is the same in a and b."""
    n = min(len(a), len(b))
    if n == 0:
        return float("nan")
    return float((a[:n].argmax(1) == b[:n].argmax(1)).mean())


def links_from_attention(word_weights: np.ndarray) -> set[tuple[int, int]]:
    """Word links (source i, target j): each target word links to its most-attended source word."""
    return {(int(word_weights[j].argmax()), j) for j in range(word_weights.shape[0])}


def rank_correlation(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's ρ: the Pearson correlation of the two sequences' ranks (ties share their
    mean rank); NaN when either is constant."""
    ra, rb = (pd.Series(np.asarray(x, dtype=float)).rank().to_numpy() for x in (a, b))
    if len(ra) < 2 or ra.std() == 0 or rb.std() == 0:
        return float("nan")
    return float(np.corrcoef(ra, rb)[0, 1])


def position_tracking(positions: np.ndarray, weights: np.ndarray) -> float:
    """How well local-p's predicted centres p_i follow an alignment: Spearman's ρ between
    p_i and argmax_j of row i of ``weights`` over the target steps (the final </s> step
    excluded). ``weights`` may be any T x S scores whose row maxima are the alignment: α_ij,
    or the inner score's energies e_ij before the Gaussian (the same argmax as their softmax)."""
    steps = max(1, len(positions) - 1)
    return rank_correlation(positions[:steps], weights[:steps].argmax(1))


def shuffled_position_tracking(positions: np.ndarray, weights: np.ndarray, rng: np.random.Generator,
                               rounds: int = 20) -> float:
    """The chance level of :func:`position_tracking`: its ρ with the p_i of the sentence
    shuffled (the same positions in a random order), the mean of ``rounds`` shuffles
    (NaN if none has a ρ)."""
    steps = max(1, len(positions) - 1)
    argmax = weights[:steps].argmax(1)
    rhos = [rank_correlation(rng.permutation(positions[:steps]), argmax) for _ in range(rounds)]
    rhos = [r for r in rhos if r == r]
    return float(np.mean(rhos)) if rhos else float("nan")
