"""Wrong teacher keys, counted per browser session (:class:`SignInAttempts`), kept per process
where no visitor's ``clear_cache`` reaches them.
"""
from __future__ import annotations

import threading

from server.shared import per_process


class SignInAttempts:
    """Wrong teacher keys slow the sessions that send them, and nobody else (OWASP's guidance:
    slow the guesses of the one who guesses, never a lock-out a third party can trigger):

    - a **session** (a browser tab's connection) that typed ``per_session`` wrong keys within
      ``session_window`` seconds waits until the oldest is that old; its key is not even checked;
    - from a **busy address** (``per_address`` wrong keys within ``address_window`` seconds: a
      script, or a room behind one NAT), a session gets one wrong key per ``session_window``
      instead: a script trying keys there pays a new connection, and a page run, per guess.

    Every session's first key is checked, whatever its address sent: the teacher's right key,
    typed in a tab that sent no wrong key, always goes in, at its first try (tests/test_campus.py).
    Nothing is counted against an address as a whole, nothing refuses a tab for another's keys.

    The key is what keeps guessing hopeless: the store draws 72 random bits (``secrets.token_urlsafe(9)``;
    96 for *New key*), so at even 1,000 checked guesses a second, far above what a server that
    runs a page per new session can answer, finding it takes about 10^11 years (docs/campus.md).

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
        """Seconds this tab must wait before its next key is checked (0: it may try now). Only the
        tab's own wrong keys make it wait; its address decides how many it may send first."""
        with self._lock:
            mine = self._recent(("session", session), now, self.session_window)
            busy = len(self._recent(("address", address), now, self.address_window)) >= self.per_address
            most = 1 if busy else self.per_session
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
