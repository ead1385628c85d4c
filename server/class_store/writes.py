"""Has anyone committed to a SQLite store? Asked by the follow board's thread (``server/follow.py``)
between its reads, so that a send on another replica reaches this process's followers at once.

:class:`Writes` answers with ``PRAGMA data_version`` on a connection of its own (a few
microseconds; it moves with every other connection's commit, another process's or this one's).
When to ask is the cost: a thread woken 20 times a second to ask spends 3–4.5 ms of CPU a second
on the 2-core AMD EPYC (a wake-up about 150 µs), where the whole server idles at 7–16 ms a
second with a class of 30 following (docs/performance.md, "Following the teacher"). So on
Linux the thread sleeps in ``select`` on an inotify descriptor of the store's folder (a commit
writes the ``-wal`` file, a checkpoint the database: each an event) and on the board's
:class:`Nudge` (a change made in this process), and asks only when woken; elsewhere, or when
the kernel gives no inotify instance (its per-user limit), it asks every ``WRITES_CHECK_S``.
A wake-up by any other file of the folder costs one ask, never a read of the store.

What followers see changes only with the teacher's moves (a send, a reveal, a removal, a close),
while a class's joins and answers are most of its commits: 200 answers within two seconds woke
every process's board for each. So a change to what followers see also writes the **bell**, a
file beside the store (:func:`ring`, after its commit), and a wait that has inotify wakes for the
bell only (:meth:`Writes.wait`'s ``bell``); without inotify it asks ``data_version`` as before.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import select
import sqlite3
import struct
import threading
import time
from pathlib import Path

# a board that heard no write (the follow board, the teacher's live board) reads this often all the
# same: a class's hours end with no write
QUIET_READ_S = 5.0
WRITES_CHECK_S = 0.05  # without inotify: how often the thread asks (20 wake-ups a second)
AFTER_EVENT_S = (0.002, 0.01, 0.05)  # with it: after a file event, looks again this long after (see Writes.wait)
_IN_EVENTS = 0x2 | 0x8 | 0x80 | 0x100 | 0x200  # IN_MODIFY, IN_CLOSE_WRITE, IN_MOVED_TO, IN_CREATE, IN_DELETE
_IN_NONBLOCK_CLOEXEC = os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
_IN_CLOSE_WRITE, _IN_Q_OVERFLOW = 0x8, 0x4000
_IN_HEADER = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len; then len bytes of name
BELL_SUFFIX = "-follow"  # the bell: the store's file name and this, in its folder


def bell_path(database: str) -> Path:
    path = Path(database).resolve()
    return path.with_name(path.name + BELL_SUFFIX)


def ring(database: str) -> None:
    """Write the store's bell (0600, like the store): what followers see changed, committed. A
    bell that cannot be written leaves the other processes' boards to their periodic read."""
    try:
        fd = os.open(bell_path(database), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), 0o600)
        try:
            os.write(fd, b"1")
        finally:
            os.close(fd)
    except OSError:
        pass


def _rang(events: bytes, bell: bytes) -> bool:
    """Does an inotify read say the bell was written (closed after writing: one event a ring, not
    its creation and modification too), or that events were lost (the queue overflowed)?"""
    at = 0
    while at + _IN_HEADER.size <= len(events):
        mask, length = _IN_HEADER.unpack_from(events, at)[1::2]
        start = at + _IN_HEADER.size
        if mask & _IN_Q_OVERFLOW or (mask & _IN_CLOSE_WRITE and events[start:start + length].rstrip(b"\0") == bell):
            return True
        at = start + length
    return False


class Nudge(threading.Event):
    """A ``threading.Event`` a ``select`` can wait on too (Linux's eventfd): the board's thread
    sleeps on it and on the store's folder at once, with no timer."""

    def __init__(self):
        super().__init__()
        self._fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC) if hasattr(os, "eventfd") else None

    def fileno(self) -> int | None:
        return self._fd

    def set(self) -> None:
        super().set()
        if self._fd is not None:
            os.eventfd_write(self._fd, 1)

    def clear(self) -> None:
        super().clear()
        if self._fd is not None:
            try:
                os.eventfd_read(self._fd)
            except BlockingIOError:
                pass


