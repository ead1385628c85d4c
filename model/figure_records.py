"""Decoding records as plain JSON, for figures drawn elsewhere (``python -m viz.paper_figures``).

    python -m model.figure_records --checkpoints checkpoints rnnsearch="Text one." luong-general="Text two." …

Each ``MODEL=TEXT`` argument is translated greedily by ``checkpoints/MODEL`` (each model
loaded once); standard output is one JSON object: ``{"display_names": {...}, "records":
[...]}``, a record per argument in order, being :meth:`DecodingRecord.to_json` (tokens,
α to 6 decimals, every Transformer head) plus ``model``, ``text`` and the whole-words view
``words`` (``{"weights", "source", "target"}``, the rule of ``model.analysis.merge_to_words``;
absent for RNNenc). ``viz/`` never imports torch: ``viz.paper_figures`` runs this in a child process
and reads its output.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from .analysis import merge_to_words
from .zoo import load_for_cli
from .search import translate
from .zoo import DISPLAY_NAMES


def records(checkpoints: Path, jobs: list[tuple[str, str]]) -> list[dict]:
    """Greedy records of ``(model, text)`` pairs, each model loaded once."""
    loaded, out = {}, []
    for name, text in jobs:
        if name not in loaded:
            loaded[name] = load_for_cli(checkpoints / name)[:2]
        model, vocab = loaded[name]
        rec = translate(model, vocab, text, beam=1)
        item = dict(rec.to_json(), model=name, text=text)
        if rec.weights is not None:
            weights, source, target = merge_to_words(rec.weights, rec.source_tokens, rec.target_tokens)
            item["words"] = {"weights": np.round(weights, 6).tolist(), "source": source, "target": target}
        out.append(item)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Greedy decoding records as JSON, for viz.paper_figures.")
    p.add_argument("--checkpoints", default="checkpoints", help="the zoo's folder")
    p.add_argument("jobs", nargs="+", metavar="MODEL=TEXT", help="a model folder's name and an English sentence")
    args = p.parse_args(argv)
    jobs = [tuple(job.split("=", 1)) for job in args.jobs]
    if any(len(job) != 2 for job in jobs):
        p.error("each job is MODEL=TEXT")
    out = {"display_names": DISPLAY_NAMES, "records": records(Path(args.checkpoints), jobs)}
    json.dump(out, sys.stdout, ensure_ascii=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
