"""Checkpoint averaging: the mean of a run's last snapshots as a checkpoint folder of its own.

    python scripts/average_checkpoints.py RUN [--last 2 4 8] [--out RUN-averaged] [--data DIR]

``RUN`` is a ``model.train`` output trained with ``--keep-snapshots N`` (``KEEP_SNAPSHOTS=N bash
scripts/finetune_zoo.sh …``), which keeps the fp32 weights of its last N evaluations in
``RUN/snapshots/``. For each count in ``--last`` the newest snapshots are averaged
(Vaswani et al. 2017 §6.1 ship the mean of their last 5 checkpoints) and decoded on the run's
own dev subset (``train.dev_sentences`` of ``DIR``'s dev split, greedy, as in training); the
count with the best dev BLEU is written to ``--out`` as an ordinary checkpoint folder:

- ``model.safetensors`` the averaged weights (fp16, as every checkpoint);
- ``config.json`` the run's, with ``training.best_dev_bleu`` the average's dev BLEU,
  ``steps``, ``wall_time_minutes`` and ``target_tokens_seen`` those of the newest snapshot,
  and ``training.averaged``: which snapshots and every count's dev BLEU;
- ``spm.model`` and ``train_log.csv`` copied from the run.

So ``python scripts/promote_finetuned.py NAME --run OUT`` ships it like any run, and only if its
dev BLEU beats the shipped weights'. The choice of count uses dev only, never a test set.
"""
import argparse
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
import torch  # noqa: E402

from model.checkpoint import (average_snapshots, CheckpointError, load_checkpoint, save_checkpoint,  # noqa: E402
                              snapshot_paths, TRAIN_LOG)
from model.data import split_path  # noqa: E402
from model.train import DevSet  # noqa: E402


def average(run: Path, counts: list[int], out: Path, data: str | None = None) -> dict:
    """Average the newest ``count`` snapshots of ``run`` for each count, keep the best on dev in
    ``out``; returns the ``training.averaged`` record."""
    paths = snapshot_paths(run)
    counts = sorted({min(c, len(paths)) for c in counts if c > 0})
    if not paths or not counts:
        raise CheckpointError(f"{run}: no snapshots to average (train with --keep-snapshots N)")
    model, vocab, cfg = load_checkpoint(run, for_decoding=False)  # the run's model; its weights are replaced
    dev = DevSet(vocab, split_path(data or cfg["training"]["data"], "dev"), cfg["train"]["dev_sentences"])
    scores, best = {}, None
    for count in counts:
        weights, metas = average_snapshots(paths[-count:])
        model.load_state_dict(weights)
        _, bleu = dev.evaluate(model, vocab, torch.device("cpu"))
        scores[count] = round(bleu, 2)
        print(f"last {count} snapshot(s) (steps {metas[0].get('steps')}–{metas[-1].get('steps')}): dev BLEU {bleu:.2f}")
        if best is None or bleu > best[1]:
            best = (count, bleu, weights, metas)
    count, bleu, weights, metas = best
    model.load_state_dict(weights)
    newest = metas[-1]
    record = {"snapshots_at_steps": [int(m["steps"]) for m in metas], "dev_bleu_by_count": scores}
    training = dict(cfg["training"], best_dev_bleu=bleu, averaged=record, steps=int(newest["steps"]),
                    wall_time_minutes=round(float(newest["train_seconds"]) / 60, 1),
                    target_tokens_seen=int(newest["target_tokens"]))
    config = {k: v for k, v in cfg.items() if k != "model"}
    save_checkpoint(out, model, vocab, dict(config, training=training))
    if (run / TRAIN_LOG).exists():
        shutil.copyfile(run / TRAIN_LOG, out / TRAIN_LOG)
    print(f"{out}: the mean of the last {count} snapshot(s), dev BLEU {bleu:.2f} "
          f"(the run's best single weights: {cfg['training'].get('best_dev_bleu', 0):.2f})")
    return record


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("run", type=Path, help="a model.train output with snapshots/")
    p.add_argument("--last", type=int, nargs="+", default=[2, 4, 8], metavar="N",
                   help="counts of newest snapshots to try; the best on dev is kept (default 2 4 8)")
    p.add_argument("--out", type=Path, help="the folder to write (default RUN-averaged)")
    p.add_argument("--data", help="the data folder whose dev split selects (default: the run's own)")
    args = p.parse_args(argv)
    try:
        average(args.run, args.last, args.out or args.run.with_name(args.run.name + "-averaged"), args.data)
    except CheckpointError as e:
        raise SystemExit(f"error: {e}") from None


if __name__ == "__main__":
    main()
