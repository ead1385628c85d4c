"""``one_write_a_turn``: the frames a browser's socket is sent in one turn of the event loop go out
in one write (docs/performance.md#one_write_a_turn). Touches no Streamlit code: it wraps the
transport of uvicorn's websocket protocol, which Streamlit's Starlette server runs (its source's
fingerprint in ``patches.py``).

Streamlit sends each ``ForwardMsg`` as its own websocket frame (``StarletteSessionClient._sender``,
one ``send_bytes`` per message), and uvicorn writes each frame to the socket at once: a page's
run, or a sent page replayed to a follower, is 10–60 ``send`` system calls, each paying the
kernel's loopback delivery and the wake-up of the reader (the proxy, the browser) on the
server's CPU. Held until the end of the loop's turn, the frames queued in that turn (a replay's
whole page; the messages one wake-up of the flush sends) leave in one call, in their order."""
from __future__ import annotations

import asyncio

COUNTS = {"writes": 0, "frames": 0}  # since start: frames written, and the system calls they took


class TurnBuffer:
    """A transport whose writes wait for the end of the event loop's turn (``call_soon``) and go
    out joined; everything else is the transport's own. ``close`` and ``write_eof`` send what is
    held first; ``abort`` drops it, as the transport's own abort drops its buffer."""

    __slots__ = ("_transport", "_loop", "_held", "_due")

    def __init__(self, transport, loop: asyncio.AbstractEventLoop):
        self._transport, self._loop, self._held, self._due = transport, loop, [], False

    def write(self, data) -> None:
        if not data:
            return
        self._held.append(data)
        if not self._due:
            self._due = True
            self._loop.call_soon(self._flush)

    def writelines(self, lines) -> None:
        for data in lines:
            self.write(data)

    def _flush(self) -> None:
        self._due = False
        held, self._held = self._held, []
        if held and not self._transport.is_closing():
            COUNTS["writes"] += 1
            COUNTS["frames"] += len(held)
            self._transport.write(held[0] if len(held) == 1 else b"".join(held))

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def write_eof(self) -> None:
        self._flush()
        self._transport.write_eof()

    def abort(self) -> None:
        self._held = []
        self._transport.abort()

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + sum(len(d) for d in self._held)

    def __getattr__(self, name):  # is_closing, get_extra_info, pause_reading, resume_reading, ...
        return getattr(self._transport, name)


def held_writes(uvicorns):
    """``WebSocketsSansIOProtocol.connection_made``: the protocol gets its transport inside a
    :class:`TurnBuffer` (outside an event loop: as uvicorn does)."""
    def connection_made(self, transport) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return uvicorns(self, transport)
        return uvicorns(self, TurnBuffer(transport, loop))
    return connection_made
