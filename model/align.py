"""Score attention as word alignment against gold links (Hansards, HLT-NAACL 2003).

    python -m model.align --checkpoint checkpoints/NAME --gold ../shared/data/hansards-align [--json]
        [--method attention|gxi|ig|knock-out|input-occlusion]

For each sentence pair the French side is force-decoded through the model; the subword
attention matrix is merged to words (rows averaged over a French word's pieces, columns
summed over an English word's pieces: ``model.analysis.merge_to_words``); each French
word links to its most-attended English word; the links are scored with AER, precision
and recall against the sure (S) and possible (P) gold links. ``--method`` scores an
attribution instead of the attention (``model/attribution.py``: each row's share of |a_ij|
over the source pieces, merged and linked by the same rule): gradient × input, integrated
gradients, attention knock-out (position j removed from step i's attention) or input occlusion
(x_j's token embedding zeroed, the encoder run again).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .analysis import links_from_attention, merge_by_owner
from .attribution import METHODS
from .checkpoint import write_metrics
from .hansards import Written, as_typed, written_english, written_french
from .model import Seq2Seq
from .metrics import alignment_error_rate, parse_links
from .search import DecodingRecord, forced, PreparedSource
from .vocabulary import Vocabulary
from .zoo import load_for_cli


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


def word_pieces(vocab, written: Written, target: bool = False) -> tuple[list[int], np.ndarray]:
    """Encode written text whole (``target``: with the target side's tokenizer, where a model
    made elsewhere has one per language); owner[p, k] = 1 where piece p overlaps token k's span.

    A piece overlapping two tokens (``du`` for ``de le``) belongs to both. SentencePiece
    gives some pieces no width (a bare ``▁`` at the start, the first byte of a byte-fallback
    character): they count as one byte wide. A ``▁`` piece over the space between two words
    belongs to the word after it.
    """
    ids, spans = vocab.pieces_with_spans(written.text, target)
    owner = np.zeros((len(ids), len(written.spans)))
    begins = np.array([b for b, _ in written.spans])
    ends = np.array([e for _, e in written.spans])
    for p, (begin, end) in enumerate(spans):
        end = max(end, begin + 1)
        owner[p] = (begins < end) & (begin < ends)
        if not owner[p].any():
            later = np.flatnonzero(begins >= begin)
            owner[p, later[0] if len(later) else len(begins) - 1] = 1.0
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
    src_owner: np.ndarray | None = None  # English pieces x English tokens (see word_pieces)
    trg_owner: np.ndarray | None = None  # French pieces x French tokens
    attribution: object | None = None  # the model.attribution.Attribution read, where a method is

    def links_of(self, piece_weights: np.ndarray) -> set[tuple[int, int]]:
        """The same rule on another piece-level matrix (French pieces x English pieces, EOS
        row and column dropped): one Transformer head's attention, say."""
        return links_from_attention(merge_by_owner(piece_weights, self.src_owner, self.trg_owner))

    @property
    def logprob(self) -> float:
        return float(self.word_logprobs.sum() + self.eos_logprob)


def forced_alignment(model: Seq2Seq, vocab: Vocabulary, english: list[str], french: list[str],
                     hansards: bool = False, method: str = "attention", steps: int | None = None) -> ForcedAlignment:
    """Force-decode French words given English words, as ``python -m model.align`` does.

    hansards=True writes the tokens back as ordinary text first (``model.hansards``: ``de le``
    → ``du``, ``Speaker ,`` → ``Speaker,``), the text the models were trained on; the result
    is still per gold token. hansards=False reads the tokens as typed, joined by spaces.
    ``method``: the matrix the links are read from, the attention or an attribution method's
    (``steps``: integrated gradients' points, model.attribution.IG_STEPS if None).
    """
    if not english or not french:
        raise ValueError("both sentences need at least one word")
    write_en, write_fr = (written_english, written_french) if hansards else (as_typed, as_typed)
    src_ids, src_owner = word_pieces(vocab, write_en(english))
    trg_ids, trg_owner = word_pieces(vocab, write_fr(french), target=True)
    rec = forced(model, vocab, PreparedSource(" ".join(english), src_ids, False), trg_ids)
    # a piece shared by two tokens gives each half its log-probability, so the words still sum to the sentence
    word_logprobs = (trg_owner / trg_owner.sum(1, keepdims=True)).T @ rec.token_logprobs[:len(trg_ids)]
    word_weights, links = None, set()
    matrix, attribution = rec.weights, None
    if method != "attention":
        from .attribution import attribute, IG_STEPS  # Captum only when an attribution is asked for
        attribution = attribute(model, src_ids, rec.target_ids, method, steps or IG_STEPS)
        matrix = attribution.relevance
    if matrix is not None:
        weights = matrix[:len(trg_ids), :len(src_ids)]  # drop the EOS row and column
        word_weights = merge_by_owner(weights, src_owner, trg_owner)
        links = links_from_attention(word_weights)
    return ForcedAlignment(english=list(english), french=list(french), record=rec, word_logprobs=word_logprobs,
                           eos_logprob=float(rec.token_logprobs[len(trg_ids)]), word_weights=word_weights,
                           links=links, src_owner=src_owner, trg_owner=trg_owner, attribution=attribution)


