#!/usr/bin/env bash
# Train (or continue) the shipped zoo: every model on ../shared/data/enfr-broad with the shared
# 8k vocabulary (checkpoints/_vocab/spm.model), in checkpoints/NAME, two at a time with one
# thread each (two single-threaded processes keep both cores busier than one two-threaded one:
# the decoder loop's small operations do not split well across threads), MINUTES each per pair.
#   bash scripts/train_zoo.sh [MINUTES] [NAME ...]   (default: 60, the whole zoo in pairs)
# A folder with weights continues them (--resume: its resume/ state if present, else the shipped
# weights with a fresh optimiser); an empty one starts from scratch. Logs go to logs/NAME.log.
# DATA=... picks another data folder (e.g. ../shared/data/enfr for the classroom corpora alone).
set -u
cd "$(dirname "$0")/.."
MINUTES=${1:-60}
shift $(( $# > 0 ? 1 : 0 ))
NAMES=${*:-$(python -m model.zoo --names)}  # the zoo's names, from model/zoo.py
DATA=${DATA:-../shared/data/enfr-broad}
VOCAB=checkpoints/_vocab/spm.model
mkdir -p logs
train() {  # train NAME: one model, in the background
  local out=checkpoints/$1 resume=()
  [ -f "$out/model.safetensors" ] && resume=(--resume)
  python -m model.train --config "configs/$1.yaml" --data "$DATA" --out "$out" --vocab "$VOCAB" \
    --threads 1 --eval-every 600 --max-minutes "$MINUTES" "${resume[@]}" --quiet > "logs/$1.log" 2>&1 &
}
set -- $NAMES
while [ $# -gt 0 ]; do
  train "$1"; shift
  if [ $# -gt 0 ]; then train "$1"; shift; fi
  wait
done
echo "zoo: $NAMES, $MINUTES min each, done $(date)" >> logs/zoo.log
