"""Each session's fair share of the server (server/limits.py, its slots server.scheduler's
TurnQueue): decodings served in turn, a per-session rate with a clear refusal, a superseded wait
abandoned."""
from __future__ import annotations

import threading
import time

import pytest

from helpers import until
from server.limits import TokenBuckets
from server.scheduler import Superseded, this_run, TurnQueue


def test_waiting_sessions_are_served_in_turn():
    """One slot; session "flood" queues five decodings, then three others one each: the others
    get the slot before flood's second."""
    slots = TurnQueue(1)
    slots.acquire(("holder",))
    served, threads = [], []

    def decode(who: str) -> None:
        slots.acquire((who,))
        served.append(who)
        slots.release()

    def queue(who: str) -> None:
        before = slots.waiting()
        threads.append(threading.Thread(target=decode, args=(who,)))
        threads[-1].start()
        while slots.waiting() == before:  # in the queue, in this order
            time.sleep(0.005)

    for _ in range(5):
        queue("flood")
    for who in ("a", "b", "c"):
        queue(who)
    slots.release()
    for t in threads:
        t.join(10)
    assert served == ["flood", "a", "b", "c", "flood", "flood", "flood", "flood"]


def test_a_superseded_wait_is_abandoned_and_gives_its_place_back():
    slots = TurnQueue(1)
    slots.acquire(("other",))
    newer = threading.Event()
    outcome = []

    def decode():
        try:
            slots.acquire(("tab",), newer.is_set)
            outcome.append("decoded")
            slots.release()
        except Superseded:
            outcome.append("abandoned")

    t = threading.Thread(target=decode)
    t.start()
    while not slots.waiting():
        time.sleep(0.005)
    newer.set()  # the tab asked for a newer rerun
    t.join(10)
    assert outcome == ["abandoned"] and slots.waiting() == 0
    slots.release()
    slots.acquire(("next",))  # the slot is free: nothing was left holding it
    slots.release()


def test_a_session_past_its_share_is_told_how_long_to_wait_and_others_are_not():
    rate = TokenBuckets(rate=2.0, burst=4.0)
    assert [rate.take("flood", 0.0) for _ in range(4)] == [0.0] * 4
    wait = rate.take("flood", 0.0)
    assert wait == pytest.approx(0.5)  # one token at 2 a second
    assert rate.take("student", 0.0) == 0.0  # another session's share is its own
    assert rate.take("flood", 0.5) == 0.0 and rate.take("flood", 0.5) > 0  # refilled: one more, not two


def test_the_rate_forgets_the_longest_quiet_sessions():
    rate = TokenBuckets(sessions=3)
    for i in range(10):
        rate.take(f"s{i}", float(i))
    assert list(rate._buckets) == ["s7", "s8", "s9"]


def test_outside_a_running_server_nothing_is_rate_limited():
    """The shares are a served visitor's: a server thread, or the tests' AppTest (whose pages all
    share one made-up session id), decode as often as they ask."""
    from server.limits import decoding_slot
    for _ in range(100):
        with decoding_slot(cost=4.0) as check:
            check()


