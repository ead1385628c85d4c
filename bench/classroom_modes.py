"""How ``bench/classroom.py`` plays a lesson: alone (the reference), as a class, following the
teacher, and in soak waves.

``attend``: one session plays its lesson, thinking between interactions, reconnecting as the
front end does when its replica dies. ``reference``: each distinct lesson alone (its page
digests, the server's CPU per interaction). ``classroom``: every session at once, with memory
and CPU sampled and, for the fault test, a replica killed. ``follow_the_teacher``: the class
link's followers, timed from the teacher's send to the teacher's page drawn. ``soak``: waves
on fresh sentences, with the memory and p95 drift.
"""
from __future__ import annotations

import asyncio
import re
import random
import time
from pathlib import Path
from urllib.parse import urlencode

from classroom_lesson import Lesson, MODELS, MOVES, SENDS, SENTENCES, make_lessons, news_sentences
from classroom_report import pct, summary
from classroom_rounds import timed_rounds
from classroom_servers import host_busy_seconds, Meter, Target, cpu_seconds
from server.class_store import StoreUnavailable
from classroom_prank import prank_process
from classroom_tab import LOOK, Tab
from streamlit.proto.WidgetStates_pb2 import WidgetState


class TeacherSends:
    """The teacher of the lesson: SENDS[k], then MOVES, go to the class (through the store, as *Send
    this page to the class*, *Reveal*, *Remove* and *Undo* do) once every student still in the
    lesson has reached their k-th follow step, or WAIT_S after the first did, as a teacher waits
    for the room. ``from_send_ms``: per follower and send, the time from the send until the sent
    page has drawn. ``removed[k]``: the nickname removed from the roster by move k (None: nobody)."""
    WAIT_S = 30.0
    PRESS_S = 30.0

    def __init__(self, store, key: str, code: str, students: int):
        self.store, self.key, self.code, self.active = store, key, code, students
        self.moves = [("send", page, params) for page, params in SENDS] + list(MOVES)
        self.arrived = [0] * len(self.moves)
        self.sent = [asyncio.Event() for _ in self.moves]
        self.sent_at: list[float] = [0.0] * len(self.moves)
        self.from_send_ms: list[float] = []
        self.removed: dict[int, str | None] = {}
        self.failed: list[str] = []

    async def press(self, what: str, action, *args):
        """A teacher's button: the store's ``action`` again after a refusal (busy, unreachable), as a
        teacher presses again, for up to PRESS_S; what still failed is kept in ``failed``."""
        deadline = time.perf_counter() + self.PRESS_S
        while True:
            try:
                return await asyncio.to_thread(action, self.key, self.code, *args)
            except StoreUnavailable as e:  # StoreBusy included
                if time.perf_counter() > deadline:
                    self.failed.append(f"{what}: {e}"[:200])
                    return None
                await asyncio.sleep(1.0)

    async def run(self) -> None:
        taken = None
        for k, (move, what, params) in enumerate(self.moves):
            while not self.arrived[k] and self.active:
                await asyncio.sleep(0.1)
            deadline = time.perf_counter() + self.WAIT_S
            while self.arrived[k] < self.active and time.perf_counter() < deadline:
                await asyncio.sleep(0.1)
            if move == "send":
                await self.press("send", self.store.send, what, params)
            elif move == "reveal":
                await self.press("reveal", self.store.reveal, what)
            elif move == "remove":
                roster = await self.press("roster", self.store.roster_of) or []
                taken = roster[0].nickname if roster else None  # the first to join
                if taken:
                    await self.press("remove", self.store.remove, taken)
            elif move == "readmit" and taken:
                await self.press("readmit", self.store.readmit, taken)
                taken = None
            self.removed[k] = taken
            self.sent_at[k] = time.perf_counter()
            self.sent[k].set()


# what the reference run's ``follow`` measures: a fresh open of each page the teacher sends (as
# ``c0d2c47``'s bench measured its three sends), not the moves that send none; a follower's rerun
# inside its session is bench/follow_cost.py's figure
REFERENCE_FOLLOW = "opens"


