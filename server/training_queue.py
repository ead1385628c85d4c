"""Live training's turns: at most ``settings.live_trainings()`` trainings at once, server-wide (the
*Watch attention emerge* page); the other visitors see their place in the queue and can cancel.
"""
from __future__ import annotations

import threading

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
