"""Work scheduled by its cost: a cheap page run never waits behind a costly one.

A page run holds one of its process's page-run slots (``server.limits.page_run_slot``) from its
first line, and a decoding once held it all along: two tabs asking for a beam of 10 on a
1,000-character sentence held both slots of a process for seconds, and every other tab's short
sentence waited behind them (``docs/campus.md``). So a piece of work whose estimate
(``server/costs.py``) is costly, and that no run has computed yet, runs in the **costly lane**:

- it gives its page-run slot up meanwhile (the cheap runs have them all), and waits, holding no
  lock, for one of ``settings.costly_runs()`` places (default 1 a process), at most until the
  run's seconds are spent (then it ends with the message below); its decodings then
  take none of the decoding slots the cheap runs share (``server.limits.own_place``);
- the places go round **by address, then by student** within an address (a two-level
  ``server.scheduler.TurnQueue``, whose fairness policy the slots share): the student id a class
  knows (the signed ``attn_student`` cookie), else the address alone, never the browser session,
  which costs a script nothing to make anew. Ten tabs of one
  prankster share one turn with everyone behind the same address;
- while it decodes, it **gives way**: between two decoder steps it pauses while a cheap run is
  under way (:func:`pace`, at most ``PAUSE_S`` at a time), so its core and the GIL go to the
  cheap runs first; past ``settings.run_seconds()`` from the run's start (every wait included,
  one bound for all of a run's costly work) it stops with a message
  (:class:`WorkCut`), so one run's work is bounded in time as ``server/costs.py`` bounds its size;
- once decoded, it draws its page when no cheap run is under way (up to the run's seconds later),
  then takes a page-run slot again; what it draws counts as costly work (no run in the lane pauses
  for it, as it would for a cheap run);
- a result once computed is cheap (the shared caches hold it): its key is remembered
  (``KEYS_KEPT``) and the next run asking for it passes the lane;
- **shorter work goes ahead**: work estimated at most 1/``SHORTER_BY`` of every run in the lane (a
  visitor's own 20-word sentence on *Attention or attribution?*, beside a prankster's 30 words of
  it) runs at once instead of waiting behind them; every run in the lane pauses between two steps
  while a run with a smaller estimate is under way, and draws its page after it, as it does for the
  cheap runs. Only less work gets ahead, each at most half the least before it (so a few at most):
  a script asking for more cannot, and one asking for less is what the lane wants.

Process-wide on purpose, as ``server.limits``'s slots are: it holds who waits and how many cheap
runs are under way, never a visitor's data. What this thread's run holds (its start, its place in
the lane, its deadline) is its ``server.scheduler.Run``.
"""
from __future__ import annotations

import threading
import time
from collections import OrderedDict
from contextlib import contextmanager

from server import settings
from server.costs import costly
from server.limits import own_place, superseded, without_page_slot
from server.scheduler import holding, LANE, this_run, TurnQueue
from server.shared import per_process
from server.streamlit_patches.reads import session_requests, StopException
from server.visitor import visitor

PAUSE_S = 0.5      # the longest a costly decoding pauses at one step for the cheap runs under way
KEYS_KEPT = 1024   # computed keys remembered (the shared caches keep fewer; a forgotten one only waits its turn)
SHORTER_BY = 2     # work at most this many times smaller than every run in the lane goes ahead of them


class WorkCut(StopException):
    """A costly run past ``settings.run_seconds()``: the page stops where it decodes, with ``message``."""

    def __init__(self, message: str):
        super().__init__()
        self.message = message


