"""Sequential (RNN) against parallel (Transformer): training throughput and decoding latency,
on the same data, the same vocabulary and one core each.

    python bench/sequential_vs_parallel.py --data ../shared/data/enfr-broad --vocab checkpoints/_vocab/spm.model \
        [--steps 30] [--threads 1 2] [--checkpoints checkpoints] [--models rnnsearch transformer]

Training: ``bench/train_speed.py`` for each model's config (target tokens per second over
``--steps`` optimiser steps of the trainer's own batches), on 1 and on 2 torch threads. Decoding: ``bench/translate_speed.py``
on each shipped checkpoint (median milliseconds, greedy and beam 5, for 5–40-word sentences).
Each runs in its own process, one after the other, so neither competes with the other. Prints
one JSON line; docs/results.md quotes it with the command and commit that produced it.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_json(*args: str) -> dict:
    out = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, check=True,
                         env={**os.environ, "OMP_NUM_THREADS": "1"})
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True, help="a data folder with train.tsv.gz (the broad zoo's)")
    p.add_argument("--vocab", required=True, help="the SentencePiece model both are trained on")
    p.add_argument("--test-data", default=None, help="where the latency sentences come from (default: --data)")
    p.add_argument("--checkpoints", default=str(ROOT / "checkpoints"))
    p.add_argument("--models", nargs="+", default=["rnnsearch", "transformer"])
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2],
                   help="torch threads for the training measurement: parallel work can use a second core")
    args = p.parse_args(argv)
    result = {"data": args.data, "vocab": args.vocab, "models": {}}
    for name in args.models:
        entry = {"train_tokens_per_second": {}}
        for threads in args.threads:
            train = run_json("bench/train_speed.py", "--config", f"configs/{name}.yaml", "--data", args.data,
                             "--vocab", args.vocab, "--steps", str(args.steps), "--threads", str(threads))
            entry["train_tokens_per_second"][f"{threads}_threads"] = train["tokens_per_second"]
            entry["parameters"] = train["parameters"]
        folder = Path(args.checkpoints) / name
        if (folder / "model.safetensors").exists():
            speed = run_json("bench/translate_speed.py", "--checkpoint", str(folder),
                             "--data", args.test_data or args.data, "--repeats", str(args.repeats))
            entry["latency_ms"] = speed["latency_ms"]
        result["models"][name] = entry
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
