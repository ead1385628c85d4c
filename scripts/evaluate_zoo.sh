#!/usr/bin/env bash
# Evaluate every shipped checkpoint: what the app's Models and BLEU-vs-length pages read.
#   bash scripts/evaluate_zoo.sh [SHARED_DATA] [BEAM] [MODELS...]
# Writes checkpoints/NAME/metrics.json (test split, stress set, AER) and results/bleu_by_length.csv.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${1:-../shared/data}
BEAM=${2:-5}
shift $(( $# > 2 ? 2 : $# ))
MODELS=${*:-rnnsearch luong-general luong-dot luong-concat luong-local rnnenc}
mkdir -p results
for name in $MODELS; do
  ck=checkpoints/$name
  [ -f "$ck/model.safetensors" ] || { echo "skip $name: no checkpoint"; continue; }
  python -m model.evaluate --checkpoint "$ck" --data "$DATA/enfr/test.tsv.gz" --beam "$BEAM" \
      --bootstrap 1000 --write-metrics --length-csv results/bleu_by_length.csv
  python -m model.evaluate --checkpoint "$ck" --data "$DATA/enfr/test.tsv.gz" --beam "$BEAM" --stress \
      --bootstrap 1000 --no-perplexity --write-metrics --length-csv results/bleu_by_length.csv
  if [ "$name" != rnnenc ]; then
    python -m model.align --checkpoint "$ck" --gold "$DATA/hansards-align" --write-metrics
  fi
done
