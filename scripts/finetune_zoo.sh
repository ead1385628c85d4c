#!/usr/bin/env bash
# Mixed fine-tuning of shipped models (docs/training.md#mixed-fine-tuning): each NAME starts from
# checkpoints/NAME's weights with a fresh optimiser at --lr 0.00025 and reads enfr-broad with the
# classroom corpora (Tatoeba, Multi30k) tripled and the WMT news doubled, for MINUTES, one thread,
# into runs/mixed/NAME. The NAMEs run one after another; start two of these to keep both cores busy.
#   bash scripts/finetune_zoo.sh MINUTES NAME [NAME ...]
# runs/mixed/NAME keeps the weights best on dev; scripts/promote_finetuned.py moves them into
# checkpoints/NAME. A runs/mixed/NAME with resume/ state continues where it stopped.
# On a GPU: DEVICE=cuda, with BATCH_TOKENS and LR for its larger batches (docs/training.md#on-a-gpu);
# EVAL_EVERY and THREADS likewise override the CPU defaults (600 steps, one thread); PRECISION=bfloat16
# trains in bf16 autocast (docs/results.md: per step as float32, faster on CPUs with bf16 units);
# KEEP_SNAPSHOTS=N keeps the last N evaluations' weights for scripts/average_checkpoints.py.
set -u
cd "$(dirname "$0")/.."
MINUTES=$1; shift
DATA=${DATA:-../shared/data/enfr-broad}
DEVICE=${DEVICE:-cpu} LR=${LR:-0.00025} EVAL_EVERY=${EVAL_EVERY:-600} THREADS=${THREADS:-1}
BATCH=() PREC=() SNAP=()
[ -n "${PRECISION:-}" ] && PREC=(--precision "$PRECISION")
[ -n "${KEEP_SNAPSHOTS:-}" ] && SNAP=(--keep-snapshots "$KEEP_SNAPSHOTS")
[ -n "${BATCH_TOKENS:-}" ] && BATCH=(--batch-tokens "$BATCH_TOKENS")
OVERSAMPLE=(--oversample tatoeba=3 --oversample multi30k-train=3)
for news in news-test2008 newssyscomb2009 newstest2009 newstest2010 newstest2011 newstest2012; do
  OVERSAMPLE+=(--oversample "$news=2")
done
mkdir -p logs runs/mixed
for name in "$@"; do
  out=runs/mixed/$name start=(--init-from "checkpoints/$name")
  [ -d "$out/resume" ] && start=(--resume)
  python -m model.train --config "configs/$name.yaml" --data "$DATA" --out "$out" \
    --vocab checkpoints/_vocab/spm.model "${start[@]}" "${OVERSAMPLE[@]}" --lr "$LR" "${BATCH[@]}" "${PREC[@]}" "${SNAP[@]}" \
    --device "$DEVICE" --threads "$THREADS" --eval-every "$EVAL_EVERY" --max-minutes "$MINUTES" --quiet \
    > "logs/mixed-$name.log" 2>&1
  echo "mixed $name: $MINUTES min on $DEVICE, exit $?, $(date)" >> logs/zoo.log
done
