#!/usr/bin/env bash
# Evaluate every shipped checkpoint: what the app's Models and BLEU-vs-length pages read.
#   bash scripts/evaluate_zoo.sh [SHARED_DATA] [BEAM] [MODELS...]
# Writes checkpoints/NAME/metrics.json (enfr test split, stress set, newstest2014, the broad test
# split per origin, AER, local-p's position tracking) and results/bleu_by_length.csv (test, stress
# and newstest2014 sets).
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${1:-../shared/data}
BEAM=${2:-5}
shift $(( $# > 2 ? 2 : $# ))
MODELS=${*:-$(python -m model.zoo --names)}  # the zoo's names, from model/zoo.py
mkdir -p results
for name in $MODELS; do
  ck=checkpoints/$name
  [ -f "$ck/model.safetensors" ] || { echo "skip $name: no checkpoint"; continue; }
  python -m model.evaluate --checkpoint "$ck" --data "$DATA/enfr/test.tsv.gz" --beam "$BEAM" \
      --bootstrap 1000 --write-metrics --length-csv results/bleu_by_length.csv
  python -m model.evaluate --checkpoint "$ck" --data "$DATA/enfr/test.tsv.gz" --beam "$BEAM" --stress \
      --bootstrap 1000 --no-perplexity --write-metrics --length-csv results/bleu_by_length.csv
  # the paper's test set (Bahdanau et al. 2014, Table 1 and Figure 2), and the broad split per corpus
  python -m model.evaluate --checkpoint "$ck" --data "$DATA/enfr-broad/test.tsv.gz" --origin newstest2014 \
      --set newstest2014 --beam "$BEAM" --bootstrap 1000 --no-perplexity --write-metrics \
      --length-csv results/bleu_by_length.csv
  python -m model.evaluate --checkpoint "$ck" --data "$DATA/enfr-broad/test.tsv.gz" --set broad-test \
      --beam "$BEAM" --no-perplexity --write-metrics
  if [ "$name" = luong-local ]; then  # does the predicted position p_i follow the attention? (Luong eq. 9)
    python -m model.evaluate --checkpoint "$ck" --data "$DATA/enfr-broad/test.tsv.gz" --origin newstest2014 \
        --set newstest2014 --positions --write-metrics
  fi
  if [ "$name" != rnnenc ]; then
    python -m model.align --checkpoint "$ck" --gold "$DATA/hansards-align" --write-metrics
  fi
done
