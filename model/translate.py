"""Translate English text with a checkpoint and show the alignment.

    python -m model.translate --checkpoint checkpoints/rnnsearch [--beam K] [--json] "English text"

Without text, reads one sentence per line from standard input. The alignment table has
one row per French piece: its probability and the source pieces it attends to most.
"""
from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from .search import DecodingRecord, InputError, translate
from .zoo import load_for_cli


def alignment_table(rec: DecodingRecord, top: int = 3) -> str:
    """A readable text view of a record: one line per target piece."""
    lines = [f"{'target':<16} {'p':>6}  attends to (α)"]
    for i, tok in enumerate(rec.target_tokens):
        p = float(np.exp(rec.token_logprobs[i]))
        if rec.weights is None:
            att = "(RNNenc: no attention, one fixed context vector)"
        else:
            order = np.argsort(-rec.weights[i])[:top]
            att = "  ".join(f"{rec.source_tokens[j]} {rec.weights[i, j]:.2f}" for j in order)
        lines.append(f"{tok:<16} {p:6.3f}  {att}")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Translate English to French and print the alignment.")
    p.add_argument("--checkpoint", required=True, help="checkpoint folder, e.g. checkpoints/rnnsearch")
    p.add_argument("--beam", type=int, default=1, help="beam size (1 = greedy)")
    p.add_argument("--json", action="store_true", help="print one JSON object per sentence")
    p.add_argument("text", nargs="*", help="English text (default: stdin, one sentence per line)")
    args = p.parse_args(argv)
    model, vocab, _ = load_for_cli(args.checkpoint)
    texts = [" ".join(args.text)] if args.text else [line.rstrip("\n") for line in sys.stdin]
    status = 0
    for text in texts:
        try:
            rec = translate(model, vocab, text, beam=args.beam)
        except InputError as e:
            print(f"error: {e}", file=sys.stderr)
            status = 1
            continue
        for notice in rec.notices:
            print(f"notice: {notice}", file=sys.stderr)
        if args.json:
            print(json.dumps(rec.to_json(), ensure_ascii=False))
        else:
            print(rec.translation)
            print()
            print(alignment_table(rec))
    return status


if __name__ == "__main__":
    sys.exit(main())
