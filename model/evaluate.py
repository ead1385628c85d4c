"""Evaluate a checkpoint: cased sacreBLEU overall, per corpus and by source length.

    python -m model.evaluate --checkpoint checkpoints/NAME --data ../shared/data/enfr/test.tsv.gz [--beam K] [--json]
    python -m model.evaluate --checkpoint checkpoints/NAME --data ../shared/data/enfr-broad/test.tsv.gz \
        --origin newstest2014 --set newstest2014        # the paper's test set (WMT newstest2014)
    python -m model.evaluate --checkpoint checkpoints/NAME --src FILE --ref FILE [--ref FILE ...]

Rows of a TSV with the same English side are one segment with several references
(../shared/data/README.md). ``--stress`` evaluates the long-sentence stress set built from
the same file (:func:`stress_set`). ``--origin`` keeps the rows of one corpus of a mixed
split. ``--write-metrics`` stores the result in the checkpoint's metrics.json under the
set's name (``--set``; default ``test``, or ``stress``); ``--length-csv`` appends the
by-length table to a CSV. ``--positions`` (local-p) measures how well the predicted position
p_i follows the alignment before the Gaussian, with its chance level (:func:`position_tracking_score`).
"""
from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from .checkpoint import write_metrics
from .data import Batch, multi_reference, read_split
from .metrics import bleu_by_length, bootstrap_interval, corpus_bleu
from .model import Seq2Seq
from .search import beam_batch, greedy_batch, MAX_SOURCE_TOKENS
from .vocabulary import Vocabulary
from .zoo import load_for_cli

STRESS_SEED = 2014


def stress_set(sources: list[str], references: list[list[str]], origins: list[str], seed: int = STRESS_SEED):
    """The long-sentence stress set: consecutive test segments of one corpus joined 2–5 at a time.

    Walk the segments in file order; draw k ∈ {2..5} (seeded); join the next k segments
    of the same origin with spaces into one source, and their first references likewise
    into one reference. Sources then reach 60+ words, beyond anything in the natural test
    split, while every piece of text is still real test data.
    """
    rng = random.Random(seed)
    out_src, out_ref, out_origin = [], [], []
    by_origin: dict[str, list[int]] = {}
    for i, o in enumerate(origins):
        by_origin.setdefault(o, []).append(i)
    for origin, idx in by_origin.items():
        pos = 0
        while pos + 2 <= len(idx):
            k = min(rng.randint(2, 5), len(idx) - pos)
            chunk = idx[pos:pos + k]
            out_src.append(" ".join(sources[i] for i in chunk))
            out_ref.append([" ".join(references[i][0] for i in chunk)])
            out_origin.append(origin)
            pos += k
    return out_src, out_ref, out_origin


def translate_all(model: Seq2Seq, vocab: Vocabulary, sources: list[str], beam: int = 1,
                  batch_size: int = 64) -> list[str]:
    """Batched translation of many sentences, in length order (little padding), output in input order."""
    ids = [vocab.encode(s)[:MAX_SOURCE_TOKENS] or [vocab.encode(".")[0]] for s in sources]
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    out: list[list[int]] = [[] for _ in ids]
    for k in range(0, len(order), batch_size):
        idx = order[k:k + batch_size]
        batch = [ids[i] for i in idx]
        hyps = greedy_batch(model, batch) if beam <= 1 else beam_batch(model, batch, beam)
        for i, h in zip(idx, hyps):
            out[i] = h
    return vocab.decode_batch(out)


@torch.no_grad()
def perplexity(model: Seq2Seq, vocab: Vocabulary, sources: list[str], references: list[list[str]]) -> float:
    """exp(mean token cross-entropy) of each segment's first reference, teacher-forced."""
    src = [vocab.encode(s)[:MAX_SOURCE_TOKENS] for s in sources]
    trg = [vocab.encode_target(r[0])[:MAX_SOURCE_TOKENS] for r in references]
    order = sorted(range(len(src)), key=lambda i: len(src[i]))
    total, ntok = 0.0, 0
    model.eval()
    for k in range(0, len(order), 64):
        idx = [i for i in order[k:k + 64] if src[i] and trg[i]]
        if not idx:
            continue
        b = Batch([src[i] for i in idx], [trg[i] for i in idx])
        loss, n = model(b.src, b.src_len, b.trg_in, b.trg_out)
        total, ntok = total + float(loss), ntok + n
    return math.exp(total / max(1, ntok))


