#!/usr/bin/env bash
# The figures of docs/attribution.md, resumable and one job at a time.
#
#   bash scripts/attribution_results.sh aer METHOD…   # AER by method (model.align) for every attention model,
#                                                    # the first 150 Hansards gold pairs -> results/attribution/aer.csv
#   bash scripts/attribution_results.sh faithfulness  # the knock-out test, matched (model.faithfulness): random
#                                                    # samples of newstest2014 -> results/attribution/faithfulness.json
#                                                    # and of the Hansards gold -> faithfulness_hansards.json
#
# A (model, method) row already in aer.csv, or a model already in faithfulness.json, is not run again,
# so an interrupted run goes on where it stopped. Each job takes a lock (one at a time, whoever starts
# them), one thread, at low priority: the host is shared.
set -euo pipefail
cd "$(dirname "$0")/.."
export OMP_NUM_THREADS=1
read -ra MODELS <<< "$(python -m model.zoo --names --attending)"  # the zoo's models with attention (model/zoo.py)
OUT=results/attribution
LOCK=${ATTRIBUTION_LOCK:-/tmp/attention-explorer-attribution.lock}
GOLD=../shared/data/hansards-align
DATA=../shared/data/enfr-broad/test.tsv.gz
NEWS_N=300          # the random samples' sizes (docs/attribution.md)
HANSARDS_N=300
mkdir -p "$OUT"

job() {  # the command, under the lock, at low priority, stamped in the log
    echo "$(date -u +%H:%M:%S) start: $*"
    flock "$LOCK" nice -n 10 "$@"
    echo "$(date -u +%H:%M:%S) done:  $* (load $(cut -d' ' -f1-3 /proc/loadavg))"
}

case "${1:-}" in
aer)
    shift
    for method in "$@"; do
        for name in "${MODELS[@]}"; do
            if [ -f "$OUT/aer.csv" ] && grep -q "^$name,$method," "$OUT/aer.csv"; then
                echo "skip: $name $method (in $OUT/aer.csv)"
                continue
            fi
            job python -m model.align --checkpoint "checkpoints/$name" --gold "$GOLD" --method "$method" \
                --limit 150 --csv "$OUT/aer.csv"
        done
    done ;;
faithfulness)
    for sample in newstest hansards; do
        file=$OUT/faithfulness.json
        args=(--data "$DATA" --origin newstest2014 --min-words 6 --max-words 30 --sample "$NEWS_N" --seed 0
              --cache runs/faithfulness/newstest2014)
        if [ "$sample" = hansards ]; then
            file=$OUT/faithfulness_hansards.json
            args=(--gold "$GOLD" --min-words 6 --sample "$HANSARDS_N" --seed 0 --cache runs/faithfulness/hansards)
        fi
        for name in "${MODELS[@]}"; do
            if [ -f "$file" ] && python -c "import json, sys; sys.exit(0 if any(r['model'] == '$name' for r in json.load(open('$file'))['models']) else 1)"; then
                echo "skip: $name (in $file)"
                continue
            fi
            job python -m model.faithfulness --checkpoint "checkpoints/$name" "${args[@]}" --out "$file"
        done
    done ;;
*)
    sed -n '2,13p' "$0"; exit 2 ;;
esac
