"""The class bench's ``exercise`` interaction alone: ``--tabs`` tabs, each a new session on the Beam
search page of one sentence, then each in turn opens the Exercises page by the class link (its
"which mechanism" exercise, seeds 0-4, drawn once by warm-up tabs), joining the class as the
bench's students do. The server's CPU per opening (from the request until 0.2 s after its page
drew, so the listener's request and the roster's write are in it) and the GIL holder's py-spy
samples, optionally.

    python bench/exercise_cost.py [--tabs 60] [--app DIR] [--profile FILE.raw] [--append FILE]

``--app DIR`` runs another checkout's app.py (``/tmp/attn-side-by-side/COMMIT``, made by
``bench/side_by_side.py``): the class bench's ``reference_cpu_ms`` for ``exercise`` is a mean
of 10 ms ticks over a lesson's few openings, and this is the same interaction, many times.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import shutil
import sys
import tempfile
from pathlib import Path
from urllib.parse import quote, urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent))
from classroom import ROOT, Tab, server  # noqa: E402
from classroom_lesson import news_sentences  # noqa: E402
from classroom_report import emit, pct, stamp  # noqa: E402
from classroom_servers import cpu_seconds, profiled  # noqa: E402

WARM = 5  # one tab per seed first: each exercise's figure made once, as in a class


async def openings(base: str, pid: int, code: str, tabs: int, profile: Path | None) -> tuple[float, list[float]]:
    beam = urlencode({"text": news_sentences(1)[0], "model": "rnnsearch"}, quote_via=quote)
    opened = []
    for _ in range(WARM + tabs):
        tab = Tab(base, 60, load_page=True)
        opened.append(tab)
        if (await tab.do(("open", "beam-tree", beam)))[2]:
            raise RuntimeError("the beam page failed")
    cpu, ms = 0.0, []
    try:
        with profiled(pid, profile):
            for i, tab in enumerate(opened):
                await asyncio.sleep(0.3)  # the server quiet again
                before = cpu_seconds(pid)
                took, _, error = await tab.do(("goto", "exercises",
                                               urlencode({"ex": "which", "seed": str(i % WARM), "class": code})))
                await asyncio.sleep(0.2)
                if error:
                    raise RuntimeError(error)
                if i >= WARM:
                    cpu += cpu_seconds(pid) - before
                    ms.append(took)
    finally:
        for tab in opened:
            await tab.close()
    return cpu, ms


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tabs", type=int, default=60)
    parser.add_argument("--app", type=Path, default=ROOT)
    parser.add_argument("--profile", type=Path, help="py-spy's raw samples of the server, to this file")
    parser.add_argument("--append", type=Path, help="also append the JSON line to this file")
    args = parser.parse_args(argv)
    class_dir = tempfile.mkdtemp(prefix="exercise-cost-")
    key = secrets.token_urlsafe(12)
    env = {"ATTN_EXPLORER_CLASS_DIR": class_dir, "ATTN_EXPLORER_TEACHER_KEY": key, "ATTN_EXPLORER_CLASS_DB": "",
           "ATTN_EXPLORER_JOINS_PER_MINUTE": str(max(300, 2 * (WARM + args.tabs)))}
    os.environ.update(env)  # the store opened here and the server's are the same SQLite file
    from server.class_store import ClassStore
    store = ClassStore(f"sqlite:///{class_dir}/classes.sqlite3", teacher_key=key)
    try:
        code = store.open_class(store.teacher_key()).code
        with server(None, env=env, root=args.app.resolve()) as target:
            cpu, ms = asyncio.run(openings(target.base, target.pids()[0], code, args.tabs, args.profile))
    finally:
        store.engine.dispose()
        shutil.rmtree(class_dir, ignore_errors=True)
    emit({"bench": "exercise_cost", "app": str(args.app), "tabs": args.tabs,
          "streamlit_patches": os.environ.get("ATTN_EXPLORER_STREAMLIT_PATCHES", "all"),
          "server_cpu_ms_per_exercise": round(1000 * cpu / args.tabs, 1), "p50_ms": pct(ms, 0.5),
          "p95_ms": pct(ms, 0.95), **stamp(args.app)}, args.append)
    return 0


if __name__ == "__main__":
    sys.exit(main())