def evaluate(model, vocab, sources, references, origins, beam: int = 1, bootstrap: int = 0,
             with_perplexity: bool = True) -> tuple[dict, pd.DataFrame]:
    start = time.time()
    hyps = translate_all(model, vocab, sources, beam)
    decode_seconds = time.time() - start
    score, signature = corpus_bleu(hyps, references)
    per_origin = {}
    for origin in sorted(set(origins)):
        sel = [i for i, o in enumerate(origins) if o == origin]
        s, _ = corpus_bleu([hyps[i] for i in sel], [references[i] for i in sel])
        per_origin[origin] = {"bleu": round(s.score, 2), "segments": len(sel)}
    by_length = bleu_by_length(sources, hyps, references, bootstrap=bootstrap)
    result = {"bleu": round(score.score, 2), "signature": signature, "score_line": str(score),
              "segments": len(sources), "beam": beam, "per_origin": per_origin,
              "by_length": by_length.to_dict(orient="records"),
              "decode_seconds": round(decode_seconds, 1)}
    if bootstrap:
        lo, hi = bootstrap_interval(hyps, references, bootstrap)
        result["bleu_ci95"] = [round(lo, 2), round(hi, 2)]
    if with_perplexity:
        result["perplexity"] = round(perplexity(model, vocab, sources, references), 3)
    result["seconds"] = round(time.time() - start, 1)
    return result, by_length


def position_tracking_score(model: Seq2Seq, vocab: Vocabulary, sources: list[str], min_pieces: int = 12,
                            max_pieces: int = 40, shuffles: int = 20, seed: int = STRESS_SEED) -> dict:
    """Local-p only: how well p_i (Luong eq. 9) follows the alignment, over the greedy
    translations of the sources of ``min_pieces``–``max_pieces`` subword pieces; mean
    Spearman ρ per sentence (:func:`model.analysis.position_tracking`).

    ``spearman_align``: ρ of p_i with argmax_j e_ij, the inner score's alignment **before the
    Gaussian** (recomputed from the record, :func:`model.internals.local_p_steps`): what p_i is
    meant to predict. ``chance_align``: the same with p_i shuffled within each sentence
    (``shuffles`` shuffles each, seeded). ``spearman_weights``: ρ of p_i with argmax_j α_ij,
    the weights shown, which is partly circular: α already holds the Gaussian centred on p_i
    and is zero outside the window. ``window_share``: the share of align's mass (softmax over
    the whole sentence) inside the window, mean and minimum over the steps and the share of
    steps where it is under 0.9: where it is 1, the shipped form of local-p and Luong's
    eq. 10 (align over the window only) coincide.
    """
    from .analysis import position_tracking, shuffled_position_tracking
    from .internals import local_p_steps
    from .search import greedy, prepare_source
    rng = np.random.default_rng(seed)
    along, chance, shown, shares = [], [], [], []
    for text in sources:
        if min_pieces <= len(vocab.encode(text)) <= max_pieces:
            source = prepare_source(vocab, text)
            rec = greedy(model, vocab, source)
            steps = local_p_steps(model, source.ids, rec.query_states)
            if steps is None:
                raise SystemExit("error: --positions needs a local-p checkpoint")
            along.append(position_tracking(rec.positions, steps.inner_energies))
            chance.append(shuffled_position_tracking(rec.positions, steps.inner_energies, rng, shuffles))
            shown.append(position_tracking(rec.positions, rec.weights))
            shares.append(steps.shipped_mass / steps.luong_mass)

    def mean(rhos):  # a one-step or constant translation has no ρ
        scored = [r for r in rhos if r == r]
        return round(float(sum(scored) / max(1, len(scored))), 3) + 0.0, len(scored)  # + 0.0: no "-0.0"

    (spearman_align, scored), (chance_align, _), (spearman_weights, _) = mean(along), mean(chance), mean(shown)
    share = np.concatenate(shares) if shares else np.ones(1)
    return {"spearman_align": spearman_align, "chance_align": chance_align, "spearman_weights": spearman_weights,
            "window_share": {"mean": round(float(share.mean()), 4), "min": round(float(share.min()), 4),
                             "steps_under_0.9": round(float((share < 0.9).mean()), 4)},
            "sentences": len(along), "scored": scored, "pieces": [min_pieces, max_pieces], "shuffles": shuffles}


def tracking_report(tracking: dict) -> str:
    """The figures of :func:`position_tracking_score`, each with what it measures."""
    share = tracking["window_share"]
    return "\n".join([
        f"local-p position tracking over {tracking['scored']} greedy translations of {tracking['set']} "
        f"sources of {tracking['pieces'][0]}-{tracking['pieces'][1]} pieces (mean Spearman rho per sentence):",
        f"  p_i vs argmax_j e_ij, the alignment before the Gaussian:   {tracking['spearman_align']:.3f}",
        f"  chance level (p_i shuffled within each sentence, x{tracking['shuffles']}):   {tracking['chance_align']:.3f}",
        f"  p_i vs argmax_j alpha_ij, the weights shown (partly circular: alpha holds the Gaussian on p_i): "
        f"{tracking['spearman_weights']:.3f}",
        f"  align's mass inside the window: mean {share['mean']:.4f}, min {share['min']:.4f}, under 0.9 on "
        f"{share['steps_under_0.9']:.1%} of steps (1: the shipped form and Luong's eq. 10 coincide)"])


