"""Wrong teacher keys, counted per browser session and per address (:class:`SignInAttempts`), kept
per process where no visitor's ``clear_cache`` reaches them.
"""
from __future__ import annotations

import threading

from server.shared import per_process


class SignInAttempts:
    """Wrong teacher keys, counted per browser session and per address, so that a script cannot
    try many keys and a student cannot lock the teacher out:

    - a **session** (a browser tab's connection) that typed ``per_session`` wrong keys within
      ``session_window`` seconds waits until the oldest is that old; its key is not even checked;
    - an **address** that sent ``per_address`` wrong keys within ``address_window`` seconds (a
      script, or a room behind one NAT) does not lock anyone out: each session from it gets one
      try per ``session_window`` instead, so a new session's first key is always checked (the
      teacher's right key goes in), and a script trying keys needs a new connection per try;
      and new connections are limited too: the whole address gets one key checked per
      ``busy_gap`` seconds (the teacher's right key waits that long at most).

    Kept per process (``sign_in_attempts``), keyed by Streamlit's session id, never in the
    session's state, which the visitor's ``clear_cache`` empties. At most ``entries`` sessions and
    addresses are remembered, the longest quiet forgotten first, so no visitor can fill memory."""

    def __init__(self, per_session: int = 5, session_window: float = 60.0, per_address: int = 30,
                 address_window: float = 600.0, entries: int = 20_000, busy_gap: float = 2.0):
        self.per_session, self.session_window, self.busy_gap = per_session, session_window, busy_gap
        self.per_address, self.address_window, self.entries = per_address, address_window, entries
        self._lock = threading.Lock()
        self._failures: dict[tuple[str, str], list[float]] = {}  # ("session"|"address", id) -> times

    def _recent(self, who: tuple[str, str], now: float, window: float) -> list[float]:
        return [t for t in self._failures.get(who, []) if now - t < window]

    def wait(self, session: str, address: str, now: float) -> float:
        """Seconds this tab must wait before its next key is checked (0: it may try now)."""
        with self._lock:
            mine = self._recent(("session", session), now, self.session_window)
            most, gap = self.per_session, 0.0
            from_here = self._recent(("address", address), now, self.address_window)
            if len(from_here) >= self.per_address:
                most = 1  # a busy address: one try per session and window, never a lock-out…
                gap = self.busy_gap - (now - from_here[-1])  # …and one a gap for all its connections
            return max(gap, self.session_window - (now - mine[-most]) if len(mine) >= most else 0.0)

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
