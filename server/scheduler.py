"""One scheduler for what a server shares out: places taken in turn (:class:`TurnQueue`), and the
one record of what this thread's page run holds (:class:`Run`).

**The fairness policy**, stated once. A queue has ``n`` places. A waiter names its place in the
turns by a path of keys, one a level: ``(address, student)`` in the costly lane
(``server/lanes.py``), ``(address|student,)`` for the page-run and decoding slots
(``server/limits.py``, ``server.visitor.turn``). A freed place goes to the first level's next
key, within it to the next level's next key, and so on, to that key's oldest ticket; each key
served then goes to the back of its level's turns. So a tab with twenty tickets waits behind
every other tab's one, and ten tabs of one prankster's address share one turn with everyone
behind that address. A freed place is handed to one ticket directly, waking that thread alone:
thirty tabs waiting must not all wake at every release, since each wake takes the GIL from the
work under way. A waiter gives its ticket up when its run is superseded (``abandon()``, looked at
every ``ABANDON_CHECK_S``: :class:`Superseded`) or at its deadline (``until``: ``acquire``
returns False); a place handed to it while it was leaving is passed on.

The queues are process-wide on purpose (``server.shared.per_process``): they hold who waits,
never a visitor's data. A :class:`Run` is the thread's own: Streamlit runs each rerun on a
thread of its own, and what that run holds (a page-run slot, a place in the costly lane, its
deadline) is looked up here, not passed through every page's calls.
"""
from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass, field

from server.streamlit_patches.reads import StopException

ABANDON_CHECK_S = 0.25  # how often a waiting run looks for a newer rerun of its tab


class Superseded(StopException):
    """The tab asked for a newer rerun while this one waited for a place (or between two decoder
    steps): the wait is abandoned, the work never starts, and Streamlit runs the newer request."""


class _Level:
    """One level of the turns: its keys with a ticket waiting below, whose turn is next first,
    and each key's next level (at the last level: its tickets, oldest first)."""
    __slots__ = ("turns", "below")

    def __init__(self):
        self.turns: deque = deque()
        self.below: dict = {}

    def __bool__(self) -> bool:
        return bool(self.turns)


class TurnQueue:
    """At most ``n`` holders; the waiting are served in turns, level by level (see the module)."""

    def __init__(self, n: int):
        self.n = n
        self._lock = threading.Lock()
        self._held = 0
        self._waiting = 0
        self._root = _Level()

    def acquire(self, path: tuple[str, ...], abandon=None, until: float | None = None) -> bool:
        """Wait for a place in turn ``path``; True once held. ``abandon()`` true (looked at every
        ABANDON_CHECK_S) raises Superseded; past ``until`` (a ``time.monotonic()`` instant) the
        ticket is given up and False returned."""
        with self._lock:
            if self._held < self.n and not self._waiting:
                self._held += 1
                return True
            ticket = threading.Event()
            self._enqueue(path, ticket)
        while True:
            step = ABANDON_CHECK_S if abandon is not None else None
            if until is not None:
                left = max(0.0, until - time.monotonic())
                step = left if step is None else min(step, left)
            if ticket.wait(step):
                return True
            gone = abandon is not None and abandon()
            if not gone and (until is None or time.monotonic() < until):
                continue
            with self._lock:
                if not ticket.is_set():  # still waiting: leave the turns as if never in them
                    self._leave(path, ticket)
                    if gone:
                        raise Superseded()
                    return False
            self.release()  # a place was handed over while we were leaving: pass it on
            if gone:
                raise Superseded()
            return False

    def _enqueue(self, path: tuple[str, ...], ticket: threading.Event) -> None:
        level = self._root
        for depth, key in enumerate(path):
            if key not in level.below:
                level.below[key] = deque() if depth == len(path) - 1 else _Level()
                level.turns.append(key)
            level = level.below[key]
        level.append(ticket)
        self._waiting += 1

    def _leave(self, path: tuple[str, ...], ticket: threading.Event) -> None:
        levels = [self._root]
        for key in path[:-1]:
            levels.append(levels[-1].below[key])
        levels[-1].below[path[-1]].remove(ticket)
        self._waiting -= 1
        for level, key in zip(reversed(levels), reversed(path)):
            if level.below[key]:
                break
            del level.below[key]
            level.turns.remove(key)

    def release(self) -> None:
        """Hand the place to the next ticket in turn, or free it."""
        with self._lock:
            if not self._waiting:
                self._held -= 1
                return
            ticket = self._next(self._root)
            self._waiting -= 1
            ticket.set()  # the place passes to that ticket: held stays the same

    def _next(self, level: _Level) -> threading.Event:
        """The next ticket below ``level``; each key served goes to the back of its turns."""
        key = level.turns.popleft()
        below = level.below[key]
        ticket = below.popleft() if isinstance(below, deque) else self._next(below)
        if below:
            level.turns.append(key)
        else:
            del level.below[key]
        return ticket

    def waiting(self) -> int:
        with self._lock:
            return self._waiting

    def held(self) -> int:
        with self._lock:
            return self._held