async def follow(tab: Tab, k: int, link: tuple[str, str | None], teacher: TeacherSends | None,
                 timeout: float) -> tuple[float, str | None, str | None]:
    """Follow the teacher's k-th move: wait for it, then do what the page does until it shows the
    sent page (``until_sent``). Without a teacher (the reference run) the sent page's link is
    opened at once, a fresh page load: the page followed inside the session must equal it; a
    move that sends no page (a reveal, a removal) is nothing there. The milliseconds are those
    of the rerun that drew the sent page, as for any click."""
    if teacher is None:
        return await tab.do(("open", *link)) if link[1] is not None else (0.0, None, None)
    teacher.arrived[k] += 1
    await teacher.sent[k].wait()
    ms, digest, error = await until_sent(tab, link[0], time.perf_counter() + timeout)
    if teacher.moves[k][0] == "send":
        teacher.from_send_ms.append(1000 * (time.perf_counter() - teacher.sent_at[k]))
    if link[1] is None:
        digest = None  # a reveal or a removal: what the page shows then is checked, not compared with a reference
    return ms, digest, error


NICKNAME_SHOWN = re.compile(r"Following class \*\*[A-Z0-9]+\*\* as \*\*([^*]+)\*\*")


def check(tab: Tab, what: str, value, teacher: TeacherSends | None) -> str | None:
    """What the tab shows after the teacher's move, as a student would see it: its widgets as the
    sent link sets them, the reveal's words to a tab that did not answer, the removal said to the
    removed student only. A "mismatch: …" (counted with the mismatches), or None. Nothing to check
    in the reference run, where no teacher moves."""
    if teacher is None:
        return None
    page = tab.drawn.decode("utf-8", "replace")
    if what == "widgets":
        found = NICKNAME_SHOWN.search(page)
        tab.nickname = found.group(1) if found else getattr(tab, "nickname", None)
        wrong = [f"{key} shows {tab.shown.get(key)!r}, the link sets {want!r}" for key, want in value.items()
                 if tab.shown.get(key) != want]
        return "mismatch: " + "; ".join(wrong) if wrong else None
    if what == "text":
        return None if value in page else f"mismatch: the page does not say {value!r}"
    removed = teacher.removed.get(value)
    told = "removed you from class" in page
    if told != (removed is not None and removed == getattr(tab, "nickname", None)):
        return f"mismatch: told removed {told}, removed {removed!r}, this tab {getattr(tab, 'nickname', None)!r}"
    return None


async def until_sent(tab: Tab, page: str, deadline: float) -> tuple[float, str | None, str | None]:
    """What a following browser tab does until it shows ``page`` (its url path): the page's listener
    holds ``/_attn/follow`` open and, when the class changes, opens the sent page inside the
    session (one rerun of that page, as the Back button asks for one), or clicks *Look again*
    when the change sends no new page, or, when the answer's page signature is the page's own
    (another student removed or let back in), waits again with no rerun: no milliseconds then
    (None), as nothing is drawn."""
    while time.perf_counter() < deadline:
        left = deadline - time.perf_counter()
        if tab.listen:
            answer = await tab.wait_for_change(timeout=left)
            if answer is None:
                await asyncio.sleep(1.0)  # as the page's script: a failed request is tried again
                continue
            path, _, query = (answer.get("link") or "").partition("?")
            if answer.get("open") and answer.get("page") and answer["page"] == tab.signature:
                tab.wait_past(answer["version"])  # the change leaves this page as it is: no rerun
                return None, None, None
            if answer.get("open") and path in tab.pages and (path, query) != (tab.path, tab.query):
                # the teacher's page, opened as the page's listener opens it (ui/class_follow.py)
                ms, digest, error = await tab.do(("history", path, query))
            else:  # a change that sends no new page: the listener clicks Look again
                ms, digest, error = await tab.do(("click", LOOK, True))
            if error or tab.path == page:
                return ms, digest, error
        else:
            return 0.0, None, "no follow listener on the page"
    return 0.0, None, "the teacher's page never came"


REFUSED = (b"Not in class ", b"Not counted in the class")  # what the class panel says to a refused student
# what a page says when it stops short of its work: past one run's seconds (server/lanes.py), or a
# tab past its share of decodings (navigation.py)
TOLD = (b"one run may take on this server", b"Slow down: this tab asked")
# what *Check* says of an answer the class stored (ui/class_session.record_answer); anything else
# there (removed, refused, the store busy or down) tells the student it is not counted
COUNTED = (b"Counted in class", b"Kept as a retry")


