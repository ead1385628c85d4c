"""What a slider move on Step through costs its server, the class bench's ``slide``: ``--tabs``
sessions open the lesson's Step through link (a news sentence, RNNsearch, its two sections) and
move the step slider, one tab after another, ``--moves`` rounds; each move is one rerun of the
page's step fragment. The server's CPU per move, and optionally a py-spy profile of the moves.

    python bench/slide_cost.py [--tabs 5] [--moves 40] [--fresh [--models lesson] | --long] [--app DIR]
                               [--profile FILE.raw] [--append FILE]

``--app DIR`` runs another checkout's app.py (a worktree made by ``bench/side_by_side.py``), so
two commits' figures can be taken back to back on one host. Every tab first moves through every
step once (untimed), so the decodings and figures are the shared caches' and what is timed is the
rerun. ``--fresh`` times what the class bench's reference run does instead: each tab, one after
another, opens a news sentence of its own (none decoded before) and moves through the steps once,
each move the first visit of that step, whose figures and text alternatives are made then
(``--moves`` is ignored); ``--models lesson``: the tabs take the class bench's models in turn, as
its lessons do (else RNNsearch). ``--long``: the link's text is the lesson's 5,000-character one
(``BAD_TEXT["long"]``, cut to 120 source pieces: a heatmap of about 120 x 250 cells on every move).
"""
from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from urllib.parse import quote, urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent))
from classroom import ROOT, Tab, server  # noqa: E402
from classroom_lesson import BAD_TEXT, MODELS, SHOWN_SECTIONS, news_sentences  # noqa: E402
from classroom_report import emit, stamp  # noqa: E402
from classroom_servers import cpu_seconds, profiled  # noqa: E402

STEPS = range(2, 7)  # the lesson's slider positions (bench/classroom_lesson.py)


def link(sentence: str, model: str = "rnnsearch") -> str:
    return urlencode({"text": sentence, "model": model, "sections": SHOWN_SECTIONS}, quote_via=quote, safe=",")


async def fresh_slides(base: str, pid: int, tabs: int, profile: Path | None, models=("rnnsearch",)) -> float:
    """Milliseconds of the server's CPU per move, each move a step's first visit (``--fresh``);
    tab t on ``models[t % len(models)]``."""
    spent, sentences = 0.0, news_sentences(3)
    with profiled(pid, profile):
        for t in range(tabs):
            tab = Tab(base, 60)
            if (error := (await tab.do(("open", "step-through", link(sentences[1 + t], models[t % len(models)]))))[2]):
                raise RuntimeError(error)
            await asyncio.sleep(0.5)  # the open's replies sent: what follows is the moves'
            before = cpu_seconds(pid)
            for step in STEPS:
                if (error := (await tab.do(("set", "step_i", step)))[2]):
                    raise RuntimeError(error)
            await asyncio.sleep(0.05)  # the last move's replies still being sent
            spent += cpu_seconds(pid) - before
            await tab.close()
    return round(1000 * spent / (tabs * len(STEPS)), 2)


async def slides(base: str, pid: int, tabs: int, moves: int, profile: Path | None, long: bool = False) -> float:
    """Milliseconds of the server's CPU per timed move."""
    opened, shared = [Tab(base, 60) for _ in range(tabs)], link(BAD_TEXT["long"] if long else news_sentences(3)[0])
    for tab in opened:
        if (error := (await tab.do(("open", "step-through", shared)))[2]):
            raise RuntimeError(error)
        for step in STEPS:
            await tab.do(("set", "step_i", step))
    before = cpu_seconds(pid)
    with profiled(pid, profile):
        for move in range(moves):
            for tab in opened:
                if (error := (await tab.do(("set", "step_i", STEPS[move % len(STEPS)])))[2]):
                    raise RuntimeError(error)
    spent = cpu_seconds(pid) - before
    for tab in opened:
        await tab.close()
    return round(1000 * spent / (tabs * moves), 2)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tabs", type=int, default=5)
    parser.add_argument("--moves", type=int, default=40)
    parser.add_argument("--fresh", action="store_true", help="each tab a new sentence, its steps' first visits timed")
    parser.add_argument("--models", default="rnnsearch",
                        help="--fresh: the tabs' models, in turn (comma-separated; 'lesson': the class bench's)")
    parser.add_argument("--long", action="store_true", help="the lesson's 5,000-character text (not with --fresh)")
    parser.add_argument("--app", type=Path, default=ROOT)
    parser.add_argument("--profile", type=Path, help="py-spy raw samples of the server during the moves")
    parser.add_argument("--append", type=Path, help="also append the JSON line to this file")
    args = parser.parse_args(argv)
    models = tuple(MODELS) if args.models == "lesson" else tuple(m for m in args.models.split(",") if m)
    with server(None, root=args.app) as target:
        pid = target.pids()[0]
        ms = asyncio.run(fresh_slides(target.base, pid, args.tabs, args.profile, models) if args.fresh
                         else slides(target.base, pid, args.tabs, args.moves, args.profile, args.long))
    emit({"bench": "slide_cost", "app": str(args.app), "tabs": args.tabs,
          "moves": len(STEPS) if args.fresh else args.moves, **({"fresh": True} if args.fresh else {}),
          **({"long": True} if args.long and not args.fresh else {}),
          **({"models": list(models)} if args.fresh and models != ("rnnsearch",) else {}),
          "server_cpu_ms_per_slide": ms, **stamp(args.app)}, args.append)
    return 0


if __name__ == "__main__":
    sys.exit(main())
