"""The costly lane (server/lanes.py, a two-level server.scheduler.TurnQueue) and the estimates and
bounds it goes by (server/costs.py)."""
from __future__ import annotations

import threading
import time

from server.costs import attribution_bound, attribution_cost, beam_bound, compare_bound, costly, decoding_cost
from server.lanes import CheapRuns, Lane, SHORTER_BY
from server.scheduler import TurnQueue


def test_the_lane_serves_addresses_in_turn_then_students_within_an_address():
    """One place; a script's address queues six runs (three ids), two other addresses one each: the
    others are served before the script's second run, and its ids take turns."""
    lane = TurnQueue(1)
    lane.acquire(("holder", ""))
    served, threads = [], []

    def run(address: str, student: str) -> None:
        lane.acquire((address, student))
        served.append((address, student))
        lane.release()

    def queue(address: str, student: str) -> None:
        before = lane.waiting()
        threads.append(threading.Thread(target=run, args=(address, student)))
        threads[-1].start()
        while lane.waiting() == before:  # in the queue, in this order
            time.sleep(0.005)

    for student in ("a", "a", "a", "b", "b", "c"):
        queue("10.6.6.6", student)
    queue("10.0.0.1", "honest")
    queue("10.0.0.2", "")
    lane.release()
    for t in threads:
        t.join(10)
    assert served == [("10.6.6.6", "a"), ("10.0.0.1", "honest"), ("10.0.0.2", ""), ("10.6.6.6", "b"),
                      ("10.6.6.6", "c"), ("10.6.6.6", "a"), ("10.6.6.6", "b"), ("10.6.6.6", "a")]
    assert lane.waiting() == 0 and lane.held() == 0


def test_a_wait_for_the_lane_ends_at_the_runs_deadline_and_leaves_the_turns_as_they_were():
    """The wait counts in the run's seconds: a ticket not handed a place by ``until`` is given up
    (False), and the place then goes to the next waiting run, not to the one that left."""
    lane = TurnQueue(1)
    assert lane.acquire(("holder", ""))
    started = time.monotonic()
    assert lane.acquire(("10.6.6.6", "late"), until=started + 0.3) is False
    assert time.monotonic() - started >= 0.3 and lane.waiting() == 0 and lane.held() == 1
    served = []

    def run():
        served.append(lane.acquire(("10.0.0.1", "next"), until=time.monotonic() + 60))
    t = threading.Thread(target=run)
    t.start()
    while lane.waiting() == 0:
        time.sleep(0.005)
    lane.release()
    t.join(10)
    assert served == [True] and lane.held() == 1 and lane.waiting() == 0
    lane.release()
    assert lane.held() == 0


def test_a_costly_run_waits_for_the_cheap_runs_under_way():
    cheap = CheapRuns()
    cheap.enter()
    assert not cheap.wait_quiet(0.0)
    done = threading.Event()

    def costly_step():
        cheap.wait_quiet(60.0)
        done.set()
    t = threading.Thread(target=costly_step)
    t.start()
    assert not done.is_set()
    cheap.leave()
    t.join(60)
    assert done.is_set() and cheap.wait_quiet(0.0)


def test_the_estimates_rank_the_work_a_class_asks_below_what_a_prankster_asks():
    lesson = [decoding_cost(20), decoding_cost(20, beam=3), decoding_cost(20, models=4)]
    prankster = [decoding_cost(120, beam=10), decoding_cost(120, models=8), attribution_cost(40, 45, "knock-out")]
    assert not any(costly(c) for c in lesson) and all(costly(c) for c in prankster)
    assert attribution_cost(10, 10, "ig", 64) > attribution_cost(10, 10, "gxi")


def test_each_bound_keeps_the_first_words_and_says_so(monkeypatch):
    monkeypatch.setenv("ATTN_EXPLORER_BEAM_WORDS", "5")
    monkeypatch.setenv("ATTN_EXPLORER_ATTRIBUTION_WORDS", "3")
    monkeypatch.setenv("ATTN_EXPLORER_COMPARE_WORDS", "20")
    text = " ".join(f"w{n}" for n in range(12))
    assert beam_bound(text, 1).notice is None and beam_bound(text, 1).text == text  # greedy: the whole box
    cut = beam_bound(text, 4)
    assert cut.text == "w0 w1 w2 w3 w4" and "at most 5 words: the first 5 are shown (of 12)" in cut.notice
    assert attribution_bound(text).text == "w0 w1 w2" and attribution_bound(text).notice.startswith("Attribution")
    assert compare_bound(text, 1).notice is None  # one model: Translate's own work
    assert compare_bound(text, 2).text.split() == text.split()[:10]  # 20 words shared by two models
    assert compare_bound(text, 4).text.split() == text.split()[:5]  # 20 / 4 words each (at least the beam's)
    assert beam_bound("short one", 10).notice is None


def test_shorter_work_goes_ahead_of_the_runs_in_the_lane_and_only_shorter_work():
    """One place held by a prankster's 30 words of attribution: a visitor's work of at most half its
    estimate runs at once; work as large waits (here past its deadline); another prankster's run
    of at most half the holder's goes ahead, and a visitor's shorter still goes ahead of both;
    nothing goes ahead of an empty lane, and the estimates leave with their runs."""
    lane = Lane(1)
    assert not lane.goes_ahead(1)  # nobody in the lane: its places serve
    assert lane.acquire(("10.6.6.6", ""), 80_000) == "place"
    assert lane.goes_ahead(80_000 // SHORTER_BY) and not lane.goes_ahead(80_000 // SHORTER_BY + 1)
    assert lane.acquire(("10.6.6.6", "b"), 60_000, until=time.monotonic() + 0.2) is None  # as large: in turn
    assert lane.acquire(("10.6.6.6", ""), 35_000) == "ahead"  # the prankster's shorter run
    assert lane.acquire(("10.6.6.6", "visitor"), 9_000) == "ahead"  # same address, less work still: ahead of both
    # each run ahead is at most half the least before it: one as short as the visitor's waits its turn
    assert lane.acquire(("10.0.0.2", ""), 9_000, until=time.monotonic() + 0.2) is None
    assert lane.ahead() == 2 and lane.places.held() == 1
    for which, cost in (("ahead", 9_000), ("ahead", 35_000), ("place", 80_000)):
        lane.release(which, cost)
    assert lane.places.held() == 0 and lane.ahead() == 0 and not lane.goes_ahead(1)


def test_a_run_in_the_lane_pauses_while_a_shorter_one_is_under_way():
    """``Lane.wait_shorter``: the holder of a place (and a run ahead) waits between two steps, and
    before it draws, while a run with a smaller estimate is in the lane; the shortest waits for none."""
    lane = Lane(1)
    assert lane.acquire(("10.6.6.6", ""), 80_000) == "place"
    assert lane.acquire(("10.0.0.1", "visitor"), 9_000) == "ahead"
    assert lane.wait_shorter(9_000, 0.0) and not lane.wait_shorter(80_000, 0.0)
    done = threading.Event()

    def holder_step():
        lane.wait_shorter(80_000, 60.0)
        done.set()
    t = threading.Thread(target=holder_step)
    t.start()
    time.sleep(0.05)
    assert not done.is_set()
    lane.release("ahead", 9_000)
    t.join(60)
    assert done.is_set() and lane.wait_shorter(80_000, 0.0)
    lane.release("place", 80_000)
