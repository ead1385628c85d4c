"""A class on one server: N browser sessions play a lesson at once; latency, errors, memory.

    python bench/classroom.py [--sessions 10] [--think 2.5] [--followers N] [--json] [--append results/benchmarks.jsonl]

Starts the real server (``streamlit run app.py``, shipped checkpoints) and drives it the way
browsers do: over Streamlit's websocket (``/_stcore/stream``), sending the front end's
``BackMsg`` rerun requests and reading the ``ForwardMsg`` replies (no AppTest, no browser).
Each session opens a shared link to the Translate page, changes the sentence, opens Compare
with four models, Step through with two of its sections shown (``SHOWN_SECTIONS``, as a
teacher's link names them; then moves its step slider five times) and the Beam search tree,
then answers an exercise of the class the bench opened (``exercise``: the Exercises page of
the class link, ``choose``: a mechanism, ``answer``: the check button, which stores the
answer through the class store), thinking ``--think`` seconds (±20 %) between interactions.
Sessions start spread over ``--ramp`` seconds. ``--faulty`` of them send an empty, a
5,000-character or a markup sentence, or close the socket right after asking for a rerun
(then open the link again).

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
- ``reference_cpu_ms``: the server's CPU milliseconds per interaction, by kind, in the reference
  run (each session alone on its server, so each interaction's CPU is its own; mean of 10 ms
  ticks): where a click's CPU goes, page by page.
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
from contextlib import contextmanager, nullcontext
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
sys.path.insert(0, str(ROOT))
from server.lecture import COOKIE as REPLICA_COOKIE, free_port  # noqa: E402
from test_browser import stop  # noqa: E402 - the browser test's own helper
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
SHOWN_SECTIONS = "weights,output"  # Step through's sections the lesson's link opens (each model has these two, or one)
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
                  ("step", ("goto", "step-through", link(text=text, model=self.model, sections=SHOWN_SECTIONS)))]
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

    def __init__(self, base: str, timeout: float, sticky: bool = False):
        self.base, self.timeout, self.sticky = base.rstrip("/"), timeout, sticky
        self.host = self.base.split("://", 1)[1]
        self.cookie = ""  # behind HAProxy: "ATTN_REPLICA=r1", as the browser's cookie jar holds it
        self.path = ""  # the page's URL path, for a reconnect
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
                if self.sticky:  # a browser loads the page first; the proxy's answer names the replica
                    await asyncio.to_thread(self.fetch_cookie, target)
                headers = {"Cookie": self.cookie} if self.cookie else None
                self.ws = await connect(f"ws://{self.host}/_stcore/stream", subprotocols=["streamlit"],
                                        origin=self.base, proxy=None, max_size=None, additional_headers=headers,
                                        ping_interval=None, open_timeout=self.timeout)  # as browsers: deflate, no pings
                self.page, self.query, self.widgets, self.path = "", value, {}, target
                await self.send(page_name=target)  # a first load names its page by URL path
            elif verb == "goto":  # a page link carrying query parameters, as a shared link does
                self.page, self.query, self.path = self.pages[target], value, target
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
        info.url = f"{self.base}/{page_name}?{self.query}"
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

    def fetch_cookie(self, path: str) -> None:
        """GET the page's HTML through the proxy, keeping the replica cookie it sets (or the one
        it sets anew when the replica named by the old cookie is gone)."""
        request = urllib.request.Request(f"{self.base}/{path}", headers={"Cookie": self.cookie} if self.cookie else {})
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(request, timeout=self.timeout) as response:
            for header in response.headers.get_all("Set-Cookie") or []:
                pair = header.split(";", 1)[0].strip()
                if pair.startswith(REPLICA_COOKIE + "="):
                    self.cookie = pair

    @property
    def replica(self) -> str:
        return self.cookie.split("=", 1)[1] if self.cookie else ""

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


async def attend(n: int, lesson: Lesson, target: Target, args, think: float, delay: float, out: list,
                 cpu: dict | None = None) -> None:
    """One session plays its lesson; appends (session, step, kind, ms, digest, error, replica) to out.
    With ``cpu`` (the reference run: one student alone on the server), adds to ``cpu[kind]``
    the server CPU seconds from each interaction's start to the next one's.

    A tab whose socket breaks (its replica died) does what Streamlit's front end does: it
    reconnects, and the page reruns from its URL. With ``--kill-replica-after`` that is timed
    as a "reconnect" row (from the failure until the page is served again); otherwise the
    student's lesson ends there."""
    rng = random.Random(f"{args.seed}:{n}")  # per session, so scheduling does not change the plan
    await asyncio.sleep(delay)
    tab = Tab(target.base, args.timeout, target.sticky)
    server_cpu = (lambda: sum(cpu_seconds(pid) for pid in target.pids())) if cpu is not None else None
    try:
        for step, (kind, action) in enumerate(lesson.steps()):
            if step:
                await asyncio.sleep(think * rng.uniform(0.8, 1.2))
            replica = tab.replica
            before = server_cpu() if server_cpu else 0.0
            ms, digest, error = await tab.do(action)
            if server_cpu:
                await asyncio.sleep(0.05)  # the replies still being sent belong to this interaction
                cpu.setdefault(kind, []).append(server_cpu() - before)
            out.append((n, step, kind, ms, digest, error, replica or tab.replica))
            if error and (error == "timeout" or error.startswith("disconnect")):
                if not args.kill_replica_after:
                    break  # the tab is in no known state: this student's lesson ends here
                served = await reconnect(tab, args.recover_within)
                out.append((n, step, "reconnect", served or 1000 * args.recover_within, None,
                            None if served else f"not served again within {args.recover_within:.0f} s", tab.replica))
                if not served:
                    break
    finally:
        await tab.close()


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