def completeness(attributions: list) -> dict:
    """Integrated gradients' completeness gap over a corpus: in total (Σ |δ_i| / Σ |f(x) − f(x')| over
    every step of every sentence), per sentence and per step (|δ_i| / |f(x_i) − f(x'_i)|)."""
    delta = np.concatenate([np.abs(a.delta) for a in attributions])
    attributed = np.concatenate([np.abs(a.logprobs - a.at_baseline) for a in attributions])
    sentences = np.array([a.completeness_gap for a in attributions])
    steps = np.concatenate([a.step_gaps for a in attributions])
    return {"points": attributions[0].steps, "gap_total": round(float(delta.sum() / attributed.sum()), 5),
            "gap_sentence_median": round(float(np.median(sentences)), 5),
            "gap_sentence_max": round(float(sentences.max()), 5),
            "sentences_above_1pct": round(float((sentences > 0.01).mean()), 4),
            "gap_step_median": round(float(np.median(steps)), 5), "gap_step_p95": round(float(np.percentile(steps, 95)), 5),
            "steps_above_1pct": round(float((steps > 0.01).mean()), 4), "steps": int(steps.size)}


def align_corpus(model, vocab, pairs: list[GoldPair], hansards: bool = True, method: str = "attention",
                 steps: int | None = None) -> dict:
    aligned = [forced_alignment(model, vocab, p.english, p.french, hansards, method, steps) for p in pairs]
    result = alignment_error_rate([a.links for a in aligned],  # (English i, French j)
                                  [p.sure for p in pairs], [p.possible for p in pairs])
    if method == "ig":
        result["completeness"] = completeness([a.attribution for a in aligned])
    return result


RULE = ("each French word -> its most-attended English word (sum over English pieces, mean over French "
        "pieces)")


def score(model, vocab, pairs: list[GoldPair], hansards: bool, method: str = "attention",
          steps: int | None = None) -> dict:
    """align_corpus, rounded and labelled with its rule, method, sentence count and time."""
    start = time.time()
    result = {k: round(v, 4) if isinstance(v, float) else v
              for k, v in align_corpus(model, vocab, pairs, hansards, method, steps).items()}
    tokens = ("gold tokens written back as ordinary text (model.hansards)" if hansards
              else "gold tokens as given, joined by spaces")
    result.update(sentences=len(pairs), seconds=round(time.time() - start, 1), rule=RULE, tokens=tokens, method=method)
    return result


