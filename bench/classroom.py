"""A class on one server: N browser sessions play a lesson at once; latency, errors, memory.

    python bench/classroom.py [--sessions 10] [--think 2.5] [--followers N] [--json] [--append results/benchmarks.jsonl]

Starts the real server (``streamlit run app.py``, shipped checkpoints) and drives it the way
browsers do: over Streamlit's websocket (``/_stcore/stream``), sending the front end's
``BackMsg`` rerun requests and reading the ``ForwardMsg`` replies (no AppTest, no browser).
Each session opens a shared link to the Translate page, changes the sentence, opens Compare
with four models, Step through (then moves its step slider five times) and the Beam search
tree, then answers an exercise of the class the bench opened (``exercise``: the Exercises
page of the class link, ``choose``: a mechanism, ``answer``: the check button, which stores
the answer through the class store), thinking ``--think`` seconds (±20 %) between
interactions. Sessions start spread over
``--ramp`` seconds. ``--faulty`` of them send an empty, a 5,000-character or a markup
sentence, or close the socket right after asking for a rerun (then open the link again).

- latency: from sending a request (for "open": from opening the websocket) to the
  ``script_finished`` message ending that rerun; per interaction kind, p50/p95/max.
- ``errors``: reruns, of any session, that end in an exception element, an ``st.error``, a
  compile error, a page-not-found, a disconnect or ``--timeout``. A faulty session's clear
  message (info/warning) is not one, nor is its deliberate hang-up; its interactions are
  reported apart (``faulty_interactions``, ``faulty_errors``) and left out of the latencies.
- ``mismatches``: every distinct lesson is first played alone, one session at a time, on
  its own server; an interaction of the concurrent run whose page differs from that
  reference is a mismatch. The page is digested as the front end would hold it when the
  rerun ends (the last element at each delta path), without element ids and transient
  spinners. The concurrent run gets a fresh server so that it computes its translations
  instead of finding the reference run's in the cache.
- ``lost_answers``: answers whose check rerun finished without an error but that the class
  store does not hold afterwards (the teacher's summary counts the store's rows).
- ``follow_*``: after the lesson, ``--followers`` sessions (default: ``--sessions``) open the
  class link and follow the teacher, polling as the browser's fragment timer does; the bench
  opens a Step through page (a sentence, a model, step 3) as the teacher's screen, then sends
  it to the class through the store, as the teacher's *Send to class* does. Per follower: the time from the send until the
  teacher's page, opened as the follow fragment asks, has finished drawing and shows that
  sentence at that step (``follow_p95_ms``; ``follow_errors``: a follower that never got it
  within 10 s, or got another page).
- ``rss_mb``: peak resident memory of the server (its process and children, sampled every
  0.5 s) during the concurrent run.
- ``server_cpu_s``, ``client_cpu_s``, ``wall_s``: CPU seconds the server and this client used
  during the concurrent run, and its length: a server near one CPU-second per second is
  bound by the GIL (its Python runs on one core at a time).

Prints a table, then one JSON line (only that line with ``--json``).
"""
from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import math
import os
import platform
import random
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from urllib.parse import quote, urlencode

from streamlit.proto.Alert_pb2 import Alert
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from test_browser import free_port, stop  # noqa: E402 - the browser test's own helpers
sys.path.insert(0, str(ROOT))
from server.class_store import ClassStore  # noqa: E402 - the class the bench opens, as the teacher

# 8-20 words each; none is among the app's examples, so nothing is translated before it is asked
SENTENCES = [
    "The children walked to school together every morning before the sun came up.",
    "My grandmother still writes letters by hand to all of her old friends.",
    "The committee will publish its final report on the new energy policy next week.",
    "We missed the last train home, so we spent the night in a small hotel.",
    "The government has promised to reduce taxes for small businesses in rural areas.",
    "Could you tell me where I can buy tickets for the concert tonight?",
    "The old library near the river was closed for repairs during the whole summer.",
    "Scientists believe that the ice in the north is melting faster than expected.",
    "He forgot his umbrella at the office and arrived home completely wet.",
    "The minister said that the agreement would protect workers and their families.",
]
MODELS = ["rnnsearch", "luong-dot", "luong-general", "luong-concat", "luong-local", "rnnenc"]
COMPARED = "rnnsearch,luong-dot,luong-general,luong-concat"
BAD_TEXT = {"empty": "", "long": ("The committee met again today to discuss the budget. " * 100)[:5000],
            "markup": "<script>alert(1)</script> **bold** [x](javascript:y)"}
