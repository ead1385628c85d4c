"""What one server shares out among all its visitors' page runs: decoding slots and rates.

The app serves a whole class from one process on a few cores. Without limits, thirty
sessions that translate at once each get a thirtieth of the CPU and all finish late. So:

- **page runs** take one of ``settings.page_runs()`` slots at once, served in turn per tab
  (:func:`page_run_slot`; long work that is not page code gives it up, :func:`without_page_slot`);
- **decoding** runs in at most ``settings.decoders()`` threads at once (default 2, one per
  core); the other sessions wait their turn for a few milliseconds each
  (:func:`decoding_slot`);
- **a fair share per session**: a tab decodes at most ``DECODES_PER_S`` a second after a burst
  of ``DECODE_BURST`` (:class:`TokenBuckets`; past it the page says "slow down" and keeps what was
  typed), and reruns at most ``RERUNS_PER_S`` (:func:`rerun_rate`); waiting tabs get the slots in
  turn, and a decoding still waiting when its tab asks for a newer rerun is dropped
  (``server.scheduler``: the one queue, its fairness policy and ``Superseded``).

Live training's turns are :mod:`server.training_queue`, the teacher key's sign-in attempts
:mod:`server.sign_in`, the visitor's address :mod:`server.proxies`. All are process-wide objects on
purpose (one per server, shared by every session; kept by ``server.shared.per_process``, where no
visitor's ``clear_cache`` reaches them); they hold only who is waiting, never a visitor's data.
"""
from __future__ import annotations

import threading
import time
from contextlib import contextmanager

from server import settings
from server.scheduler import holding, SLOT, Superseded, this_run, TurnQueue
from server.shared import per_process
from server.streamlit_patches.reads import session_requests, StopException, superseded
from server.visitor import turn as visitor_turn


DECODES_PER_S = 2.0    # a tab's decodings a second, sustained…
DECODE_BURST = 24.0    # …after a burst of this many (Compare's six models on a 1,000-character sentence)


class SlowDown(StopException):
    """This browser tab asked for more decodings than its share (:class:`TokenBuckets`): the page
    stops where it decodes, with a message (``navigation.py``); its widgets keep what was typed."""

    def __init__(self, wait_s: float):
        super().__init__()
        self.wait_s = wait_s


class TokenBuckets:
    """Each session's share of decodings: a bucket of ``burst`` that refills at ``rate`` a second
    (a class's click asks for one to four; a page of Compare for one per model). Holds at most
    ``sessions`` sessions, forgetting the longest quiet, so no visitor can fill memory."""

    def __init__(self, rate: float = DECODES_PER_S, burst: float = DECODE_BURST, sessions: int = 10_000):
        self.rate, self.burst, self.sessions = rate, burst, sessions
        self._lock = threading.Lock()
        self._buckets: dict[str, tuple[float, float]] = {}  # session -> (tokens, when)

    def take(self, who: str, now: float, cost: float = 1.0) -> float:
        """0 when ``who`` may go on now (``cost`` tokens taken), else the seconds until it may."""
        cost = min(cost, self.burst)
        with self._lock:
            tokens, then = self._buckets.pop(who, (self.burst, now))
            tokens = min(self.burst, tokens + (now - then) * self.rate)
            wait = 0.0 if tokens >= cost else (cost - tokens) / self.rate
            self._buckets[who] = (tokens - cost if not wait else tokens, now)  # last in the dict: the most recent
            while len(self._buckets) > self.sessions:
                del self._buckets[next(iter(self._buckets))]
            return wait


@per_process
def _decoding_slots(n: int) -> TurnQueue:
    """At most ``n`` decodings at once, one turn a visitor (``server.visitor.turn``)."""
    return TurnQueue(n)


@per_process
def decode_rate() -> TokenBuckets:
    return TokenBuckets()


# (this rerun's session id, its Streamlit script requests); ("", None) outside a browser's session:
# a server thread, or Streamlit's AppTest, whose every page shares one made-up id and no server (the
# shares are for visitors of a running server). superseded(requests): has the tab asked for another
# rerun (or a stop) since this one started? Both read Streamlit's internals (server/streamlit_patches/reads.py).
_session = session_requests


RERUNS_PER_S = 2.0     # a tab's full-page reruns a second, sustained…
RERUN_BURST = 10.0     # …after a burst of this many (a student's clicks come seconds apart)


@per_process
def rerun_rate() -> TokenBuckets:
    return TokenBuckets(RERUNS_PER_S, RERUN_BURST)


_paced: dict[str, float] = {}  # session id -> when its last rerun request was held (server/serving.py)
_paced_lock = threading.Lock()
PACED_SHOWN_S = 5.0  # a page says "slow down" this long after the tab's last held request


