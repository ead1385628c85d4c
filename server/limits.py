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
    """Wrong teacher keys, counted per address: an address that gets ``most`` wrong within
    ``window`` seconds is refused until its oldest counted attempt is older than that (a
    key of 16 random characters is never guessed; this keeps a script from trying). The
    address is the student's as the proxy saw it (``client_address``). Holds at most
    ``addresses`` addresses, forgetting the longest quiet, so no visitor can fill memory."""

    def __init__(self, most: int = 30, window: float = 600.0, addresses: int = 10_000):
        self.most, self.window, self.addresses = most, window, addresses
        self._lock = threading.Lock()
        self._failures: dict[str, list[float]] = {}

    def wait(self, address: str, now: float) -> float:
        """Seconds this address must wait before its next try (0: it may try now)."""
        with self._lock:
            recent = [t for t in self._failures.get(address, []) if now - t < self.window]
            return self.window - (now - recent[-self.most]) if len(recent) >= self.most else 0.0

    def failed(self, address: str, now: float) -> None:
        with self._lock:
            recent = [t for t in self._failures.pop(address, []) if now - t < self.window][-self.most:]
            self._failures[address] = recent + [now]  # last in the dict: the most recent
            while len(self._failures) > self.addresses:
                del self._failures[next(iter(self._failures))]


@per_process
def sign_in_attempts() -> SignInAttempts:
    return SignInAttempts()


def client_address(peer: str | None, forwarded_for: str | None) -> str:
    """The visitor's address: the websocket's peer, or, when that is this machine (a proxy in
    front: HAProxy's ``option forwardfor``), the last address in X-Forwarded-For, the one the
    proxy itself appended (anything before it, the visitor could have written)."""
    if peer and peer not in ("127.0.0.1", "::1"):
        return peer
    hops = [h.strip() for h in (forwarded_for or "").split(",") if h.strip()]
    return hops[-1] if hops else "local"
