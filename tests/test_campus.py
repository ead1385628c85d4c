"""A room fair to its honest students, through a real server (docs/campus.md): costly work waits in
its own lane while cheap runs pass it (server/lanes.py), one run's work is bounded with a message
(server/costs.py), and a websocket from another origin, another port of the same host included,
is refused (server/identity.py ``SameOriginSockets``)."""
from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from conftest import ROOT
from helpers.lecture import load_bench

bench = load_bench()
PAGE_BUDGET_S = 180.0  # a page under the costly runs, on a busy 2-core host
COSTLY_TABS = 3
SERVER_STORES: dict[str, Path] = {}  # a server's address -> the folder of its class store


@pytest.fixture(scope="module")
def shipped_server(tmp_path_factory):
    """One process serving the shipped RNNsearch alone (a costly run takes seconds there, unlike the
    tiny zoo's), one costly run at a time."""
    folder, store = tmp_path_factory.mktemp("one-model"), tmp_path_factory.mktemp("store")
    for name in ("rnnsearch", "_vocab"):
        if (ROOT / "checkpoints" / name).exists():
            (folder / name).symlink_to(ROOT / "checkpoints" / name)
    env = {"ATTN_EXPLORER_CHECKPOINTS": str(folder), "OMP_NUM_THREADS": "1", "ATTN_EXPLORER_COSTLY_RUNS": "1",
           "ATTN_EXPLORER_RUN_SECONDS": "600", "ATTN_EXPLORER_CLASS_DIR": str(store),
           "ATTN_EXPLORER_CLASS_DB": "", "ATTN_EXPLORER_PROXIES": "", "ATTN_EXPLORER_TEACHER_KEY": ""}
    with bench.server(None, env=env) as target:
        SERVER_STORES[target.base] = store
        yield target.base


def load(base: str) -> dict:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(base + "/_attn/load", timeout=30) as response:
        return json.loads(response.read())


def until(condition, budget: float, what: str):
    deadline = time.monotonic() + budget
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"not within {budget:.0f} s: {what}")


def long_text(n: int) -> str:
    """A different 1,000-character sentence for each costly tab (no cache hit)."""
    words = ("the committee met again today to discuss budget energy policy schools rivers trains "
             "hospitals farmers letters museum").split()
    return " ".join(words[(n + i * 7) % len(words)] for i in range(200))[:1000]


def beside_a_full_lane(base: str, costly_path: str, costly_extra: str, path: str, query: str):
    """COSTLY_TABS tabs of one address ask ``costly_path`` on 1,000 characters (``costly_extra``
    added to their query); once one holds the lane and the others wait (the app's own signal,
    ``/_attn/load``), one more tab opens ``path?query``: (its error, its page, the load then)."""
    async def scenario():
        costly = [bench.Tab(base, PAGE_BUDGET_S) for _ in range(COSTLY_TABS)]
        runs = [asyncio.create_task(tab.do(("open", costly_path, f"text={long_text(n).replace(' ', '+')}{costly_extra}")))
                for n, tab in enumerate(costly)]
        await asyncio.to_thread(until, lambda: load(base)["costly_running"] == 1
                                and load(base)["costly_waiting"] == COSTLY_TABS - 1, PAGE_BUDGET_S, "the lane full")
        other = bench.Tab(base, PAGE_BUDGET_S)
        _, _, error = await other.do(("open", path, query))
        after = load(base)
        await other.close()
        for tab in costly:
            await tab.close()
        for run in runs:
            run.cancel()
        await asyncio.gather(*runs, return_exceptions=True)
        return error, other.drawn, after

    return asyncio.run(scenario())


def test_a_cheap_run_passes_costly_runs_that_hold_the_lane(shipped_server):
    error, drawn, after = beside_a_full_lane(shipped_server, "", "&beam=10", "", "text=I+will+eat.")
    assert error is None and b"French" in drawn
    # the cheap run ended while costly work still waited: it was not served after them
    assert after["costly_waiting"] >= 1, after


def test_a_visitors_shorter_attribution_goes_ahead_of_costly_ones_holding_the_lane(shipped_server):
    """Tabs of one address (no student cookie) ask for attribution on 1,000 characters (cut to 30
    words): one holds the lane, the others wait. A visitor behind the same address asks for it on an
    18-word sentence, costly too but less than half their estimate: it is drawn while they still wait."""
    visitor_text = "the farmers wrote letters to the museum about the trains and the rivers near the schools again today"
    error, drawn, after = beside_a_full_lane(shipped_server, "attribution", "", "attribution",
                                             f"text={visitor_text.replace(' ', '+')}")
    assert error is None and b"Attention beside attribution" in drawn and visitor_text.encode() in drawn
    assert after["costly_waiting"] >= 1, after  # drawn while the larger costly work still waited


