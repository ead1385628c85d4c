"""Who a browser is, across reloads, followed pages and server processes: two signed,
HttpOnly cookies.

- ``attn_student``: an anonymous student id (24 random hex digits, no name, nothing typed),
  set by :class:`StudentCookie` on the first page a browser loads, so a reload, a page the
  teacher sends (a fresh page load) and a reconnect to another replica behind HAProxy all
  carry the same id into the Streamlit session (``st.context.cookies`` reads the WebSocket's
  handshake). Signed: a student cannot make up ids to count as many students.
- ``attn_teacher``: the teacher of **one** class, until the class expires or *Sign out*. The
  page that holds the key (typed into a password box, never in a URL) gets a short-lived signed
  ticket and POSTs it to ``/_attn/teacher``; that route answers with the cookie. The signature
  covers the class code, its expiry and the teacher key, so a cookie for class A says nothing
  about class B, and a new key ends every cookie made with the old one.

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
_TEACHER = re.compile(r"([A-Z2-9]{6})\.([0-9]{1,12})\.([0-9a-f]{32})")
_TICKET = re.compile(r"([A-Z2-9]{6})\.([0-9]{1,12})\.([0-9]{1,12})\.([0-9a-f]{16})\.([0-9a-f]{32})")


def _sign(secret: bytes, message: str) -> str:
    return hmac.new(secret, message.encode(), hashlib.sha256).hexdigest()[:32]


def _key_tag(teacher_key: str) -> str:
    return hashlib.sha256(teacher_key.encode()).hexdigest()[:16]


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
def teacher_ticket(secret: bytes, teacher_key: str, code: str, class_expires: float, now: float | None = None) -> str:
    """What the teacher's page POSTs to TEACHER_PATH: the class, its expiry, the ticket's own
    expiry and a nonce, signed."""
    until = int((now or time.time()) + TICKET_SECONDS)
    body = f"{code}.{int(class_expires)}.{until}.{secrets.token_hex(8)}"
    return f"{body}.{_sign(secret, 'ticket:' + body + ':' + _key_tag(teacher_key))}"


def cookie_from_ticket(secret: bytes, teacher_key: str, ticket: str, now: float | None = None) -> tuple[str, int] | None:
    """The teacher cookie's value and its lifetime in seconds for a valid, unexpired ticket."""
    found = _TICKET.fullmatch(ticket or "")
    now = now or time.time()
    if not found or int(found[3]) < now:
        return None
    body = ".".join(found.groups()[:4])
    if not hmac.compare_digest(found[5], _sign(secret, "ticket:" + body + ":" + _key_tag(teacher_key))):
        return None
    code, expires = found[1], int(found[2])
    if expires <= now:
        return None
    value = f"{code}.{expires}.{_sign(secret, f'teacher:{code}:{expires}:' + _key_tag(teacher_key))}"
    return value, int(expires - now)


def teacher_class(secret: bytes | None, teacher_key: str | None, value: str | None,
                  now: float | None = None) -> str | None:
    """The class a teacher cookie is for, or None: missing, forged, made with another key, or
    past the class's expiry."""
    found = _TEACHER.fullmatch(value or "") if secret and teacher_key else None
    if not found or int(found[2]) <= (now or time.time()):
        return None
    expected = _sign(secret, f"teacher:{found[1]}:{found[2]}:" + _key_tag(teacher_key))
    return found[1] if hmac.compare_digest(found[3], expected) else None


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
def _store_secrets(with_key: bool) -> tuple[bytes, str | None]:
    """The store's cookie secret (read once per process) and, for the teacher's routes, the
    teacher key (read each time: a new key ends the old cookies at once)."""
    from server.class_store import class_store
    store = class_store()
    return store.cookie_secret(), store.teacher_key() if with_key else None


async def _secrets(with_key: bool = True) -> tuple[bytes, str | None] | None:
    from starlette.concurrency import run_in_threadpool
    from server.class_store import StoreUnavailable
    try:
        return await run_in_threadpool(_store_secrets, with_key)
    except StoreUnavailable:
        return None  # no store, no class: nothing to count, no cookie


def _is_secure(scope) -> bool:
    forwarded = dict(scope.get("headers") or []).get(b"x-forwarded-proto", b"")
    return scope.get("scheme") == "https" or forwarded == b"https"


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
        found = await _secrets(with_key=False)
        if found is None or student_id(found[0], request_cookies(headers).get(STUDENT_COOKIE)):
            return await self.app(scope, receive, send)
        header = cookie_header(STUDENT_COOKIE, new_student_cookie(found[0]), STUDENT_DAYS * 86400, _is_secure(scope))

        async def send_with_cookie(message):
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), (b"set-cookie", header.encode())]}
            await send(message)
        await self.app(scope, receive, send_with_cookie)


async def teacher_route(request):
    """POST ticket=…: the teacher's cookie for the ticket's class; 403 for anything else."""
    from starlette.responses import PlainTextResponse
    form = await request.form()
    found = await _secrets()
    made = found and cookie_from_ticket(found[0], found[1], str(form.get("ticket", ""))[:200])
    if not made:
        return PlainTextResponse("not a valid teacher ticket", status_code=403)
    response = PlainTextResponse("ok")
    response.headers.append("set-cookie", cookie_header(TEACHER_COOKIE, made[0], made[1], _is_secure(request.scope)))
    return response


async def sign_out_route(request):
    """POST: the teacher's cookie cleared on this browser."""
    from starlette.responses import PlainTextResponse
    response = PlainTextResponse("signed out")
    response.headers.append("set-cookie", cookie_header(TEACHER_COOKIE, "", 0, _is_secure(request.scope)))
    return response


def routes() -> list:
    from starlette.routing import Route
    return [Route(TEACHER_PATH, teacher_route, methods=["POST"]), Route(SIGN_OUT_PATH, sign_out_route, methods=["POST"])]


__all__ = ["STUDENT_COOKIE", "TEACHER_COOKIE", "TEACHER_PATH", "SIGN_OUT_PATH", "new_student_cookie", "student_id",
           "teacher_ticket", "cookie_from_ticket", "teacher_class", "cookie_header", "request_cookies", "StudentCookie",
           "routes"]