FAULTS = ["empty", "long", "markup", "disconnect"]
VOLATILE = ("id", "form_id", "deferred_file_id")  # element fields that name, not show, something
MECHANISM_CHOICE = "dot (Luong)"  # the radio's label for luong-dot (model/exercises.py MECHANISMS)
FOLLOW_LINK = re.compile(rb'location\.replace\(("(?:[^"\\]|\\.)*")\)')  # the page a follower is sent to


@dataclass(frozen=True)
class Lesson:
    first: str
    second: str
    model: str
    fault: str | None = None
    class_code: str = ""
    exercise: int = 0  # the seed of the "which mechanism" exercise this student answers

    def steps(self) -> list[tuple[str, tuple]]:
        """(kind, action): action is ("open", url path, query), ("goto", url path, query),
        ("set", widget key, value) or ("drop", ...): set, then close the socket at once."""
        text = BAD_TEXT.get(self.fault, self.second)

        def link(**query) -> str:
            return urlencode({k: v for k, v in query.items() if v}, quote_via=quote, safe=",")

        steps = [("open", ("open", "", link(text=self.first, model=self.model))),
                 ("edit", ("drop" if self.fault == "disconnect" else "set", "translate_text", text))]
        if self.fault == "disconnect":  # the tab is gone: the student opens the link again
            steps.append(("open", ("open", "", link(text=text, model=self.model))))
        steps += [("compare", ("goto", "compare", link(text=text, models=COMPARED))),
                  ("step", ("goto", "step-through", link(text=text, model=self.model)))]
        steps += [("slide", ("set", "step_i", i)) for i in range(2, 7)]
        steps.append(("beam", ("goto", "beam-tree", link(text=text, model=self.model))))
        if self.class_code:
            seed = self.exercise
            steps += [("exercise", ("goto", "exercises", link(ex="which", seed=seed, **{"class": self.class_code}))),
                      ("choose", ("set", f"ex_which_{seed}", MECHANISM_CHOICE)),
                      ("answer", ("click", f"ex_check_which:{seed}", True))]
        return steps