def score_heads(model, vocab, pairs: list[GoldPair], hansards: bool) -> dict:
    """A Transformer's every cross-attention layer x head, each layer's head average and the
    average of all, scored like ``score`` (one forced decoding per pair serves them all).
    Returns {"rows": [{layer, head, aer, precision, recall}] (1-based; head "mean" for an
    average, layer "all" for every layer's), "best": the row of lowest AER, "shown": the row
    of the layer the app shows}."""
    start = time.time()
    forced_pairs = [forced_alignment(model, vocab, p.english, p.french, hansards) for p in pairs]
    L, H = model.cfg.layers, model.cfg.heads
    candidates = {(layer + 1, head + 1): (lambda w, layer=layer, head=head: w[:, layer, head])
                  for layer in range(L) for head in range(H)}
    candidates.update({(layer + 1, "mean"): (lambda w, layer=layer: w[:, layer].mean(1)) for layer in range(L)})
    candidates[("all", "mean")] = lambda w: w.mean((1, 2))
    rows = []
    for (layer, head), pick in candidates.items():
        predicted = []
        for fa in forced_pairs:
            n_trg, n_src = fa.trg_owner.shape[0], fa.src_owner.shape[0]
            predicted.append(fa.links_of(pick(fa.record.head_weights[:n_trg, :, :, :n_src])))
        result = alignment_error_rate(predicted, [p.sure for p in pairs], [p.possible for p in pairs])
        rows.append({"layer": layer, "head": head, **{k: round(result[k], 4) for k in ("aer", "precision", "recall")}})
    shown = model.cfg.shown_layer % L + 1
    return {"rows": rows, "best": min(rows, key=lambda r: r["aer"]),
            "shown": next(r for r in rows if r["layer"] == shown and r["head"] == "mean"),
            "sentences": len(pairs), "seconds": round(time.time() - start, 1), "rule": RULE,
            "tokens": "gold tokens written back as ordinary text (model.hansards)" if hansards
            else "gold tokens as given, joined by spaces"}


HELD_OUT = 100  # gold pairs that choose a model made elsewhere's shown layer; its AER is reported on the rest


def attention_layer(model, vocab, pairs: list[GoldPair], gold: str, held_out: int = HELD_OUT) -> dict:
    """The decoder layer whose head average aligns best (lowest AER, written-text reading) on the
    first ``held_out`` gold pairs, and its AER on the **other** pairs: what the app shows as the
    attention of a model made elsewhere (``model/hf.py``). Choosing on the pairs that score it
    would tune on the test, so the two parts never overlap."""
    if len(pairs) <= held_out:
        raise ValueError(f"choosing a layer on {held_out} held-out pairs needs more than {held_out} gold pairs, "
                         f"got {len(pairs)}")
    chosen_on = score_heads(model, vocab, pairs[:held_out], hansards=True)
    best = min((r for r in chosen_on["rows"] if r["head"] == "mean" and r["layer"] != "all"), key=lambda r: r["aer"])
    reported = score_heads(model, vocab, pairs[held_out:], hansards=True)
    row = next(r for r in reported["rows"] if r["layer"] == best["layer"] and r["head"] == "mean")
    return {"layer": best["layer"], "aer": row["aer"], "gold": str(gold), "sentences": len(pairs) - held_out,
            "chosen_on": held_out, "aer_where_chosen": best["aer"],
            "rule": f"the decoder layer whose cross-attention heads, averaged, give the lowest AER on the first "
                    f"{held_out} gold pairs; its AER on the other {len(pairs) - held_out}"}


def parse(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="AER of a model's attention (or an attribution) against gold word alignments.")
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--gold", required=True, help="folder with enfr.src-tgt and enfr.gold")
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--method", default="attention", choices=METHODS,
                   help="the matrix read as alignment: the attention, or an attribution (model/attribution.py)")
    p.add_argument("--ig-steps", type=int, default=None,
                   help="integrated gradients' points (default model.attribution.IG_STEPS); the completeness gap is printed")
    p.add_argument("--as-given", action="store_true",
                   help="force-decode the gold tokens as given (de le, Speaker ,) instead of written back as "
                        "ordinary text (reported beside the written-text reading; docs/alignment.md)")
    p.add_argument("--write-metrics", action="store_true",
                   help="store both results (written, and as given) in CHECKPOINT/metrics.json (attention only)")
    p.add_argument("--held-out", type=int, default=HELD_OUT,
                   help="hf: models: the gold pairs that choose the shown layer (its AER is reported on the rest)")
    p.add_argument("--csv", default=None, help="append the result (model, method, AER, …) to this CSV")
    p.add_argument("--results", default=None,
                   help="hf: models only: metrics.json goes to RESULTS/hf/NAME/ (default: results/hf/NAME/)")
    p.add_argument("--json", action="store_true")
    return p.parse_args(argv)


