"""What a page load's HTML costs the server: ``--loads`` GETs of a page's address asking for HTML
(a browser's first request for a page, and each reload), from 16 kept-alive connections at once
with the student cookie and a browser's Accept-Encoding, in ``--rounds`` rounds. The server's CPU per load, each round.

    python bench/html_cost.py [--loads 1600] [--rounds 3] [--path /exercises] [--app DIR] [--append FILE]

``--app DIR`` runs another checkout's app.py (``/tmp/attn-side-by-side/COMMIT``, made by
``bench/side_by_side.py``): the same client against each. Sixteen connections keep the server busy,
so its own idle ticks (uvicorn's, a few % of a core) are a small part of what is measured.
"""
from __future__ import annotations

import argparse
import http.client
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from classroom import ROOT, server  # noqa: E402
from classroom_report import emit, stamp  # noqa: E402
from classroom_servers import cpu_seconds  # noqa: E402

CONNECTIONS = 16


def loads(base: str, path: str, n: int) -> set[int]:
    where = urlsplit(base)
    page = http.client.HTTPConnection(where.hostname, where.port, timeout=30)
    page.request("GET", "/", headers={"Accept": "text/html"})  # the first load gives the student cookie
    answer = page.getresponse()
    answer.read()
    cookie = "; ".join(c.split(";", 1)[0] for c in answer.headers.get_all("Set-Cookie") or [])
    statuses = set()
    for _ in range(n):
        page.request("GET", path, headers={"Accept": "text/html,application/xhtml+xml", "Cookie": cookie,
                                           "Accept-Encoding": "gzip, deflate, br"})  # as every browser asks
        answer = page.getresponse()
        answer.read()
        statuses.add(answer.status)
    page.close()
    return statuses


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--loads", type=int, default=1600)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--path", default="/exercises")
    parser.add_argument("--app", type=Path, default=ROOT)
    parser.add_argument("--append", type=Path, help="also append the JSON line to this file")
    args = parser.parse_args(argv)
    per = max(1, args.loads // CONNECTIONS)
    rounds, statuses = [], set()
    with server(None, root=args.app) as target:
        pid = target.pids()[0]
        time.sleep(15)  # the warm-up thread's last work done
        for _ in range(args.rounds):
            before = cpu_seconds(pid)
            with ThreadPoolExecutor(CONNECTIONS) as pool:
                for got in pool.map(lambda _: loads(target.base, args.path, per), range(CONNECTIONS)):
                    statuses |= got
            rounds.append(round(1000 * (cpu_seconds(pid) - before) / (per * CONNECTIONS), 2))
    emit({"bench": "html_cost", "app": str(args.app), "path": args.path, "loads": per * CONNECTIONS,
          "statuses": sorted(statuses), "server_cpu_ms_per_load": rounds, **stamp(args.app)}, args.append)
    return 0


if __name__ == "__main__":
    sys.exit(main())
