"""What a class reloading the page the teacher sent costs its server, the class bench's ``reload``:
``--tabs`` students join a class, follow a sent "which mechanism" exercise, then all reload it at
once (a new session each, the same student by their cookie). The server's CPU per reload, the
reloads' p50 and maximum, and optionally a py-spy profile of them.

    python bench/reload_cost.py [--tabs 100] [--app DIR] [--profile FILE.raw] [--append FILE]

With ``replay_follows`` (the default) a reload after the first is replayed from its run unless
``ATTN_EXPLORER_STREAMLIT_PATCHES`` leaves it out (``all,-replay_follows``). ``--app DIR`` runs
another checkout's app.py (a worktree made by ``bench/side_by_side.py``); the class is opened by
this checkout's store, as the class bench opens it.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent))
from classroom import ROOT, ClassStore, Tab, server  # noqa: E402
from classroom_modes import until_sent  # noqa: E402
from classroom_report import emit, stamp  # noqa: E402
from classroom_servers import cpu_seconds, profiled  # noqa: E402

TEACHER = "reload-cost-teacher-key"
SENT = ("exercises", {"ex": "which", "seed": "0"})


async def reloads(base: str, pid: int, store, code: str, n: int, profile: Path | None) -> dict:
    tabs = [Tab(base, 120, load_page=True) for _ in range(n)]
    try:
        for tab in tabs:
            if (error := (await tab.do(("open", "exercises", urlencode({"class": code}))))[2]):
                raise RuntimeError(error)
        await asyncio.sleep(1.0)  # every listener waiting
        await asyncio.to_thread(store.send, TEACHER, code, *SENT)
        followed = await asyncio.gather(*(until_sent(t, SENT[0], time.perf_counter() + 120) for t in tabs))
        if errors := [e for _, _, e in followed if e]:
            raise RuntimeError(f"following: {errors[:3]}")
        await asyncio.sleep(2.0)  # the follows' replies sent: what follows is the reloads'
        before = cpu_seconds(pid)
        with profiled(pid, profile):
            done = await asyncio.gather(*(t.do(("reload", "", "")) for t in tabs))
            await asyncio.sleep(0.05)  # the last replies still being sent
        spent = cpu_seconds(pid) - before
    finally:
        for tab in tabs:
            await tab.close()
    ms = sorted(m for m, _, _ in done)
    return {"server_cpu_ms_per_reload": round(1000 * spent / n, 2), "p50_ms": round(ms[n // 2], 1),
            "max_ms": round(ms[-1], 1), "errors": sum(1 for _, _, e in done if e)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tabs", type=int, default=100)
    parser.add_argument("--app", type=Path, default=ROOT)
    parser.add_argument("--profile", type=Path, help="py-spy raw samples of the server's GIL holder during the reloads")
    parser.add_argument("--append", type=Path, help="also append the JSON line to this file")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        store = ClassStore(f"sqlite:///{tmp}/classes.sqlite3", teacher_key=TEACHER)
        code = store.open_class(TEACHER).code
        env = {"ATTN_EXPLORER_CLASS_DB": store.url, "ATTN_EXPLORER_TEACHER_KEY": TEACHER,
               "ATTN_EXPLORER_JOINS_PER_MINUTE": str(max(300, 2 * args.tabs))}  # every tab from this machine
        try:
            with server(None, env=env, root=args.app) as target:
                result = asyncio.run(reloads(target.base, target.pids()[0], store, code, args.tabs, args.profile))
        finally:
            store.engine.dispose()
    emit({"bench": "reload_cost", "app": str(args.app), "tabs": args.tabs,
          "streamlit_patches": os.environ.get("ATTN_EXPLORER_STREAMLIT_PATCHES", "all"), **result, **stamp(args.app)},
         args.append)
    return 0


if __name__ == "__main__":
    sys.exit(main())
