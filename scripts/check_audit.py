"""Run the check on the check (``teaching/check_audit.py``) before shipping a new item: every
answer strategy of a student who never saw the lesson, played over ``--seeds`` pairs of checks
drawn from the shipped RNNsearch and ``results/bleu_by_length.csv``, against chance, per slot.

    python scripts/check_audit.py --seeds 100 --out results/check_baselines.csv

Prints the table (strategy, slot, items, score, chance, over chance) and the items' features (how
often a recall key is the longest option, stems echoing their key, cross-item cues); exits 1 when
a strategy beats chance by more than ALLOWED on a slot, a stem echoes its key, a recall key
could answer another item of its check, or a recall slot's key is the longest option more often
than 1/k + ALLOWED.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def sources(checkpoints: Path):
    """The shipped RNNsearch's records and annotations by text, as the Lesson page draws the check."""
    from model.internals import annotation_values
    from model.search import greedy, prepare_source
    from model.zoo import load_entry
    entry = load_entry(checkpoints / "rnnsearch")
    return (lambda t: greedy(entry.model, entry.vocab, prepare_source(entry.vocab, t)),
            lambda t: annotation_values(entry.model, prepare_source(entry.vocab, t).ids))


def failures(result) -> list[str]:
    from teaching.check_audit import ALLOWED
    from teaching.check_bank import OPTIONS
    out = [f"{r['strategy']} on {r['slot']}: {r['score']:.0%} against chance {r['chance']:.0%}"
           for r in result.table() if r["over_chance"] > ALLOWED + 1e-9]
    out += [f"{slug}: the key is the longest option in {f['key longest']:.0%} of items"
            for slug, f in result.features.items() if "key longest" in f and f["key longest"] > 1 / OPTIONS + ALLOWED]
    for feature in ("stems echoing their key", "cross-item cues"):
        if result.features["check"][feature]:
            out.append(f"{feature}: {result.features['check'][feature]:.0f}")
    return out


def main(argv=None) -> int:
    from functools import lru_cache
    from teaching.check_audit import audit
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    # 100 seeds: 200 items a slot, a fair rule's standard error 3 points (at 25 seeds, 6: a fair
    # rule then passes 10 points over chance now and then by the draw alone)
    parser.add_argument("--seeds", type=int, default=100, help="pairs of checks drawn (seeds 0…N−1)")
    parser.add_argument("--checkpoints", type=Path, default=ROOT / "checkpoints")
    parser.add_argument("--out", type=Path, help="the table as CSV (results/check_baselines.csv)")
    args = parser.parse_args(argv)
    record_of, values_of = (lru_cache(maxsize=None)(f) for f in sources(args.checkpoints))
    bleu = pd.read_csv(ROOT / "results" / "bleu_by_length.csv")
    result = audit(range(args.seeds), record_of, values_of, bleu)
    table = pd.DataFrame(result.table()).sort_values(["slot", "strategy"])
    with pd.option_context("display.width", 200, "display.max_rows", 200):
        print(table.to_string(index=False, formatters={c: "{:.0%}".format for c in ("score", "chance")}
                              | {"over_chance": "{:+.0%}".format}))
        print(pd.DataFrame(result.features).T.to_string())
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        table.to_csv(args.out, index=False, float_format="%.4f")
    wrong = failures(result)
    for line in wrong:
        print("FAIL:", line)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