class Tab:
    """One browser tab: its websocket and what the front end keeps between reruns (the page,
    the URL's query string, the widget values it sends back).

    It names no cached messages (``cached_message_hashes``), so the server always sends
    elements in full; a browser would name the large ones it holds, but in this lesson no
    page repeats one within a tab, so the server would send them all anyway."""

    def __init__(self, port: int, timeout: float):
        self.port, self.timeout = port, timeout
        self.ws = None
        self.pages: dict[str, str] = {}  # url path -> page script hash (the navigation message)
        self.page = ""
        self.query = ""
        # the values this tab set, resent with every rerun as the front end does (it also sends
        # the untouched widgets' defaults, which the server knows already)
        self.widgets: dict[str, WidgetState] = {}
        self.keys: dict[str, str] = {}  # user key -> widget id, as drawn by the last rerun
        self.fragment_of: dict[str, str] = {}  # widget id -> the fragment it is drawn in, if any
        self.timer: tuple[float, str] | None = None  # (seconds, fragment id) of an st.fragment(run_every=...)
        self.link: str | None = None  # where the page's script sends the browser (following the teacher)
        self.drawn = b""  # the page as last drawn, every element's bytes

    async def do(self, action: tuple) -> tuple[float, str | None, str | None]:
        """Perform one action; (milliseconds, page digest, error or None)."""
        verb, target, value = action
        start = time.perf_counter()
        try:
            if verb == "open":
                await self.close()
                self.ws = await connect(f"ws://127.0.0.1:{self.port}/_stcore/stream", subprotocols=["streamlit"],
                                        origin=f"http://127.0.0.1:{self.port}", proxy=None, max_size=None,
                                        ping_interval=None, open_timeout=self.timeout)  # as browsers: deflate, no pings
                self.page, self.query, self.widgets = "", value, {}
                await self.send(page_name=target)  # a first load names its page by URL path
            elif verb == "goto":  # a page link carrying query parameters, as a shared link does
                self.page, self.query = self.pages[target], value
                self.widgets = {}  # only widgets outside the page are kept, and explorer.py has none
                await self.send()
            else:
                if target not in self.keys:
                    return 0.0, None, f"no widget {target!r} on the page"
                state = WidgetState(id=self.keys[target])
                if verb == "click":
                    state.trigger_value = True  # a button: true for this one rerun, never resent
                elif isinstance(value, str):
                    state.string_value = value
                else:
                    state.double_array_value.data.append(value)  # a slider's value
                if verb != "click":
                    self.widgets[state.id] = state
                # a widget inside an st.fragment reruns that fragment alone, as the front end asks
                fragment = self.fragment_of.get(state.id, "")
                await self.send(fragment_id=fragment, extra=[state] if verb == "click" else [])
                if verb == "drop":
                    await self.close()
                    return 1000 * (time.perf_counter() - start), None, None
                digest, error = await asyncio.wait_for(self.rerun_end(fragment), self.timeout)
                return 1000 * (time.perf_counter() - start), digest, error
            digest, error = await asyncio.wait_for(self.rerun_end(), self.timeout)
        except TimeoutError:
            digest, error = None, "timeout"
        except (ConnectionClosed, OSError) as e:
            digest, error = None, f"disconnect ({type(e).__name__})"
        return 1000 * (time.perf_counter() - start), digest, error

    async def send(self, page_name: str = "", fragment_id: str = "", extra: list | None = None) -> None:
        msg = BackMsg()
        state = msg.rerun_script  # the ClientState the front end's sendRerunBackMsg builds
        state.query_string = self.query
        state.fragment_id = fragment_id
        state.page_script_hash = self.page
        state.page_name = page_name
        state.widget_states.widgets.extend(self.widgets.values())
        state.widget_states.widgets.extend(extra or [])
        info = state.context_info
        info.timezone, info.timezone_offset, info.locale, info.color_scheme = "Europe/Paris", -60, "en-GB", "light"
        info.url = f"http://127.0.0.1:{self.port}/{page_name}?{self.query}"
        await self.ws.send(msg.SerializeToString())

    async def rerun_end(self, fragment: str = "") -> tuple[str, str | None]:
        """Read until the rerun finishes; (digest of the page as drawn, error or None). A
        fragment's rerun redraws that fragment only: the digest is of what it drew."""
        shown: dict[tuple, bytes] = {}  # delta path -> the element last drawn there
        ids: dict[str, str] = {}  # element id -> its user key ("" if none)
        fragments: dict[str, str] = {}  # element id -> its fragment id
        error = None
        while True:
            msg = ForwardMsg.FromString(await self.ws.recv())
            kind = msg.WhichOneof("type")
            if kind == "new_session":  # a run starts: the page is drawn afresh
                self.page = msg.new_session.page_script_hash
                shown.clear()
                ids.clear()
            elif kind == "navigation":
                self.pages = {p.url_pathname: p.page_script_hash for p in msg.navigation.app_pages}
            elif kind == "page_info_changed":  # the app rewrote the URL (st.query_params)
                self.query = msg.page_info_changed.query_string
            elif kind == "delta":
                error = draw(msg, shown, ids, fragments) or error
            elif kind == "auto_rerun":  # the browser's timer for a run_every fragment
                self.timer = (msg.auto_rerun.interval, msg.auto_rerun.fragment_id)
            elif kind == "page_not_found":
                error = "page not found"
            elif kind == "script_finished" and msg.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                if msg.script_finished == ForwardMsg.FINISHED_WITH_COMPILE_ERROR:  # its details come after
                    error = "the script did not compile"
                break  # a run stopped early for a newer one is followed by that one
        drawn = {key: wid for wid, key in ids.items() if key}
        if fragment:  # the rest of the page stands as it was
            self.keys.update(drawn)
            self.fragment_of.update(fragments)
        else:
            self.keys, self.fragment_of = drawn, fragments
            self.widgets = {wid: s for wid, s in self.widgets.items() if wid in ids}  # the front end drops stale widgets
        page = hashlib.sha256()
        for path, body in sorted(shown.items()):
            page.update(repr(path).encode() + body)
        self.drawn = b"".join(body for _, body in sorted(shown.items()))
        found = FOLLOW_LINK.search(self.drawn)
        self.link = json.loads(found.group(1)) if found else None
        return page.hexdigest()[:16], error

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()
            self.ws = None


