"""The teacher's live page, driven by the class's own change signal, not by timers.

What the teacher watches (the joined / answered / counted line, the roster, the waiting list, the
answers to the exercise on the projector, the check's hand-ins) changes when a student joins,
waits, is let in or removed, or answers. The class store makes one **activity signature** of a
class from what it keeps anyway (``server/class_store/activity.py``); per process:

- **one read for every watched class** (:class:`LiveBoard`): a thread reads the signatures of the
  classes whose teacher's page waits, every ``POLL_S``, in one query; a class nobody watched for
  ``WATCH_S`` is no longer read. A student's rerun never reads it: the price is the teacher's;
- **to the browser, without reruns**: the teacher's page holds an HTTP request open on
  ``/_attn/class-live?class=CODE&t=TICKET&v=SIGNATURE`` (:func:`live_changes`), answered when the
  class's signature is no longer ``SIGNATURE``, or after ``WAIT_S``. The page's script
  (``ui/class_live.js``) then reruns the live views' fragments, and none while the teacher
  paused them: while nothing changes, the teacher's page runs nothing.

Only the class's teacher may watch it: the page carries a ticket (:func:`live_ticket`) signed with
the store's cookie secret, made by the teacher's own page run, naming the class and its expiry; a
student knows the class code, not when classmates answer.
"""
from __future__ import annotations

import asyncio
import hmac
import logging
import re
import threading
import time

from server.class_store import ClassStore, StoreUnavailable, class_store, normalise_code
from server.class_store.writes import QUIET_READ_S
from server.shared import per_process

LIVE_PATH = "/_attn/class-live"
POLL_S = 0.5        # the watched classes' signatures are read this often, once per process (one query)
WATCH_S = 60.0      # a class no teacher's page asked about for this long is no longer read
WAIT_S = 25.0       # an open request is answered after this long at the latest
MAX_WAITERS = 1000  # open requests per process (teachers' tabs): beyond, "busy"
TICKET_S = 12 * 3600  # a page's ticket lasts longer than any class
_TICKET = re.compile(r"(\d{1,12})\.([0-9a-f]{32})")
_LOG = logging.getLogger(__name__)


def live_ticket(secret: bytes, code: str, now: float | None = None) -> str:
    """What the teacher's page sends with each request: its expiry, signed with the class."""
    until = int((now or time.time()) + TICKET_S)
    return f"{until}.{_sign(secret, code, until)}"


def ticket_valid(secret: bytes | None, code: str, ticket: str | None, now: float | None = None) -> bool:
    found = _TICKET.fullmatch(ticket or "") if secret else None
    return bool(found and int(found[1]) >= (now or time.time())
                and hmac.compare_digest(found[2], _sign(secret, code, int(found[1]))))


def _sign(secret: bytes, code: str, until: int) -> str:
    return hmac.new(secret, f"class-live:{normalise_code(code)}:{until}".encode(), "sha256").hexdigest()[:32]


