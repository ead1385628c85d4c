"""What a new seed's check costs the server: the before and after checks of one seed
(``teaching.check.check_pair``), drawn from the BLEU table's length tables made once (as
``ui/lesson_check.py`` keeps them), on the checkout's shipped RNNsearch and results; its decodings
made beforehand, so what is timed is the drawing. A hash of the checks drawn says whether two
checkouts draw the same ones.

    python bench/check_cost.py [--seeds 40] [--app DIR] [--append results/benchmarks.jsonl]

One JSON line: CPU milliseconds per seed. ``--app DIR`` times another checkout in a process of
its own (``--app /tmp/attn-side-by-side/COMMIT``).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from classroom import ROOT  # noqa: E402  (puts the repository on sys.path)
from classroom_report import emit, stamp  # noqa: E402

TIMED = """
import hashlib, json, sys, time
from functools import lru_cache
from pathlib import Path
import pandas as pd, torch
torch.set_num_threads(1)
sys.path.insert(0, "scripts")
from check_audit import sources  # the shipped RNNsearch's records and annotations, as the audit reads them
from teaching import check as ch
record_of, values_of = (lru_cache(maxsize=None)(f) for f in sources(Path("checkpoints")))
bleu = pd.read_csv("results/bleu_by_length.csv")
tables = ch.length_tables(bleu) if hasattr(ch, "length_tables") else bleu
seeds = range(1, int(sys.argv[1]) + 1)
for seed in seeds:  # every decoding the checks ask for, made before the clock starts
    ch.check_pair(seed, record_of, values_of, tables)
digest, start = hashlib.sha256(), time.process_time()
for seed in seeds:
    digest.update(repr(ch.check_pair(seed, record_of, values_of, tables)).encode())
print(json.dumps({"ms": (time.process_time() - start) / len(seeds) * 1000, "hash": digest.hexdigest()[:16]}))
"""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=40)
    parser.add_argument("--app", type=Path, default=ROOT)
    parser.add_argument("--append", type=Path, help="also append the JSON line to this file")
    args = parser.parse_args(argv)
    env = {**os.environ, "PYTHONPATH": str(args.app), "OMP_NUM_THREADS": "1"}
    run = subprocess.run([sys.executable, "-c", TIMED, str(args.seeds)], cwd=args.app, env=env, check=True,
                         capture_output=True, text=True)
    timed = json.loads(run.stdout.splitlines()[-1])
    emit({"bench": "check_cost", "app": str(args.app), "seeds": args.seeds, "cpu_ms_per_seed": round(timed["ms"], 1),
          "checks_hash": timed["hash"], **stamp(args.app)}, args.append)
    return 0


if __name__ == "__main__":
    sys.exit(main())
