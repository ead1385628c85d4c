"""What a page costs the visitor's browser: Chromium's CPU to load and draw each page, one JSON line.

    python bench/browser_cost.py [--checkpoints DIR] [--pages "" compare attribution] [--rounds 3]
    python bench/browser_cost.py --against ../before     # another checkout's app, alternating with this one

Each page is loaded in a new browser context (a new visitor: nothing cached) of Debian's headless
Chromium (``/usr/bin/chromium-headless-shell``, Playwright's ``executable_path``), then once more
in the same context (a visitor's next page, its cache warm), and is counted done when the app is
idle and every chart is drawn. The CPU is Chromium's, every process of it, read from ``/proc``
before and after each page (the browser process, its renderers, its GPU and utility processes).
With ``--against``, each round loads every page from this checkout's app and then from the other
one's (each its own server on the same checkpoints, both running throughout), so both meet the same phases of the host.
Prints the median CPU-seconds per page and app, and their ratio.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from classroom_servers import server  # noqa: E402

CHROMIUM = "/usr/bin/chromium-headless-shell"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]
DRAWN = """!document.querySelector('[data-testid="stStatusWidget"] button') && document.readyState === 'complete'
  && !document.querySelector('[data-stale="true"], [data-testid="stSkeleton"]')
  && document.querySelector('[data-testid="stMainBlockContainer"] :is(h1, h2, h3)')
  && [...document.querySelectorAll('[data-testid="stPlotlyChart"]')].every(c => c.querySelector('.main-svg'))"""
HZ = os.sysconf("SC_CLK_TCK")


def tree_cpu(root: int) -> float:
    """CPU-seconds of ``root`` and every process under it, the reaped ones included."""
    procs = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = open(f"/proc/{entry}/stat").read()
            except OSError:
                continue
            fields = stat[stat.rfind(")") + 2:].split()
            procs[int(entry)] = (int(fields[1]), sum(int(f) for f in fields[11:15]) / HZ)
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        total += procs.get(pid, (0, 0.0))[1]
        todo += [p for p, (parent, _) in procs.items() if parent == pid]
    return total


def chromium_pid(before: set[int]) -> int:
    """The browser process Playwright just launched: a new process running CHROMIUM."""
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) not in before:
            try:
                argv0 = open(f"/proc/{entry}/cmdline").read().split("\0")[0]
            except OSError:
                continue
            if "chromium" in argv0 and "--type=" not in open(f"/proc/{entry}/cmdline").read():
                return int(entry)
    raise RuntimeError("no Chromium process found")


def load(browser, pid: int, url: str) -> tuple[float, float]:
    """(first, next): Chromium's CPU-seconds for the page in a new context, then again in it."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    costs = []
    for _ in range(2):
        before = tree_cpu(pid)
        page = context.new_page()
        page.goto(url, wait_until="domcontentloaded", timeout=180_000)
        page.wait_for_function(DRAWN, polling=250, timeout=180_000)
        page.wait_for_timeout(300)  # the last frame composited
        costs.append(tree_cpu(pid) - before)
        page.close()
    context.close()
    return costs[0], costs[1]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--checkpoints", default=str(ROOT / "tests" / "fixtures" / "tiny_zoo"))
    p.add_argument("--pages", nargs="+", default=["", "compare", "attribution", "step-through", "models"])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--against", help="another checkout's root, whose app is measured alternately with this one")
    p.add_argument("--chromium", default=CHROMIUM)
    args = p.parse_args(argv)
    from playwright.sync_api import sync_playwright

    apps = {"here": ROOT, **({"against": Path(args.against).resolve()} if args.against else {})}
    env = {"ATTN_EXPLORER_CHECKPOINTS": str(Path(args.checkpoints).resolve()), "OMP_NUM_THREADS": "1"}
    costs = {app: {page: {"first": [], "next": []} for page in args.pages} for app in apps}
    with ExitStack() as servers:  # started before Playwright, whose loop would refuse their asyncio.run
        bases = {app: servers.enter_context(server(None, env=env, root=root)).base for app, root in apps.items()}
        with sync_playwright() as playwright:
            before = {int(e) for e in os.listdir("/proc") if e.isdigit()}
            browser = playwright.chromium.launch(executable_path=args.chromium, headless=True, args=FLAGS)
            pid = chromium_pid(before)
            for _ in range(args.rounds):
                for app, base in bases.items():
                    for page in args.pages:
                        first, next_ = load(browser, pid, f"{base}/{page}")
                        costs[app][page]["first"].append(first)
                        costs[app][page]["next"].append(next_)
            browser.close()
    result = {"bench": "browser_cost", "commit": os.popen(f"git -C {ROOT} rev-parse --short HEAD").read().strip(),
              "date": time.strftime("%Y-%m-%d"), "checkpoints": args.checkpoints, "rounds": args.rounds,
              "chromium": args.chromium, "load_1min": round(os.getloadavg()[0], 2)}
    for app in apps:
        result[app] = {page: {k: round(statistics.median(v), 3) for k, v in c.items()} for page, c in costs[app].items()}
        result[app]["all_pages_s"] = round(sum(statistics.median(c["first"]) + statistics.median(c["next"])
                                               for c in costs[app].values()), 3)
    if args.against:
        result["against"]["root"] = str(apps["against"])
        result["ratio_here_to_against"] = round(result["here"]["all_pages_s"] / result["against"]["all_pages_s"], 3)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
