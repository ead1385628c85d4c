"""What a room following the teacher costs its server: ``--followers`` tabs on one process follow
the class through the lesson's three sends (``bench/classroom.py``'s SENDS), ``--rounds`` times.
Per follower and send: the milliseconds from the page's listener clicking *Look again* (the
server answered ``/_attn/follow``) until the sent page has drawn, and the server's CPU per
follower. One JSON line.

    python bench/follow_cost.py [--followers 30] [--rounds 3] [--send PATH?QUERY ... | --reveal F] [--app DIR]
                                [--profile FILE.raw] [--append FILE]

``replayed``: what the server's ``replay_follows`` patch did (its runs recorded or refused, and
the follows it replayed); ``ATTN_EXPLORER_STREAMLIT_PATCHES=all,-replay_follows`` runs without it.

Nothing else runs on the server: the sent pages are warmed first (the teacher's own screen
drew them), so what is timed is the followers' own reruns, all woken at the same moment as a
class's are. The teacher sends through the class store from this process, so the server's
follow board sees it at its next read of the store (SQLite: ``server.follow.POLL_S``); that
wait is not in the click times. Each follower loads the page before its socket, as a browser
does, so its listener's requests carry its student cookie (``named`` in the line). ``--app DIR``
runs another checkout's app.py (a before/after on the same host). ``--reveal F``: the reveal of
an exercise that the first F of the followers answered, in place of the sends (:func:`reveal`).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import shutil
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from urllib.parse import parse_qsl, urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent))
from classroom import ROOT, SENDS, server, Tab  # noqa: E402
from classroom_lesson import mechanism_choice  # noqa: E402
from classroom_modes import until_sent  # noqa: E402
from classroom_report import emit, pct, stamp  # noqa: E402
from classroom_servers import cpu_seconds, profiled  # noqa: E402


async def follow(base: str, pid: int, store, key: str, code: str, followers: int, rounds: int,
                 profile: Path | None = None, sends=SENDS) -> dict:
    # each follower loads the page first, as a browser does: its student cookie names its listener's
    # requests (a tab without one is an unnamed request, which the server places apart)
    tabs = [Tab(base, 60, load_page=True) for _ in range(followers)]
    for tab in tabs:
        await tab.do(("open", "exercises", urlencode({"class": code})))
    teacher = Tab(base, 60)
    for page, params in sends:
        await teacher.do(("open", page, urlencode(params)))
    clicks, cpu, errors = [], 0.0, []
    with profiled(pid, profile):
        for _ in range(rounds):
            for page, params in sends:
                await asyncio.sleep(1.0)  # every listener waiting again
                before = cpu_seconds(pid)
                await asyncio.to_thread(store.send, key, code, page, params)
                results = await asyncio.gather(*(until_sent(tab, page, time.perf_counter() + 30) for tab in tabs))
                await asyncio.sleep(0.1)  # the replies still being sent belong to this send
                cpu += cpu_seconds(pid) - before
                clicks += [ms for ms, _, error in results if not error and ms is not None]
                errors += [error for _, _, error in results if error]
    return _clicks(clicks, cpu, followers * rounds * len(sends), errors)


async def reveal(base: str, pid: int, store, key: str, code: str, followers: int, rounds: int, answered: float,
                 profile: Path | None = None) -> dict:
    """``--reveal F``: each round the teacher sends a new "which mechanism" exercise, every follower
    opens it, the first F of them answer it, and the teacher reveals it. A tab that answered shows
    the solution already; ``reran`` counts the tabs whose page reran at the reveal, and the CPU is
    the reveal's whole burst (``server_cpu_ms_per_follow``: per follower, rerun or not)."""
    tabs = [Tab(base, 60, load_page=True) for _ in range(followers)]
    for tab in tabs:
        await tab.do(("open", "exercises", urlencode({"class": code})))
    teacher, answering = Tab(base, 60), tabs[:round(answered * followers)]
    clicks, cpu, errors, reran = [], 0.0, [], []
    with profiled(pid, profile):
        for r in range(rounds):
            seed = 3 * (r + 1)  # levels 1 and 2: a family to name (classroom_lesson.mechanism_choice)
            params = {"ex": "which", "seed": str(seed)}
            await teacher.do(("open", "exercises", urlencode(params)))  # drawn once, as the teacher's screen does
            await asyncio.sleep(1.0)
            await asyncio.to_thread(store.send, key, code, "exercises", params)
            sent = await asyncio.gather(*(until_sent(tab, "exercises", time.perf_counter() + 30) for tab in tabs))
            errors += [error for _, _, error in sent if error]
            for tab in answering:
                await tab.do(("set", f"ex_which_{seed}", mechanism_choice(seed)))
                await tab.do(("click", f"ex_check_which:{seed}", True))
            await asyncio.sleep(1.0)  # every listener waiting again
            before = cpu_seconds(pid)
            await asyncio.to_thread(store.reveal, key, code, f"which:{seed}")
            results = await asyncio.gather(*(until_sent(tab, "exercises", time.perf_counter() + 30) for tab in tabs))
            await asyncio.sleep(0.1)
            cpu += cpu_seconds(pid) - before
            clicks += [ms for ms, _, error in results if not error and ms is not None]
            errors += [error for _, _, error in results if error]
            reran.append(sum(ms is not None for ms, _, error in results if not error))
    return {**_clicks(clicks, cpu, followers * rounds, errors), "answered": len(answering), "reran": reran}


