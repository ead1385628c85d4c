"""``GET /_attn/follow``: a followed class's changes, pushed to the page that waits on them
(``server/follow.py`` keeps the states; this answers the requests, each bounded by who holds
it: a place per student, the unnamed requests' share of a class, the guesses of unknown codes an
address may make; the module doc of ``server/follow.py`` says why)."""
from __future__ import annotations

import asyncio
import threading
import time

from server.class_store import normalise_code, StoreUnavailable
from server.follow import (Busy, FOLLOW_PATH, follow_board, page_signature, Replaced, sent_link, UNKNOWN_CODES)
from server.shared import per_process


class UnknownCodes:
    """Unknown class codes asked per address by unnamed requests: a bucket of UNKNOWN_CODES guesses refilled
    at as many a minute, no whole one left: refused; 10,000 addresses kept at most, the longest quiet forgotten."""

    def __init__(self, burst: int = UNKNOWN_CODES, per_minute: float = UNKNOWN_CODES):
        self.burst, self.rate, self._lock = float(burst), per_minute / 60.0, threading.Lock()
        self._buckets: dict[str, tuple[float, float]] = {}  # address -> (guesses left, when)

    def _left(self, address: str, now: float) -> float:
        left, then = self._buckets.get(address, (self.burst, now))
        return min(self.burst, left + (now - then) * self.rate)

    def take(self, address: str, now: float) -> float:
        """Spend one of ``address``'s guesses before its code is looked up (taken at once, so that
        requests in flight together cannot spend more than there is): 0, or the seconds until it has
        a whole one (nothing spent). :meth:`give_back` returns it when the code named a class."""
        with self._lock:
            left = self._left(address, now)
            if left < 1.0:
                return (1.0 - left) / self.rate
            self._buckets.pop(address, None)
            self._buckets[address] = (left - 1.0, now)  # last in the dict: the most recent
            while len(self._buckets) > 10_000:
                del self._buckets[next(iter(self._buckets))]
            return 0.0

    def give_back(self, address: str, now: float) -> None:
        """The code ``address`` asked about names a class: the guess taken for it is not spent."""
        with self._lock:
            if address in self._buckets:
                self._buckets[address] = (min(self.burst, self._left(address, now) + 1.0), now)


@per_process
def _unknown_codes() -> UnknownCodes:
    return UnknownCodes()


def _address(request) -> str:
    from server.proxies import client_address
    return client_address(request.client.host if request.client else None, request.headers.get("x-forwarded-for"))


def _named(code: str, student: str) -> str:
    """``student`` when they are on class ``code``'s roster, else "" (the request is unnamed)."""
    try:
        return student if code and follow_board().member(code, student) else ""
    except StoreUnavailable:
        return ""


async def follow_changes(request):
    """``GET /_attn/follow?class=CODE&v=VERSION[&shows=EXERCISE]``: ``{"version": N, "open": bool, "link": "page?query"}``
    as soon as the class's version is not VERSION, or after WAIT_S (``link``: :func:`sent_link`,
    null before any send); 404 for no such class, 409 when a newer request of the same student
    took this one's place, 429 for an unnamed request past its share (its address's unknown codes,
    or the class's unnamed places), 503 when busy. A student of the class is never refused for
    what others behind their address did (the module's doc)."""
    from starlette.responses import JSONResponse
    code = normalise_code(request.query_params.get("class"))
    v = request.query_params.get("v", "-1")
    seen = int(v) if len(v) <= 20 and v.lstrip("-").isdecimal() and v.count("-") <= 1 else -1
    headers = {"Cache-Control": "no-store"}
    # no worker thread where memory answers (a script's request, without the student cookie; a
    # follower's after its tab's first): a send wakes a whole class's listeners at once
    from server.identity import STUDENT_COOKIE, student_of
    has_cookie = request.cookies.get(STUDENT_COOKIE)
    student, address = (await student_of(has_cookie) if has_cookie else ""), _address(request)
    if student and code and (wait := follow_board().codes_wait(code)):
        await asyncio.sleep(wait)  # a class opened since the codes were read: the next read finds it
    if student and not follow_board().member(code, student, read=False):
        student = await asyncio.to_thread(_named, code, student)
    if not student:  # unnamed: guesses of unknown codes are counted against its address
        wait = _unknown_codes().take(address, time.monotonic())
        if wait:  # the address asked about too many unknown codes: it is not even looked up
            return JSONResponse({"error": "too many unknown class codes from your network; try again later"},
                                status_code=429, headers={**headers, "Retry-After": str(max(1, round(wait)))})
        try:
            known = bool(code) and (follow_board().known(code, read=False)
                                    or await asyncio.to_thread(follow_board().known, code))
        except StoreUnavailable as e:
            _unknown_codes().give_back(address, time.monotonic())
            return JSONResponse({"error": str(e)}, status_code=503, headers=headers)
        if not known:  # the guess stays spent
            return JSONResponse({"error": "no such class" if code else "not a class code"}, status_code=404,
                                headers=headers)
        _unknown_codes().give_back(address, time.monotonic())
    try:
        state = await follow_board().wait(code, seen, student=student)
    except Replaced as e:
        return JSONResponse({"error": str(e)}, status_code=409, headers=headers)
    except Busy as e:
        return JSONResponse({"error": str(e)}, status_code=429 if "join the class" in str(e) else 503, headers=headers)
    except StoreUnavailable as e:
        return JSONResponse({"error": str(e)}, status_code=503, headers=headers)
    if state is None:  # known a moment ago, purged since
        return JSONResponse({"error": "no such class"}, status_code=404, headers=headers)
    page = None  # an unnamed request's page is not known: it reruns at every change
    try:
        if student:
            removed = follow_board().removed(state, student, read=False)
            if removed is None:
                removed = await asyncio.to_thread(follow_board().removed, state, student)
            page = page_signature(code, state, removed, request.query_params.get("shows", "*")[:64])
    except StoreUnavailable:
        pass
    return JSONResponse({"version": state.version, "open": state.open, "link": sent_link(code, state), "page": page},
                        headers=headers)


def routes() -> list:
    from starlette.routing import Route
    return [Route(FOLLOW_PATH, follow_changes, methods=["GET"])]
