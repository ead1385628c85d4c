"""Who a browser is, across reloads, followed pages and server processes: two signed,
HttpOnly cookies.

- ``attn_student``: an anonymous student id (24 random hex digits, no name, nothing typed),
  set by :class:`StudentCookie` on the first page a browser loads, so a reload, a page the
  teacher sends (a fresh page load) and a reconnect to another replica behind HAProxy all
  carry the same id into the Streamlit session (``st.context.cookies`` reads the WebSocket's
  handshake). Signed: a student cannot make up ids to count as many students.
- ``attn_teacher``: a teacher **session** of one class, not the key: until the class expires,
  *Sign out* or *New key*. The page that holds the key (typed into a password box, never in a
  URL) starts a session in the class store and POSTs a short-lived signed ticket naming it to
  ``/_attn/teacher``; that route redeems it, once, and answers with the cookie. The cookie names
  the class and the sign-in's random token, signed; the store says whether that sign-in is
  still live, in every process alike, so *Sign out* ends a copied cookie too. A session acts
  for its class only, and never for what needs the key (a new key, a new class, the owner's
  actions). Both POST routes refuse a request whose ``Origin`` is not this server's own.

Both are HMAC-SHA256 with a secret the class store makes once and keeps (``meta``), as it
keeps the teacher key, so every process on one store checks the same signatures. The cookie
values are never logged; they are HttpOnly (no script on the page reads them) and SameSite.
"""
from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import time
from http.cookies import SimpleCookie

STUDENT_COOKIE = "attn_student"
TEACHER_COOKIE = "attn_teacher"
TEACHER_PATH = "/_attn/teacher"        # POST ticket=…: sets the teacher's cookie
SIGN_OUT_PATH = "/_attn/sign-out"      # POST: clears it
STUDENT_DAYS = 30                      # a student id outlives any class (a class lasts hours)
TICKET_SECONDS = 120                   # a ticket is used within a second of being drawn
_STUDENT = re.compile(r"([0-9a-f]{24})\.([0-9a-f]{32})")
_TEACHER = re.compile(r"([A-Z2-9]{6})\.(ts-[0-9a-f]{32})\.([0-9a-f]{32})")
_TICKET = re.compile(r"([A-Z2-9]{6})\.([0-9]{1,12})\.(ts-[0-9a-f]{32})\.([0-9a-f]{32})")


def _sign(secret: bytes, message: str) -> str:
    return hmac.new(secret, message.encode(), hashlib.sha256).hexdigest()[:32]


# -- the student -----------------------------------------------------------------------------
def new_student_cookie(secret: bytes) -> str:
    student = secrets.token_hex(12)
    return f"{student}.{_sign(secret, 'student:' + student)}"


def student_id(secret: bytes | None, value: str | None) -> str | None:
    """The id a student cookie carries, or None when it is missing or its signature is wrong."""
    found = _STUDENT.fullmatch(value or "") if secret else None
    if found and hmac.compare_digest(found[2], _sign(secret, "student:" + found[1])):
        return found[1]
    return None


# -- the teacher -----------------------------------------------------------------------------
def teacher_ticket(secret: bytes, token: str, code: str, now: float | None = None) -> str:
    """What the teacher's page POSTs to TEACHER_PATH: the class, the ticket's own expiry and the
    teacher session's token (``ClassStore.start_teacher_session``), signed. Used once: the store
    redeems the session's ticket a single time."""
    body = f"{code}.{int((now or time.time()) + TICKET_SECONDS)}.{token}"
    return f"{body}.{_sign(secret, 'ticket:' + body)}"


def ticket_parts(secret: bytes, ticket: str, now: float | None = None) -> tuple[str, str] | None:
    """(class code, session token) of a well-signed, unexpired ticket; None for anything else."""
    found = _TICKET.fullmatch(ticket or "")
    if not found or int(found[2]) < (now or time.time()):
        return None
    body = ".".join(found.groups()[:3])
    return (found[1], found[3]) if hmac.compare_digest(found[4], _sign(secret, "ticket:" + body)) else None


