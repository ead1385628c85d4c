"""How many integration points integrated gradients need on the shipped models: the completeness
gap Σ_i |δ_i| / Σ_i |f(x) − f(x')| (model/attribution.py, ``Attribution.completeness_gap``) and
the largest step's |δ_i| / |f(x_i) − f(x'_i)|, at 20, 50 and 100 Gauss–Legendre points.

    python bench/ig_completeness.py [--models rnnsearch,…] [--out results/attribution/completeness.jsonl]

SENTENCES are translated greedily by each model and every target token attributed (the page's
computation). One JSON line per model and point count, appended to ``--out``; one thread.
"""
import argparse
import subprocess
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from model.attribution import IG_STEP_SCHEDULE, gradient_attribution  # noqa: E402
from model.checkpoint import load_checkpoint  # noqa: E402
from attribution_speed import emit  # noqa: E402 - one way to print and append a row
from model.search import translate  # noqa: E402
from model.zoo import zoo_names  # noqa: E402

SENTENCES = ["The European Parliament adopted the new policy on Tuesday.",
             "The young woman in the red coat walked across the old bridge while her two children played by the river."]
MODELS = ",".join(zoo_names(attending=True))  # the zoo's models with attention


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=MODELS)
    p.add_argument("--out", default=str(ROOT / "results" / "attribution" / "completeness.jsonl"))
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    for name in args.models.split(","):
        model, vocab, _ = load_checkpoint(ROOT / "checkpoints" / name)
        for k, text in enumerate(SENTENCES):
            record = translate(model, vocab, text)
            src = vocab.encode(text)
            for steps in IG_STEP_SCHEDULE:
                a = gradient_attribution(model, src, record.target_ids, "ig", steps)
                row = {"bench": "ig_completeness", "model": name, "sentence": k, "source_pieces": len(src) + 1,
                       "target_tokens": len(record.target_ids), "points": steps,
                       "gap": round(a.completeness_gap, 5), "largest_step_gap": round(float(a.step_gaps.max()), 5),
                       "seconds": round(a.seconds, 2), "commit": commit, "date": time.strftime("%Y-%m-%d")}
                emit(row, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
