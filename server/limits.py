"""What one server shares out among all its visitors: decoding slots and live-training turns.

The app serves a whole class from one process on a few cores. Without limits, thirty
sessions that translate at once each get a thirtieth of the CPU and all finish late, and
thirty live trainings would take the server down. So:

- **decoding** runs in at most ``settings.decoders()`` threads at once (default 2, one per
  core); the other sessions wait their turn for a few milliseconds each
  (:func:`decoding_slot`);
- **live training** (the "Watch attention emerge" page) runs at most
  ``settings.live_trainings()`` at once, server-wide (default 1); the other visitors see
  their place in the queue and can cancel (:class:`TrainingQueue`).

Both are process-wide objects on purpose (one per server, shared by every session; kept by
``server.shared.per_process``, where no visitor's ``clear_cache`` reaches them); they hold only
who is waiting, never a visitor's data.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager

from server import settings
from server.shared import per_process


class TrainingQueue:
    """First come, first served: the first ``slots`` tickets run, the rest wait in order."""

    def __init__(self):
        self._changed = threading.Condition()
        self._tickets: list[object] = []  # in arrival order; the first `slots` are running

    def join(self) -> object:
        ticket = object()
        with self._changed:
            self._tickets.append(ticket)
        return ticket

    def place(self, ticket: object, slots: int) -> int:
        """0 when the ticket may run, else its place among those waiting (1 = next)."""
        with self._changed:
            return max(0, self._tickets.index(ticket) - slots + 1)

    def wait(self, ticket: object, slots: int, timeout: float) -> int:
        """Wait up to ``timeout`` seconds for a change; returns :meth:`place`."""
        with self._changed:
            if self._tickets.index(ticket) >= slots:
                self._changed.wait(timeout)
            return max(0, self._tickets.index(ticket) - slots + 1)

    def leave(self, ticket: object) -> None:
        """Give the place back (finished, cancelled, or the visitor left); idempotent."""
        with self._changed:
            if ticket in self._tickets:
                self._tickets.remove(ticket)
                self._changed.notify_all()

    def __len__(self) -> int:
        with self._changed:
            return len(self._tickets)


@per_process
def training_queue() -> TrainingQueue:
    return TrainingQueue()


@per_process
def _decoding_slots(n: int) -> threading.BoundedSemaphore:
    return threading.BoundedSemaphore(n)


@contextmanager
def decoding_slot():
    """Hold one of the server's decoding slots while the model computes."""
    slots = _decoding_slots(settings.decoders())
    with slots:
        yield


class SignInAttempts:
    """Wrong teacher keys, counted per browser session and per address, so that a script cannot
    try many keys and a student cannot lock the teacher out:

    - a **session** (a browser tab's connection) that typed ``per_session`` wrong keys within
      ``session_window`` seconds waits until the oldest is that old; its key is not even checked;
    - an **address** that sent ``per_address`` wrong keys within ``address_window`` seconds (a
      script, or a room behind one NAT) does not lock anyone out: each session from it gets one
      try per ``session_window`` instead, so a new session's first key is always checked (the
      teacher's right key goes in), and a script trying keys needs a new connection per try.

    Kept per process (``sign_in_attempts``), keyed by Streamlit's session id, never in the
    session's state, which the visitor's ``clear_cache`` empties. At most ``entries`` sessions and
    addresses are remembered, the longest quiet forgotten first, so no visitor can fill memory."""

    def __init__(self, per_session: int = 5, session_window: float = 60.0, per_address: int = 30,
                 address_window: float = 600.0, entries: int = 20_000):
        self.per_session, self.session_window = per_session, session_window
        self.per_address, self.address_window, self.entries = per_address, address_window, entries
        self._lock = threading.Lock()
        self._failures: dict[tuple[str, str], list[float]] = {}  # ("session"|"address", id) -> times

    def _recent(self, who: tuple[str, str], now: float, window: float) -> list[float]:
        return [t for t in self._failures.get(who, []) if now - t < window]

    def wait(self, session: str, address: str, now: float) -> float:
        """Seconds this session must wait before its next key is checked (0: it may try now)."""
        with self._lock:
            mine = self._recent(("session", session), now, self.session_window)
            most = self.per_session
            if len(self._recent(("address", address), now, self.address_window)) >= self.per_address:
                most = 1  # a busy address: one try per session and window, never a lock-out
            return self.session_window - (now - mine[-most]) if len(mine) >= most else 0.0

    def failed(self, session: str, address: str, now: float) -> None:
        with self._lock:
            for who, window, keep in ((("session", session), self.session_window, self.per_session),
                                      (("address", address), self.address_window, self.per_address)):
                recent = [t for t in self._failures.pop(who, []) if now - t < window][-keep:]
                self._failures[who] = recent + [now]  # last in the dict: the most recent
            while len(self._failures) > self.entries:
                del self._failures[next(iter(self._failures))]