def draw(msg: ForwardMsg, shown: dict, ids: dict, fragments: dict) -> str | None:
    """Record one delta in the page as drawn; returns an error the element shows, if any."""
    what = msg.delta.WhichOneof("type")
    if what not in ("new_element", "add_block"):  # transients: spinners, shown or not by timing
        return None
    body = getattr(msg.delta, what)
    element = body.WhichOneof("type") if what == "new_element" else None
    part = getattr(body, element) if element else body
    if "id" in part.DESCRIPTOR.fields_by_name and part.id:  # "$$ID-<hash>-<user key, or None>"
        key = part.id.split("-", 2)[-1] if part.id.startswith("$$ID-") else "None"
        ids[part.id] = "" if key == "None" else key
        if msg.delta.fragment_id:
            fragments[part.id] = msg.delta.fragment_id
    for name in VOLATILE:
        if name in part.DESCRIPTOR.fields_by_name:
            part.ClearField(name)
    shown[tuple(msg.metadata.delta_path)] = body.SerializeToString(deterministic=True)
    if element == "exception":
        return f"exception: {part.type}: {part.message[:120]}"
    if element == "alert" and part.format == Alert.ERROR:
        return f"st.error: {part.body[:120]}"
    return None


async def attend(n: int, lesson: Lesson, port: int, args, think: float, delay: float, out: list) -> None:
    """One session plays its lesson; appends (session, step, kind, ms, digest, error) to out."""
    rng = random.Random(f"{args.seed}:{n}")  # per session, so scheduling does not change the plan
    await asyncio.sleep(delay)
    tab = Tab(port, args.timeout)
    try:
        for step, (kind, action) in enumerate(lesson.steps()):
            if step:
                await asyncio.sleep(think * rng.uniform(0.8, 1.2))
            ms, digest, error = await tab.do(action)
            out.append((n, step, kind, ms, digest, error))
            if error and (error == "timeout" or error.startswith("disconnect")):
                break  # the tab is in no known state: this student's lesson ends here
    finally:
        await tab.close()


@contextmanager
def server(port: int | None, env: dict | None = None):
    """The app's server on 127.0.0.1, healthy and past its first (model-loading) page; killed
    on the way out, whatever happens. ``env``: more environment (the class store's settings)."""
    port = port or free_port()
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
                             "--server.port", str(port), "--server.address", "127.0.0.1",
                             "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
                            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})},
                            start_new_session=True)  # Ctrl-C reaches us, and we stop it in order
    try:
        local = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never through a proxy
        deadline = time.monotonic() + 180
        error = "it did not answer /_stcore/health"
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                if local.open(f"http://127.0.0.1:{port}/_stcore/health", timeout=2).read() == b"ok":
                    error = None
                    break
            except OSError:
                pass
            time.sleep(0.2)
        if not error:  # the first page waits for the models: visit it once so no measured page does
            error = asyncio.run(Tab(port, 180).do(("open", "", "")))[2]
        if error:
            log.seek(0)
            raise RuntimeError(f"server on port {port}: {error}; its log ends:\n"
                               + log.read().decode(errors="replace")[-3000:])
        yield proc, port
    finally:
        stop(proc)
        log.close()