def replay_counts(base: str) -> dict | None:
    """What the server's ``replay_follows`` patch did (``/_attn/ready``), None where it has none (an
    earlier commit's app)."""
    try:
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(f"{base}/_attn/ready?format=json",
                                                                              timeout=10) as answer:
            ready = json.loads(answer.read())
    except (OSError, ValueError):
        return None
    return next((p.get("counts") for p in ready.get("patches", []) if p.get("name") == "replay_follows"), None)


def _clicks(clicks: list[float], cpu: float, follows: int, errors: list[str]) -> dict:
    return {"click_p10_ms": pct(clicks, 0.1), "click_p50_ms": pct(clicks, 0.5), "click_p67_ms": pct(clicks, 0.67),
            "click_p95_ms": pct(clicks, 0.95), "click_max_ms": round(max(clicks), 1) if clicks else None,
            "server_cpu_ms_per_follow": round(1000 * cpu / follows, 1),
            "follows": len(clicks), "errors": len(errors), "error_kinds": sorted(set(errors))}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--followers", type=int, default=30)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--app", type=Path, default=ROOT, help="the checkout whose app.py runs (default: this one)")
    p.add_argument("--send", action="append", metavar="PATH[?QUERY]",
                   help="send these pages in turn instead of the lesson's three (repeat; two at least, as a "
                        "page sent again with the same link opens nothing new)")
    p.add_argument("--reveal", type=float, metavar="F",
                   help="instead of the sends: a reveal of an exercise the first F (0-1) of the followers answered")
    p.add_argument("--profile", type=Path, help="py-spy raw samples of the server during the sends")
    p.add_argument("--append", type=Path, help="also append the JSON line to this JSONL file")
    args = p.parse_args(argv)
    sends = [(path, dict(parse_qsl(query))) for path, _, query in (s.partition("?") for s in args.send)] \
        if args.send else SENDS
    class_dir = tempfile.mkdtemp(prefix="follow-cost-")
    key = secrets.token_urlsafe(12)
    env = {"ATTN_EXPLORER_CLASS_DIR": class_dir, "ATTN_EXPLORER_TEACHER_KEY": key, "ATTN_EXPLORER_CLASS_DB": "",
           "ATTN_EXPLORER_JOINS_PER_MINUTE": str(max(300, 2 * args.followers))}
    os.environ.update(env)  # the store opened here and the server's are the same SQLite file
    from server.class_store import ClassStore
    store = ClassStore(f"sqlite:///{class_dir}/classes.sqlite3", teacher_key=key)
    try:
        key = store.teacher_key()
        code = store.open_class(key).code
        with server(None, env=env, root=args.app.resolve()) as target:
            result = asyncio.run(
                reveal(target.base, target.pids()[0], store, key, code, args.followers, args.rounds, args.reveal,
                       args.profile) if args.reveal is not None else
                follow(target.base, target.pids()[0], store, key, code, args.followers, args.rounds, args.profile,
                       sends))
            result["replayed"] = replay_counts(target.base)
    finally:
        store.engine.dispose()
        shutil.rmtree(class_dir, ignore_errors=True)
    emit({"bench": "follow_cost", "followers": args.followers, "rounds": args.rounds, "named": True, "app": str(args.app),
          "streamlit_patches": os.environ.get("ATTN_EXPLORER_STREAMLIT_PATCHES", "all"),
          **({"sends": args.send} if args.send else {}), **({"reveal": args.reveal} if args.reveal is not None else {}),
          **result,
          **stamp(args.app)}, args.append)
    return 0


if __name__ == "__main__":
    sys.exit(main())