@contextmanager
def server(port: int | None, env: dict | None = None, root: Path = ROOT):
    """The app's server on 127.0.0.1, healthy and past its first (model-loading) page; killed
    on the way out, whatever happens. ``env``: more environment (the class store's settings);
    ``root``: the checkout whose app.py runs (another commit's, for a before/after)."""
    port = port or free_port()
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
                             "--server.port", str(port), "--server.address", "127.0.0.1",
                             "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
                            cwd=root, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})},
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
            error = asyncio.run(Tab(f"http://127.0.0.1:{port}", 180).do(("open", "", "")))[2]
        if error:
            log.seek(0)
            raise RuntimeError(f"server on port {port}: {error}; its log ends:\n"
                               + log.read().decode(errors="replace")[-3000:])
        yield Target(f"http://127.0.0.1:{port}", pids=lambda: [proc.pid] if proc.poll() is None else [])
    finally:
        stop(proc)
        log.close()


@contextmanager
def lecture(replicas: int):
    """``replicas`` app processes behind HAProxy (server/lecture.py, as scripts/serve.py runs
    them) on loopback ports, each past its first page; the launcher restarts a replica that
    dies (``--kill-replica-after``). Everything is stopped on the way out."""
    import threading
    from server.lecture import Lecture
    hall = Lecture(replicas=replicas, port=free_port(), address="127.0.0.1", say=lambda m: print(m, file=sys.stderr))
    try:
        hall.start()
        hall.wait_healthy()
        for replica in hall.local:  # each replica's first page, as server() visits it
            error = asyncio.run(Tab(f"http://127.0.0.1:{replica.port}", 180).do(("open", "", "")))[2]
            if error:
                raise RuntimeError(f"replica {replica.name}: {error}")
        watcher = threading.Thread(target=hall.watch, name="lecture-watch", daemon=True)
        watcher.start()
        yield Target(f"http://127.0.0.1:{hall.port}", sticky=True, pids=lambda: [r.proc.pid for r in hall.local if r.alive],
                     lecture=hall)
    finally:
        hall.stop()