def _inotify(folder: str) -> int | None:
    """An inotify descriptor watching ``folder`` for written, made and removed files; None where
    there is none (not Linux, the per-user limit reached, the folder gone)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        fd = libc.inotify_init1(_IN_NONBLOCK_CLOEXEC)
    except (OSError, AttributeError):
        return None
    if fd < 0:
        return None
    if libc.inotify_add_watch(fd, os.fsencode(folder), _IN_EVENTS) < 0:
        os.close(fd)
        return None
    return fd


class Writes:
    """Has another connection (another process's, the teacher's on another replica, or one of this
    process's pool) committed to a SQLite store since the last look? One per thread (a sqlite3
    connection stays in the thread that made it); it never writes."""

    def __init__(self, database: str):
        self.database, self._conn, self._seen = database, None, None
        self._bell = os.fsencode(bell_path(database).name)  # the name inotify reports for the bell
        self._watch: int | None = None  # made by the first wait (a thread that only asks needs none)
        self._watch_made = False

    @property
    def new(self) -> bool:
        """Not looked yet (or the connection was lost)."""
        return self._conn is None

    def changed(self) -> bool:
        try:
            if self._conn is None:
                # mode=rw: never makes a file (the store makes its own, 0600)
                self._conn = sqlite3.connect(Path(self.database).resolve().as_uri() + "?mode=rw", uri=True, timeout=1.0)
                self._seen = self._conn.execute("PRAGMA data_version").fetchone()[0]
                return True  # the first look: what came before it is unknown
            now = self._conn.execute("PRAGMA data_version").fetchone()[0]
        except sqlite3.Error:  # gone, locked, not yet made: let the read say what it is
            self._conn = None
            return True
        changed, self._seen = now != self._seen, now
        return changed

    def wait(self, seconds: float, nudge: threading.Event, bell: bool = False) -> bool:
        """Until ``nudge`` is set, a commit, or ``seconds``: True for the first two, False when the
        seconds passed with nothing committed since the last look.

        A commit writes the ``-wal`` file (the event) and then makes it visible in the shared
        memory index (no event), so a look made at once may see nothing yet: after each event it
        looks again AFTER_EVENT_S later, and once more at the end of the seconds. With ``bell``
        and inotify, only the bell (:func:`ring`, written after its commit) counts as a commit."""
        if not self._watch_made:
            self._watch, self._watch_made = _inotify(str(Path(self.database).resolve().parent)), True
        if self.new:
            self.changed()  # its first look says "unknown": what comes from now on is what it waits for
        deadline = time.monotonic() + seconds
        woken = [fd for fd in (self._watch, getattr(nudge, "fileno", lambda: None)()) if fd is not None]
        timer = len(woken) < 2  # without both descriptors, ask every WRITES_CHECK_S
        by_bell = bell and not timer
        looks: list[float] = []  # when to look again after an event
        while True:
            if nudge.is_set():
                return True
            now = time.monotonic()
            if now >= deadline:
                return False if by_bell else self.changed()
            timeout = min(deadline - now, WRITES_CHECK_S if timer else float("inf"), *(t - now for t in looks[:1]))
            ready = select.select(woken, [], [], max(0.0, timeout))[0] if woken else (time.sleep(max(0.0, timeout)) or [])
            if nudge.is_set():
                return True
            now = time.monotonic()
            due = bool(looks) and looks[0] <= now
            looks = [t for t in looks if t > now]
            if self._watch in ready:
                try:
                    events = os.read(self._watch, 65536)
                except BlockingIOError:
                    events = b""
                if by_bell:
                    if _rang(events, self._bell):
                        return True
                    continue
                looks = [now + d for d in AFTER_EVENT_S]
            if (timer or due or self._watch in ready) and self.changed():
                return True
