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
