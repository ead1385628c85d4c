"""``bench/classroom.py --check``: a class takes the check before the lesson and after it.

The bench opens the class as the teacher and opens both halves (every item an exercise the class
counts, as *Open the check before/after* does). Each session then opens the class's link to the
check before (``/lesson?check=before&stop=1&class=CODE``, as a follower's screen opens it), answers
every item (a seeded plan: right with probability 0.5 before and 0.8 after, else a wrong option or
number), taking ``--think`` seconds per item (±20 %: the form's widgets change in the browser
alone, as a student reads and answers), and hands it in; thinks; opens the check after
(``?check=after``) and hands it in too.
The items are the class's own (``teaching.check.check_pair`` on the class code's seed), computed
here from the shipped RNNsearch as the app computes them: a page asking other items has no widget
by the keys the bench sets, and that is an error.

- latency: per interaction kind (``open_before``, ``hand_in_before``, ``open_after``,
  ``hand_in_after``), from sending the request to the ``script_finished`` ending that rerun; a
  hand-in's rerun stores the half's answers, one per item, through the class store.
- ``errors``: reruns that end in an exception, an ``st.error``, a disconnect or ``--timeout``,
  and a hand-in whose page does not say it was counted.
- ``lost_answers``: answers handed in (items × halves handed in without error) that the store
  does not hold; ``students_counted``: distinct student ids among the check's answers;
  ``gains_match``: the teacher's per-concept means and gain (``teaching.check.class_gains`` on the
  store's answers) equal those of the plan the sessions played.
"""
from __future__ import annotations

import asyncio
import random
import time
import zlib
from urllib.parse import urlencode

from streamlit.proto.WidgetStates_pb2 import WidgetState

from classroom_lesson import ROOT
from classroom_report import pct
from classroom_servers import Meter
from classroom_tab import Tab

KINDS = ("open_before", "hand_in_before", "open_after", "hand_in_after")
RIGHT = {"before": 0.5, "after": 0.8}  # the plan's chance of a right answer per item


def class_items(code: str) -> dict:
    """The class's check, both halves, computed from the shipped checkpoints as the app does."""
    import pandas as pd
    from model.internals import annotation_values
    from model.search import prepare_source
    from model.translate import translate
    from model.zoo import load_entry
    from teaching.check import check_pair, HALVES
    entry = load_entry(ROOT / "checkpoints" / "rnnsearch")
    pair = check_pair(zlib.crc32(code.encode()), lambda t: translate(entry.model, entry.vocab, t, beam=1),
                      lambda t: annotation_values(entry.model, prepare_source(entry.vocab, t).ids),
                      pd.read_csv(ROOT / "results" / "bleu_by_length.csv"))
    return dict(zip(HALVES, (half.items for half in pair)))


def answer_of(item, right: bool):
    """The value a session gives: the right one, or a wrong option, or a number well outside the tolerance."""
    q = item.question
    if right:
        return q.right[0]
    if q.choices:
        return next(c for c in q.choices if c not in q.right)
    return float(q.right[0]) + 10 * q.tolerance + 1


def plan(seed: int, n: int, items: dict) -> dict[str, dict[str, bool]]:
    """Session n's plan: half -> item slug -> answered right."""
    rng = random.Random(f"check:{seed}:{n}")
    return {half: {i.slug: rng.random() < RIGHT[half] for i in its} for half, its in items.items()}


def fill(tab: Tab, half: str, items, rights: dict[str, bool]) -> str | None:
    """Set every item's widget as the front end holds a form's values until it is handed in."""
    from ui.lesson_check import widget_key
    for item in items:
        key = widget_key(half, item)
        if key not in tab.keys:
            return f"no widget {key!r} on the page (the page asks other items)"
        value = answer_of(item, rights[item.slug])
        state = WidgetState(id=tab.keys[key])
        if isinstance(value, str):
            state.string_value = value
        else:
            state.double_value = float(value)
        tab.widgets[state.id] = state
    return None