@per_process
def sign_in_attempts() -> SignInAttempts:
    return SignInAttempts()


def from_proxy(peer: str | None) -> bool:
    """Is ``peer`` one of the proxies in front of this server (``settings.proxies``)?"""
    return bool(peer) and peer in settings.proxies()


def client_address(peer: str | None, forwarded_for: str | None) -> str:
    """The visitor's address: the connection's peer, or, when the peer is a proxy named in
    ``ATTN_EXPLORER_PROXIES`` (HAProxy's ``option forwardfor``), the last address in
    X-Forwarded-For, the one that proxy appended (anything before it, the visitor could have
    written). A header from anyone else, this machine included, is ignored. Streamlit gives no
    peer (None) for a loopback connection: that is 127.0.0.1."""
    peer = peer or "127.0.0.1"
    if not from_proxy(peer):
        return peer
    hops = [h.strip() for h in (forwarded_for or "").split(",") if h.strip()]
    return hops[-1] if hops else peer


LOOPBACK = ("127.0.0.1", "::1")


class BelieveProxiesOnly:
    """ASGI middleware, outermost of the app's own: undoes what the server in front believed.

    uvicorn, which serves ``st.App``, rewrites a request's client address and scheme from its
    X-Forwarded-For and X-Forwarded-Proto when the connection comes from FORWARDED_ALLOW_IPS,
    read when it starts, before ``app.py`` runs: by default this machine, so that any local
    client could claim any address. Unless this machine is a proxy named in
    ``ATTN_EXPLORER_PROXIES``, a request carrying X-Forwarded-For whose client is one of the
    addresses in it is taken for what it was, a connection from this machine (a remote visitor
    who names their own address there only ends up counted as this machine), and its scheme for
    the one the server itself serves."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] in ("http", "websocket") and not any(a in settings.proxies() for a in LOOPBACK):
            headers = dict(scope.get("headers") or [])
            hosts = _named_hosts(headers.get(b"x-forwarded-for", b"").decode("latin-1"))
            client = scope.get("client")
            if client and client[0] in hosts:
                scope = {**scope, "client": ("127.0.0.1", client[1])}
            if b"x-forwarded-proto" in headers:  # the scheme this server itself serves
                from streamlit import config
                tls = bool(config.get_option("server.sslCertFile"))
                scope = {**scope, "scheme": ("wss" if tls else "ws") if scope["type"] == "websocket"
                         else ("https" if tls else "http")}
        await self.app(scope, receive, send)


def _named_hosts(forwarded_for: str) -> set[str]:
    """The hosts an X-Forwarded-For names, each as written and without a port ("1.2.3.4:80", "[::1]:80")."""
    found = set()
    for entry in (e.strip() for e in forwarded_for.split(",")):
        if entry:
            found.add(entry)
            if entry.startswith("[") and "]" in entry:
                found.add(entry[1:entry.index("]")])
            elif entry.count(":") == 1:
                found.add(entry.split(":")[0])
    return found