def rss_kb(pid: int) -> int:
    """VmRSS of a process and all its descendants."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            status = Path(f"/proc/{p}/status").read_text()
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except OSError:  # it exited meanwhile
            continue
        total += next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)
    return total


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (all its threads), from /proc/PID/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def classroom(lessons: list[Lesson], proc, port: int, args) -> tuple[list, float, dict]:
    """Every session at once (starts spread over --ramp); (interactions, peak RSS in MB, CPU use:
    the server's and this client's CPU seconds over the run's wall seconds, to tell what limits it)."""
    out, peak = [], [0]
    wall, server_cpu, client_cpu = time.perf_counter(), cpu_seconds(proc.pid), time.process_time()

    async def sample():
        while True:
            peak[0] = max(peak[0], rss_kb(proc.pid))
            await asyncio.sleep(0.5)

    sampler = asyncio.create_task(sample())
    try:
        await asyncio.gather(*(attend(n, lesson, port, args, args.think, args.ramp * n / len(lessons), out)
                               for n, lesson in enumerate(lessons)))
    finally:
        sampler.cancel()
    wall = time.perf_counter() - wall
    cpu = {"wall_s": round(wall, 1), "server_cpu_s": round(cpu_seconds(proc.pid) - server_cpu, 1),
           "client_cpu_s": round(time.process_time() - client_cpu, 1)}
    return out, peak[0] / 1024, cpu


async def reference(lessons: list[Lesson], port: int, args) -> dict[Lesson, list]:
    """Each distinct lesson alone, one after the other, without think time: its digests."""
    digests = {}
    for lesson in lessons:
        out = []
        await attend(0, lesson, port, args, 0.0, 0.0, out)
        digests[lesson] = {step: (digest, error) for _, step, _, _, digest, error in out}
    return digests


FOLLOWED = ("step-through", SENTENCES[0], "rnnsearch", 3)  # what the teacher sends: page, sentence, model, step


async def follow_the_teacher(port: int, args, store, key: str, code: str, n: int) -> dict:
    """``n`` sessions open the class link and follow; the teacher, whose own screen shows the
    page (so its decoding is in the shared cache, as in a lesson), sends FOLLOWED; per follower,
    the milliseconds from the send until the teacher's page has drawn, showing that sentence at
    that step. Each follower polls as the browser does: its fragment's rerun every interval."""
    page, sentence, model, step = FOLLOWED
    tabs = [Tab(port, args.timeout) for _ in range(n)]
    sent_at: list[float | None] = [None]
    got: dict[int, tuple[float, str | None]] = {}

    async def follow(i: int, tab: Tab) -> None:
        await asyncio.sleep(2.0 * i / n)  # the room opens the link over two seconds
        _, _, error = await tab.do(("open", "exercises", urlencode({"class": code})))
        if error or tab.timer is None:
            got[i] = (float("nan"), error or "no follow timer on the page")
            return
        while True:
            interval, fragment = tab.timer
            await asyncio.sleep(interval)
            await tab.send(fragment_id=fragment)
            _, error = await asyncio.wait_for(tab.rerun_end(fragment), args.timeout)
            if error:
                got[i] = (float("nan"), error)
                return
            if tab.link and sent_at[0] is not None:  # the follow fragment sends the browser to the teacher's page
                path, _, query = tab.link.lstrip("/").partition("?")
                _, _, error = await tab.do(("open", path, query))
                ms = 1000 * (time.perf_counter() - sent_at[0])
                shown = sentence.encode() in tab.drawn and f"Step {step} of".encode() in tab.drawn
                got[i] = (ms, error or (None if shown else "the page is not the teacher's sentence and step"))
                return

    tasks = [asyncio.create_task(follow(i, tab)) for i, tab in enumerate(tabs)]
    teacher = Tab(port, args.timeout)  # the teacher's own screen shows the page before sending it
    try:
        await asyncio.sleep(2.0 + 1.0)  # everyone in, and polling
        await teacher.do(("open", page, urlencode({"text": sentence, "model": model, "step": step})))
        await asyncio.sleep(2.0)
        sent_at[0] = time.perf_counter()
        store.send(key, code, page, {"text": sentence, "model": model, "step": str(step)})
        await asyncio.wait(tasks, timeout=10.0)
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
                [f"{n - len(got)} never saw the teacher's page within 10 s"] if len(got) < n else [])}


