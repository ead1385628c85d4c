"""What a page pays to read a decoding another tab computed: ``cached_translate`` asked again for
the same (model, sentence, beam), outside a page run, on the checkout's shipped checkpoints.

    python bench/cache_hit.py [--calls 2000] [--app DIR] [--append results/benchmarks.jsonl]

One JSON line: microseconds per call. ``--app DIR`` times another checkout's ``ui/`` in a process
of its own (a before/after on the same host: ``--app /tmp/attn-side-by-side/COMMIT``).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from classroom import ROOT  # noqa: E402  (puts the repository on sys.path)
from classroom_report import emit, stamp  # noqa: E402

SENTENCE = "The agreement on the European Economic Area was signed in August 1992."
TIMED = f"""
import logging, sys, time
logging.disable(logging.WARNING)  # Streamlit's "no script run context" outside a page run
try:
    from ui.zoo_cache import cached_translate
except ImportError:  # before ui/zoo.py was renamed (c0d2c47)
    from ui.zoo import cached_translate
calls = int(sys.argv[1])
cached_translate("rnnsearch", {SENTENCE!r}, 1)  # computed once: every call after is a hit
start = time.perf_counter()
for _ in range(calls):
    cached_translate("rnnsearch", {SENTENCE!r}, 1)
print((time.perf_counter() - start) / calls * 1e6)
"""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--app", type=Path, default=ROOT)
    parser.add_argument("--append", type=Path, help="also append the JSON line to this file")
    args = parser.parse_args(argv)
    env = {**os.environ, "PYTHONPATH": str(args.app), "ATTN_EXPLORER_CHECKPOINTS": str(args.app / "checkpoints")}
    run = subprocess.run([sys.executable, "-c", TIMED, str(args.calls)], cwd=args.app, env=env, check=True,
                         capture_output=True, text=True)
    per_call = float(run.stdout.split()[-1])
    emit({"bench": "cache_hit", "app": str(args.app), "calls": args.calls, "us_per_hit": round(per_call, 1),
          **stamp(args.app)}, args.append)
    return 0


if __name__ == "__main__":
    sys.exit(main())
