"""How long attribution takes on one core: integrated gradients (20 points), gradient × input,
attention knock-out and input occlusion (model/attribution.py) for a 20-word sentence, per shipped model.

    python bench/attribution_speed.py [--repeats 3] [--models rnnsearch,luong-dot,…] [--out FILE]

Each method attributes every target token of the model's greedy translation of SENTENCE
(20 words) to every source piece, the whole T x S matrix the page draws. Prints one JSON line
per model (median wall and CPU seconds over ``--repeats`` runs after a warm-up, and the host's
load average: on a shared host the wall clock includes waiting for a core) and appends them to
``--out`` (results/attribution/speed.jsonl). Targets: integrated gradients ≤ 2 s and attention
knock-out ≤ 1 s for the zoo's RNN models (``knock_out_s``; the file's older rows hold the same
measure as ``occlusion_s``).
"""
import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from model.attribution import attribute  # noqa: E402
from model.checkpoint import load_checkpoint  # noqa: E402
from model.search import translate  # noqa: E402
from model.zoo import zoo_names  # noqa: E402

SENTENCE = "The young woman in the red coat walked across the old bridge while her two children played by the river."
RNNS = ",".join(zoo_names(attending=True, recurrent=True))  # the zoo's RNNs with attention


def seconds(fn, repeats: int) -> tuple[float, float]:
    """Median (wall, CPU) seconds of fn: on a shared host the wall clock also counts the time the
    process waited for a core, which the CPU time (one thread: one core's time) does not."""
    fn()  # warm-up
    wall, cpu = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return round(statistics.median(wall), 3), round(statistics.median(cpu), 3)


def timings(name: str, model, src: list[int], trg: list[int], method: str, repeats: int) -> dict:
    wall, cpu = seconds(lambda: attribute(model, src, trg, method, 20), repeats)
    return {f"{name}_s": wall, f"{name}_cpu_s": cpu}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=RNNS)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--out", default=str(ROOT / "results" / "attribution" / "speed.jsonl"))
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    commit = __import__("subprocess").run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                          text=True).stdout.strip()
    for name in args.models.split(","):
        model, vocab, _ = load_checkpoint(ROOT / "checkpoints" / name)
        record = translate(model, vocab, SENTENCE)
        src, trg = vocab.encode(record.source_text), record.target_ids
        row = {"bench": "attribution_speed", "model": name, "words": len(SENTENCE.split()),
               "source_pieces": len(src) + 1, "target_tokens": len(trg), "threads": 1,
               **timings("ig_20", model, src, trg, "ig", args.repeats),
               **timings("gxi", model, src, trg, "gxi", args.repeats),
               **timings("knock_out", model, src, trg, "knock-out", args.repeats),
               **timings("input_occlusion", model, src, trg, "input-occlusion", args.repeats),
               "load_average": round(__import__("os").getloadavg()[0], 2),
               "commit": commit, "date": time.strftime("%Y-%m-%d"), "machine": platform.processor() or platform.machine()}
        emit(row, args.out)
    return 0


def emit(row: dict, out: str) -> None:
    """Print a result row and append it to the JSON-lines file ``out``."""
    print(json.dumps(row), flush=True)
    with open(out, "a", encoding="utf-8") as f:
        f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    sys.exit(main())