@dataclass
class Target:
    """What the sessions talk to: a URL; whether a proxy sets a replica cookie there; the
    server processes to measure (none for ``--url``); the lecture, when the bench runs one."""

    base: str
    sticky: bool = False
    pids: object = list
    lecture: object = None

    def kill_one(self) -> str:
        """SIGKILL the first local replica (its whole process group); its name."""
        replica = self.lecture.local[0]
        os.killpg(replica.proc.pid, signal.SIGKILL)
        return replica.name


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


def cpu_ms_by_kind(cpu: dict[str, list[float]]) -> dict[str, float]:
    """Mean server CPU milliseconds per interaction of each kind, from ``reference``'s seconds."""
    return {kind: round(1000 * sum(v) / len(v), 1) for kind, v in cpu.items()}


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (all its threads), from /proc/PID/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Meter:
    """The server processes' peak resident memory (summed) and CPU seconds, sampled every
    0.5 s. A replica restarted during the run is counted from its first sample."""

    def __init__(self, target: Target):
        self.target, self.peak_kb, self.first, self.last = target, 0, {}, {}

    def sample(self) -> int:
        total = 0
        for pid in self.target.pids():
            try:
                cpu = cpu_seconds(pid)
            except OSError:
                continue
            self.first.setdefault(pid, cpu)
            self.last[pid] = cpu
            total += rss_kb(pid)
        self.peak_kb = max(self.peak_kb, total)
        return total

    @property
    def cpu_s(self) -> float:
        return sum(self.last[pid] - self.first[pid] for pid in self.last)


async def classroom(lessons: list[Lesson], target: Target, args) -> tuple[list, dict]:
    """Every session at once (starts spread over --ramp); (interactions, measures: peak RSS in
    MB, the server's and this client's CPU seconds over the run's wall seconds, the replica
    killed by --kill-replica-after)."""
    out, meter, killed = [], Meter(target), {}
    meter.sample()
    wall, client_cpu = time.perf_counter(), time.process_time()

    async def sample():
        while True:
            meter.sample()
            await asyncio.sleep(0.5)

    async def kill():
        await asyncio.sleep(args.kill_replica_after)
        meter.sample()
        killed["name"] = target.kill_one()
        killed["at_s"] = round(time.perf_counter() - wall, 1)

    tasks = [asyncio.create_task(sample())]
    if args.kill_replica_after:
        tasks.append(asyncio.create_task(kill()))
    try:
        await asyncio.gather(*(attend(n, lesson, target, args, args.think, args.ramp * n / len(lessons), out)
                               for n, lesson in enumerate(lessons)))
    finally:
        for task in tasks:
            task.cancel()
    meter.sample()
    wall = time.perf_counter() - wall
    measured = bool(target.pids())
    clicks = sum(kind != "reconnect" for _, _, kind, *_ in out)
    cpu = {"wall_s": round(wall, 1), "server_cpu_s": round(meter.cpu_s, 1) if measured else None,
           "client_cpu_s": round(time.process_time() - client_cpu, 1),
           "server_cpu_ms_per_click": round(1000 * meter.cpu_s / max(1, clicks), 1) if measured else None,
           "rss_mb": round(meter.peak_kb / 1024, 1) if measured else None}
    return out, {**cpu, "killed_replica": killed or None}


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
    """``n`` sessions open the class link and follow; the teacher, whose own screen shows the
    page (so its decoding is in the shared cache, as in a lesson), sends FOLLOWED; per follower,
    the milliseconds from the send until the teacher's page has drawn, showing that sentence at
    that step. Each follower polls as the browser does: its fragment's rerun every interval."""
    page, sentence, model, step = FOLLOWED
    tabs = [Tab(target.base, args.timeout, target.sticky) for _ in range(n)]
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
    teacher = Tab(target.base, args.timeout, target.sticky)  # the teacher's screen shows the page before sending it
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