def told_why(drawn: bytes) -> str:
    """The page's words on why an answer is not counted ("Not counted …", a store notice), or "nothing said"."""
    for said in re.findall(rb"(?:Not counted|class store)[\x20-\x7e]{0,120}", drawn):
        return said.decode("ascii", "replace")
    return "nothing said"


async def attend(n: int, lesson: Lesson, target: Target, args, think: float, delay: float, out: list,
                 cpu: dict | None = None, teacher: TeacherSends | None = None) -> None:
    """One session plays its lesson; appends (session, step, kind, ms, digest, error, replica) to out.
    With ``cpu`` (the reference run: one student alone on the server), adds to ``cpu[kind]``
    the server CPU seconds from each interaction's start to the next one's.

    A tab whose socket breaks (its replica died) does what Streamlit's front end does: it
    reconnects, and the page reruns from its URL. With ``--kill-replica-after`` that is timed
    as a "reconnect" row (from the failure until the page is served again); otherwise the
    student's lesson ends there."""
    rng = random.Random(f"{args.seed}:{n}")  # per session, so scheduling does not change the plan
    await asyncio.sleep(delay)
    tab = Tab(target.base, args.timeout, target.sticky, load_page=True)
    server_cpu = (lambda: sum(cpu_seconds(pid) for pid in target.pids())) if cpu is not None else None
    before_page = b""
    try:
        for step, (kind, action) in enumerate(lesson.steps()):
            if step:
                await asyncio.sleep(think * rng.uniform(0.8, 1.2))
            replica = tab.replica
            before = server_cpu() if server_cpu else 0.0
            started = time.monotonic()
            if kind == "follow":
                ms, digest, error = await follow(tab, action[1], action[2], teacher, args.timeout)
            elif kind == "check":
                ms, digest, error = 0.0, None, check(tab, action[1], action[2], teacher)
            else:
                ms, digest, error = await tab.do(action)
            if server_cpu and not (kind == "follow" and teacher is None and action[2][1] is None):
                # a teacher's move that sends no page (a reveal, a removal, its undo) opens nothing
                # here: counted, it would make a fresh open of a sent page look cheaper by the
                # moves that draw nothing (REFERENCE_FOLLOW)
                await asyncio.sleep(0.05)  # the replies still being sent belong to this interaction
                cpu.setdefault(kind, []).append(server_cpu() - before)
            if error and error.startswith("no widget") and any(said in before_page for said in TOLD):
                # the page before said why it stopped short (its run's seconds, a tab's share): the
                # student was told and the widget is not there to click; counted apart, not an error
                args_told = getattr(args, "told", None)
                if args_told is not None:
                    args_told.append((n, step))
                error = None
            out.append((n, step, kind, ms, digest, error, replica or tab.replica))
            if getattr(args, "timeline_rows", None) is not None and cpu is None:
                args.timeline_rows.append({"t": round(started, 3), "session": n, "step": step, "kind": kind,
                                           "ms": None if ms is None else round(ms, 1),
                                           "replica": replica or tab.replica, "error": error,
                                           "faulty": bool(lesson.fault)})
            if error and getattr(args, "dump", None):
                dump(args.dump / f"session{n}-step{step}-{kind}.txt", error, before_page, tab.drawn)
            before_page = tab.drawn
            if not lesson.fault and any(said in tab.drawn for said in REFUSED) and hasattr(args, "refused"):
                args.refused.add(n)  # the class panel refused this student (full, locked, too many joins…)
            if kind == "answer" and not error and not any(c in tab.drawn for c in COUNTED) \
                    and hasattr(args, "not_counted"):
                args.not_counted.append((n, step, told_why(tab.drawn)))  # the page said so beside *Check*
            if error and (error == "timeout" or error.startswith("disconnect")):
                if not args.kill_replica_after:
                    break  # the tab is in no known state: this student's lesson ends here
                served = await reconnect(tab, args.recover_within)
                out.append((n, step, "reconnect", served or 1000 * args.recover_within, None,
                            None if served else f"not served again within {args.recover_within:.0f} s", tab.replica))
                if not served:
                    break
    finally:
        if teacher is not None:
            teacher.active -= 1  # the teacher waits no longer for this student
            if tab.student and hasattr(args, "students"):
                args.students.append(tab.student)  # their browser's cookie, for following the teacher after
        await tab.close()