def paced(who: str) -> None:
    """A rerun request of this tab was held for its share (the ``pace_reruns`` patch, ``server.serving.rerun_wait``). Holds
    at most 10,000 sessions, forgetting the longest quiet."""
    with _paced_lock:
        _paced.pop(who, None)
        _paced[who] = time.monotonic()
        while len(_paced) > 10_000:
            del _paced[next(iter(_paced))]


def recently_paced() -> bool:
    """Was one of this tab's rerun requests held a moment ago (its page then says "slow down")?"""
    return paced_lately(_session()[0])


def paced_lately(who: str) -> bool:
    """:func:`recently_paced` of the session ``who``."""
    with _paced_lock:
        when = _paced.get(who)
    return when is not None and time.monotonic() - when < PACED_SHOWN_S


@contextmanager
def decoding_slot(cost: float = 1.0):
    """Hold one of the server's decoding slots while the model computes: within the session's
    share (``cost`` of it; else SlowDown), in turn with the other sessions, abandoned if
    superseded meanwhile. Yields ``check()``, for the decoder to call between steps: it raises
    Superseded once the tab has asked for a newer rerun, so the rest of the decoding is not done."""
    who, requests = _session()
    if who:
        wait = decode_rate().take(who, time.monotonic(), cost)
        if wait:
            raise SlowDown(wait)
    newer = (lambda: superseded(requests)) if requests is not None else None
    # work in the costly lane (server/lanes.py) holds a place of its own, which bounds it: it takes
    # none of the slots the cheap decodings share, even while it pauses for them
    slots = None if this_run().own_place else _decoding_slots(settings.decoders())
    turn = visitor_turn(who) if who else who  # turns by address, then student: a new session is no new turn
    # The page-run slot is kept meanwhile: a decoding runs inside a shared cache's lock, and a run
    # that gave its slot up would wait for a turn with that lock held, while the slots' holders
    # wait on the lock for the same translation (a deadlock the 200-student bench found).
    def check() -> None:
        if newer is not None and newer():
            raise Superseded()
    with holding(SLOT):  # the last place of the order: nothing shared is asked for inside it
        if slots is not None:
            slots.acquire((turn,), newer)
        try:
            yield check
        finally:
            if slots is not None:
                slots.release()


@contextmanager
def own_place():
    """The block's decodings take none of the shared decoding slots: the caller holds a place that
    bounds them (the costly lane, ``server/lanes.py``)."""
    run = this_run()
    before, run.own_place = run.own_place, True
    try:
        yield
    finally:
        run.own_place = before


@per_process
def _run_slots(n: int) -> TurnQueue:
    """At most ``n`` page runs at once, one turn a visitor (``server.visitor.turn``)."""
    return TurnQueue(n)


@contextmanager
def page_run_slot():
    """Hold one of the server's page-run slots while this rerun runs its page (``navigation.py``
    takes it at the rerun's first line). Every rerun is a thread, and thirty followers opening the
    teacher's page at once are thirty threads taking turns at the GIL, each losing it at every
    system call, so all thirty would finish together, at the end. A few runs at once, the rest
    served in turn (``TurnQueue``: one run per visitor a round, ``server.visitor.turn``: a script's
    new sessions without a student id share their address's one turn) and waiting off the GIL,
    finish one after the other instead, sooner on average and no later in total. A rerun
    superseded while it waits is abandoned. Long work that is not page code gives the slot up
    meanwhile (:func:`without_page_slot`)."""
    who, requests = _session()
    run = this_run()
    if not who or run.slot is not None:
        yield
        return
    path = (visitor_turn(who),)
    slots = _run_slots(settings.page_runs())
    abandon = (lambda: superseded(requests)) if requests is not None else None
    slots.acquire(path, abandon)
    run.slot = (slots, path, abandon)
    try:
        yield
    finally:
        held, run.slot = run.slot, None
        if held is not None:  # None: given up for long work and not taken back (the run was superseded)
            slots.release()


@contextmanager
def without_page_slot():
    """Give this rerun's page-run slot to the next tab while it does long work that is not page
    code (a training, a recompute: torch computes, or the run waits), then wait for a turn again.
    Without it, two students training on *Watch attention emerge* would hold both slots of their
    process for the training's length. Never around work that holds a lock another run may wait
    on with its slot held (a shared cache's computation, ``decoding_slot``): taking the turn
    again with that lock held would deadlock."""
    run = this_run()
    held = run.slot
    if held is None:
        yield
        return
    slots, path, abandon = held
    run.slot = None
    slots.release()
    try:
        yield
    finally:
        slots.acquire(path, abandon)  # raises Superseded if the tab asked for a newer run meanwhile
        run.slot = held
