"""Ship a fine-tuned run in place of the weights it started from: runs/mixed/NAME → checkpoints/NAME.

    python scripts/promote_finetuned.py NAME [--run runs/mixed/NAME] [--into checkpoints/NAME] [--force] [--continued]

A run of ``scripts/finetune_zoo.sh`` (``model.train --init-from``) counts its steps and minutes
from zero. The shipped folder instead tells the whole history of its weights:

- ``config.json``: ``train`` holds the last run's settings; ``training.stages`` keeps every run's
  own ``training`` block with its ``train`` settings (from scratch, then mixed fine-tuning);
  ``steps``, ``wall_time_minutes`` and ``target_tokens_seen`` add up what the weights went
  through, ``total_steps_run`` and ``total_minutes_run`` what every stage cost.
- ``train_log.csv``: the earlier rows up to the shipped weights' step, then the fine-tuning
  rows with steps, minutes and epochs offset to start there.
- ``metrics.json`` is removed: its scores belong to the old weights (``bash
  scripts/evaluate_zoo.sh`` writes new ones).

Both runs select on the same dev subset, so the fine-tuned weights are shipped only if their
best dev BLEU beats the shipped one's (``--force`` ships them anyway). A run promoted before and
resumed since (``finetune_zoo.sh`` continues ``runs/mixed/NAME``) is promoted with ``--continued``:
its record replaces the stage it was, rather than adding one.
"""
import argparse
import csv
import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from model.checkpoint import CONFIG, METRICS, TRAIN_LOG, training_stages, VOCAB, WEIGHTS  # noqa: E402

LINEAGE = ("steps", "wall_time_minutes", "target_tokens_seen")  # what the shipped weights went through
SPENT = {"total_steps_run": "steps", "total_minutes_run": "wall_time_minutes"}  # what the runs cost


def merged_config(earlier: list[dict], tuned: dict) -> dict:
    """``tuned``'s config with the ``earlier`` stages before its own and the counts added up.

    A fine-tuning run starts from the shipped *best* weights, so the weights' own steps, minutes
    and tokens add each stage's best-weights counts; the CPU cost (``total_*``) adds everything
    each run spent, including evaluations past its best."""
    stages = [*earlier, *training_stages(tuned)]
    training = {k: v for k, v in tuned["training"].items() if k != "initialised_from"}
    for key in LINEAGE:
        training[key] = sum(s.get(key) or 0 for s in stages)
    for key, fallback in SPENT.items():  # a run stopped before finish() has only its best-weights counts
        training[key] = sum(s.get(key, s.get(fallback)) or 0 for s in stages)
    for key in ("wall_time_minutes", "total_minutes_run"):
        training[key] = round(training[key], 1)
    return {**tuned, "training": {**training, "stages": stages}}


def merged_log(shipped_rows: list[dict], tuned_rows: list[dict], earlier: list[dict]) -> list[dict]:
    """The shipped rows up to where the earlier stages' weights were saved, then the fine-tuning
    rows offset to start there."""
    steps = sum(s.get("steps", 0) for s in earlier)
    minutes = sum(s.get("wall_time_minutes", 0) for s in earlier)
    kept = [r for r in shipped_rows if int(r["steps"]) <= steps]
    epochs = float(kept[-1]["epoch"]) if kept else 0.0
    later = [{**r, "steps": int(r["steps"]) + steps, "minutes": round(float(r["minutes"]) + minutes, 1),
              "epoch": round(float(r["epoch"]) + epochs, 3)} for r in tuned_rows]
    return [*kept, *later]


def read_rows(path: Path) -> list[dict]:
    if not path.exists():
        return []
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def promote(run: Path, into: Path, force: bool = False, continued: bool = False) -> dict:
    shipped, tuned = (json.loads((d / CONFIG).read_text()) for d in (into, run))
    earlier = training_stages(shipped)
    if continued:  # the run is the shipped last stage, resumed since: its record replaces that stage's
        if len(earlier) < 2:
            raise SystemExit(f"error: --continued: {into} has no fine-tuning stage to continue")
        earlier = earlier[:-1]
    old, new = shipped["training"].get("best_dev_bleu", 0), tuned["training"].get("best_dev_bleu", 0)
    if new <= old and not force:
        raise SystemExit(f"error: {run} has best dev BLEU {new:.2f}, not above the shipped {old:.2f}; "
                         "nothing changed (--force ships it anyway)")
    merged = merged_config(earlier, tuned)
    rows = merged_log(read_rows(into / TRAIN_LOG), read_rows(run / TRAIN_LOG), earlier)
    shutil.copyfile(run / WEIGHTS, into / WEIGHTS)
    shutil.copyfile(run / VOCAB, into / VOCAB)
    (into / CONFIG).write_text(json.dumps(merged, indent=2, ensure_ascii=False) + "\n")
    if rows:
        with (into / TRAIN_LOG).open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    (into / METRICS).unlink(missing_ok=True)
    print(f"{into}: dev BLEU {old:.2f} → {new:.2f}, {merged['training']['total_steps_run']:,} steps and "
          f"{merged['training']['total_minutes_run']:.0f} min in {len(merged['training']['stages'])} stages; "
          "metrics.json removed, evaluate it again")
    return merged


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("name")
    p.add_argument("--run", type=Path, help="the fine-tuning run (default runs/mixed/NAME)")
    p.add_argument("--into", type=Path, help="the shipped folder (default checkpoints/NAME)")
    p.add_argument("--force", action="store_true", help="ship even if dev BLEU did not improve")
    p.add_argument("--continued", action="store_true",
                   help="the run is the shipped last stage resumed (finetune_zoo.sh again): replace that stage")
    args = p.parse_args(argv)
    promote(args.run or ROOT / "runs" / "mixed" / args.name, args.into or ROOT / "checkpoints" / args.name,
            args.force, args.continued)


if __name__ == "__main__":
    main()