def dump(path: Path, error: str, before: bytes, page: bytes) -> None:
    """``--dump``: the words of the page before an interaction and of the page it ended on (the
    printable runs of its elements' bytes), to see what a tab showed when it failed."""
    def words(drawn: bytes) -> str:
        return "\n".join(run.decode("utf-8", "replace") for run in re.findall(rb"[\x20-\x7e\xc2-\xf4\x80-\xbf]{6,}", drawn))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"error: {error}\n\n--- the page before\n{words(before)}\n\n--- the page after\n{words(page)}\n")


async def reconnect(tab: Tab, within: float) -> float | None:
    """Open the tab's page again (its URL) until it is served; milliseconds taken, or None."""
    start = time.perf_counter()
    path, query = tab.path, tab.query
    while time.perf_counter() - start < within:
        _, _, error = await tab.do(("open", path, query))
        if not error:
            return 1000 * (time.perf_counter() - start)
        await asyncio.sleep(0.5)
    return None


async def classroom(lessons: list[Lesson], target: Target, args, teacher: TeacherSends | None = None) -> tuple[list, dict]:
    """Every session at once (starts spread over --ramp); (interactions, measures: peak RSS in
    MB, the server's and this client's CPU seconds over the run's wall seconds, the replica
    killed by --kill-replica-after)."""
    out, meter, killed = [], Meter(target), {}
    meter.sample()
    wall, client_cpu = time.perf_counter(), time.process_time()

    rows = getattr(args, "timeline_rows", None)

    async def sample():
        """Every 0.5 s the servers' memory and CPU; with --timeline, a row of the cores busy since
        the last sample: the host's, the servers', this bench's own (its tabs live on the same host)."""
        before = None
        while True:
            meter.sample()
            now = (time.monotonic(), host_busy_seconds(), meter.cpu_s, time.process_time())
            if rows is not None and before is not None and now[0] > before[0]:
                rows.append({"t": round(now[0], 3), "cpu_cores": {
                    name: round((now[k] - before[k]) / (now[0] - before[0]), 2)
                    for k, name in ((1, "host"), (2, "servers"), (3, "bench"))}})
            before = now
            await asyncio.sleep(0.5)

    async def kill():
        await asyncio.sleep(args.kill_replica_after)
        meter.sample()
        killed["name"] = target.kill_one()
        killed["at_s"] = round(time.perf_counter() - wall, 1)

    tasks = [asyncio.create_task(sample())] + ([asyncio.create_task(teacher.run())] if teacher else [])
    flooding, flooded = asyncio.Event(), None
    if getattr(args, "flooding", False):
        flooded = asyncio.create_task(flood(target, args, flooding))
    elif getattr(args, "starving", False):
        flooded = asyncio.create_task(starve(target, args, flooding))
    elif getattr(args, "pranking", None):  # (class code, teacher key): bench/classroom_prank.py, a process of its own
        flooded = asyncio.create_task(prank_process(target, *args.pranking, flooding))
    if args.kill_replica_after:
        tasks.append(asyncio.create_task(kill()))
    try:
        await asyncio.gather(*(attend(n, lesson, target, args, args.think, args.ramp * n / len(lessons), out,
                                      teacher=teacher) for n, lesson in enumerate(lessons)))
    finally:
        for task in tasks:
            task.cancel()
        flooding.set()
    flood_counts = await flooded if flooded else {}
    meter.sample()
    wall = time.perf_counter() - wall
    measured = bool(target.pids())
    clicks = sum(kind != "reconnect" for _, _, kind, *_ in out)
    cpu = {"wall_s": round(wall, 1), "server_cpu_s": round(meter.cpu_s, 1) if measured else None,
           "client_cpu_s": round(time.process_time() - client_cpu, 1),
           "server_cpu_ms_per_click": round(1000 * meter.cpu_s / max(1, clicks), 1) if measured else None,
           "rss_mb": round(meter.peak_kb / 1024, 1) if measured else None}
    return out, {**cpu, "killed_replica": killed or None, **flood_counts}


