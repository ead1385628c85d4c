#!/usr/bin/env bash
# Train the whole zoo on 2 CPU cores, two models at a time with one thread each
# (two single-threaded processes keep both cores busier than one two-threaded one:
# the decoder loop's small operations do not split well across threads).
#   bash scripts/train_zoo.sh [DATA] [MINUTES_A] [MINUTES_B] [MINUTES_C]
# Each phase is resumable: rerunning continues every model from checkpoints/NAME/resume/.
set -u
cd "$(dirname "$0")/.."
DATA=${1:-../shared/data/enfr}
A=${2:-50}; B=${3:-38}; C=${4:-35}
mkdir -p logs
pair() {  # pair MINUTES NAME1 NAME2
  local m=$1; shift
  for name in "$@"; do
    python -m model.train --config configs/$name.yaml --data "$DATA" --out checkpoints/$name \
      --max-minutes "$m" --threads 1 --resume --eval-every 600 --quiet > logs/$name.log 2>&1 &
  done
  wait
}
pair "$A" rnnsearch luong-general
pair "$B" luong-dot rnnenc
pair "$C" luong-concat luong-local
echo "zoo done $(date)" >> logs/zoo.log
