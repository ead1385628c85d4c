"""Following the teacher at (almost) no cost while nothing changes.

Every tab that follows a class needs to learn, within about a second, that the teacher sent a
page. A tab that asked the class store itself every second made a store read and a Streamlit
rerun per tab and second: 400 tabs, 400 of each. Instead, per process:

- **one read, shared by every tab** (:class:`FollowBoard`): the process keeps each followed
  class's state (:class:`server.class_store.FollowState`) and its version number in memory; a
  tab's look is a dictionary read. One thread per process refreshes the classes its tabs follow:
- **across processes**: on PostgreSQL each send, reveal or close is a ``NOTIFY`` (delivered when
  its transaction commits, ``ClassStore._notify``) that the thread ``LISTEN``\\ s for, with a read
  every ``PG_POLL_S`` besides (a dropped connection, a class expiring); on SQLite (processes on
  one machine) the thread reads the versions of the followed classes every ``POLL_S``, one
  query for all of them;
- **to the browser, without reruns**: the tab's page holds an HTTP request open on
  ``/_attn/follow?class=CODE&v=VERSION`` (:func:`routes`), which the server answers when the
  class's version differs from the one the tab shows, or after ``WAIT_S`` (then it asks again).
  Waiting costs no thread and no rerun: an ``asyncio.Event`` per request, set by the board's
  thread. The answer carries the sent page's link (:func:`sent_link`), which the page opens
  inside its browser session as the browser's Back button would (one rerun, the sent page's);
  a change that sends no new page (a reveal, the class closed) reruns the tab's follow fragment
  (``ui``'s class panel) instead.

The board holds class codes, versions and what the teacher sent (a page name and its link's
parameters), never a visitor's data; ``MAX_WAITERS`` open requests per process at most.
"""
from __future__ import annotations

import asyncio
import logging
import threading
import time
from urllib.parse import urlencode

from server.class_store import (ClassStore, FOLLOW_CHANNEL, FollowState, StoreUnavailable, class_store,
                                normalise_code)
from server.shared import per_process

FOLLOW_PATH = "/_attn/follow"
SENT = "sent"       # in a link to the teacher's page: opened by following (ui/class_follow.py)
POLL_S = 0.25       # SQLite: the followed classes' versions are read this often, once per process (one query)
PG_POLL_S = 5.0     # PostgreSQL: a read besides the notifications
WATCH_S = 60.0      # a class no tab asked about for this long is no longer read
WAIT_S = 25.0       # an open /_attn/follow request is answered after this long at the latest
MAX_WAITERS = 4000  # open requests per process: beyond, "busy" (the page asks again later)
_LOG = logging.getLogger(__name__)


class Busy(RuntimeError):
    """Too many open follow requests on this process."""