def load_segments(args) -> tuple[list[str], list[list[str]], list[str]]:
    if args.data:
        df = read_split(args.data)
        if args.origin:
            df = df[df["origin"] == args.origin]
            if df.empty:
                raise SystemExit(f"error: no rows of origin {args.origin!r} in {args.data}")
        return multi_reference(df)
    if not args.src or not args.ref:
        raise SystemExit("error: give --data FILE.tsv[.gz], or --src FILE with one or more --ref FILE")
    sources = Path(args.src).read_text(encoding="utf-8").splitlines()
    refs = [Path(r).read_text(encoding="utf-8").splitlines() for r in args.ref]
    if any(len(r) != len(sources) for r in refs):
        raise SystemExit("error: every --ref file needs as many lines as --src")
    return sources, [list(x) for x in zip(*refs)], ["file"] * len(sources)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Cased sacreBLEU of a checkpoint, overall, per corpus and by length.")
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--data", help="en<TAB>fr<TAB>origin file (.tsv or .tsv.gz)")
    p.add_argument("--src", help="source file, one sentence per line")
    p.add_argument("--ref", action="append", help="reference file (repeatable)")
    p.add_argument("--beam", type=int, default=1)
    p.add_argument("--stress", action="store_true", help="evaluate the long-sentence stress set built from --data")
    p.add_argument("--origin", help="only the rows of this origin (e.g. newstest2014 of enfr-broad/test)")
    p.add_argument("--set", dest="set_name", help="name of the set in metrics.json and --length-csv "
                                                    "(default: test, or stress with --stress)")
    p.add_argument("--bootstrap", type=int, default=0, help="bootstrap samples for 95%% intervals (e.g. 1000)")
    p.add_argument("--limit", type=int, default=None, help="only the first N segments")
    p.add_argument("--no-perplexity", action="store_true")
    p.add_argument("--write-metrics", action="store_true", help="store the result in CHECKPOINT/metrics.json")
    p.add_argument("--length-csv", help="append the by-length table (model, set, bucket, segments, bleu, CI) here")
    p.add_argument("--positions", action="store_true",
                   help="local-p: how well p_i follows the alignment before the Gaussian, its chance level "
                        "(p_i shuffled within each sentence) and, labelled, the ρ against argmax α of the "
                        "weights shown (mean Spearman ρ over the sources of --min-pieces to --max-pieces pieces)")
    p.add_argument("--min-pieces", type=int, default=12)
    p.add_argument("--max-pieces", type=int, default=40)
    p.add_argument("--results", default=None,
                   help="hf: models only: metrics.json goes to RESULTS/hf/NAME/ (default: results/hf/NAME/)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    model, vocab, cfg = load_for_cli(args.checkpoint, args.results)
    metrics_folder = cfg.get("metrics_folder", args.checkpoint)  # a model made elsewhere keeps its own
    sources, references, origins = load_segments(args)
    if args.stress:
        sources, references, origins = stress_set(sources, references, origins)
    if args.limit:
        sources, references, origins = sources[:args.limit], references[:args.limit], origins[:args.limit]
    if args.positions:
        tracking = position_tracking_score(model, vocab, sources, args.min_pieces, args.max_pieces)
        tracking["set"] = args.set_name or str(args.data or args.src)
        if args.write_metrics:
            write_metrics(metrics_folder, {"position_tracking": tracking})
        if args.json:
            print(json.dumps(tracking))
        else:
            print(tracking_report(tracking))
        return 0
    result, by_length = evaluate(model, vocab, sources, references, origins, args.beam, args.bootstrap,
                                 not args.no_perplexity)
    result["set"] = ("stress:" if args.stress else "") + str(args.data or args.src) + (
        f" (origin {args.origin})" if args.origin else "")
    # which weights: a run in progress is evaluated again as it learns, so each figure names its step
    result["steps"] = cfg.get("training", {}).get("steps")
    name = cfg.get("name", Path(args.checkpoint).name)
    set_name = args.set_name or ("stress" if args.stress else "test")
    if args.write_metrics:
        write_metrics(metrics_folder, {set_name: result, "parameters": model.num_parameters()})
    if args.length_csv:
        table = by_length.assign(model=name, set=set_name, beam=args.beam)
        path = Path(args.length_csv)
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            old = pd.read_csv(path)
            old = old[~((old["model"] == name) & (old["set"] == table["set"].iloc[0]))]
            table = pd.concat([old, table], ignore_index=True)
        cols = ["model", "set", "beam", "bucket", "min_words", "segments", "bleu", "ci_low", "ci_high"]
        table.reindex(columns=cols).to_csv(path, index=False)
    if args.json:
        print(json.dumps(result, ensure_ascii=False))
    else:
        print(f"{name}: {result['score_line']}")
        print(f"signature: {result['signature']}")
        for origin, r in result["per_origin"].items():
            print(f"  {origin:<28} BLEU {r['bleu']:6.2f}  ({r['segments']} segments)")
        print(by_length.to_string(index=False))
        if "perplexity" in result:
            print(f"perplexity {result['perplexity']}")
        print(f"{result['segments']} segments in {result['seconds']} s (beam {args.beam})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
