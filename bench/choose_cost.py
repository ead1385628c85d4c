"""What picking a mechanism costs its server, the class bench's ``choose``: ``--tabs`` sessions
open *Which mechanism* (each a seed of its own, the lesson's links) and pick an option, one tab
after another, ``--moves`` rounds, each move the other of two options; the server's CPU per
pick, and optionally a py-spy profile of the picks.

    python bench/choose_cost.py [--tabs 5] [--moves 30] [--app DIR] [--profile FILE.raw] [--append FILE]

``--app DIR`` runs another checkout's app.py (a worktree made by ``bench/side_by_side.py``), so
two commits' figures can be taken back to back on one host: where the options are a fragment a
pick reruns the options alone, elsewhere the whole page.
"""
from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent))
from classroom import ROOT, Tab, server  # noqa: E402
from classroom_lesson import mechanism_choice  # noqa: E402
from classroom_report import emit, stamp  # noqa: E402
from classroom_servers import cpu_seconds, profiled  # noqa: E402


def other_choice(seed: int) -> str:
    """A wrong option of the same level as :func:`mechanism_choice`'s (teaching/exercises.py)."""
    return "general (Luong)" if seed % 3 == 2 else "additive (Bahdanau, RNNsearch)"


async def picks(base: str, pid: int, tabs: int, moves: int, profile: Path | None) -> float:
    """Milliseconds of the server's CPU per timed pick."""
    opened = []
    for t in range(tabs):
        tab, seed = Tab(base, 60, load_page=True), t % 5
        if (error := (await tab.do(("open", "exercises", urlencode({"ex": "which", "seed": seed}))))[2]):
            raise RuntimeError(error)
        opened.append((tab, seed))
    await asyncio.sleep(1)  # the opens' replies sent: what follows is the picks'
    before = cpu_seconds(pid)
    with profiled(pid, profile):
        for move in range(moves):
            for tab, seed in opened:
                option = mechanism_choice(seed) if move % 2 == 0 else other_choice(seed)
                if (error := (await tab.do(("set", f"ex_which_{seed}", option)))[2]):
                    raise RuntimeError(error)
    await asyncio.sleep(0.05)  # the last pick's replies still being sent
    spent = cpu_seconds(pid) - before
    for tab, _ in opened:
        await tab.close()
    return round(1000 * spent / (tabs * moves), 2)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tabs", type=int, default=5)
    parser.add_argument("--moves", type=int, default=30)
    parser.add_argument("--app", type=Path, default=ROOT)
    parser.add_argument("--profile", type=Path, help="py-spy raw samples of the server during the picks")
    parser.add_argument("--append", type=Path, help="also append the JSON line to this file")
    args = parser.parse_args(argv)
    with server(None, root=args.app) as target:
        ms = asyncio.run(picks(target.base, target.pids()[0], args.tabs, args.moves, args.profile))
    emit({"bench": "choose_cost", "app": str(args.app), "tabs": args.tabs, "moves": args.moves,
          "server_cpu_ms_per_choose": ms, **stamp(args.app)}, args.append)
    return 0


if __name__ == "__main__":
    sys.exit(main())