def summary(out: list, lessons: list[Lesson], ref: dict | None, say, killed: str | None = None) -> dict:
    """Latency of the ordinary sessions per kind; errors and mismatches of all of them (no
    mismatches without a reference: ``--soak``); sessions per replica; with a killed replica,
    the errors of its sessions apart from the others' and how long they took to be served again."""
    rows = {"normal": [], "faulty": []}
    reconnects, by_replica, on_killed = [], {}, set()
    for session, step, kind, ms, digest, error, replica in out:
        lesson = lessons[session]
        if replica:
            by_replica.setdefault(replica, set()).add(session)
            if replica == killed:
                on_killed.add(session)
        if kind == "reconnect":
            reconnects.append((session, ms, error))
            if error:
                say(f"session {session}: {error}")
            continue
        expected = ref[lesson].get(step, (None, None))[0] if ref else None
        mismatch = bool(digest and expected and digest != expected)
        rows["faulty" if lesson.fault else "normal"].append((kind, ms, error, mismatch, session))
        if error or mismatch:
            say(f"session {session} step {step} ({kind}, fault {lesson.fault}, replica {replica or '-'}): "
                + (error or f"page {digest} differs from the reference {expected}"))

    def stats(rows_: list) -> dict:
        times = [r[1] for r in rows_]
        return {"n": len(rows_), "p50_ms": pct(times, 0.5), "p95_ms": pct(times, 0.95),
                "max_ms": round(max(times), 1) if times else None,
                "errors": sum(bool(r[2]) for r in rows_), "mismatches": sum(r[3] for r in rows_)}

    normal, faulty = stats(rows["normal"]), stats(rows["faulty"])
    result = {"interactions": normal["n"], "p50_ms": normal["p50_ms"], "p95_ms": normal["p95_ms"],
              "max_ms": normal["max_ms"], "errors": normal["errors"] + faulty["errors"],
              "mismatches": (normal["mismatches"] + faulty["mismatches"]) if ref else None,
              "faulty_interactions": faulty["n"], "faulty_errors": faulty["errors"],
              "faulty_mismatches": faulty["mismatches"] if ref else None,
              "reference_errors": sum(bool(e) for steps in ref.values() for _, e in steps.values()) if ref else None,
              "replica_sessions": {name: len(s) for name, s in sorted(by_replica.items())} or None,
              "per_kind": {kind: stats([r for r in rows["normal"] if r[0] == kind])
                           for kind in dict.fromkeys(r[0] for r in rows["normal"])}}
    if killed:
        all_rows = rows["normal"] + rows["faulty"]
        result.update(
            killed_replica_sessions=len(on_killed),
            killed_replica_errors=sum(bool(r[2]) for r in all_rows if r[4] in on_killed),
            other_replica_errors=sum(bool(r[2]) for r in all_rows if r[4] not in on_killed),
            reconnects=len(reconnects), reconnects_failed=sum(bool(e) for *_, e in reconnects),
            served_again_max_s=round(max((ms for _, ms, _ in reconnects), default=0) / 1000, 1))
    return result


def print_table(r: dict, lessons: list[Lesson]) -> None:
    table = [(kind, k["n"], k["p50_ms"], k["p95_ms"], k["max_ms"], k["errors"], k["mismatches"])
             for kind, k in r["per_kind"].items()]
    table += [("all", r["interactions"], r["p50_ms"], r["p95_ms"], r["max_ms"], r["errors"] - r["faulty_errors"],
               (r["mismatches"] or 0) - (r["faulty_mismatches"] or 0)),
              ("faulty", r["faulty_interactions"], "", "", "", r["faulty_errors"], r["faulty_mismatches"])]
    for row in [("interaction", "n", "p50 ms", "p95 ms", "max ms", "errors", "mismatches")] + table:
        print("{:<12}{:>6}{:>10}{:>10}{:>10}{:>8}{:>12}".format(*(str(v) for v in row)))
    faults = ", ".join(sorted({lesson.fault for lesson in lessons if lesson.fault})) or "none"
    print(f"faulty sessions: {r['faulty_sessions']} ({faults}); server peak RSS {r['rss_mb']} MB; "
          f"server CPU per click {r['server_cpu_ms_per_click']} ms; sessions per replica {r['replica_sessions']}")
    if r.get("answers") is not None:
        print(f"answers: {r['answers']} answered, {r['answers_stored']} stored, {r['lost_answers']} lost")
    if r.get("followers"):
        print(f"follow the teacher: {r['followers']} followers, p50 {r['follow_p50_ms']} ms, p95 {r['follow_p95_ms']} ms, "
              f"max {r['follow_max_ms']} ms, {r['follow_errors']} errors {r['follow_error_kinds'] or ''}")
    if r.get("killed_replica"):
        print(f"killed {r['killed_replica']}: its {r['killed_replica_sessions']} session(s) had "
              f"{r['killed_replica_errors']} error(s), the others {r['other_replica_errors']}; "
              f"served again within {r['served_again_max_s']} s ({r['reconnects_failed']} of {r['reconnects']} not)")


