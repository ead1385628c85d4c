"""``no_delay``: a run's messages sent as written, TCP_NODELAY on the server's listening socket
(docs/performance.md#no_delay). Touches no Streamlit code: it mends what Streamlit's
``_bind_socket`` leaves out (its fingerprint in ``patches.py``)."""
from __future__ import annotations

import os
import socket
import stat


class _NoDelay:
    """Streamlit's Starlette server binds its own socket (``_bind_socket``: ``socket.socket(family)``,
    protocol 0), and asyncio sets TCP_NODELAY only on sockets whose protocol says TCP: every
    connection it accepts kept Nagle's algorithm on, so a run's later messages waited for the
    browser's delayed ACK of its first (40 ms on Linux, up to 200 ms on Windows). The socket is
    bound before the app is imported, so the option is set on it where it stands: each listening
    TCP socket of this process (the server's, found among its open files), whose accepted
    sockets inherit it. No Streamlit code is changed; ``_bind_socket``'s fingerprint says when
    Streamlit binds otherwise."""

    def __init__(self):
        self.set: list[int] = []

    @staticmethod
    def _listeners():
        for name in os.listdir("/dev/fd"):
            try:  # sockets only: a descriptor duplicated and left open would hold a pipe's end open
                if not stat.S_ISSOCK(os.fstat(int(name)).st_mode):
                    continue
                fd = os.dup(int(name))
            except (OSError, ValueError):
                continue
            try:
                sock = socket.socket(fileno=fd)  # its own descriptor: closing it leaves the server's
            except OSError:
                os.close(fd)
                continue
            with sock:
                try:
                    if sock.family in (socket.AF_INET, socket.AF_INET6) and sock.type == socket.SOCK_STREAM \
                            and sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
                        yield sock
                except OSError:
                    continue

    def apply(self) -> bool:
        if not os.path.isdir("/dev/fd"):
            return False
        for sock in self._listeners():
            if not sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                self.set.append(sock.getsockname()[1])
        return True

    def undo(self) -> None:
        for sock in self._listeners():
            if sock.getsockname()[1] in self.set:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 0)
        self.set.clear()


LISTENERS = _NoDelay()