async def reference(lessons: list[Lesson], target: Target, args, cpu: dict | None = None) -> dict[Lesson, list]:
    """Each distinct lesson alone, one after the other, without think time: its digests; with
    ``cpu``, the server CPU seconds of each interaction, by kind (see ``attend``)."""
    digests = {}
    for lesson in lessons:
        out = []
        await attend(0, lesson, target, args, 0.0, 0.0, out, cpu if target.pids() else None)
        digests[lesson] = {step: (digest, error) for _, step, _, _, digest, error, _ in out}
    return digests


FOLLOWED = ("step-through", SENTENCES[0], "rnnsearch", 3)  # what the teacher sends: page, sentence, model, step


async def follow_the_teacher(target: Target, args, store, key: str, code: str, n: int) -> dict:
    """``n`` sessions open the class link and follow; once all of them are in (or after two
    minutes), the server's CPU over ``--idle`` seconds of nobody clicking is measured
    (``idle_cpu_pct_of_core``: CPU seconds of every server process per wall second, in % of one
    core); then the teacher, whose own screen shows the page (so its decoding is in the shared
    cache, as in a lesson), sends FOLLOWED. Per follower, the milliseconds from the send until
    the teacher's page has drawn, showing that sentence at that step; each follower does what its
    page does (``until_sent``)."""
    page, sentence, model, step = FOLLOWED
    if n <= 0:  # nobody follows: nothing to time (asyncio.wait refuses an empty set)
        return {"followers": 0, "follow_p50_ms": None, "follow_p95_ms": None, "follow_max_ms": None,
                "follow_errors": 0, "follow_error_kinds": []}
    # a follower without a lesson's cookie loads the page first, as a browser does: the student cookie
    # it gets names its listener's requests (unnamed ones share UNNAMED_PER_CLASS places, server/follow.py)
    students = getattr(args, "students", [])
    tabs = [Tab(target.base, args.timeout, target.sticky, load_page=i >= len(students)) for i in range(n)]
    for tab, student in zip(tabs, students):
        tab.student = student  # the lesson's students follow (their cookies): no new ids, no new seats
    sent_at: list[float | None] = [None]
    got: dict[int, tuple[float, str | None]] = {}
    ready = asyncio.Semaphore(0)

    async def follow(i: int, tab: Tab) -> None:
        await asyncio.sleep(2.0 * i / n)  # the room opens the link over two seconds
        _, _, error = await tab.do(("open", "exercises", urlencode({"class": code})))
        ready.release()
        if error or tab.listen is None:
            got[i] = (float("nan"), error or "no follow listener on the page")
            return
        while sent_at[0] is None:  # the tab waits: its listener's request is open, answered at the send
            answer = await tab.wait_for_change(timeout=60.0) if tab.listen else None
            if sent_at[0] is None:
                await asyncio.sleep(0.2 if answer is None else 0.0)
        _, _, error = await until_sent(tab, page, sent_at[0] + 10.0)
        ms = 1000 * (time.perf_counter() - sent_at[0])
        shown = sentence.encode() in tab.drawn and f"Step {step} of".encode() in tab.drawn
        got[i] = (ms, error or (None if shown else "the page is not the teacher's sentence and step"))

    tasks = [asyncio.create_task(follow(i, tab)) for i, tab in enumerate(tabs)]
    rounds: dict = {}
    teacher = Tab(target.base, args.timeout, target.sticky)  # the teacher's screen shows the page before sending it
    idle: dict = {}
    try:
        await asyncio.wait_for(asyncio.gather(*(ready.acquire() for _ in range(n))), 120.0)
        await teacher.do(("open", page, urlencode({"text": sentence, "model": model, "step": step})))
        await asyncio.sleep(2.0)  # every follower's listener open again
        if getattr(args, "idle", 0):
            idle = await idle_cost(target, args.idle)
        sent_at[0] = time.perf_counter()
        await asyncio.to_thread(store.send, key, code, page, {"text": sentence, "model": model, "step": str(step)})
        await asyncio.wait(tasks, timeout=15.0)
        rounds = await timed_rounds([t for i, t in enumerate(tabs) if i in got and got[i][1] is None], store, key, code,
                                    until_sent)  # the worked example, an exercise, its reveal (classroom_rounds)
    finally:
        for t in tasks:
            t.cancel()
        for tab in tabs + [teacher]:
            await tab.close()
    times = [ms for ms, error in got.values() if error is None]
    errors = n - len(times)
    return {"followers": n, "follow_p50_ms": pct(times, 0.5), "follow_p95_ms": pct(times, 0.95),
            "follow_max_ms": round(max(times), 1) if times else None, "follow_errors": errors,
            "follow_error_kinds": sorted({str(e) for _, e in got.values() if e}) + (
                [f"{n - len(got)} never saw the teacher's page within 15 s"] if len(got) < n else []), **idle, **rounds}