class FollowBoard:
    """The followed classes' states in one process (see the module)."""

    def __init__(self, store: ClassStore):
        self.store = store
        self.fresh_s = 2 * (PG_POLL_S if store.kind == "postgresql" else POLL_S)
        self._lock = threading.Lock()
        self._reading = threading.Lock()  # one read of the store at a time: tabs asking at once share it
        self._states: dict[str, tuple[FollowState | None, float]] = {}  # code -> (state, when read)
        self._asked: dict[str, float] = {}  # code -> when a tab last asked
        self._waiters: dict[str, set[tuple[asyncio.AbstractEventLoop, asyncio.Event]]] = {}
        self._nudge = threading.Event()
        self._thread: threading.Thread | None = None
        self._pg = None  # the LISTENing connection (PostgreSQL)
        self.reads = 0  # reads of the store so far (tests count them)
        store.follow_listeners.append(self.changed)  # a send from this process: looked at now

    # -- what a tab asks ------------------------------------------------------------------------
    def state(self, code: str | None) -> FollowState | None:
        """The class's follow state, from memory when the board's thread keeps it fresh; else one
        read, shared by the tabs that ask meanwhile. StoreUnavailable if the store is down."""
        code = normalise_code(code)
        if not code:
            return None
        self._start()
        with self._lock:
            self._asked[code] = time.monotonic()
        cached = self._fresh(code)
        if cached is not None:
            return cached[0]
        with self._reading:
            cached = self._fresh(code)  # another tab's read, made while this one waited for it
            if cached is not None:
                return cached[0]
            self._read([code])
            return self._states[code][0]

    def changed(self, code: str) -> None:
        """This process changed the class (the teacher's send): look again now, not at the next poll."""
        with self._lock:
            self._states.pop(normalise_code(code), None)
        self._nudge.set()

    async def wait(self, code: str, seen: int, timeout: float = WAIT_S) -> FollowState | None:
        """The class's state once its version differs from ``seen`` (or it closed), or after
        ``timeout``. Waits on the event loop, holding no thread."""
        code = normalise_code(code)
        cached = self._fresh(code)
        state = cached[0] if cached else await asyncio.to_thread(self.state, code)
        if state is None or state.version != seen or not state.open:
            return state
        event, loop = asyncio.Event(), asyncio.get_running_loop()
        with self._lock:
            if sum(len(w) for w in self._waiters.values()) >= MAX_WAITERS:
                raise Busy("too many tabs are waiting on this server")
            self._waiters.setdefault(code, set()).add((loop, event))
            self._asked[code] = time.monotonic()
        try:
            await asyncio.wait_for(event.wait(), timeout)
        except TimeoutError:
            pass
        finally:
            with self._lock:
                self._waiters.get(code, set()).discard((loop, event))
        cached = self._fresh(code, any_age=True)
        return cached[0] if cached else state

    # -- the board's thread ---------------------------------------------------------------------
    def _fresh(self, code: str, any_age: bool = False) -> tuple[FollowState | None, float] | None:
        with self._lock:
            cached = self._states.get(code)
        if cached and (any_age or time.monotonic() - cached[1] < self.fresh_s):
            return cached
        return None

    def _start(self) -> None:
        if self._thread is None:
            with self._lock:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._watch, name="follow-board", daemon=True)
                    self._thread.start()

    def _followed(self) -> list[str]:
        now = time.monotonic()
        with self._lock:
            for code in [c for c, t in self._asked.items() if now - t > WATCH_S and not self._waiters.get(c)]:
                del self._asked[code]
                self._states.pop(code, None)
            return list(self._asked)

    def _read(self, codes: list[str]) -> None:
        """One read of ``codes``' states; wakes the requests waiting on a class that changed."""
        self.reads += 1
        states = self.store.follow_many(codes)  # StoreUnavailable goes to the caller
        now = time.monotonic()
        woken = []
        with self._lock:
            for code in codes:
                new, old = states.get(code), self._states.get(code, (None, 0.0))[0]
                self._states[code] = (new, now)
                if new is None or old is None or (new.version, new.open) != (old.version, old.open):
                    woken += self._waiters.get(code, ())
        for loop, event in woken:
            loop.call_soon_threadsafe(event.set)

    def _watch(self) -> None:
        while True:
            try:
                changed = self._listen() if self.store.kind == "postgresql" else self._sleep()
                codes = self._followed()
                if codes:
                    with self._reading:
                        self._read(codes if changed is None else [c for c in codes if c in changed] or codes)
            except StoreUnavailable as e:
                _LOG.info("follow board: %s", e)
                time.sleep(POLL_S)
            except Exception:  # noqa: BLE001 - the board's thread must outlive any one failure
                _LOG.exception("follow board")
                time.sleep(POLL_S)

    def _sleep(self) -> None:
        self._nudge.wait(POLL_S)
        self._nudge.clear()
        return None

    def _listen(self) -> set[str] | None:
        """Wait for NOTIFYs up to PG_POLL_S; the codes they name (None: read every followed class)."""
        import psycopg
        try:
            if self._pg is None:
                url = self.store.engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
                self._pg = psycopg.connect(url, autocommit=True, connect_timeout=3)
                self._pg.execute(f"LISTEN {FOLLOW_CHANNEL}")
                return None  # (re)connected: notifications may have been missed
            if self._nudge.is_set():
                self._nudge.clear()
                return None
            codes = {n.payload.split(":", 1)[0] for n in self._pg.notifies(timeout=PG_POLL_S, stop_after=1)}
            return codes or None
        except psycopg.Error as e:
            _LOG.info("follow board: listening failed (%s); reading every %.0f s", type(e).__name__, PG_POLL_S)
            if self._pg is not None:
                self._pg.close()
            self._pg = None
            time.sleep(PG_POLL_S)
            return None


def sent_params(code: str, state: FollowState) -> dict:
    """The query of the teacher's page as a follower opens it: its link's, with the class and ``sent=1``."""
    return {**state.params, "class": code, SENT: "1"}


def sent_link(code: str, state: FollowState) -> str | None:
    """The teacher's page as a follower opens it, relative to the app's address: the page's url
    path and :func:`sent_params`; None before any send."""
    if state.page is None:
        return None
    return f"{state.page}?{urlencode(sent_params(code, state))}"


@per_process
def _board(store: ClassStore) -> FollowBoard:
    return FollowBoard(store)


def follow_board() -> FollowBoard:
    """This process's board for its class store (server/shared.py: out of a visitor's reach)."""
    return _board(class_store())


async def follow_changes(request):
    """``GET /_attn/follow?class=CODE&v=VERSION``: ``{"version": N, "open": bool, "link": "page?query"}``
    as soon as the class's version is not VERSION, or after WAIT_S (``link``: :func:`sent_link`,
    null before any send); 404 for no such class, 503 when busy."""
    from starlette.responses import JSONResponse
    code = normalise_code(request.query_params.get("class"))
    try:
        seen = int(request.query_params.get("v", "-1"))
    except ValueError:
        seen = -1
    headers = {"Cache-Control": "no-store"}
    if not code:
        return JSONResponse({"error": "not a class code"}, status_code=404, headers=headers)
    try:
        state = await follow_board().wait(code, seen)
    except (Busy, StoreUnavailable) as e:
        return JSONResponse({"error": str(e)}, status_code=503, headers=headers)
    if state is None:
        return JSONResponse({"error": "no such class"}, status_code=404, headers=headers)
    return JSONResponse({"version": state.version, "open": state.open, "link": sent_link(code, state)},
                        headers=headers)


def routes() -> list:
    from starlette.routing import Route
    return [Route(FOLLOW_PATH, follow_changes, methods=["GET"])]


__all__ = ["FollowBoard", "follow_board", "routes", "sent_link", "sent_params", "FOLLOW_PATH", "SENT", "Busy"]
