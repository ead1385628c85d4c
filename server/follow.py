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
  one machine) the thread reads the versions of the followed classes, one query for all of them,
  when a process committed such a change (``ClassStore.wait_for_writes``: woken by the store's
  bell, ``server/class_store/writes.py``; a join or an answer rings none), and every
  ``QUIET_READ_S`` besides;
- **to the browser, without reruns**: the tab's page holds an HTTP request open on
  ``/_attn/follow?class=CODE&v=VERSION`` (``server/follow_requests.py``), which the server answers when the
  class's version differs from the one the tab shows, or after ``WAIT_S`` (then it asks again).
  Waiting costs no thread and no rerun: an ``asyncio.Event`` per request, set by the board's
  thread. The answer carries the sent page's link (:func:`sent_link`), which the page opens
  inside its browser session as the browser's Back button would (one rerun, the sent page's);
  a reveal or a close reruns the page instead; a change that leaves the page as it is (another
  student removed or let back in, a reveal to a tab that answered) reruns nothing (:func:`page_signature`).

The board holds class codes, versions and what the teacher sent (a page name and its link's
parameters), never a visitor's data; ``MAX_WAITERS`` open requests per process at most. The
requests are bounded by who holds them, never by the address a whole school shares, so that
one script there cannot keep a real follower out (docs/campus.md, "Limits and what they are
keyed on"):

- **a place per student**: a request *named* by the signed ``attn_student`` cookie of a student
  on the class's roster (removed or not: a removed tab still hears of an *Undo*) holds one open
  request per class; a newer one answers the older with 409 (:class:`Replaced`; that tab asks
  again later). The roster bounds them: a class's students are its seats;
- **unnamed requests** (no cookie, or one of a student not on that roster: a projector, a
  visitor, a script) share ``UNNAMED_PER_CLASS`` places per class and process, apart from the
  students' (429 past them): 4,000 of them held from a school's address take no student's place;
- **guessing costs the guesser**: an unnamed request spends one of its address's
  ``UNKNOWN_CODES`` guesses a minute when its code names no class, and once they are spent every
  unnamed request from that address is refused (429, the code not even looked up: the answer
  says nothing of the code). A named request is never refused for it: its student joined with
  the code, so it can learn nothing from the answer. Whether a code exists is looked up in a set
  of every class's code held in memory (:meth:`FollowBoard.known`), read at most once a
  ``CODES_READ_S``: a flood of unknown codes costs no store read.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import threading
import time
from urllib.parse import urlencode

from server.class_store import (ClassStore, FOLLOW_CHANNEL, FollowState, StoreUnavailable, class_store,
                                normalise_code)
from server.class_store.writes import Nudge, QUIET_READ_S
from server.shared import per_process

FOLLOW_PATH = "/_attn/follow"
SENT = "sent"       # in a link to the teacher's page: opened by following (ui/class_follow.py)
POLL_S = 0.25       # SQLite: the followed classes' versions are read this often, once per process (one query)
PG_POLL_S = 5.0     # PostgreSQL: a read besides the notifications
QUIET = object()    # _sleep: nothing was written since the last read
READ_GAP_S = 0.05   # SQLite: the board's reads at least this far apart, however fast commits come
WATCH_S = 60.0      # a class no tab asked about for this long is no longer read
WAIT_S = 25.0       # an open /_attn/follow request is answered after this long at the latest
MAX_WAITERS = 4000  # open requests per process: beyond, "busy" (the page asks again later)
UNNAMED_PER_CLASS = 10  # open requests per class and process that name no student of it (a projector, a visitor)
UNKNOWN_CODES = 10  # unknown class codes an address's unnamed requests may ask about a minute, after a burst of as many
CODES_READ_S = 1.0  # the set of every class's code is read again at most this often (on a code it does not hold)
MEMBER_S = 300.0    # a student found on a class's roster is taken as on it for this long without a read
_LOG = logging.getLogger(__name__)


class Busy(RuntimeError):
    """Too many open follow requests on this process, or unnamed ones for this class."""


class Replaced(RuntimeError):
    """A newer follow request of the same student for the same class took this one's place."""


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
        self._students: dict[tuple[str, str], tuple[asyncio.AbstractEventLoop, asyncio.Event]] = {}  # (code, id) ->
        self._replaced: set[asyncio.Event] = set()  # waiters a newer request of their student replaced
        self._unnamed: dict[str, int] = {}  # code -> its open requests that name no student of it
        self._codes: tuple[frozenset[str], float] = (frozenset(), -CODES_READ_S)  # every class's code, when read
        self._members: dict[tuple[str, str], float] = {}  # (code, student) -> when found on the class's roster
        self._removed: dict[str, tuple[int, frozenset[str]]] = {}  # code -> (version, ids removed then)
        self._nudge = Nudge()  # a select waits on it and on the store at once (server/class_store/writes.py)
        self._changes = 0  # this process's changes so far: a read under way when one is made may predate it
        self._thread: threading.Thread | None = None
        self._last_read = 0.0  # when the board's thread last read every followed class (SQLite)
        self._pg = None  # the LISTENing connection (PostgreSQL)
        self.reads = 0  # reads of the store so far (tests count them)
        store.follow_listeners.append(self.changed)  # a send from this process: looked at now

    # -- what a tab asks ------------------------------------------------------------------------
    def state(self, code: str | None, read: bool = True) -> FollowState | None:
        """The class's follow state, from memory when the board's thread keeps it fresh; else one read,
        shared by the tabs that ask meanwhile (``read=False``: None). StoreUnavailable if the store is down."""
        code = normalise_code(code)
        if not code:
            return None
        with self._lock:
            first = not self._asked
            self._asked[code] = time.monotonic()
        if first:
            self._nudge.set()  # the board's thread, idle while nothing was followed, looks again now
        self._start()
        if (cached := self._fresh(code)) is not None or not read:
            return cached[0] if cached else None
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
            self._changes += 1
        self._nudge.set()

    async def wait(self, code: str, seen: int, timeout: float = WAIT_S, student: str = "") -> FollowState | None:
        """The class's state once its version differs from ``seen`` (or it closed), or after
        ``timeout``. Waits on the event loop, holding no thread. ``student`` (a student on the
        class's roster, :meth:`member`; "" for an unnamed request): their older request for the class
        is answered with Replaced; unnamed requests hold at most UNNAMED_PER_CLASS places (Busy)."""
        code = normalise_code(code)
        cached = self._fresh(code)
        state = cached[0] if cached else await asyncio.to_thread(self.state, code)
        if state is None or state.version != seen or not state.open:
            return state
        event, loop = asyncio.Event(), asyncio.get_running_loop()
        self._enter(code, (loop, event), student)
        try:
            await asyncio.wait_for(event.wait(), timeout)
        except TimeoutError:
            pass
        finally:
            self._leave(code, (loop, event), student)
        if event in self._replaced:
            self._replaced.discard(event)
            raise Replaced("another tab of this student follows the class")
        cached = self._fresh(code, any_age=True)
        return cached[0] if cached else state

    def _enter(self, code: str, waiter, student: str) -> None:
        with self._lock:
            if sum(len(w) for w in self._waiters.values()) >= MAX_WAITERS:
                raise Busy("too many tabs are waiting on this server")
            if student:
                older = self._students.get((code, student))
                if older is not None:
                    self._replaced.add(older[1])
                    older[0].call_soon_threadsafe(older[1].set)
                self._students[(code, student)] = waiter
            else:
                if self._unnamed.get(code, 0) >= UNNAMED_PER_CLASS:
                    raise Busy(f"{UNNAMED_PER_CLASS} tabs that are not in class {code} follow it already; "
                               "join the class to follow it")
                self._unnamed[code] = self._unnamed.get(code, 0) + 1
            self._waiters.setdefault(code, set()).add(waiter)
            self._asked[code] = time.monotonic()

    def _leave(self, code: str, waiter, student: str) -> None:
        with self._lock:
            self._waiters.get(code, set()).discard(waiter)
            if student:
                if self._students.get((code, student)) is waiter:
                    del self._students[(code, student)]
            else:
                left = self._unnamed.get(code, 1) - 1
                if left > 0:
                    self._unnamed[code] = left
                else:
                    self._unnamed.pop(code, None)

    # -- who asks ------------------------------------------------------------------------------
    def known(self, code: str, read: bool = True) -> bool | None:
        """Does ``code`` name a class of the store? From memory: a state this board holds, else the
        set of every class's code, read again (one read for every request asking meanwhile) only
        when it lacks ``code`` and is older than CODES_READ_S. So a flood of made-up codes costs at
        most one store read a CODES_READ_S, whoever sends it. ``read=False``: None for "needs a read"."""
        with self._lock:
            held = self._states.get(code)
            codes, when = self._codes
        if (held is not None and held[0] is not None) or code in codes:
            return True
        if not read:
            return None
        if time.monotonic() - when < CODES_READ_S:
            return False
        with self._reading:
            codes, when = self._codes
            if code not in codes and time.monotonic() - when >= CODES_READ_S:
                codes = frozenset(self.store.class_codes())
                with self._lock:
                    self._codes = (codes, time.monotonic())
        return code in codes

    def codes_wait(self, code: str) -> float:
        """Seconds until the set of codes may be read again, when it lacks ``code`` and was read less
        than CODES_READ_S ago (0: ``code`` is known, or :meth:`known` may read now). A student's
        request for a class opened since the last read waits that long, on the event loop, rather
        than be taken for a guess."""
        with self._lock:
            held = self._states.get(code)
            codes, when = self._codes
        if (held is not None and held[0] is not None) or code in codes:
            return 0.0
        return max(0.0, CODES_READ_S - (time.monotonic() - when))

    def member(self, code: str, student: str, read: bool = True) -> bool | None:
        """Is ``student`` on the roster of class ``code`` (a known code; removed or not)? A student
        found is remembered MEMBER_S (at most 20,000 kept), so a class's followers cost a read each
        per MEMBER_S; one not found costs a read (by key) each time, only for a code that exists (``read=False``: as known)."""
        if not student or not (known := self.known(code, read)):
            return known if known is None else False
        now = time.monotonic()
        with self._lock:
            seen = self._members.get((code, student))
        if seen is not None and now - seen < MEMBER_S:
            return True
        if not read:
            return None
        if not self.store.on_roster(code, student):
            return False
        with self._lock:
            self._members.pop((code, student), None)
            self._members[(code, student)] = now  # last in the dict: the most recent
            while len(self._members) > 20_000:
                del self._members[next(iter(self._members))]
        return True

    def removed(self, state: FollowState, student: str, read: bool = True) -> bool | None:
        """Is ``student`` removed from the class? One read per process and class version (every
        removal and *Undo* moves it), none while nobody is removed (``read=False``: as :meth:`known`)."""
        if not state.removals or not student:
            return False
        with self._lock:
            kept = self._removed.get(state.code)
        if kept is None or kept[0] != state.version:
            if not read:
                return None
            kept = (state.version, self.store.removed_sessions(state.code))
            with self._lock:
                self._removed[state.code] = kept
        return student in kept[1]

    def listeners(self, code: str | None = None) -> int:
        """Open requests in this process, on the class ``code`` or on every class."""
        with self._lock:
            if code is None:
                return sum(len(w) for w in self._waiters.values())
            return len(self._waiters.get(normalise_code(code), ()))

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
        with self._lock:
            changes = self._changes
        states = self.store.follow_many(codes)  # StoreUnavailable goes to the caller
        now = time.monotonic()
        woken = []
        with self._lock:
            when = now if self._changes == changes else 0.0  # changed meanwhile here: read again when asked
            for code in codes:
                new, old = states.get(code), self._states.get(code, (None, 0.0))[0]
                self._states[code] = (new, when)
                if new is None or old is None or (new.version, new.open) != (old.version, old.open):
                    woken += self._waiters.get(code, ())
        for loop, event in woken:
            loop.call_soon_threadsafe(event.set)

    def _watch(self) -> None:
        while True:
            try:
                changed = self._listen() if self.store.kind == "postgresql" else self._sleep()
                codes = self._followed()
                if changed is QUIET and self._still(codes):
                    continue
                if codes:
                    with self._reading:
                        self._read(codes if changed is None else [c for c in codes if c in changed] or codes)
            except StoreUnavailable as e:
                _LOG.info("follow board: %s", e)
                time.sleep(POLL_S)
            except Exception:  # noqa: BLE001 - the board's thread must outlive any one failure
                _LOG.exception("follow board")
                time.sleep(POLL_S)

    def _sleep(self) -> object:
        """Wait for a write (None: read every followed class) or POLL_S (QUIET: nothing was written).
        With no class followed nothing is looked at: a tab asking reads for itself (``state``)."""
        with self._lock:
            followed = bool(self._asked)
        if not followed:
            self._nudge.wait(POLL_S)
            self._nudge.clear()
            return QUIET
        wrote = self.store.wait_for_writes(POLL_S, self._nudge)  # another process's write ends it at once
        if wrote and (since := time.monotonic() - self._last_read) < READ_GAP_S:
            time.sleep(READ_GAP_S - since)  # a burst of commits (a class joining at once): one read per gap
        self._nudge.clear()
        if wrote or time.monotonic() - self._last_read >= QUIET_READ_S:
            self._last_read = time.monotonic()
            return None
        return QUIET

    def _still(self, codes: list[str]) -> bool:
        """Nothing was committed since the last read: the states it made hold, and are marked fresh
        without a read (a class no state is held for, dropped by a change here, is read)."""
        now = time.monotonic()
        with self._lock:
            if any(self._states.get(code) is None for code in codes):
                return False
            for code in codes:
                self._states[code] = (self._states[code][0], now)
        return True

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


def page_signature(code: str, state: FollowState, removed: bool, shows: str = "*") -> str:
    """What a follower's page shows of the class (the sent link, open, the reveal, this student
    removed) in 12 characters, drawn by the page and answered by ``/_attn/follow``: equal, the
    listener waits again without a rerun (ui/follow_listener.js). ``shows``: the exercise whose reveal
    changes the page (``ui.class_session.reveal_shown``; "" none, as a tab that answered it, "*" any)."""
    revealed = state.revealed if shows == "*" else bool(shows) and state.revealed == shows
    text = json.dumps([sent_link(code, state), bool(state.open), revealed, bool(removed)])
    return hashlib.blake2s(text.encode(), digest_size=6).hexdigest()


@per_process
def _board(store: ClassStore) -> FollowBoard:
    return FollowBoard(store)


def follow_board() -> FollowBoard:
    """This process's board for its class store (server/shared.py: out of a visitor's reach)."""
    return _board(class_store())


__all__ = ["FollowBoard", "follow_board", "page_signature", "sent_link", "sent_params", "FOLLOW_PATH", "SENT",
           "Busy", "Replaced", "UNKNOWN_CODES", "UNNAMED_PER_CLASS"]