async def idle_cost(target: Target, seconds: float) -> dict:
    """The server processes' CPU while ``seconds`` pass with nobody clicking (/proc's ticks)."""
    pids = target.pids()
    if not pids:
        return {}
    before, start = sum(cpu_seconds(p) for p in pids), time.perf_counter()
    await asyncio.sleep(seconds)
    cpu, wall = sum(cpu_seconds(p) for p in pids) - before, time.perf_counter() - start
    return {"idle_s": round(wall, 1), "idle_cpu_s": round(cpu, 2), "idle_cpu_pct_of_core": round(100 * cpu / wall, 1)}


def soak(target: Target, args, say) -> dict:
    """Waves of ``--sessions`` sessions, each with two news sentences never sent before, until
    ``--soak`` minutes have passed; per wave its p95, errors and the servers' RSS at its end.
    The drift checks compare the last 10 minutes with minutes 5–10 (memory) and 2–10 (p95)."""
    pool, used, waves, start = news_sentences(args.seed), 0, [], time.perf_counter()
    while (minute := (time.perf_counter() - start) / 60) < args.soak:
        fresh = pool[used:used + 2 * args.sessions]
        used += len(fresh)
        lessons = make_lessons(args.sessions, args.seed + len(waves), fresh, args.faulty, fresh=True)
        out, measures = asyncio.run(classroom(lessons, target, args))
        r = summary(out, lessons, None, say)
        times = [row[3] for row in out if not lessons[row[0]].fault and row[2] != "reconnect"]
        wave = {"wave": len(waves) + 1, "start_min": round(minute, 2),
                "end_min": round((time.perf_counter() - start) / 60, 2), "p95_ms": r["p95_ms"],
                "errors": r["errors"], "rss_mb": round(Meter(target).sample() / 1024, 1) if target.pids() else None,
                "server_cpu_ms_per_click": measures["server_cpu_ms_per_click"], "times": times}
        say(f"wave {wave['wave']}: minutes {wave['start_min']:.1f}–{wave['end_min']:.1f}, p95 {wave['p95_ms']} ms, "
            f"errors {wave['errors']}, RSS {wave['rss_mb']} MB")
        waves.append(wave)
    total = waves[-1]["end_min"] if waves else 0

    def window(lo: float, hi: float) -> list[dict]:
        return [w for w in waves if lo < w["end_min"] <= hi]

    early_rss = [w["rss_mb"] for w in window(5, 10) if w["rss_mb"] is not None]
    late = window(total - 10, total) if total >= 20 else []
    late_rss = [w["rss_mb"] for w in late if w["rss_mb"] is not None]
    p95_early = pct([t for w in window(2, 10) for t in w["times"]], 0.95)
    p95_late = pct([t for w in late for t in w["times"]], 0.95)
    for w in waves:
        del w["times"]
    return {"soak_min": round(total, 1), "waves": waves, "errors": sum(w["errors"] for w in waves),
            "rss_min5_10_mb": max(early_rss, default=None), "rss_last10_mb": max(late_rss, default=None),
            "rss_last10_minus_min5_10_mb": round(max(late_rss) - max(early_rss), 1) if late_rss and early_rss else None,
            "p95_min2_10_ms": p95_early, "p95_last10_ms": p95_late,
            "p95_drift": round(p95_late / p95_early - 1, 3) if p95_early and p95_late else None}


FLOOD_RATE = 20.0  # the flooding tab's reruns a second
FLOOD_CHARS = 1000  # each with a new sentence this long (the text box's limit)


