"""Where a click's server CPU goes: py-spy samples of the server, sorted into what they did.

    py-spy record -p SERVER_PID -f raw -r 50 -o server.raw     # while bench/classroom.py plays
    python bench/click_profile.py server.raw [--clicks N]

Each sample's stack is put in the first category whose test matches, from the innermost frame
out: decoding (model/), building figures (viz/ and Plotly's figure constructors), serialising
them (Plotly's JSON and Streamlit's plotly_chart marshalling), Streamlit's rerun machinery (the
rest of a script run: page code, widgets, deltas), sending (the event loop writing websocket
frames), start-up (imports, the warm-up thread, loading checkpoints) and idle threads that py-spy
saw as active (sleeping or waiting in select). With ``--clicks`` (the interactions the bench
reported) it also gives milliseconds of samples per click. py-spy samples wall time of running
threads, so the shares are of the server's busy time, not exact CPU seconds.
"""
from __future__ import annotations

import argparse
import collections
import sys

CATEGORIES = [  # (name, a test on the whole stack string), first match wins
    ("start-up", lambda s: "warm_up (app.py" in s or "_find_and_load" in s or "load_checkpoint" in s),
    ("idle", lambda s: s.rsplit(";", 1)[-1].startswith(("PollingPathWatcher._schedule.<locals>.task",
                                                          "EpollSelector.select", "Condition.wait", "Event.wait"))),
    ("decoding", lambda s: "(model/" in s),
    ("serialising figures", lambda s: "to_json" in s or "to_plotly_json" in s or "convert_to_base64" in s
     or "marshall" in s.lower() and "plotly" in s.lower() or "BaseFigure.to_dict" in s),
    ("building figures", lambda s: "(viz/" in s or "plotly/graph_objs" in s or "plotly/basedatatypes" in s),
    ("Streamlit rerun (page code, widgets, deltas)", lambda s: "ScriptRunner._run_script" in s),
    ("sending (event loop, websocket)", lambda s: "asyncio" in s or "starlette" in s or "websocket" in s.lower()),
]


def categorise(path: str) -> collections.Counter:
    counts = collections.Counter()
    with open(path) as f:
        for line in f:
            stack, _, n = line.rstrip().rpartition(" ")
            name = next((c for c, test in CATEGORIES if test(stack)), "other")
            counts[name] += int(n)
    return counts


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("raw", nargs="+", help="py-spy raw files (-f raw)")
    p.add_argument("--rate", type=float, default=50.0, help="py-spy's sampling rate (-r)")
    p.add_argument("--clicks", type=int, default=0, help="interactions in the profiled run")
    args = p.parse_args(argv)
    for path in args.raw:
        counts = categorise(path)
        busy = sum(n for c, n in counts.items() if c not in ("start-up", "idle"))
        print(f"{path}: {sum(counts.values())} samples, {busy} busy (not start-up, not idle)")
        print("| where | share of busy samples |" + (" ms per click |" if args.clicks else ""))
        print("| --- | --- |" + (" --- |" if args.clicks else ""))
        for name, _ in CATEGORIES + [("other", None)]:
            if name in ("start-up", "idle") or not counts[name]:
                continue
            ms = f" {1000 * counts[name] / args.rate / args.clicks:.1f} |" if args.clicks else ""
            print(f"| {name} | {100 * counts[name] / busy:.0f} % |{ms}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