def test_beam_search_past_the_bound_says_where_it_cut(shipped_server):
    words = " ".join(["school"] * 75)
    tab = bench.Tab(shipped_server, PAGE_BUDGET_S)

    async def visit():
        try:
            return (await tab.do(("open", "", f"text={words.replace(' ', '+')}&beam=4")))[2]
        finally:
            await tab.close()
    assert asyncio.run(visit()) is None
    assert b"Beam search here takes at most 60 words: the first 60 are shown (of 75)" in tab.drawn


@pytest.mark.parametrize("origin, refused", [("same", False), ("other-port", True), ("other-scheme", True),
                                             ("other-host", True)])
def test_a_websocket_from_another_origin_is_refused(shipped_server, origin, refused):
    base = shipped_server
    host = base.split("://", 1)[1]
    port = int(host.rsplit(":", 1)[1])
    named = {"same": base, "other-port": f"http://127.0.0.1:{port + 1}", "other-scheme": f"https://{host}",
             "other-host": f"http://localhost:{port}"}[origin]

    async def open_socket() -> int:
        try:
            async with connect(f"ws://{host}/_stcore/stream", subprotocols=["streamlit"], origin=named,
                               proxy=None, open_timeout=60):
                return 101
        except InvalidStatus as e:
            return e.response.status_code

    assert asyncio.run(open_socket()) == (403 if refused else 101)


def follow_request(base: str, code: str, cookie: str = "", version: int = 0) -> tuple[int, dict]:
    """GET /_attn/follow as the page's listener asks, past ``version``: (status, JSON answer)."""
    request = urllib.request.Request(f"{base}/_attn/follow?class={code}&v={version}",
                                     headers={"Cookie": cookie} if cookie else {})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=120) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, {"retry_after": e.headers.get("Retry-After"), **json.loads(e.read() or b"{}")}


@pytest.fixture(scope="module")
def class_of_server(shipped_server):
    """The server's class store (the SQLite file its environment names), a class opened in it."""
    from server.class_store import ClassStore
    store = ClassStore(f"sqlite:///{shipped_server_store(shipped_server)}")
    key = store.teacher_key()
    yield store, key, store.open_class(key).code
    store.engine.dispose()


def shipped_server_store(base: str):
    return SERVER_STORES[base] / "classes.sqlite3"


def joined_cookie(store, code: str) -> str:
    """A new student's ``attn_student`` cookie, the student on the class's roster (as their page's join puts them)."""
    from server import identity
    value = identity.new_student_cookie(store.cookie_secret())
    store.join(code, identity.student_id(store.cookie_secret(), value), "127.0.0.1")
    return f"{identity.STUDENT_COOKIE}={value}"


def test_one_follow_listener_per_student(shipped_server, class_of_server):
    store, key, code = class_of_server
    cookie, other = (joined_cookie(store, code) for _ in range(2))
    with ThreadPoolExecutor(3) as pool:
        first = pool.submit(follow_request, shipped_server, code, cookie)
        until(lambda: load(shipped_server)["follow_listeners"] == 1, PAGE_BUDGET_S, "the first listener open")
        second = pool.submit(follow_request, shipped_server, code, cookie)
        status, said = first.result(timeout=PAGE_BUDGET_S)  # the same student's older request gives way
        assert status == 409 and "another tab" in said["error"]
        third = pool.submit(follow_request, shipped_server, code, other)  # another student: a listener of their own
        until(lambda: load(shipped_server)["follow_listeners"] == 2, PAGE_BUDGET_S, "two students listening")
        store.send(key, code, "step-through", {"text": "I will eat.", "model": "rnnsearch", "step": "1"})
        assert second.result(timeout=PAGE_BUDGET_S)[0] == 200 and third.result(timeout=PAGE_BUDGET_S)[0] == 200


@pytest.fixture(scope="module")
def room(tiny_zoo, tmp_path_factory):
    """One process on the tiny zoo and a SQLite store of its own, with the default seats and joins:
    every tab comes from this machine, one address, as a school behind its NAT."""
    from server.class_store import ClassStore
    folder = tmp_path_factory.mktemp("room")
    env = {"ATTN_EXPLORER_CHECKPOINTS": str(tiny_zoo), "OMP_NUM_THREADS": "1", "ATTN_EXPLORER_CLASS_DB": "",
           "ATTN_EXPLORER_CLASS_DIR": str(folder), "ATTN_EXPLORER_TEACHER_KEY": "", "ATTN_EXPLORER_PROXIES": "",
           "ATTN_EXPLORER_CLASS_SEATS": "", "ATTN_EXPLORER_JOINS_PER_MINUTE": ""}
    store = ClassStore(f"sqlite:///{folder / 'classes.sqlite3'}")
    with bench.server(None, env=env) as target:
        yield target.base, store, store.teacher_key()
    store.engine.dispose()


