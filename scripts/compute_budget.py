"""What each shipped model's weights cost, in one-core minutes of one host, as a markdown table.

    python scripts/compute_budget.py [NAME ...] [--speeds results/train_speed.csv]

A model's stages ran on different machines (2-core AMD and Intel CPUs, a GPU), so their wall
minutes do not add up to a comparable budget. The target tokens its weights went through do:
``training.stages[*].target_tokens_seen`` in ``checkpoints/NAME/config.json`` (each stage up to
its best weights, what ``scripts/promote_finetuned.py`` sums). Divided by the model's measured
training throughput on one host (``results/train_speed.csv``, from ``bench/train_speed.py``), they
give the minutes one core of that host would need for the same weights: the "same CPU budget" of
the Transformer issue, the same for every model whatever machine ran it. Both precisions are
shown: bf16 autocast learns per step as float32 does (docs/results.md) and is faster, by a
different factor for each model.

The newstest2014 column is the checkpoint's own ``metrics.json`` (greedy unless it says
otherwise), written by ``scripts/evaluate_zoo.sh``.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from model.checkpoint import CONFIG, read_metrics, stage_on_gpu, training_stages  # noqa: E402


def stage_tokens(config: dict) -> list[tuple[str, int]]:
    """(device, target tokens to the best weights) for each stage of a shipped config."""
    return [("GPU" if stage_on_gpu(s) else "CPU", int(s.get("target_tokens_seen") or 0))
            for s in training_stages(config)]


def budget_rows(checkpoints: Path, names: list[str], speeds: pd.DataFrame) -> list[dict]:
    rows = []
    for name in names:
        folder = checkpoints / name
        config = json.loads((folder / CONFIG).read_text())
        speed = speeds[speeds["config"] == f"configs/{name}.yaml"].set_index("precision")["tokens_per_second"]
        if speed.empty:
            raise SystemExit(f"error: no training throughput for configs/{name}.yaml in the speeds file")
        stages = stage_tokens(config)
        tokens = sum(t for _, t in stages)
        news = (read_metrics(folder) or {}).get("newstest2014", {})
        rows.append({
            "model": name,
            "stages": " + ".join(f"{t / 1e6:.1f}M {d}" for d, t in stages),
            "target_tokens": tokens,
            **{f"minutes_{p}": round(tokens / speed[p] / 60) for p in ("float32", "bfloat16") if p in speed},
            "newstest2014": news.get("bleu"),
            "beam": news.get("beam"),
        })
    return rows


def markdown(rows: list[dict]) -> str:
    lines = ["| model | target tokens by stage | total | one-core minutes, float32 | one-core minutes, bf16 | newstest2014 |",
             "| --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        news = "–" if r["newstest2014"] is None else f"{r['newstest2014']:.2f}"
        if r["beam"] not in (None, 1):
            news += f" (beam {r['beam']})"
        lines.append(f"| `{r['model']}` | {r['stages']} | {r['target_tokens'] / 1e6:.1f}M | "
                     f"{r.get('minutes_float32', '–')} | {r.get('minutes_bfloat16', '–')} | {news} |")
    return "\n".join(lines)


def main(argv=None) -> str:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("names", nargs="*", default=["rnnsearch", "transformer"])
    p.add_argument("--checkpoints", default=str(ROOT / "checkpoints"))
    p.add_argument("--speeds", default=str(ROOT / "results" / "train_speed.csv"))
    args = p.parse_args(argv)
    text = markdown(budget_rows(Path(args.checkpoints), args.names, pd.read_csv(args.speeds)))
    print(text)
    return text


if __name__ == "__main__":
    main()