def teacher_cookie(secret: bytes, code: str, token: str) -> str:
    """The ``attn_teacher`` cookie's value: the class and the session's token, signed."""
    return f"{code}.{token}.{_sign(secret, f'teacher:{code}:{token}')}"


def teacher_class(secret: bytes | None, value: str | None) -> tuple[str, str] | None:
    """(class code, session token) a teacher cookie names, or None when missing or forged. Whether
    the session is still live (not signed out, not ended by a new key, its class not over) is
    the store's to say (``ClassStore.teacher_session_class``), in every process alike."""
    found = _TEACHER.fullmatch(value or "") if secret else None
    if not found:
        return None
    return (found[1], found[2]) if hmac.compare_digest(found[3], _sign(secret, f"teacher:{found[1]}:{found[2]}")) \
        else None


def cookie_header(name: str, value: str, max_age: int, secure: bool, path: str = "/") -> str:
    """A Set-Cookie header value: HttpOnly, SameSite=Strict for the teacher, Lax for the student
    (a class link opened from another site must still carry the student's id)."""
    same_site = "Strict" if name == TEACHER_COOKIE else "Lax"
    return (f"{name}={value}; Max-Age={max(0, int(max_age))}; Path={path}; HttpOnly; SameSite={same_site}"
            + ("; Secure" if secure else ""))


def request_cookies(headers) -> dict[str, str]:
    """The cookies of an ASGI scope's headers (a list of (name, value) bytes pairs)."""
    jar = SimpleCookie()
    for name, value in headers:
        if name.lower() == b"cookie":
            try:
                jar.load(value.decode("latin-1"))
            except Exception:  # noqa: BLE001 - a malformed header: no cookies
                return {}
    return {k: m.value for k, m in jar.items()}


# -- the HTTP side (app.py mounts these) --------------------------------------------------------
def _store():
    from server.class_store import class_store
    return class_store()


async def _in_thread(work, *args):
    """``work(*args)`` on a worker thread (the store blocks); None when the store is down."""
    from starlette.concurrency import run_in_threadpool
    from server.class_store import StoreUnavailable
    try:
        return await run_in_threadpool(work, *args)
    except StoreUnavailable:
        return None  # no store, no class: nothing to count, no cookie


async def _secret() -> bytes | None:
    from server.class_store import built_class_store
    store = built_class_store()
    known = store.known_cookie_secret() if store is not None else None
    if known is not None:  # read once per store: a page load does not wait for a worker thread
        return known
    return await _in_thread(lambda: _store().cookie_secret())


async def student_of(value: str | None) -> str:
    """The student id a cookie's value carries ("" for none, a forged one, or the store down),
    checked with the store's secret as read once: no worker thread after the first."""
    secret = await _secret() if value else None
    return (student_id(secret, value) or "") if secret is not None else ""


def _from_proxy(scope) -> bool:
    from server.proxies import from_proxy
    return from_proxy((scope.get("client") or ("",))[0])


def _is_secure(scope) -> bool:
    """HTTPS: served so, or (from a trusted proxy only) forwarded as such by HAProxy's TLS."""
    forwarded = dict(scope.get("headers") or []).get(b"x-forwarded-proto", b"")
    return scope.get("scheme") in ("https", "wss") or (forwarded == b"https" and _from_proxy(scope))


def same_origin(scope) -> bool:
    """Does the request come from a page of this server? Its ``Origin`` (which a browser sends with
    every POST and a page cannot change) names this very scheme, host and port. SameSite alone
    lets a page of the same site (another port, another host of the campus) POST here."""
    headers = dict(scope.get("headers") or [])
    origin, host = headers.get(b"origin", b"").decode("latin-1"), headers.get(b"host", b"").decode("latin-1")
    return bool(host) and origin == ("https://" if _is_secure(scope) else "http://") + host