def write_all_metrics(model, vocab, cfg, args, pairs, result, heads) -> None:
    """Both readings (and, for a Transformer, every head) into metrics.json."""
    as_given = score(model, vocab, pairs, hansards=False) if not args.as_given else result
    written = result if not args.as_given else score(model, vocab, pairs, hansards=True)
    # the step of the weights scored, as model.evaluate records it: runs are scored as they learn
    metrics = {"alignment": {**written, "as_given": as_given, "steps": cfg.get("training", {}).get("steps")}}
    if heads is not None:
        other = score_heads(model, vocab, pairs, hansards=args.as_given)
        metrics["alignment_heads"] = {"written": other if args.as_given else heads,
                                      "as_given": heads if args.as_given else other}
    if "metrics_folder" in cfg:  # a model made elsewhere: the layer its head average is shown from
        metrics["attention_layer"] = attention_layer(model, vocab, pairs, args.gold, args.held_out)
    write_metrics(cfg.get("metrics_folder", args.checkpoint), metrics)


def report(name: str, result: dict, heads: dict | None, pairs: list) -> None:
    print(f"{name}: AER {result['aer']:.3f}  precision {result['precision']:.3f}  recall {result['recall']:.3f}  "
          f"({result['method']}, {len(pairs)} sentences, {result['tokens']}, {result['seconds']} s)")
    if "completeness" in result:
        c = result["completeness"]
        print(f"  integrated gradients, {c['points']} points: completeness gap {100 * c['gap_total']:.2f} % in total; "
              f"per sentence median {100 * c['gap_sentence_median']:.2f} %, largest {100 * c['gap_sentence_max']:.2f} %, "
              f"{100 * c['sentences_above_1pct']:.0f} % of sentences above 1 %; per step median "
              f"{100 * c['gap_step_median']:.2f} %, 95th percentile {100 * c['gap_step_p95']:.2f} %, "
              f"{100 * c['steps_above_1pct']:.0f} % of {c['steps']} steps above 1 %")
    if heads is not None:
        for r in heads["rows"]:
            print(f"  layer {r['layer']} head {r['head']}: AER {r['aer']:.3f}  precision {r['precision']:.3f}  "
                  f"recall {r['recall']:.3f}")
        best, shown = heads["best"], heads["shown"]
        print(f"  best: layer {best['layer']} head {best['head']} (AER {best['aer']:.3f}); the app shows "
              f"layer {shown['layer']}, heads averaged (AER {shown['aer']:.3f})")


def main(argv=None) -> int:
    args = parse(argv)
    model, vocab, cfg = load_for_cli(args.checkpoint, args.results)
    if not model.cfg.has_attention:
        print("error: this model has no attention (RNNenc): there is no alignment to score", file=sys.stderr)
        return 1
    pair = (getattr(model.cfg, "source_language", "en"), getattr(model.cfg, "target_language", "fr"))
    if pair != ("en", "fr"):
        print(f"error: the gold alignments are English–French; this model translates {pair[0]} to {pair[1]}",
              file=sys.stderr)
        return 1
    if args.write_metrics and args.method != "attention":
        print("error: --write-metrics stores the attention's AER; an attribution's goes to --csv", file=sys.stderr)
        return 1
    pairs = read_gold(args.gold)[:args.limit]
    result = score(model, vocab, pairs, hansards=not args.as_given, method=args.method, steps=args.ig_steps)
    heads = (score_heads(model, vocab, pairs, hansards=not args.as_given)
             if model.cfg.decoder == "transformer" and args.method == "attention" else None)
    if args.write_metrics:
        write_all_metrics(model, vocab, cfg, args, pairs, result, heads)
    name = cfg.get("name", args.checkpoint)
    if args.csv:
        row = {"model": name, **{k: result[k] for k in ("method", "aer", "precision", "recall", "sentences", "seconds")},
               "reading": "as given" if args.as_given else "written"}
        out = Path(args.csv)
        pd.DataFrame([row]).to_csv(out, mode="a", header=not out.exists(), index=False)
    if heads is not None:
        result["heads"] = heads
    if args.json:
        print(json.dumps(result))
    else:
        report(name, result, heads, pairs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
