"""Dev BLEU of several training runs at the same optimiser steps, as a markdown table.

    python scripts/compare_curves.py NAME=PATH/train_log.csv [NAME=…] [--steps 600 1200 …]

Reads each run's ``train_log.csv`` (one row per dev evaluation). A shipped checkpoint's log
holds every stage, its step count restarting at each: only the first stage (from scratch)
is read, where runs trained on the same batches compare step for step. A run not evaluated
at a step shows "–".
"""
from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd


def first_stage(log: pd.DataFrame) -> pd.DataFrame:
    """The rows before the step count first falls (the start of a fine-tuning stage)."""
    steps = log["steps"].tolist()
    end = next((i for i in range(1, len(steps)) if steps[i] <= steps[i - 1]), len(steps))
    return log.iloc[:end]


def table(runs: dict[str, Path], steps: list[int] | None = None) -> str:
    curves = {name: first_stage(pd.read_csv(path)).set_index("steps")["dev_bleu"] for name, path in runs.items()}
    if steps is None:
        steps = sorted(set().union(*(c.index for c in curves.values())))
    lines = ["| steps | " + " | ".join(curves) + " |", "| --- |" + " --- |" * len(curves)]
    for s in steps:
        cells = [f"{c[s]:.2f}" if s in c.index else "–" for c in curves.values()]
        lines.append(f"| {s:,} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("runs", nargs="+", metavar="NAME=PATH", help="a name and its train_log.csv")
    p.add_argument("--steps", type=int, nargs="+", default=None, help="default: every step any run evaluated")
    args = p.parse_args(argv)
    runs = {}
    for arg in args.runs:
        name, sep, path = arg.partition("=")
        if not sep or not Path(path).is_file():
            p.error(f"{arg!r}: expected NAME=PATH to an existing train_log.csv")
        runs[name] = Path(path)
    print(table(runs, args.steps))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