class SameOriginSockets:
    """ASGI middleware: a websocket (Streamlit's ``/_stcore/stream``) whose ``Origin`` is not this
    server's own scheme, host and port is refused before it opens (HTTP 403), as the POST routes
    refuse. Streamlit compares host names only, and SameSite sends the teacher's cookie to every
    port of the host: a page served from another port could otherwise open the teacher's session.
    A connection naming no Origin is no browser's (a browser always names one) and carries only
    the cookies its own script gives it: it is let through, as Streamlit lets it."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "websocket" and b"origin" in dict(scope.get("headers") or []) and not same_origin(scope):
            await receive()  # websocket.connect
            await send({"type": "websocket.close", "code": 1008})  # before accepting: the server answers 403
            return
        await self.app(scope, receive, send)


class StudentCookie:
    """ASGI middleware: a page load (GET asking for HTML) without a valid student cookie gets
    one, so the WebSocket the page opens next carries it. Nothing else is touched."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        headers = scope.get("headers") or []
        if (scope["type"] != "http" or scope.get("method") != "GET"
                or b"text/html" not in dict(headers).get(b"accept", b"")):
            return await self.app(scope, receive, send)
        secret = await _secret()
        if secret is None or student_id(secret, request_cookies(headers).get(STUDENT_COOKIE)):
            return await self.app(scope, receive, send)
        header = cookie_header(STUDENT_COOKIE, new_student_cookie(secret), STUDENT_DAYS * 86400, _is_secure(scope))

        async def send_with_cookie(message):
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), (b"set-cookie", header.encode())]}
            await send(message)
        await self.app(scope, receive, send_with_cookie)


def _redeem(ticket: str) -> tuple[str, int] | None:
    store = _store()
    secret = store.cookie_secret()
    parts = ticket_parts(secret, ticket)
    expires = parts and store.redeem_teacher_ticket(parts[1], parts[0])
    if not expires:
        return None
    return teacher_cookie(secret, *parts), int(expires - time.time())


async def teacher_route(request):
    """POST ticket=… from a page of this server: the teacher's cookie for the ticket's class, once
    per ticket; 403 for anything else (a ticket used before, forged, late, or posted from
    another origin)."""
    from starlette.responses import PlainTextResponse
    if not same_origin(request.scope):
        return PlainTextResponse("refused: not from a page of this server", status_code=403)
    form = await request.form()
    made = await _in_thread(_redeem, str(form.get("ticket", ""))[:200])
    if not made:
        return PlainTextResponse("not a valid teacher ticket", status_code=403)
    response = PlainTextResponse("ok")
    response.headers.append("set-cookie", cookie_header(TEACHER_COOKIE, made[0], made[1], _is_secure(request.scope)))
    return response


def _end(value: str | None) -> None:
    store = _store()
    named = teacher_class(store.cookie_secret(), value)
    if named:
        store.end_teacher_session(named[1])


async def sign_out_route(request):
    """POST from a page of this server: the teacher session the cookie names ends in the store (a
    copy of the cookie stops working everywhere) and the cookie is cleared on this browser."""
    from starlette.responses import PlainTextResponse
    if not same_origin(request.scope):
        return PlainTextResponse("refused: not from a page of this server", status_code=403)
    await _in_thread(_end, request.cookies.get(TEACHER_COOKIE))
    response = PlainTextResponse("signed out")
    response.headers.append("set-cookie", cookie_header(TEACHER_COOKIE, "", 0, _is_secure(request.scope)))
    return response


def routes() -> list:
    from starlette.routing import Route
    return [Route(TEACHER_PATH, teacher_route, methods=["POST"]), Route(SIGN_OUT_PATH, sign_out_route, methods=["POST"])]


__all__ = ["STUDENT_COOKIE", "TEACHER_COOKIE", "TEACHER_PATH", "SIGN_OUT_PATH", "new_student_cookie", "student_id",
           "teacher_ticket", "ticket_parts", "teacher_cookie", "teacher_class", "cookie_header", "request_cookies",
           "same_origin", "SameOriginSockets", "StudentCookie", "routes"]