def test_page_runs_wait_for_a_slot_in_turn_and_a_superseded_one_is_abandoned(monkeypatch):
    """page_run_slot: at most ATTN_EXPLORER_PAGE_RUNS pages run at once; the rest wait in turn,
    and a run whose tab asked for a newer one while it waited never starts."""
    from server import limits
    monkeypatch.setenv("ATTN_EXPLORER_PAGE_RUNS", "1")

    from server.streamlit_patches.reads import script_requests
    tabs = {f"tab{k}": script_requests() for k in range(4)}  # Streamlit's own, as each tab's run holds them
    slots = TurnQueue(1)
    monkeypatch.setattr(limits, "_run_slots", lambda n: slots)  # a slot of this test's own
    local = threading.local()
    monkeypatch.setattr(limits, "_session", lambda: (local.who, tabs[local.who]))
    running, most, order, abandoned = [0], [0], [], []
    lock, go = threading.Lock(), threading.Event()

    def run(who: str) -> None:
        local.who = who
        try:
            with limits.page_run_slot():
                with lock:
                    running[0] += 1
                    most[0] = max(most[0], running[0])
                    order.append(who)
                go.wait(10)  # the page runs until the test lets it end
                with lock:
                    running[0] -= 1
        except Superseded:
            abandoned.append(who)

    threads = [threading.Thread(target=run, args=(who,)) for who in tabs]
    for k, thread in enumerate(threads):
        thread.start()
        until(lambda k=k: len(order) + slots.waiting() == k + 1, f"tab{k} running or queued")  # in this order
    tabs["tab3"].request_stop()  # tab3 left while it waited
    until(lambda: abandoned == ["tab3"], "tab3's wait abandoned")
    go.set()
    for thread in threads:
        thread.join(10)
    assert most[0] == 1 and order == ["tab0", "tab1", "tab2"] and abandoned == ["tab3"]
    local.who = "tab0"
    with limits.page_run_slot():  # every slot was given back
        pass


def test_long_work_gives_the_page_slot_to_the_next_tab_and_takes_a_turn_again(monkeypatch):
    """without_page_slot (a training, a recompute): while one tab's run works outside
    page code, the next tab's page runs on the only slot; then the first takes its turn again."""
    from server import limits
    monkeypatch.setenv("ATTN_EXPLORER_PAGE_RUNS", "1")

    class Requests:
        class _state:
            name = "CONTINUE"

    local = threading.local()
    monkeypatch.setattr(limits, "_session", lambda: (local.who, Requests()))
    events, lock = [], threading.Lock()
    working, read = threading.Event(), threading.Event()

    def log(what: str) -> None:
        with lock:
            events.append(what)

    def trainer() -> None:
        local.who = "trainer"
        with limits.page_run_slot():
            log("trainer page")
            with limits.without_page_slot():  # a training: the page slot is given up meanwhile
                working.set()
                read.wait(10)  # the reader's page runs on the slot meanwhile
                log("trainer trained")
            log("trainer page again")

    def reader() -> None:
        local.who = "reader"
        working.wait(5)
        with limits.page_run_slot():
            log("reader page")
        read.set()

    threads = [threading.Thread(target=trainer), threading.Thread(target=reader)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5)
    assert events == ["trainer page", "reader page", "trainer trained", "trainer page again"]
    assert this_run().slot is None
    local.who = "reader"
    with limits.page_run_slot():  # every slot was given back
        pass


def test_a_decoding_keeps_its_page_slot_so_tabs_waiting_on_its_translation_cannot_deadlock(monkeypatch):
    """Tab A computes a translation inside a shared cache's lock; B and C, holding both page slots,
    wait on that lock for the same translation. A's decoding must not give its slot up: taking a turn
    again afterwards, with the lock held, would wait for B and C, who wait for A."""
    from server import limits
    slots = TurnQueue(2)
    monkeypatch.setattr(limits, "_run_slots", lambda n: slots)  # two slots of this test's own

    class Requests:
        class _state:
            name = "CONTINUE"

    local = threading.local()
    monkeypatch.setattr(limits, "_session", lambda: (local.who, Requests()))
    cache_lock, computing, at_lock, done = threading.Lock(), threading.Event(), threading.Event(), []

    def tab(who: str) -> None:
        local.who = who
        if who != "A":
            computing.wait(5)
        with limits.page_run_slot():
            if who == "A":
                with cache_lock:  # st.cache_resource's lock while A computes the shared translation
                    with limits.decoding_slot():
                        computing.set()
                        # B or C holds the other slot at the lock, the other waits for a slot
                        until(lambda: at_lock.is_set() and slots.waiting() == 1, "B and C at the lock and the slots")
            else:
                at_lock.set()
                with cache_lock:
                    pass
        done.append(who)

    threads = [threading.Thread(target=tab, args=(who,), daemon=True) for who in "ABC"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5)
    assert sorted(done) == ["A", "B", "C"]
