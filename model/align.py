"""Score attention as word alignment against gold links (Hansards, HLT-NAACL 2003).

    python -m model.align --checkpoint checkpoints/NAME --gold ../shared/data/hansards-align [--json]

For each sentence pair the French side is force-decoded through the model; the subword
attention matrix is merged to words (rows averaged over a French word's pieces, columns
summed over an English word's pieces: ``model.analysis.merge_to_words``); each French
word links to its most-attended English word; the links are scored with AER, precision
and recall against the sure (S) and possible (P) gold links.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .analysis import links_from_attention, merge_to_words
from .checkpoint import load_for_cli, write_metrics
from .model import Seq2Seq
from .metrics import alignment_error_rate, parse_links
from .search import DecodingRecord, forced, PreparedSource
from .vocabulary import Vocabulary, WORD_BOUNDARY


@dataclass
class GoldPair:
    english: list[str]
    french: list[str]
    sure: set
    possible: set


def read_gold(folder: str | Path) -> list[GoldPair]:
    folder = Path(folder)
    texts = (folder / "enfr.src-tgt").read_text(encoding="utf-8").splitlines()
    gold = (folder / "enfr.gold").read_text(encoding="utf-8").splitlines()
    pairs = []
    for text, links in zip(texts, gold):
        en, fr = text.split("|||")
        sure, possible = parse_links(links)
        pairs.append(GoldPair(en.split(), fr.split(), sure, possible))
    return pairs


def word_pieces(vocab, words: list[str]) -> tuple[list[int], list[int]]:
    """Encode word by word, so each piece's word is known exactly (pieces never span words)."""
    ids, owner = [], []
    for k, w in enumerate(words):
        piece_ids = vocab.encode(w)
        ids += piece_ids
        owner += [k] * len(piece_ids)
    return ids, owner


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


def align_corpus(model, vocab, pairs: list[GoldPair]) -> dict:
    predicted = [forced_alignment(model, vocab, p.english, p.french).links for p in pairs]  # (English i, French j)
    return alignment_error_rate(predicted, [p.sure for p in pairs], [p.possible for p in pairs])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="AER of a model's attention against gold word alignments.")
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--gold", required=True, help="folder with enfr.src-tgt and enfr.gold")
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--write-metrics", action="store_true", help="store the result in CHECKPOINT/metrics.json")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    model, vocab, cfg = load_for_cli(args.checkpoint)
    if not model.cfg.has_attention:
        print("error: this model has no attention (RNNenc): there is no alignment to score", file=sys.stderr)
        return 1
    pairs = read_gold(args.gold)[:args.limit]
    start = time.time()
    result = align_corpus(model, vocab, pairs)
    result = {k: round(v, 4) if isinstance(v, float) else v for k, v in result.items()}
    result.update(sentences=len(pairs), seconds=round(time.time() - start, 1),
                  rule="each French word -> its most-attended English word (sum over English pieces, "
                       "mean over French pieces)")
    if args.write_metrics:
        write_metrics(args.checkpoint, {"alignment": result})
    if args.json:
        print(json.dumps(result))
    else:
        print(f"{cfg.get('name', args.checkpoint)}: AER {result['aer']:.3f}  precision {result['precision']:.3f}  "
              f"recall {result['recall']:.3f}  ({len(pairs)} sentences, {result['seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