async def flood(target: Target, args, stop: asyncio.Event) -> dict:
    """One unfriendly tab beside the class: over a raw websocket it asks for FLOOD_RATE reruns a
    second of the Translate page, each with a new FLOOD_CHARS-character sentence, never waiting for
    one to finish; it reads what the server sends back and counts the "slow down" messages. Until
    ``stop`` is set."""
    from classroom_tab import draw
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    pool, used = news_sentences(args.seed + 7), 0
    tab = Tab(target.base, args.timeout, target.sticky, load_page=True)
    _, _, error = await tab.do(("open", "", ""))
    counts = {"flood_reruns": 0, "flood_slow_down": 0, "flood_finished": 0, "flood_open_error": error}

    async def read():
        while True:
            msg = ForwardMsg.FromString(await tab.ws.recv())
            kind = msg.WhichOneof("type")
            if kind == "delta":
                shown: dict = {}
                draw(msg, shown, {}, {})
                if any(b"Slow down" in body for body in shown.values()):
                    counts["flood_slow_down"] += 1
            elif kind == "script_finished":
                counts["flood_finished"] += 1

    reader = asyncio.create_task(read())
    try:
        while not stop.is_set() and "translate_text" in tab.keys:
            text = ""
            while len(text) < FLOOD_CHARS:
                text, used = text + pool[used % len(pool)] + " ", used + 1
            state = WidgetState(id=tab.keys["translate_text"], string_value=text[:FLOOD_CHARS])
            tab.widgets[state.id] = state
            await tab.send()
            counts["flood_reruns"] += 1
            await asyncio.sleep(1.0 / FLOOD_RATE)
    except Exception as e:  # noqa: BLE001 - the flood's own failure (its socket closed) is reported, not raised
        counts["flood_error"] = f"{type(e).__name__}: {e}"[:200]
    finally:
        reader.cancel()
        await tab.close()
    return counts


STARVE_CHARS = 1000  # each starving run asks for the page's work on a sentence this long (the text box's limit)
# the most expensive work each page offers, as its link asks for it: (url path, query beside the text)
STARVE_WORK = {
    "translate": ("", {"beam": "10"}),
    "compare": ("compare", {"models": ",".join(MODELS + ["transformer"]), "beam": "10"}),
    "attribution": ("attribution", {}),
    "beam-tree": ("beam-tree", {"beam": "10"}),
}


async def starve(target: Target, args, stop: asyncio.Event) -> dict:
    """``--starve K``: K tabs beside the class, each asking again and again for the most expensive
    work of ``--starve-page`` (``STARVE_WORK``) on a new STARVE_CHARS-character sentence, every run
    on a new session (a new websocket, no cookie: what a script pays nothing for), waiting for each
    to end, until ``stop`` is set. Counts the runs asked, finished, cut by a page's bound or its
    seconds, told to slow down, and failed."""
    path, extra = STARVE_WORK[args.starve_page]
    pool = news_sentences(args.seed + 11)
    counts = {"starve_runs": 0, "starve_finished": 0, "starve_cut": 0, "starve_slow_down": 0, "starve_errors": 0,
              "starve_ms": []}
    used = [0]

    async def one_tab(k: int) -> None:
        while not stop.is_set():
            text = ""
            while len(text) < STARVE_CHARS:
                text, used[0] = text + pool[used[0] % len(pool)] + " ", used[0] + 1
            tab = Tab(target.base, args.timeout, target.sticky)
            counts["starve_runs"] += 1
            try:
                ms, _, error = await tab.do(("open", path, urlencode({"text": text[:STARVE_CHARS], **extra})))
            finally:
                await tab.close()
            page = tab.drawn
            counts["starve_cut"] += b"here takes at most" in page or b"one run may take" in page
            counts["starve_slow_down"] += b"Slow down" in page
            if error:
                counts["starve_errors"] += 1
            else:
                counts["starve_finished"] += 1
                counts["starve_ms"].append(ms)

    tabs = [asyncio.create_task(one_tab(k)) for k in range(args.starve)]
    await stop.wait()
    for task in tabs:
        task.cancel()
    await asyncio.gather(*tabs, return_exceptions=True)
    done = counts.pop("starve_ms")
    return {**counts, "starve_p50_ms": pct(done, 0.5), "starve_max_ms": round(max(done)) if done else None}