class LiveBoard:
    """The watched classes' activity signatures in one process (see the module)."""

    def __init__(self, store: ClassStore):
        self.store = store
        self._lock = threading.Lock()
        self._signatures: dict[str, str | None] = {}  # code -> its signature (None: no such class)
        self._asked: dict[str, float] = {}  # code -> when a page last asked
        self._waiters: dict[str, set[tuple[asyncio.AbstractEventLoop, asyncio.Event]]] = {}
        self._thread: threading.Thread | None = None
        self.reads = 0  # reads of the store so far (tests count them)

    def signature(self, code: str | None) -> str | None:
        """The class's signature now: from memory while the board's thread reads it, else one read."""
        code = normalise_code(code)
        if not code:
            return None
        self._start()
        with self._lock:
            self._asked[code] = time.monotonic()
            if code in self._signatures:
                return self._signatures[code]
        self._read([code])
        with self._lock:
            return self._signatures.get(code)

    async def wait(self, code: str, seen: str, timeout: float = WAIT_S) -> str | None:
        """The class's signature once it is no longer ``seen``, or after ``timeout``; holds no thread."""
        code = normalise_code(code)
        signature = await asyncio.to_thread(self.signature, code)
        if signature is None or signature != seen:
            return signature
        event, loop = asyncio.Event(), asyncio.get_running_loop()
        with self._lock:
            if sum(len(w) for w in self._waiters.values()) >= MAX_WAITERS:
                raise StoreUnavailable("too many teachers' pages wait on this server")
            self._waiters.setdefault(code, set()).add((loop, event))
        try:
            await asyncio.wait_for(event.wait(), timeout)
        except TimeoutError:
            pass
        finally:
            with self._lock:
                self._waiters.get(code, set()).discard((loop, event))
                self._asked[code] = time.monotonic()
        with self._lock:
            return self._signatures.get(code, signature)

    def _start(self) -> None:
        if self._thread is None:
            with self._lock:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._watch, name="class-live-board", daemon=True)
                    self._thread.start()

    def _read(self, codes: list[str]) -> None:
        """One read of ``codes``' signatures; wakes the requests waiting on a class that changed."""
        self.reads += 1
        found = self.store.activity_many(codes)  # StoreUnavailable goes to the caller
        woken = []
        with self._lock:
            for code in codes:
                new = found.get(code)
                if self._signatures.get(code, new) != new:
                    woken += self._waiters.get(code, ())
                self._signatures[code] = new
        for loop, event in woken:
            loop.call_soon_threadsafe(event.set)

    def _held(self, codes: list[str]) -> bool:
        with self._lock:
            return all(code in self._signatures for code in codes)

    def _watched(self) -> list[str]:
        now = time.monotonic()
        with self._lock:
            for code in [c for c, t in self._asked.items() if now - t > WATCH_S and not self._waiters.get(c)]:
                del self._asked[code]
                self._signatures.pop(code, None)
            return list(self._asked)

    def _watch(self) -> None:
        last_read = 0.0
        while True:
            time.sleep(POLL_S)
            try:
                codes = self._watched()
                if not codes:
                    continue
                # nothing committed since the last look (SQLite): the signatures held are still right
                if self.store.unwritten() and time.monotonic() - last_read < QUIET_READ_S and self._held(codes):
                    continue
                last_read = time.monotonic()
                self._read(codes)
            except StoreUnavailable as e:
                _LOG.info("class live board: %s", e)
            except Exception:  # noqa: BLE001 - the board's thread must outlive any one failure
                _LOG.exception("class live board")


@per_process
def _board(store: ClassStore) -> LiveBoard:
    return LiveBoard(store)


def live_board() -> LiveBoard:
    """This process's board for its class store (server/shared.py: out of a visitor's reach)."""
    return _board(class_store())


async def live_changes(request):
    """``GET /_attn/class-live?class=CODE&t=TICKET&v=SIGNATURE``: ``{"version": signature}`` as
    soon as the class's signature is not SIGNATURE, or after WAIT_S; 403 without the teacher's
    ticket for the class, 404 for no such class, 503 when the store or the server is busy."""
    from starlette.responses import JSONResponse
    headers = {"Cache-Control": "no-store"}
    code = normalise_code(request.query_params.get("class"))
    try:
        secret = await asyncio.to_thread(class_store().cookie_secret)
        if not code or not ticket_valid(secret, code, request.query_params.get("t")):
            return JSONResponse({"error": "not the teacher's page of this class"}, status_code=403, headers=headers)
        signature = await live_board().wait(code, request.query_params.get("v", ""))
    except StoreUnavailable as e:
        return JSONResponse({"error": str(e)}, status_code=503, headers=headers)
    if signature is None:
        return JSONResponse({"error": "no such class"}, status_code=404, headers=headers)
    return JSONResponse({"version": signature}, headers=headers)


def routes() -> list:
    from starlette.routing import Route
    return [Route(LIVE_PATH, live_changes, methods=["GET"])]