JOINED = (b"Following class", b"You are **")  # what a tab in the class shows in its Class panel


async def open_class_link(base: str, code: str) -> bench.Tab:
    """A new student (a new connection, a new id) opening the class link; the tab, still open."""
    tab = bench.Tab(base, PAGE_BUDGET_S)
    _, _, error = await tab.do(("open", "classroom", f"class={code}"))
    assert error is None, error
    return tab


async def ask_again(tab) -> None:
    """What the browser does at the refused panel's timer: the fragment reruns (and, once in, the page)."""
    interval, fragment = tab.timer
    await tab.send(fragment_id=fragment)
    _, error = await asyncio.wait_for(tab.rerun_end(fragment), PAGE_BUDGET_S)
    assert error is None, error


def test_a_school_behind_one_address_fills_its_400_seats_and_the_401st_joins_when_a_seat_frees(room):
    from server import settings
    base, store, key = room
    code = store.open_class(key).code
    seats = settings.class_seats()
    assert store.admission(code).seats == seats == 400

    async def school():
        joined = 0
        for k in range(0, seats, 16):  # sixteen students opening the link at once, as a room does
            tabs = await asyncio.gather(*(open_class_link(base, code) for _ in range(min(16, seats - k))))
            joined += sum(any(said in t.drawn for said in JOINED) for t in tabs)
            for t in tabs:
                await t.close()
        late = await open_class_link(base, code)
        refused = late.drawn.decode("utf-8", "replace")
        store.set_admission(key, code, seats=seats + 1)  # the teacher adds a seat
        await ask_again(late)  # no reload: the panel's own timer
        now_in = any(said in late.drawn for said in JOINED)
        await late.close()
        return joined, refused, now_in
    joined, refused, now_in = asyncio.run(school())
    assert joined == seats and store.class_counts(key, code).joined == seats + 1
    assert f"Not in class {code}: class {code} has its {seats} seats taken" in refused
    assert now_in


def test_with_approve_joins_a_student_waits_by_name_and_joins_once_let_in(room):
    base, store, key = room
    code = store.open_class(key).code
    store.set_admission(key, code, approve=True)

    async def wait_and_join():
        tab = await open_class_link(base, code)
        (name, _), = store.waiting_students(key, code)
        waiting = f"you wait as **{name}**".encode() in tab.drawn and not any(s in tab.drawn for s in JOINED)
        await ask_again(tab)
        still = not any(s in tab.drawn for s in JOINED)  # not let in yet: still waiting
        assert store.approve_join(key, code, name) == 1
        await ask_again(tab)
        joined = f"You are **{name}**".encode() in tab.drawn or b"Following class" in tab.drawn
        await tab.close()
        return waiting, still, joined
    waiting, still, joined = asyncio.run(wait_and_join())
    assert waiting and still and joined
    assert store.class_counts(key, code).joined == 1 and store.waiting_students(key, code) == []


def test_unknown_class_codes_are_throttled_per_address(shipped_server, class_of_server):
    """Last of the module: it leaves this machine's address throttled for a while."""
    from server.follow import UNKNOWN_CODES
    store, key, code = class_of_server
    answers = [follow_request(shipped_server, f"ZZZZ{n:02d}")[0] for n in range(UNKNOWN_CODES)]
    assert answers == [404] * UNKNOWN_CODES
    status, said = follow_request(shipped_server, "ZZZZ99")
    assert status == 429 and int(said["retry_after"]) >= 1
    assert follow_request(shipped_server, code)[0] == 429  # unnamed: not looked up, even for a real class
    student = joined_cookie(store, code)  # a student of the class, behind the same address: never refused for it
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(follow_request, shipped_server, code, student, store.follow(code).version)
        until(lambda: load(shipped_server)["follow_listeners"] >= 1, PAGE_BUDGET_S, "the student's listener open")
        store.send(key, code, "step-through", {"text": "I will eat.", "model": "rnnsearch", "step": "2"})
        status, said = waiting.result(timeout=PAGE_BUDGET_S)
    assert status == 200 and "step=2" in said["link"]
