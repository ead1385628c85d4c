"""The decoding a classroom lesson cannot do without: every translation ``bench/classroom.py``'s
sessions ask for, made once each, one after another on one thread; one JSON line.

    python bench/lesson_decoding.py [--sessions 30] [--seed 0]

The lesson is the bench's own (``classroom.make_lessons``, its faulty sessions included; no
exercise step). Its pages ask for, per session: Translate's greedy translation of the first
sentence, then of the second (the edit), Compare's greedy translations of the second by its
four models, Step through's greedy record (the edit's, from the same cache) and the Beam
search tree's k = 3 search. The shared caches make each (model, text, k) once per server, so
this is the least decoding CPU the lesson costs a server, with nothing else running:

- ``decodings``: distinct (model, text, k), and ``decode_cpu_s`` their CPU seconds in all
  (``time.process_time``, after one unmeasured translation per model);
- ``interactions``: the lesson's clicks, as the bench counts them, and ``decode_cpu_ms_per_click``
  = decode_cpu_s / interactions, the share of ``server_cpu_ms_per_click`` that is decoding.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")  # as the server decodes (app.py)
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
import torch  # noqa: E402 - after OMP_NUM_THREADS
from classroom import BAD_TEXT, COMPARED, SENTENCES, make_lessons  # noqa: E402
from model.checkpoint import load_checkpoint  # noqa: E402
from model.search import InputError, translate  # noqa: E402


def lesson_decodings(lessons) -> tuple[list[tuple[str, str, int]], int]:
    """The distinct (model, text, beam) the lessons' pages translate, in first-asked order, and
    the number of interactions."""
    wanted, clicks = {}, 0
    for lesson in lessons:
        text = BAD_TEXT.get(lesson.fault, lesson.second)
        wanted[(lesson.model, lesson.first, 1)] = None  # Translate, opened from the link
        wanted[(lesson.model, text, 1)] = None  # the edit; Step through reads the same record
        for model in COMPARED.split(","):
            wanted[(model, text, 1)] = None
        wanted[(lesson.model, text, 3)] = None  # the beam-search tree
        clicks += len(lesson.steps())
    return list(wanted), clicks


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sessions", type=int, default=30)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    decodings, clicks = lesson_decodings(make_lessons(args.sessions, args.seed, SENTENCES))
    models = {}
    for name in dict.fromkeys(m for m, _, _ in decodings):
        model, vocab, _ = load_checkpoint(ROOT / "checkpoints" / name)
        translate(model, vocab, SENTENCES[0])  # first-call costs (oneDNN, allocator) left out
        models[name] = (model, vocab)
    spent, made = 0.0, 0
    for name, text, beam in decodings:
        model, vocab = models[name]
        start = time.process_time()
        try:
            translate(model, vocab, text, beam=beam)
            made += 1
        except InputError:  # the empty sentence: the page says so and decodes nothing
            pass
        spent += time.process_time() - start
    print(json.dumps({"bench": "lesson_decoding", "sessions": args.sessions, "seed": args.seed,
                      "decodings": made, "decode_cpu_s": round(spent, 2), "interactions": clicks,
                      "decode_cpu_ms_per_click": round(1000 * spent / clicks, 1)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
