"""How long a visitor waits for an SVG, PDF or PNG, and how long the paper's figures take.

    python bench/export_speed.py [--repeats 3] [--figures] [--append results/export_speed.jsonl]

Each export is the server's own path (``viz.export.export_image``: the process's warm
exporter, a child that keeps Kaleido's Chromium open) on the Translate page's heatmap of the
landing sentence as RNNsearch writes it, at slide size. Reported, in seconds:

- ``first_s``: the process's first export (an SVG): the child and its Chromium start;
- ``{svg,pdf,png}_warm_median_s`` / ``_warm_max_s``: every later export, ``--repeats`` of each;
- ``{svg,pdf,png}_cold_s``: one export of each with the browser stopped before it (what every
  click would cost with a browser per click).

``--figures`` also times ``python -m viz.paper_figures`` (decoding on the shipped checkpoints, then
21 files in one browser). Prints one JSON line, with the 1-minute load average before and
after (the machine may be shared) and the commit.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
import viz.export as export  # noqa: E402
from viz.export import export_image, MIME, SIZES  # noqa: E402
from viz.heatmap import alignment_heatmap  # noqa: E402


def landing_heatmap():
    """The landing sentence's heatmap, from RNNsearch's record (model.figure_records, in a child)."""
    from viz.paper_figures import SENTENCE
    done = subprocess.run([sys.executable, "-m", "model.figure_records", f"rnnsearch={SENTENCE}"], cwd=ROOT,
                          capture_output=True, text=True, check=True)
    rec = json.loads(done.stdout)["records"][0]
    return alignment_heatmap(rec["attention"], rec["source_tokens"], rec["target_tokens"], title="RNNsearch")


def timed(fig, fmt: str) -> float:
    start = time.perf_counter()
    export_image(fig, fmt, SIZES["slide"])
    return time.perf_counter() - start


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--figures", action="store_true", help="also time python -m viz.paper_figures")
    p.add_argument("--append", help="also append the JSON line to this file (e.g. results/export_speed.jsonl)")
    args = p.parse_args()
    fig = landing_heatmap()
    out = {"what": "export_speed", "size": "slide", "repeats": args.repeats, "load_1min_before": os.getloadavg()[0]}
    out["first_s"] = round(timed(fig, "svg"), 2)
    for fmt in MIME:
        times = [timed(fig, fmt) for _ in range(args.repeats)]
        out[f"{fmt}_warm_median_s"], out[f"{fmt}_warm_max_s"] = round(statistics.median(times), 2), round(max(times), 2)
    for fmt in MIME:
        export._EXPORTER.stop()
        out[f"{fmt}_cold_s"] = round(timed(fig, fmt), 2)
    export._EXPORTER.stop()
    if args.figures:
        with tempfile.TemporaryDirectory() as folder:
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "viz.paper_figures", "--out", f"{folder}/figures"], cwd=ROOT, check=True,
                           capture_output=True)
            out["figures_command_s"] = round(time.perf_counter() - start, 1)
    out.update(load_1min_after=os.getloadavg()[0], cores=os.cpu_count(), machine=platform.machine(),
               commit=subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                     text=True).stdout.strip(), date=time.strftime("%Y-%m-%d"))
    line = json.dumps(out)
    print(line)
    if args.append:
        with open(args.append, "a") as f:
            f.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
