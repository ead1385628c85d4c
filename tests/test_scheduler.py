"""The one queue (server/scheduler.py): turns level by level, a ticket that leaves takes its empty
turns with it, and each thread's run record is its own. The costly lane's and the slots' own
orders are tests/test_lanes.py's and tests/test_limits.py's."""
from __future__ import annotations

import threading
import time
from collections import deque

import numpy as np
import pytest

from server.scheduler import Superseded, this_run, TurnQueue


def queued(queue: TurnQueue, path: tuple[str, ...], served: list, abandon=None, until=None) -> threading.Thread:
    """A thread waiting in ``queue`` at ``path`` (returned once it is in the turns)."""
    before = queue.waiting()

    def wait():
        try:
            got = queue.acquire(path, abandon, until)
        except Superseded:
            served.append(("superseded", path))
            return
        served.append(path if got else ("gave up", path))
        if got:
            queue.release()
    thread = threading.Thread(target=wait)
    thread.start()
    while queue.waiting() == before:
        time.sleep(0.005)
    return thread


def test_three_levels_take_turns_level_by_level():
    """A school, its addresses, their students: each level's keys in turn, every served key to the
    back of its own level's turns."""
    queue = TurnQueue(1)
    assert queue.acquire(("holder", "", ""))
    served: list = []
    threads = [queued(queue, path, served) for path in [
        ("s1", "a", "x"), ("s1", "a", "x"), ("s1", "b", "y"), ("s2", "c", "z"), ("s1", "a", "w")]]
    queue.release()
    for t in threads:
        t.join(10)
    assert served == [("s1", "a", "x"), ("s2", "c", "z"), ("s1", "b", "y"), ("s1", "a", "w"), ("s1", "a", "x")]
    assert queue.waiting() == 0 and queue.held() == 0


@pytest.mark.parametrize("leaving", ["superseded", "deadline"])
def test_a_ticket_that_leaves_takes_its_empty_turns_with_it(leaving):
    """The only ticket of an address leaves (its run superseded, or its deadline past): the next
    release goes to the other address, and the queue holds nothing of the one that left."""
    queue = TurnQueue(1)
    assert queue.acquire(("holder", ""))
    served: list = []
    newer = threading.Event()
    gone = queued(queue, ("10.6.6.6", "a"), served, newer.is_set if leaving == "superseded" else None,
                  time.monotonic() + 0.3 if leaving == "deadline" else None)
    stays = queued(queue, ("10.0.0.1", "b"), served)
    newer.set()
    gone.join(10)
    assert served == [("superseded" if leaving == "superseded" else "gave up", ("10.6.6.6", "a"))]
    assert queue.waiting() == 1 and queue._root.turns == deque(["10.0.0.1"])
    queue.release()
    stays.join(10)
    assert served[-1] == ("10.0.0.1", "b") and queue.held() == 0 and not queue._root.below


def test_each_thread_has_its_own_run_record():
    mine = this_run()
    mine.deadline = 123.0
    seen = []
    thread = threading.Thread(target=lambda: seen.append(this_run().deadline))
    thread.start()
    thread.join(10)
    assert seen == [None] and this_run() is mine
    mine.deadline = None


def test_the_one_order_refuses_a_place_asked_for_inside_a_later_one():
    """Lane → shared cache → decoding slot: asking for an earlier place inside a later one (the
    lane inside a cache's computation, a cache inside a slot) raises before it waits; the same
    place again, and the order itself, go through."""
    from server.scheduler import CACHE, holding, LANE, OutOfOrder, SLOT, this_run
    with holding(LANE), holding(LANE), holding(CACHE), holding(CACHE), holding(SLOT):
        assert this_run().holds == [LANE, LANE, CACHE, CACHE, SLOT]
    assert this_run().holds == []
    for outer, inner in ((CACHE, LANE), (SLOT, CACHE), (SLOT, LANE)):
        with holding(outer), pytest.raises(OutOfOrder, match=f"{inner} asked for inside {outer}"):
            with holding(inner):
                pass  # pragma: no cover - refused before the block
        assert this_run().holds == []  # a refusal holds nothing afterwards


def test_a_shared_decoding_reads_what_it_needs_before_its_cache_and_decodes_inside_a_slot(monkeypatch):
    """ui.zoo_cache.shared_decoding: ``needs`` runs holding nothing, the lane's estimate sees what
    it needed, the computation runs inside the cache and a decoding slot, and a second call is the
    stored result, handed out with neither ``needs`` nor the lane's estimate, with the needed value
    kept out of the cache's key."""
    from server.scheduler import CACHE, SLOT, this_run
    from ui import zoo_cache
    seen = []
    monkeypatch.setattr(zoo_cache, "checkpoints_root", lambda: "/nowhere")

    def needs(model_name, text):
        seen.append(("needs", list(this_run().holds)))
        return len(text)

    def lane(needed, model_name, text):
        seen.append(("lane", needed))
        return 0, ("test", model_name, text)

    @zoo_cache.shared_decoding(4, needs=needs, lane=lane)
    def counted(root, model_name, text, *, needed, check):
        seen.append(("computed", root, needed, list(this_run().holds)))
        check()
        return np.array([needed])

    counted.clear()
    first, again = counted("m", "abc"), counted("m", "abc")
    assert first is again and first.tolist() == [3]
    assert seen == [("needs", []), ("lane", 3), ("computed", "/nowhere", 3, [CACHE, SLOT])]