def pct(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile."""
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[max(0, math.ceil(q * len(ordered)) - 1)], 1)


def host() -> str:
    models = [line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
              if line.startswith("model name")]
    return f"{models[0] if models else platform.machine()}, {os.cpu_count()} cores"


def summary(out: list, lessons: list[Lesson], ref: dict, say) -> dict:
    """Latency of the ordinary sessions per kind; errors and mismatches of all of them."""
    rows = {"normal": [], "faulty": []}
    for session, step, kind, ms, digest, error in out:
        lesson = lessons[session]
        expected = ref[lesson].get(step, (None, None))[0]
        mismatch = bool(digest and expected and digest != expected)
        rows["faulty" if lesson.fault else "normal"].append((kind, ms, error, mismatch))
        if error or mismatch:
            say(f"session {session} step {step} ({kind}, fault {lesson.fault}): "
                + (error or f"page {digest} differs from the reference {expected}"))

    def stats(rows_: list) -> dict:
        times = [ms for _, ms, _, _ in rows_]
        return {"n": len(rows_), "p50_ms": pct(times, 0.5), "p95_ms": pct(times, 0.95),
                "max_ms": round(max(times), 1) if times else None,
                "errors": sum(bool(e) for *_, e, _ in rows_), "mismatches": sum(m for *_, m in rows_)}

    normal, faulty = stats(rows["normal"]), stats(rows["faulty"])
    return {"interactions": normal["n"], "p50_ms": normal["p50_ms"], "p95_ms": normal["p95_ms"],
            "max_ms": normal["max_ms"], "errors": normal["errors"] + faulty["errors"],
            "mismatches": normal["mismatches"] + faulty["mismatches"], "faulty_interactions": faulty["n"],
            "faulty_errors": faulty["errors"], "faulty_mismatches": faulty["mismatches"],
            "reference_errors": sum(bool(e) for steps in ref.values() for _, e in steps.values()),
            "per_kind": {kind: stats([r for r in rows["normal"] if r[0] == kind])
                         for kind in dict.fromkeys(r[0] for r in rows["normal"])}}


def print_table(r: dict, lessons: list[Lesson]) -> None:
    table = [(kind, k["n"], k["p50_ms"], k["p95_ms"], k["max_ms"], k["errors"], k["mismatches"])
             for kind, k in r["per_kind"].items()]
    table += [("all", r["interactions"], r["p50_ms"], r["p95_ms"], r["max_ms"], r["errors"] - r["faulty_errors"],
               r["mismatches"] - r["faulty_mismatches"]),
              ("faulty", r["faulty_interactions"], "", "", "", r["faulty_errors"], r["faulty_mismatches"])]
    for row in [("interaction", "n", "p50 ms", "p95 ms", "max ms", "errors", "mismatches")] + table:
        print("{:<12}{:>6}{:>10}{:>10}{:>10}{:>8}{:>12}".format(*(str(v) for v in row)))
    faults = ", ".join(sorted({lesson.fault for lesson in lessons if lesson.fault})) or "none"
    print(f"faulty sessions: {r['faulty_sessions']} ({faults}); server peak RSS {r['rss_mb']} MB")
    print(f"answers: {r['answers']} answered, {r['answers_stored']} stored, {r['lost_answers']} lost")
    print(f"follow the teacher: {r['followers']} followers, p50 {r['follow_p50_ms']} ms, p95 {r['follow_p95_ms']} ms, "
          f"max {r['follow_max_ms']} ms, {r['follow_errors']} errors {r['follow_error_kinds'] or ''}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sessions", type=int, default=10)
    p.add_argument("--think", type=float, default=2.5, help="seconds between a session's interactions (±20%%)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds a rerun may take before it is an error")
    p.add_argument("--faulty", type=int, default=None,
                   help="sessions sending bad input or disconnecting (default: 10%%, at least 1 from 5 sessions)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--port", type=int, default=None, help="default: a free port")
    p.add_argument("--ramp", type=float, default=5.0, help="sessions start spread over this many seconds")
    p.add_argument("--followers", type=int, default=None, help="sessions following the teacher (default: --sessions)")
    p.add_argument("--class-db", default=None,
                   help="the class store's URL (e.g. postgresql://...); default: a new SQLite file in a temporary folder")
    p.add_argument("--json", action="store_true", help="print only the JSON line")
    p.add_argument("--append", type=Path, help="also append the JSON line to this JSONL file")
    args = p.parse_args(argv)
    for sig in (signal.SIGINT, signal.SIGTERM):  # Ctrl-C or a kill: stop the server, then exit
        signal.signal(sig, signal.default_int_handler)
    say = (lambda *a: None) if args.json else (lambda *a: print(*a, file=sys.stderr, flush=True))

    n = args.sessions
    # the class: its own store (both servers share it), opened by the bench as the teacher
    class_dir = tempfile.mkdtemp(prefix="classroom-bench-")
    key = secrets.token_urlsafe(12)
    env = {"ATTN_EXPLORER_CLASS_DIR": class_dir, "ATTN_EXPLORER_TEACHER_KEY": key,
           "ATTN_EXPLORER_CLASS_DB": args.class_db or ""}
    store = ClassStore(args.class_db or f"sqlite:///{Path(class_dir) / 'classes.sqlite3'}", teacher_key=key)
    code = store.open_class(key).code
    faulty = args.faulty if args.faulty is not None else max(int(n >= 5), round(n / 10))
    faulty_at = sorted(random.Random(args.seed).sample(range(n), min(faulty, n)))
    lessons = [Lesson(SENTENCES[i % len(SENTENCES)], SENTENCES[(i + 1) % len(SENTENCES)], MODELS[i % len(MODELS)],
                      FAULTS[faulty_at.index(i) % len(FAULTS)] if i in faulty_at else None, code, i % 5)
               for i in range(n)]
    distinct = list(dict.fromkeys(lessons))
    started = datetime.now().astimezone().isoformat(timespec="seconds")

    try:
        say(f"reference: {len(distinct)} distinct lesson(s), one at a time, on a fresh server")
        with server(args.port, env) as (_, port):
            ref = asyncio.run(reference(distinct, port, args))
        say(f"class: {n} session(s) ({len(faulty_at)} faulty), think {args.think} s, on a fresh server")
        with server(args.port, env) as (proc, port):
            before = len(store.summary(key, code))
            out, rss, cpu = asyncio.run(classroom(lessons, proc, port, args))
            stored = len(store.summary(key, code)) - before
            followers = args.followers if args.followers is not None else n
            say(f"follow the teacher: {followers} session(s)")
            follow = asyncio.run(follow_the_teacher(port, args, store, key, code, followers))
    except RuntimeError as e:  # the server did not start, or its first page failed
        print(f"classroom: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("classroom: interrupted; server stopped", file=sys.stderr)
        return 130
    finally:
        store.engine.dispose()
        shutil.rmtree(class_dir, ignore_errors=True)

    answered = sum(1 for _, _, kind, _, _, error in out if kind == "answer" and not error)
    result = {"bench": "classroom", "sessions": n, **summary(out, lessons, ref, say), "answers": answered,
              "answers_stored": stored, "lost_answers": max(0, answered - stored), "class_store": store.kind, **follow}
    result.update(rss_mb=round(rss, 1), **cpu, faulty_sessions=len(faulty_at), think_s=args.think,
                  ramp_s=args.ramp, timeout_s=args.timeout, seed=args.seed, host=host(), started=started,
                  commit=subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                        text=True).stdout.strip(), date=date.today().isoformat(),
                  machine=f"{platform.machine()} {os.cpu_count()} cores")  # as scripts/run_benchmarks.sh stamps
    if not args.json:
        print_table(result, lessons)
    line = json.dumps(result, ensure_ascii=False)
    if args.append:
        with open(args.append, "a") as f:
            f.write(line + "\n")
    print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