async def student(n: int, target, args, code: str, items: dict, out: list, delay: float) -> None:
    """One session: the check before, then the check after; appends (session, kind, ms, error) to out."""
    rng = random.Random(f"{args.seed}:{n}")
    mine = plan(args.seed, n, items)
    await asyncio.sleep(delay)
    tab = Tab(target.base, args.timeout, target.sticky, load_page=True)
    try:
        for half in items:
            if half == "before":
                ms, _, error = await tab.do(("open", "lesson", urlencode({"check": half, "stop": 1, "class": code})))
            else:
                await asyncio.sleep(args.think * rng.uniform(0.8, 1.2))
                ms, _, error = await tab.do(("goto", "lesson", urlencode({"check": half, "stop": 12, "class": code})))
            out.append((n, f"open_{half}", ms, error))
            if error:
                return
            # answering: --think seconds per item (±20 %), the form's widgets changed in the browser alone
            await asyncio.sleep(args.think * len(items[half]) * rng.uniform(0.8, 1.2))
            error = fill(tab, half, items[half], mine[half])
            if error is None:
                ms, _, error = await tab.do(("click", f"lesson_prepost_hand_in_{half}", True))
                if error is None and b"Counted in class" not in tab.drawn:
                    error = "handed in, but the page does not say it was counted"
            out.append((n, f"hand_in_{half}", ms if error is None else 0.0, error))
            if error:
                return
    finally:
        await tab.close()


async def take_the_check(target, args, code: str, items: dict, n: int) -> tuple[list, dict]:
    out, meter = [], Meter(target)
    meter.sample()
    wall = time.perf_counter()

    async def sample():
        while True:
            meter.sample()
            await asyncio.sleep(0.5)
    sampler = asyncio.create_task(sample())
    try:
        await asyncio.gather(*(student(i, target, args, code, items, out, args.ramp * i / n) for i in range(n)))
    finally:
        sampler.cancel()
    return out, {"rss_mb": round(meter.peak_kb / 1024), "server_cpu_s": round(meter.cpu_s, 1),
                 "wall_s": round(time.perf_counter() - wall, 1)}


def gains_of_plan(plans: list[dict]) -> list:
    """The class's per-concept gains the sessions' plan makes: what the teacher's view must show."""
    from teaching.check import class_gains, ClassCheck
    return class_gains(ClassCheck({h: {str(n): p[h] for n, p in enumerate(plans)} for h in ("before", "after")}))


def play_check(args, store, key: str, code: str, target, say) -> dict:
    """The class's check, as the JSON line's figures."""
    from teaching.check import class_check, class_gains, exercise_id
    say("the class's check: items computed from the shipped RNNsearch")
    items = class_items(code)
    for half, its in items.items():  # the teacher opens both halves
        for item in its:
            store.add_exercise(key, code, exercise_id(half, item))
    n = args.sessions
    say(f"the check: {n} session(s) take the check before and after")
    out, measures = asyncio.run(take_the_check(target, args, code, items, n))
    stored = [a for a in store.summary(key, code) if a.exercise.startswith("check:")]
    handed = sum(len(items[kind.removeprefix("hand_in_")]) for _, kind, _, error in out
                 if kind.startswith("hand_in_") and error is None)
    errors = [e for *_, e in out if e]
    plans = [plan(args.seed, i, items) for i in range(n)]
    said = [(g.name, round(g.pre, 6), round(g.post, 6)) for g in class_gains(class_check(stored))]
    planned = [(g.name, round(g.pre, 6), round(g.post, 6)) for g in gains_of_plan(plans)]
    per_kind = {kind: {"n": len(ms), "p50_ms": pct(ms, 0.5), "p95_ms": pct(ms, 0.95),
                       "max_ms": round(max(ms), 1) if ms else None}
                for kind in KINDS for ms in [[m for _, k, m, e in out if k == kind and e is None]]}
    every = [m for _, _, m, e in out if e is None]
    return {"items": {h: len(i) for h, i in items.items()}, "interactions": len(out),
            "p50_ms": pct(every, 0.5), "p95_ms": pct(every, 0.95), "max_ms": round(max(every), 1) if every else None,
            "per_kind": per_kind, "errors": len(errors), "error_kinds": sorted(set(errors))[:5],
            "answers": handed, "answers_stored": len(stored), "lost_answers": max(0, handed - len(stored)),
            "every_answer_counted": handed == len(stored) == sum(a.counted for a in stored),
            "students_counted": len({a.session for a in stored}), "gains_match": said == planned,
            "class_store": store.kind, **measures}