@dataclass
class Run:
    """What this thread's page run holds (see the module). ``started``: when the run began, its
    costly work's seconds counted from it; ``cheap``: counted among the cheap runs under way;
    ``deadline``: in the costly lane until then; ``cost``: the estimate of its work in the lane
    (``server.lanes.Lane``); ``own_place``: its decodings are bounded by a
    place of their own (the lane's), not the shared decoding slots; ``slot``: (queue, path,
    abandon) while it holds a page-run slot; ``holds``: the places of :data:`ORDER` its work is
    inside, innermost last (:func:`holding`)."""
    started: float | None = None
    cheap: bool = False
    deadline: float | None = None
    cost: float = 0.0
    own_place: bool = False
    slot: tuple | None = None
    holds: list = field(default_factory=list)


_runs = threading.local()  # .run: this thread's Run


def this_run() -> Run:
    """This thread's run record (made on first use: a page run, a server thread, a test)."""
    run = getattr(_runs, "run", None)
    if run is None:
        run = _runs.run = Run()
    return run


# The one safe order of a page's shared work. A run waiting for a place must hold nothing that a
# holder of that place may wait for: a costly-lane holder computes inside shared caches, and a
# cache's computation (under its key's lock) takes a decoding slot. So a run asks for the lane
# holding no cache and no slot, for a shared cache holding no slot, and for a slot last; the
# page-run slot, given up for the lane's wait (``server.limits.without_page_slot``), is taken back
# before any cache's lock is held. ``ui.zoo_cache.shared_decoding`` builds every shared decoding in
# this order; :func:`holding` refuses the rest (a deadlock found by the 200-student bench, once).
LANE, CACHE, SLOT = "the costly lane", "a shared cache", "a decoding slot"
ORDER = (LANE, CACHE, SLOT)
_RANK = {place: rank for rank, place in enumerate(ORDER)}


class OutOfOrder(RuntimeError):
    """A page's work asked for a place out of :data:`ORDER` (a programming error, never a
    visitor's): raised before it waits, where it would otherwise deadlock under load."""


class holding:
    """``with holding(place):`` the block is inside ``place`` (one of :data:`ORDER`): refused with
    :class:`OutOfOrder` when this run already holds a place that comes later in the order. The
    same place again (a cache read inside a cache's computation, the lane's work inside the lane)
    is in order. A class, not a generator: every shared cache's call enters one."""
    __slots__ = ("place", "run")

    def __init__(self, place: str):
        self.place = place

    def __enter__(self) -> None:
        run = this_run()
        rank = _RANK[self.place]
        for held in run.holds:
            if _RANK[held] > rank:
                raise OutOfOrder(f"{self.place} asked for inside {held}: the order is {' → '.join(ORDER)}")
        run.holds.append(self.place)
        self.run = run

    def __exit__(self, *exc) -> bool:
        self.run.holds.pop()
        return False
