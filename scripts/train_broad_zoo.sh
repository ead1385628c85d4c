#!/usr/bin/env bash
# Train (or continue) the broad zoo: every model on ../shared/data/enfr-broad with the 8k
# vocabulary, in runs/NAME-8k, two at a time with one thread each, MINUTES each per call.
#   bash scripts/train_broad_zoo.sh [MINUTES] [NAME ...]   (default: 60, the whole zoo in pairs)
# A run with weights continues them (--resume: its resume/ state if present, else the weights
# with a fresh optimiser); a new one starts from scratch. Logs go to logs/NAME-8k.log.
set -u
cd "$(dirname "$0")/.."
MINUTES=${1:-60}
shift $(( $# > 0 ? 1 : 0 ))
NAMES=${*:-rnnsearch luong-dot luong-general luong-concat luong-local rnnenc transformer}
DATA=../shared/data/enfr-broad
VOCAB=runs/vocab-8k/spm.model
mkdir -p logs
train() {  # train NAME: one model, in the background
  local out=runs/$1-8k resume=()
  [ -f "$out/model.safetensors" ] && resume=(--resume)
  python -m model.train --config "configs/$1.yaml" --data "$DATA" --out "$out" --vocab "$VOCAB" \
    --threads 1 --eval-every 600 --max-minutes "$MINUTES" "${resume[@]}" --quiet > "logs/$1-8k.log" 2>&1 &
}
set -- $NAMES
while [ $# -gt 0 ]; do
  train "$1"; shift
  if [ $# -gt 0 ]; then train "$1"; shift; fi
  wait
done
echo "broad zoo: $NAMES, $MINUTES min each, done $(date)" >> logs/zoo.log
