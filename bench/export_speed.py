"""How long a visitor waits for an SVG, PDF or PNG, and how long the paper's figures take.

    python bench/export_speed.py [--repeats 3] [--figures]

Each export is the server's own path (``viz.export.export_image``: a child process that
starts Chromium, draws one figure and ends) on the Translate page's heatmap of the landing
sentence as RNNsearch writes it (18 × 10 pieces), at slide size. ``--figures`` also times
``python -m viz.paper_figures`` (decoding on the shipped checkpoints, then 21 files in one browser).
Prints one JSON line: median and max seconds per format, and the command's seconds.
"""
import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from viz.export import export_image, MIME, SIZES  # noqa: E402
from viz.heatmap import alignment_heatmap  # noqa: E402


def landing_heatmap():
    """The landing sentence's heatmap, from RNNsearch's record (model.figure_records, in a child)."""
    from viz.paper_figures import SENTENCE
    done = subprocess.run([sys.executable, "-m", "model.figure_records", f"rnnsearch={SENTENCE}"], cwd=ROOT,
                          capture_output=True, text=True, check=True)
    rec = json.loads(done.stdout)["records"][0]
    return alignment_heatmap(rec["attention"], rec["source_tokens"], rec["target_tokens"], title="RNNsearch")


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--figures", action="store_true", help="also time python -m viz.paper_figures")
    args = p.parse_args()
    fig = landing_heatmap()
    out = {"what": "export_speed", "size": "slide", "repeats": args.repeats}
    for fmt in MIME:
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            export_image(fig, fmt, SIZES["slide"])
            times.append(time.perf_counter() - start)
        out[f"{fmt}_median_s"], out[f"{fmt}_max_s"] = round(statistics.median(times), 2), round(max(times), 2)
    if args.figures:
        with tempfile.TemporaryDirectory() as folder:
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "viz.paper_figures", "--out", f"{folder}/figures"], cwd=ROOT, check=True,
                           capture_output=True)
            out["figures_command_s"] = round(time.perf_counter() - start, 1)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