def make_lessons(n: int, seed: int, sentences: list[str], faulty: int | None = None, fresh: bool = False,
                 class_code: str = "") -> list[Lesson]:
    """n sessions' lessons, 10 % of them faulty. Session i translates sentences i and i + 1 (the
    default lesson: sessions share sentences, as a class following one link does), or with
    ``fresh`` sentences 2i and 2i + 1 (no two sessions share one); with ``class_code``, each then
    answers "which mechanism" exercise i mod 5 in that class."""
    faulty = faulty if faulty is not None else max(int(n >= 5), round(n / 10))
    faulty_at = sorted(random.Random(seed).sample(range(n), min(faulty, n)))
    k = len(sentences)
    first, second = (lambda i: 2 * i, lambda i: 2 * i + 1) if fresh else (lambda i: i, lambda i: i + 1)
    return [Lesson(sentences[first(i) % k], sentences[second(i) % k], MODELS[i % len(MODELS)],
                   FAULTS[faulty_at.index(i) % len(FAULTS)] if i in faulty_at else None, class_code, i % 5)
            for i in range(n)]


def news_sentences(seed: int) -> list[str]:
    """Fresh sentences for ``--soak``: WMT news (newstest2009–2013, the English side), 8–20
    words, in a seeded order; none is among the app's examples or this lesson's SENTENCES."""
    import gzip
    lines = []
    for year in range(2009, 2014):
        path = ROOT.parent / "shared" / "data" / "wmt-news" / f"newstest{year}.en.gz"
        with gzip.open(path, "rt", encoding="utf-8") as f:
            lines += [line.strip() for line in f if 8 <= len(line.split()) <= 20 and "<" not in line]
    lines = list(dict.fromkeys(lines))
    random.Random(seed).shuffle(lines)
    return lines


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
    where = p.add_mutually_exclusive_group()
    where.add_argument("--url", help="play the lesson against a running address (e.g. the lecture's proxy) "
                                     "instead of starting a server; its reference run goes there too")
    where.add_argument("--replicas", type=int, default=0,
                       help="start N replicas behind HAProxy (scripts/serve.py's setup) for the class run")
    p.add_argument("--kill-replica-after", type=float, default=0.0, metavar="S",
                   help="with --replicas: SIGKILL one replica S seconds into the run (the fault test)")
    p.add_argument("--recover-within", type=float, default=60.0,
                   help="seconds a tab of a killed replica tries to be served again")
    p.add_argument("--soak", type=float, default=0.0, metavar="MINUTES",
                   help="waves of --sessions sessions on fresh news sentences for this long: RSS and p95 per wave")
    p.add_argument("--json", action="store_true", help="print only the JSON line")
    p.add_argument("--append", type=Path, help="also append the JSON line to this JSONL file")
    args = p.parse_args(argv)
    if args.kill_replica_after and args.replicas < 2:
        p.error("--kill-replica-after needs --replicas 2 or more")
    for sig in (signal.SIGINT, signal.SIGTERM):  # Ctrl-C or a kill: stop the server, then exit
        signal.signal(sig, signal.default_int_handler)
    say = (lambda *a: None) if args.json else (lambda *a: print(*a, file=sys.stderr, flush=True))

    def class_target():
        if args.url:
            return nullcontext(Target(args.url.rstrip("/"), sticky=True))
        return lecture(args.replicas) if args.replicas else server(args.port)

    n = args.sessions
    # the class: a store of its own (every server the bench starts shares it, through the
    # environment they inherit), opened by the bench as the teacher; with --url, only if
    # --class-db names the store of the server there
    class_dir = tempfile.mkdtemp(prefix="classroom-bench-")
    store = code = key = None
    if args.class_db or not args.url:
        key = os.environ.get("ATTN_EXPLORER_TEACHER_KEY") if args.url else secrets.token_urlsafe(12)
        if not args.url:
            os.environ.update(ATTN_EXPLORER_CLASS_DIR=class_dir, ATTN_EXPLORER_TEACHER_KEY=key,
                              ATTN_EXPLORER_CLASS_DB=args.class_db or "")
        store = ClassStore(args.class_db or f"sqlite:///{Path(class_dir) / 'classes.sqlite3'}", teacher_key=key)
        key = store.teacher_key()
        code = store.open_class(key).code
    lessons = make_lessons(n, args.seed, SENTENCES, args.faulty, class_code=code or "")
    distinct = list(dict.fromkeys(lessons))
    started = datetime.now().astimezone().isoformat(timespec="seconds")
    setup = f"{args.replicas} replicas behind HAProxy" if args.replicas else (args.url or "one process")
    result = {"bench": "classroom-soak" if args.soak else "classroom", "sessions": n,
              "replicas": args.replicas or (None if args.url else 1), "url": args.url}
    try:
        if args.soak:
            say(f"soak: waves of {n} session(s) on fresh news sentences for {args.soak} min, {setup}")
            with class_target() as target:
                result.update(soak(target, args, say))
        else:
            say(f"reference: {len(distinct)} distinct lesson(s), one at a time, "
                + ("at the URL (its caches stay warm)" if args.url else "on a fresh server"))
            alone: dict[str, list[float]] = {}
            with (nullcontext(Target(args.url.rstrip("/"), sticky=True)) if args.url else server(args.port)) as target:
                ref = asyncio.run(reference(distinct, target, args, alone))
            # server CPU per interaction kind, each session alone on a fresh server (the tick is 10 ms)
            result["reference_cpu_ms"] = cpu_ms_by_kind(alone)
            say(f"class: {n} session(s) ({sum(bool(x.fault) for x in lessons)} faulty), think {args.think} s, {setup}")
            with class_target() as target:
                before = len(store.summary(key, code)) if store else 0
                out, measures = asyncio.run(classroom(lessons, target, args))
                if store:
                    stored = len(store.summary(key, code)) - before
                    answered = sum(1 for row in out if row[2] == "answer" and not row[5])
                    result.update(answers=answered, answers_stored=stored, lost_answers=max(0, answered - stored),
                                  class_store=store.kind)
                    followers = args.followers if args.followers is not None else n
                    say(f"follow the teacher: {followers} session(s)")
                    result.update(asyncio.run(follow_the_teacher(target, args, store, key, code, followers)))
            killed = (measures["killed_replica"] or {}).get("name")
            result.update(summary(out, lessons, ref, say, killed), **measures)
    except (RuntimeError, TimeoutError, FileNotFoundError) as e:  # a server did not start, or its first page failed
        print(f"classroom: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("classroom: interrupted; servers stopped", file=sys.stderr)
        return 130
    finally:
        if store:
            store.engine.dispose()
        shutil.rmtree(class_dir, ignore_errors=True)

    result.update(faulty_sessions=sum(bool(x.fault) for x in lessons), think_s=args.think,
                  ramp_s=args.ramp, timeout_s=args.timeout, seed=args.seed, host=host(), started=started,
                  commit=subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                                        text=True).stdout.strip(), date=date.today().isoformat(),
                  machine=f"{platform.machine()} {os.cpu_count()} cores")  # as scripts/run_benchmarks.sh stamps
    if not args.json and not args.soak:
        print_table(result, lessons)
    line = json.dumps(result, ensure_ascii=False)
    if args.append:
        with open(args.append, "a") as f:
            f.write(line + "\n")
    print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
