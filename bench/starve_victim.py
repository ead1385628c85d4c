"""A visitor typing a sentence of their own beside tabs that ask for a page's most expensive work.

``bench/classroom.py --starve`` plays students whose pages come from the shared caches; this one
plays the visitor the caches cannot help: every visit is a new session (a new websocket, the
page's HTML first, as a browser loads it) opening ``--page`` on a short sentence never asked
before (WMT news, 8–20 words), so its decoding is fresh. The visits alternate, in the same
minutes, between two phases:

- *alone*: nothing else runs (the server's ``/_attn/load`` shows no costly run and no other page
  run before the phase starts);
- *beside*: ``--starve K`` tabs ask again and again for ``--starve-page``'s most expensive work
  (``classroom_modes.STARVE_WORK``: Translate at k = 10, attribution's default methods …) on a
  new 1,000-character sentence, every run on a new session, as ``--starve`` does.

It reports the visitor's median in each phase and their ratio (the issue's criterion: ≤ 1.5),
the visitor's errors and lost visits (a visit whose page does not show its result: the
translation, or the attribution's heatmaps), and the starving tabs' runs: asked, finished, cut by
a page's bound or its seconds, told to slow down, failed. One JSON line; ``--append
results/benchmarks.jsonl`` keeps it.

    python bench/starve_victim.py --page translate --starve 5 --starve-page translate --json
    python bench/starve_victim.py --page attribution --starve 2 --starve-page attribution --json
    python bench/starve_victim.py --page attribution --starve 2 --app ../wt-before   # another commit's app
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
import urllib.request
from datetime import datetime
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from classroom_lesson import news_sentences  # noqa: E402
from classroom_modes import STARVE_CHARS, STARVE_WORK  # noqa: E402
from classroom_report import emit, pct, stamp  # noqa: E402
from classroom_servers import ROOT, Meter, server  # noqa: E402
from classroom_tab import Tab  # noqa: E402

# what each page shows when the visitor's sentence was decoded and drawn (bytes of the drawn page)
SHOWN = {"translate": (b"How sure was the model?",), "attribution": (b"Attention", b"knock-out")}
VICTIM_PATH = {"translate": "", "attribution": "attribution"}
QUIET_S = 60.0  # the longest the bench waits for the server to be idle before an alone phase


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--page", default="translate", choices=sorted(VICTIM_PATH), help="the page the visitor opens")
    p.add_argument("--starve", type=int, default=5, metavar="K", help="starving tabs in the beside phases")
    p.add_argument("--starve-page", default=None, choices=sorted(STARVE_WORK),
                   help="the page whose most expensive work they ask for (default: --page)")
    p.add_argument("--rounds", type=int, default=3, help="alone/beside phase pairs")
    p.add_argument("--visits", type=int, default=6, help="the visitor's visits per phase")
    p.add_argument("--think", type=float, default=1.0, help="seconds between two visits")
    p.add_argument("--warm", type=float, default=3.0, help="seconds the starving tabs run before the visitor starts")
    p.add_argument("--timeout", type=float, default=60.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--port", type=int, default=None)
    p.add_argument("--app", type=Path, default=ROOT, help="the checkout whose app.py runs (another commit's worktree, "
                   "for a before/after; this bench drives it)")
    p.add_argument("--url", default=None, help="an app already running (no server is started; CPU not measured)")
    p.add_argument("--json", action="store_true", help="print only the JSON line")
    p.add_argument("--append", type=Path, help="also append the JSON line to this JSONL file")
    args = p.parse_args(argv)
    args.starve_page = args.starve_page or args.page
    return args


def server_load(base: str) -> dict:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(f"{base}/_attn/load", timeout=10) as response:
        return json.loads(response.read())


async def quiet(base: str) -> float:
    """Wait until the server runs nothing (no costly run decoding or waiting, no page run); seconds waited."""
    start = time.monotonic()
    while time.monotonic() - start < QUIET_S:
        load = await asyncio.to_thread(server_load, base)
        if not (load["costly_running"] or load["costly_waiting"] or load.get("costly_ahead") or load["cheap_runs"]):
            break
        await asyncio.sleep(0.25)
    return time.monotonic() - start


class Starvers:
    """K tabs asking for the starve page's most expensive work, each run on a new session."""

    def __init__(self, base: str, args):
        self.base, self.args = base, args
        self.path, self.extra = STARVE_WORK[args.starve_page]
        self.pool = news_sentences(args.seed + 11)
        self.used = 0
        self.counts = {"runs": 0, "finished": 0, "cut": 0, "slow_down": 0, "errors": 0}
        self.ms: list[float] = []
        self.tasks: list[asyncio.Task] = []

    def text(self) -> str:
        text = ""
        while len(text) < STARVE_CHARS:
            text, self.used = text + self.pool[self.used % len(self.pool)] + " ", self.used + 1
        return text[:STARVE_CHARS]

    async def one_tab(self) -> None:
        while True:
            tab = Tab(self.base, self.args.timeout)
            self.counts["runs"] += 1
            try:
                ms, _, error = await tab.do(("open", self.path, urlencode({"text": self.text(), **self.extra})))
            finally:
                await tab.close()
            page = tab.drawn
            self.counts["cut"] += b"here takes at most" in page or b"one run may take" in page
            self.counts["slow_down"] += b"Slow down" in page or b"slow down" in page
            if error:
                self.counts["errors"] += 1
            else:
                self.counts["finished"] += 1
                self.ms.append(ms)

    def start(self) -> None:
        self.tasks = [asyncio.create_task(self.one_tab()) for _ in range(self.args.starve)]

    async def stop(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        self.tasks = []


async def visit(base: str, page: str, text: str, timeout: float) -> tuple[float, str | None, bool]:
    """One visit on a new session: (milliseconds, error or None, whether the page shows the result)."""
    tab = Tab(base, timeout, load_page=True)
    try:
        ms, _, error = await tab.do(("open", VICTIM_PATH[page], urlencode({"text": text})))
    finally:
        await tab.close()
    return ms, error, all(marker in tab.drawn for marker in SHOWN[page]) and text.encode() in tab.drawn


async def play(base: str, args, say) -> dict:
    sentences = iter(s for s in news_sentences(args.seed + 29) if len(s) < 120)
    times = {"alone": [], "beside": []}
    errors, lost, waited = [], 0, []
    starvers = Starvers(base, args)
    for r in range(args.rounds):
        for phase in ("alone", "beside"):
            if phase == "alone":
                waited.append(round(await quiet(base), 1))
            else:
                starvers.start()
                await asyncio.sleep(args.warm)
            for _ in range(args.visits):
                ms, error, shown = await visit(base, args.page, next(sentences), args.timeout)
                if error:
                    errors.append(f"{phase}: {error}"[:200])
                elif not shown:
                    lost += 1
                else:
                    times[phase].append(ms)
                await asyncio.sleep(args.think)
            if phase == "beside":
                await starvers.stop()
            say(f"round {r + 1} {phase}: median {pct(times[phase], 0.5)} ms so far")
    alone, beside = (statistics.median(times[k]) if times[k] else None for k in ("alone", "beside"))
    return {"victim_alone_p50_ms": round(alone) if alone else None,
            "victim_beside_p50_ms": round(beside) if beside else None,
            "victim_ratio": round(beside / alone, 2) if alone and beside else None,
            "victim_alone_max_ms": round(max(times["alone"])) if times["alone"] else None,
            "victim_beside_max_ms": round(max(times["beside"])) if times["beside"] else None,
            "victim_visits": sum(map(len, times.values())), "victim_errors": len(errors), "victim_lost": lost,
            "victim_error_samples": errors[:5], "quiet_wait_s": waited,
            **{f"starve_{k}": v for k, v in starvers.counts.items()},
            "starve_p50_ms": pct(starvers.ms, 0.5), "starve_max_ms": round(max(starvers.ms)) if starvers.ms else None}


def main(argv=None) -> int:
    args = parse_args(argv)
    say = (lambda m: None) if args.json else (lambda m: print(m, file=sys.stderr, flush=True))
    started = datetime.now().astimezone().isoformat(timespec="seconds")
    load_start = [round(x, 2) for x in os.getloadavg()]
    if args.url:
        result = asyncio.run(play(args.url.rstrip("/"), args, say))
    else:
        with server(args.port, root=args.app) as target:
            meter = Meter(target)
            meter.sample()
            say(f"server pid {target.pids()[0]} at {target.base}")
            result = asyncio.run(play(target.base, args, say))
            meter.sample()
            result["server_cpu_s"] = round(meter.cpu_s, 1)
    result = {"bench": "starve_victim", "page": args.page, "starve_page": args.starve_page, "tabs": args.starve,
              "rounds": args.rounds, "visits_per_phase": args.visits, **result,
              "load_average_start": load_start, "load_average": [round(x, 2) for x in os.getloadavg()],
              "seed": args.seed, "started": started, **stamp(args.app)}
    emit(result, args.append)
    return 0 if not result["victim_errors"] and not result["victim_lost"] else 1


if __name__ == "__main__":
    sys.exit(main())
