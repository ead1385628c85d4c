"""What a figure's text alternative costs to make: ``viz.describe.describe_spec`` and
``alternative_html`` of the three figures a Step through move draws on its first visit (the step's
heatmap with its row framed, the step's α as bars, the top-k next tokens), for a sentence of 28
source and 30 target tokens. Each call describes the heatmap with another step's row framed, as
a slider move does. The best of ``--rounds`` rounds of ``--calls`` calls each, in milliseconds per
figure; their sum is what a new step adds to a slider move.

    python bench/describe_cost.py [--calls 200] [--rounds 5] [--app DIR] [--append results/benchmarks.jsonl]

``--app DIR`` times another checkout's ``viz/`` in a process of its own (a before/after on the same
host: ``--app /tmp/attn-side-by-side/COMMIT``). No torch, no server: the figures are made from a
seeded α.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from classroom import ROOT  # noqa: E402  (puts the repository on sys.path)
from classroom_report import emit, stamp  # noqa: E402

TIMED = """
import json, sys, time
import numpy as np
from viz.describe import alternative_html, describe_spec
from viz.teaching_figures import highlighted_heatmap, source_bars, topk_bars
calls, rounds = int(sys.argv[1]), int(sys.argv[2])
T, S = 30, 28
rng = np.random.default_rng(0)
alpha = rng.dirichlet(np.ones(S), size=T)
source, target = [f"\\u2581src{j}" for j in range(S)], [f"\\u2581tgt{i}" for i in range(T)]
# each call a step's first visit: the heatmap with that step's row framed, made before the clock
figures = {"heatmap": lambda c: highlighted_heatmap(alpha, source, target, rows=[c % T],
                                                    title=f"α_ij: row {c % T + 1} is the step explained"),
           "bars": lambda c: source_bars(alpha[3], source, "α_ij", highlight=int(alpha[3].argmax())),
           "topk": lambda c: topk_bars([f"w{k}" for k in range(10)], np.sort(rng.random(10))[::-1], chosen="w0")}
ms = {}
for name, make in figures.items():
    specs = [make(c).to_dict() for c in range(calls)]
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for spec in specs:
            alternative_html(describe_spec(spec))
        best = min(best, (time.perf_counter() - start) / calls * 1e3)
    ms[name] = round(best, 3)
print(json.dumps(ms))
"""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--app", type=Path, default=ROOT, help="the checkout whose viz/ is timed")
    parser.add_argument("--append", type=Path, help="also append the JSON line to this file")
    args = parser.parse_args(argv)
    done = subprocess.run([sys.executable, "-c", TIMED, str(args.calls), str(args.rounds)], cwd=args.app,
                          capture_output=True, text=True, check=True)
    ms = json.loads(done.stdout.strip().splitlines()[-1])
    emit({"bench": "describe_cost", "app": str(args.app), "calls": args.calls, "rounds": args.rounds,
          "ms_per_figure": ms, "ms_per_step": round(sum(ms.values()), 3), **stamp(args.app)}, args.append)
    return 0


if __name__ == "__main__":
    sys.exit(main())
