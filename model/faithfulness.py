"""Does the model use what its attention shows? The knock-out test, per model.

    python -m model.faithfulness --checkpoint checkpoints/rnnsearch [--checkpoint …] \\
        --data ../shared/data/enfr-broad/test.tsv.gz --origin newstest2014 --limit 200 [--json] [--csv FILE]

Each sentence is translated greedily; then, at every target step i, with the steps before it
as decoded, the step is run again twice: once with the **most-attended** source piece
(argmax_j α_ij) knocked out of the attention, once with a **random** other piece knocked out
(α_ij = 0, the row renormalised: :class:`~model.attention.Reweigh`; for a Transformer in every
layer and head). Reported per model: the share of steps whose word changes (the argmax of the
edited step is not y_i) and the mean drop in log p(y_i), for each. If attention explains the
choice, removing the most-attended piece should change far more than removing a random one.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from .attribution import decode_states, knocked_out_steps
from .zoo import load_for_cli
from .data import read_split
from .search import greedy, prepare_source


def knock_out_sentence(model, vocab, text: str, rng: random.Random) -> dict | None:
    """The knock-out test on one sentence: per step, (changed, drop) for the most-attended piece
    and a random other piece; None when the translation is empty or the source one piece long."""
    src = prepare_source(vocab, text)
    record = greedy(model, vocab, src)
    S, target = len(src.ids) + 1, record.target_ids
    if not target or S < 2:
        return None
    most = record.weights.argmax(1)
    other = [rng.choice([j for j in range(S) if j != m]) for m in most]
    decoded = decode_states(model, src.ids, target)
    knocked = knocked_out_steps(model, decoded, [[int(m), o] for m, o in zip(most, other)])  # T x 2 x V
    ids = torch.tensor(target)
    own = decoded[2].gather(1, ids.unsqueeze(1))  # T x 1
    without = knocked.gather(2, ids.view(-1, 1, 1).expand(-1, 2, 1)).squeeze(2)  # T x 2
    changed = knocked.argmax(2) != ids.unsqueeze(1)  # T x 2
    return {"changed": changed.numpy(), "drop": (own - without).numpy(), "steps": len(target)}


def knock_out_test(model, vocab, texts: list[str], seed: int = 0) -> dict:
    """The test over sentences: the share of steps whose word changes, the mean drop in log p(y_i)."""
    rng = random.Random(seed)
    start = time.time()
    rows = [r for r in (knock_out_sentence(model, vocab, t, rng) for t in texts) if r is not None]
    changed = np.concatenate([r["changed"] for r in rows])
    drop = np.concatenate([r["drop"] for r in rows])
    return {"sentences": len(rows), "steps": int(changed.shape[0]),
            "changed_most": round(float(changed[:, 0].mean()), 4), "changed_random": round(float(changed[:, 1].mean()), 4),
            "drop_most": round(float(drop[:, 0].mean()), 4), "drop_random": round(float(drop[:, 1].mean()), 4),
            "seconds": round(time.time() - start, 1)}


def source_sentences(data: str, origin: str | None, limit: int | None) -> list[str]:
    df = read_split(data)
    if origin:
        df = df[df["origin"] == origin]
        if df.empty:
            raise SystemExit(f"error: no rows of origin {origin!r} in {data}")
    return df["en"].tolist()[:limit]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Knock out the most-attended source piece against a random one.")
    p.add_argument("--checkpoint", action="append", required=True, help="a checkpoint folder or hf:NAME; repeatable")
    p.add_argument("--data", required=True, help="a split (.tsv or .tsv.gz with en, fr, origin columns)")
    p.add_argument("--origin", default=None, help="only rows of this origin (e.g. newstest2014)")
    p.add_argument("--limit", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--csv", default=None, help="append the results to this CSV")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    texts = source_sentences(args.data, args.origin, args.limit)
    results = []
    for spec in args.checkpoint:
        model, vocab, cfg = load_for_cli(spec)
        if not model.cfg.has_attention:
            print(f"{spec}: no attention (RNNenc): nothing to knock out", file=sys.stderr)
            continue
        r = {"model": cfg.get("name", Path(spec).name), "data": args.data, "origin": args.origin,
             **knock_out_test(model, vocab, texts, args.seed)}
        results.append(r)
        if not args.json:
            print(f"{r['model']}: word changes at {r['changed_most']:.1%} of steps with the most-attended piece "
                  f"knocked out, {r['changed_random']:.1%} with a random one; mean drop in log p(y_i) "
                  f"{r['drop_most']:.3f} against {r['drop_random']:.3f} ({r['sentences']} sentences, {r['steps']} "
                  f"steps, {r['seconds']} s)", flush=True)
    if args.csv:
        out = Path(args.csv)
        pd.DataFrame(results).to_csv(out, mode="a", header=not out.exists(), index=False)
    if args.json:
        print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
