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
- the places go round **by address, then by student** within an address (:class:`CostlyLane`):
  the student id a class knows (the signed ``attn_student`` cookie), else the address alone,
  never the browser session, which costs a script nothing to make anew. Ten tabs of one
  prankster share one turn with everyone behind the same address;
- while it decodes, it **gives way**: between two decoder steps it pauses while a cheap run is
  under way (:func:`pace`, at most ``PAUSE_S`` at a time), so its core and the GIL go to the
  cheap runs first; past ``settings.run_seconds()`` from the run's start (every wait included,
  one bound for all of a run's costly work) it stops with a message
  (:class:`WorkCut`), so one run's work is bounded in time as ``server/costs.py`` bounds its size;
- once decoded, it draws its page when no cheap run is under way (up to the run's seconds later),
  then takes a page-run slot again;
- a result once computed is cheap (the shared caches hold it): its key is remembered
  (``KEYS_KEPT``) and the next run asking for it passes the lane.

Process-wide on purpose, as ``server.limits``'s slots are: it holds who waits and how many cheap
runs are under way, never a visitor's data.
"""
from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from contextlib import contextmanager

from server import settings
from server.costs import costly
from server.limits import ABANDON_CHECK_S, own_place, Superseded, superseded, without_page_slot
from server.shared import per_process
from server.streamlit_patches.reads import session_requests, StopException
from server.visitor import visitor

PAUSE_S = 0.5      # the longest a costly decoding pauses at one step for the cheap runs under way
KEYS_KEPT = 1024   # computed keys remembered (the shared caches keep fewer; a forgotten one only waits its turn)


class WorkCut(StopException):
    """A costly run past ``settings.run_seconds()``: the page stops where it decodes, with ``message``."""

    def __init__(self, message: str):
        super().__init__()
        self.message = message


class CostlyLane:
    """At most ``n`` holders; those waiting are served by address in turn, then by student in turn
    within their address, so a place freed goes to the next address's next student's oldest ticket."""

    def __init__(self, n: int):
        self.n = n
        self._lock = threading.Lock()
        self._held = 0
        self._tickets: dict[tuple[str, str], deque[threading.Event]] = {}  # (address, student) -> oldest first
        self._students: dict[str, deque[str]] = {}  # address -> its students waiting, whose turn is next first
        self._addresses: deque[str] = deque()  # addresses with a ticket waiting, whose turn is next first

    def acquire(self, address: str, student: str, abandon=None, until: float | None = None) -> bool:
        """Wait for a place; ``abandon()`` (looked at every ABANDON_CHECK_S) true raises Superseded.
        With ``until`` (a ``time.monotonic()`` instant), give the ticket up then and return False:
        the wait counts in the run's seconds, so a run behind many costly ones ends with a message
        instead of waiting for all of them."""
        with self._lock:
            if self._held < self.n and not self._addresses:
                self._held += 1
                return True
            ticket = threading.Event()
            mine = self._tickets.setdefault((address, student), deque())
            if not mine:
                if address not in self._students:
                    self._students[address] = deque()
                    self._addresses.append(address)
                self._students[address].append(student)
            mine.append(ticket)
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
                if not ticket.is_set():
                    mine.remove(ticket)
                    if not mine:
                        self._forget(address, student)
                    if gone:
                        raise Superseded()
                    return False
            self.release()  # handed a place meanwhile: pass it on
            if gone:
                raise Superseded()
            return False

    def _forget(self, address: str, student: str) -> None:
        del self._tickets[(address, student)]
        students = self._students[address]
        students.remove(student)
        if not students:
            del self._students[address]
            self._addresses.remove(address)

    def release(self) -> None:
        """Hand the place to the next address's next student (each then goes to the back of its
        turns), or free it."""
        with self._lock:
            if not self._addresses:
                self._held -= 1
                return
            address = self._addresses.popleft()
            students = self._students[address]
            student = students.popleft()
            mine = self._tickets[(address, student)]
            ticket = mine.popleft()
            if mine:
                students.append(student)
            else:
                del self._tickets[(address, student)]
            if students:
                self._addresses.append(address)
            else:
                del self._students[address]
            ticket.set()

    def waiting(self) -> int:
        with self._lock:
            return sum(len(q) for q in self._tickets.values())

    def held(self) -> int:
        with self._lock:
            return self._held


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


@per_process
def _lane(n: int) -> CostlyLane:
    return CostlyLane(n)


@per_process
def cheap_runs() -> CheapRuns:
    return CheapRuns()


@per_process
def _computed() -> OrderedDict:
    return OrderedDict()


_computed_lock = threading.Lock()
_here = threading.local()  # .cheap: this thread's run is counted in cheap_runs; .deadline: in the lane until then


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
    _here.cheap, _here.started = True, time.monotonic()
    try:
        yield
    finally:
        if getattr(_here, "cheap", False):
            cheap_runs().leave()
        _here.cheap, _here.started = False, None


def _visitor() -> tuple[str, str, object] | None:
    """(address, student id or "", the run's script requests), or None outside a browser's session."""
    who = visitor()
    return None if who is None else (*who, session_requests()[1])


@contextmanager
def costly_work(cost: float, key=None):
    """Run the block (one piece of a page's work, estimated at ``cost`` units) in the costly lane
    when it is costly and not yet computed (see the module); else as it is. Around a shared
    cache's call, never inside one: the lane is waited for holding no lock."""
    who = None if getattr(_here, "deadline", None) is not None or not costly(cost) or computed(key) else _visitor()
    if who is None:
        yield
        return
    address, student, requests = who
    abandon = (lambda: superseded(requests)) if requests is not None else None
    was_cheap = getattr(_here, "cheap", False)
    if was_cheap:
        cheap_runs().leave()
        _here.cheap = False
    try:
        with without_page_slot():
            lane = _lane(settings.costly_runs())
            # the run's seconds, from its start, its wait for the lane included: Compare's seven
            # costly decodings share one bound, and a run behind others' costly work ends in time
            deadline = (getattr(_here, "started", None) or time.monotonic()) + settings.run_seconds()
            if not lane.acquire(address, student, abandon, until=deadline):
                raise cut()
            _here.deadline = deadline
            try:
                with own_place():  # the lane's place bounds its decodings: the shared slots stay the cheap runs'
                    yield
            finally:
                _here.deadline = None
                lane.release()
            # what the page draws of a costly result is costly too (a heatmap of 120 x 130 cells):
            # drawn once no cheap run is under way, within the run's seconds
            cheap_runs().wait_quiet(max(0.0, deadline - time.monotonic()))
        remember(key)
    finally:
        if was_cheap:
            cheap_runs().enter()
            _here.cheap = True


def pace() -> None:
    """Between two decoder steps: in the costly lane, pause while cheap runs are under way (at most
    PAUSE_S), and stop past the run's seconds (WorkCut); elsewhere nothing."""
    deadline = getattr(_here, "deadline", None)
    if deadline is None:
        return
    left = deadline - time.monotonic()
    if left <= 0:
        raise cut()
    cheap_runs().wait_quiet(min(PAUSE_S, left))


def cut() -> WorkCut:
    return WorkCut(f"This needs more than the {settings.run_seconds():.0f} s one run may take on this server "
                   "while others use it: a shorter sentence or a narrower beam is shown at once, and this one "
                   "again when the server is quieter (*Try again*).")


def in_costly_lane() -> bool:
    return getattr(_here, "deadline", None) is not None


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
    return {"costly_running": lane.held(), "costly_waiting": lane.waiting(), "cheap_runs": cheap_runs().count,
            "follow_listeners": listeners}


async def load_route(_request):
    """``GET /_attn/load``: :func:`load` as JSON, for an operator's look (and the tests' signal)."""
    from starlette.responses import JSONResponse
    return JSONResponse(load(), headers={"Cache-Control": "no-store"})


def routes() -> list:
    from starlette.routing import Route
    return [Route(LOAD_PATH, load_route, methods=["GET"])]


__all__ = ["CheapRuns", "CostlyLane", "WorkCut", "cheap_runs", "costly_work", "in_costly_lane", "load", "pace",
           "page_running", "routes", "LOAD_PATH", "PAUSE_S"]
