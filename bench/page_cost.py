"""A lesson's server CPU by interaction, with decoding and without: each lesson alone on one
server, played twice. The first time every translation is decoded and every shared cache
filled, as for the first student who asks; the second time all of it comes from the shared
caches, so what is left is the pages' own work (page code, figures, Streamlit's rerun,
sending). One JSON line.

    python bench/page_cost.py [--lessons 12] [--app DIR] [--append results/benchmarks.jsonl]

``--app DIR`` runs another checkout's app.py with this bench's client (e.g. after
``git worktree add ../base ce39ebd``): a before/after on the same host, as
docs/performance.md compares them. The lessons are ``bench/classroom.py``'s default lesson
without its class step (Translate, an edit, Compare, Step through and five slider moves, the
beam-search tree), each on two WMT news sentences of its own (``--soak``'s), with no faulty
session. An idle session stays
connected throughout: Streamlit keeps the pages' compiled scripts only while one is. After the
JSON line, each figure's ratio to the best line recorded on this host kind (``bench/best_line.py``).
"""
from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from best_line import against_best, ratios, read, report, RESULTS  # noqa: E402
from classroom import cpu_ms_by_kind, Lesson, MODELS, news_sentences, ROOT, Tab, reference, server  # noqa: E402
from classroom_report import emit, stamp  # noqa: E402


def per_click(cpu: dict) -> tuple[dict, float]:
    """Milliseconds by kind, and over every interaction."""
    clicks = sum(len(v) for v in cpu.values())
    return cpu_ms_by_kind(cpu), round(1000 * sum(sum(v) for v in cpu.values()) / clicks, 1)


async def play(lessons: list[Lesson], target) -> dict:
    args = argparse.Namespace(timeout=120.0, seed=0, kill_replica_after=0.0, recover_within=60.0)
    idle = Tab(target.base, 120)
    await idle.do(("open", "models", ""))
    result = {}
    for run in ("fresh", "cached"):
        cpu: dict = {}
        await reference(lessons, target, args, cpu)
        result[f"{run}_ms"], result[f"{run}_per_click_ms"] = per_click(cpu)
    await idle.close()
    result["decoding_and_fills_per_click_ms"] = round(result["fresh_per_click_ms"] - result["cached_per_click_ms"], 1)
    return result


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lessons", type=int, default=12)
    p.add_argument("--app", type=Path, default=ROOT, help="the checkout whose app.py runs (default: this one)")
    p.add_argument("--append", type=Path, help="also append the JSON line to this JSONL file")
    args = p.parse_args(argv)
    news = news_sentences(seed=0)  # no sentence twice: the first run decodes every one
    lessons = [Lesson(news[2 * i], news[2 * i + 1], MODELS[i % len(MODELS)]) for i in range(args.lessons)]
    with server(None, root=args.app.resolve()) as target:
        result = asyncio.run(play(lessons, target))
    result = {"bench": "page_cost", "lessons": args.lessons, "app": str(args.app), **result, **stamp(args.app)}
    compared = against_best(result, read(RESULTS))
    result["vs_best"] = ratios(compared)
    emit(result, args.append)
    report(compared)
    return 0


if __name__ == "__main__":
    sys.exit(main())