class CheapRuns:
    """How many page runs are under way outside the costly lane (waiting for a slot, or running)."""

    def __init__(self):
        self._quiet = threading.Condition()
        self.count = 0

    def enter(self) -> None:
        with self._quiet:
            self.count += 1

    def leave(self) -> None:
        with self._quiet:
            self.count -= 1
            if not self.count:
                self._quiet.notify_all()

    def wait_quiet(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for no cheap run to be under way; True if none is."""
        with self._quiet:
            return self._quiet.wait_for(lambda: self.count <= 0, timeout)


class Lane:
    """The costly lane: ``n`` places in turns by (address, student), and work estimated at most
    1/``SHORTER_BY`` of every run in the lane (holders and runs ahead alike) going ahead of them (see
    the module). Each run ahead is at most half the least before it, so at most
    log2(largest estimate / ``COSTLY_FROM``) of them run at once (8 for Compare's largest). A run in
    the lane pauses between two steps while a run with a smaller estimate is under way
    (:meth:`wait_shorter`). It keeps the estimates of the runs in the lane (numbers, no visitor's data)."""

    def __init__(self, n: int):
        self.places = TurnQueue(n)
        self._changed = threading.Condition()
        self._running: list[float] = []  # the estimates of every run in the lane, ahead or on a place

    def goes_ahead(self, cost: float) -> bool:
        with self._changed:
            return bool(self._running) and cost * SHORTER_BY <= min(self._running)

    def acquire(self, path: tuple, cost: float, abandon=None, until: float | None = None) -> str | None:
        """Wait for a place: "ahead" or "place" once held, None past ``until`` (``TurnQueue.acquire``)."""
        with self._changed:  # the look and the entry at once: two short runs cannot both pass one holder
            if self._running and cost * SHORTER_BY <= min(self._running):
                self._running.append(cost)
                return "ahead"
        if not self.places.acquire(path, abandon, until):
            return None
        with self._changed:
            self._running.append(cost)
        return "place"

    def release(self, which: str, cost: float) -> None:
        with self._changed:
            self._running.remove(cost)
            self._changed.notify_all()
        if which == "place":
            self.places.release()

    def wait_shorter(self, cost: float, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for no run with an estimate below ``cost`` to be in the lane; True if none is."""
        with self._changed:
            return self._changed.wait_for(lambda: not any(c < cost for c in self._running), timeout)

    def ahead(self) -> int:
        """How many runs are in the lane beyond its places."""
        with self._changed:
            return len(self._running) - self.places.held()


@per_process
def _lane(n: int) -> Lane:
    """The costly lane's ``n`` places (and the runs ahead), in turns by (address, student)."""
    return Lane(n)


@per_process
def cheap_runs() -> CheapRuns:
    return CheapRuns()


def wait_quiet(timeout: float, cost: float) -> bool:
    """Wait up to ``timeout`` seconds for no cheap run to be under way and no run with an estimate
    below ``cost`` to be in the costly lane; True if so."""
    until = time.monotonic() + timeout
    if not cheap_runs().wait_quiet(timeout):
        return False
    return _lane(settings.costly_runs()).wait_shorter(cost, max(0.0, until - time.monotonic()))


@per_process
def _computed() -> OrderedDict:
    return OrderedDict()


_computed_lock = threading.Lock()


def computed(key) -> bool:
    with _computed_lock:
        return key is not None and key in _computed()


def remember(key) -> None:
    with _computed_lock:
        kept = _computed()
        kept.pop(key, None)
        kept[key] = True
        while len(kept) > KEYS_KEPT:
            kept.popitem(last=False)


@contextmanager
def page_running():
    """Count this rerun among the cheap runs under way (``navigation.py``, around the whole run)."""
    cheap_runs().enter()
    run = this_run()
    run.cheap, run.started = True, time.monotonic()
    try:
        yield
    finally:
        if run.cheap:
            cheap_runs().leave()
        run.cheap, run.started = False, None


def _visitor() -> tuple[str, str, object] | None:
    """(address, student id or "", the run's script requests), or None outside a browser's session."""
    who = visitor()
    return None if who is None else (*who, session_requests()[1])


@contextmanager
def costly_work(cost: float, key=None):
    """Run the block (one piece of a page's work, estimated at ``cost`` units) in the costly lane
    when it is costly and not yet computed (see the module); else as it is. Around a shared
    cache's call, never inside one: the lane is waited for holding no lock
    (``server.scheduler.ORDER``; asked for inside a cache or a slot, it raises ``OutOfOrder``)."""
    run = this_run()
    who = None if run.deadline is not None or not costly(cost) or computed(key) else _visitor()
    if who is None:
        yield
        return
    with holding(LANE):
        yield from _in_lane(run, who, key, cost)


def _in_lane(run, who, key, cost):
    address, student, requests = who
    abandon = (lambda: superseded(requests)) if requests is not None else None
    was_cheap, which = run.cheap, None
    if was_cheap:
        cheap_runs().leave()
        run.cheap = False
    try:
        with without_page_slot():
            lane = _lane(settings.costly_runs())
            # the run's seconds, from its start, its wait for the lane included: Compare's seven
            # costly decodings share one bound, and a run behind others' costly work ends in time
            deadline = (run.started or time.monotonic()) + settings.run_seconds()
            which = lane.acquire((address, student), cost, abandon, until=deadline)
            if which is None:
                raise cut()
            run.deadline, run.cost = deadline, cost
            try:
                with own_place():  # the lane's place bounds its decodings: the shared slots stay the cheap runs'
                    yield
            finally:
                run.deadline, run.cost = None, 0.0
                lane.release(which, cost)
            # what the page draws of a costly result is costly too (a heatmap of 120 x 130 cells):
            # drawn once no cheap run (nor any shorter run in the lane) is under way, within the run's seconds
            wait_quiet(max(0.0, deadline - time.monotonic()), cost)
        remember(key)
    finally:
        # the rest of a run that held one of the lane's places (its figures, their text alternatives,
        # their serialisation: a 1,000-character heatmap's) is its costly work's too: no run in the
        # lane pauses for it. A run ahead of them draws its page as the cheap runs do.
        if was_cheap and which != "place":
            cheap_runs().enter()
            run.cheap = True


def pace() -> None:
    """Between two decoder steps: in the costly lane, pause while cheap runs, or shorter runs in the
    lane, are under way (at most PAUSE_S), and stop past the run's seconds (WorkCut); elsewhere nothing."""
    run = this_run()
    if run.deadline is None:
        return
    left = run.deadline - time.monotonic()
    if left <= 0:
        raise cut()
    wait_quiet(min(PAUSE_S, left), run.cost)


def cut() -> WorkCut:
    return WorkCut(f"This needs more than the {settings.run_seconds():.0f} s one run may take on this server "
                   "while others use it: a shorter sentence or a narrower beam is shown at once, and this one "
                   "again when the server is quieter (*Try again*).")


def in_costly_lane() -> bool:
    return this_run().deadline is not None


LOAD_PATH = "/_attn/load"


def load() -> dict:
    """How busy this process is: costly runs decoding and waiting, cheap runs under way, open
    ``/_attn/follow`` requests (counts only)."""
    from server.follow import follow_board
    lane = _lane(settings.costly_runs())
    try:
        listeners = follow_board().listeners()
    except Exception:  # noqa: BLE001 - no store: nobody follows
        listeners = 0
    return {"costly_running": lane.places.held(), "costly_waiting": lane.places.waiting(),
            "costly_ahead": lane.ahead(), "cheap_runs": cheap_runs().count,
            "follow_listeners": listeners}


async def load_route(_request):
    """``GET /_attn/load``: :func:`load` as JSON, for an operator's look (and the tests' signal)."""
    from starlette.responses import JSONResponse
    return JSONResponse(load(), headers={"Cache-Control": "no-store"})


def routes() -> list:
    from starlette.routing import Route
    return [Route(LOAD_PATH, load_route, methods=["GET"])]


__all__ = ["CheapRuns", "Lane", "WorkCut", "cheap_runs", "costly_work", "in_costly_lane", "load", "pace",
           "page_running", "routes", "wait_quiet", "LOAD_PATH", "PAUSE_S", "SHORTER_BY"]
