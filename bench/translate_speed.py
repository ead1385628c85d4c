"""Translation latency of one checkpoint on one core: greedy and beam 5, for sentences of
5, 10, 20 and 40 words (real test-split sentences of those lengths, or the nearest).

    python bench/translate_speed.py --checkpoint checkpoints/rnnsearch [--data ../shared/data/enfr] [--repeats 20]

Prints one JSON line: median and p95 milliseconds per (words, method). Each measurement
is the full text-to-record path the app uses (model.search.translate).
"""
import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from model.checkpoint import load_checkpoint  # noqa: E402
from model.data import read_split, split_path  # noqa: E402
from model.search import translate  # noqa: E402


def sentence_of(sentences, words):
    return min(sentences, key=lambda s: (abs(len(s.split()) - words), len(s)))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--data", default="../shared/data/enfr")
    p.add_argument("--repeats", type=int, default=30)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    model, vocab, _ = load_checkpoint(args.checkpoint)
    sources = read_split(split_path(args.data, "test"))["en"].tolist()
    joined = [" ".join(sources[i:i + 4]) for i in range(0, 400, 4)]  # for the 40-word case
    result = {"checkpoint": args.checkpoint, "threads": args.threads, "latency_ms": {}}
    cases = [(words, beam, sentence_of(sources + joined, words)) for words in (5, 10, 20, 40) for beam in (1, 5)]
    for _, beam, text in cases:
        translate(model, vocab, text, beam=beam)  # warm-up (packs the weights on first use)
    # rounds over every case, rather than all repeats of one case in a row: this machine's
    # speed drifts (shared host), and interleaving spreads a slow spell over all cases alike
    times = {(words, beam): [] for words, beam, _ in cases}
    for _ in range(args.repeats):
        for words, beam, text in cases:
            t = time.perf_counter()
            translate(model, vocab, text, beam=beam)
            times[words, beam].append((time.perf_counter() - t) * 1000)
    for words, beam, text in cases:
        ts = sorted(times[words, beam])
        result["latency_ms"][f"{words}w_{'greedy' if beam == 1 else 'beam5'}"] = {
            "words": len(text.split()), "median": round(statistics.median(ts), 2),
            "p95": round(ts[int(0.95 * (len(ts) - 1))], 2)}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
