#!/usr/bin/env bash
# Every speed figure in docs/performance.md, on this machine, appended as JSON lines to results/benchmarks.jsonl.
#   bash scripts/run_benchmarks.sh [DATA]
# Run it on an otherwise idle machine: the figures are wall-clock.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${1:-../shared/data/enfr}
OUT=results/benchmarks.jsonl
mkdir -p results
stamp() { python -c "import json,sys,datetime,platform,os; d=json.loads(sys.stdin.read()); d['bench']='$1'; d['date']=datetime.date.today().isoformat(); d['machine']=f'{platform.machine()} {os.cpu_count()} cores'; print(json.dumps(d))"; }
RNNS=$(python -m model.zoo --names --recurrent)  # the zoo's RNN encoder-decoders, from model/zoo.py
for cfg in $RNNS; do
  python bench/train_speed.py --config configs/$cfg.yaml --data "$DATA" --steps 30 | stamp train_speed >> $OUT
done
for name in $RNNS; do
  python bench/translate_speed.py --checkpoint checkpoints/$name --data "$DATA" | stamp translate_speed >> $OUT
done
python bench/step_cost.py --checkpoint checkpoints/rnnsearch | stamp step_cost >> $OUT
python bench/element_cost.py | stamp element_cost >> $OUT
python bench/lesson_decoding.py | stamp lesson_decoding >> $OUT
python bench/page_cost.py | stamp page_cost >> $OUT
# the whole test split (5,350 rows = 4,292 multi-reference segments), one core: greedy for
# rnnsearch, beam 5 for every model (the issue's bar is per model)
evaluate_speed() {  # evaluate_speed NAME BEAM
  OMP_NUM_THREADS=1 python -m model.evaluate --checkpoint checkpoints/$1 --data "$DATA/test.tsv.gz" \
      --beam $2 --no-perplexity --json | python -c "import json,sys; d=json.load(sys.stdin); print(json.dumps({'checkpoint': '$1', **{k: d[k] for k in ('bleu','beam','segments','decode_seconds','seconds')}}))" | stamp evaluate_speed >> $OUT
}
evaluate_speed rnnsearch 1
for name in $RNNS; do
  evaluate_speed "$name" 5
done
python bench/app_speed.py | stamp app_speed >> $OUT
python bench/teaching_speed.py | stamp teaching_speed >> $OUT
# a model made elsewhere (docs/own-model.md): needs requirements-hf.txt
if python -c "import transformers" 2>/dev/null; then
  OMP_NUM_THREADS=1 python bench/hf_speed.py | stamp hf_speed >> $OUT
fi
tail -n 10 $OUT
