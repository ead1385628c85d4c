"""What a process holds for every session, out of a visitor's reach.

Streamlit's resource cache (``cache_resource``) is emptied, for the whole server, by a ``clear_cache``
message, and any browser can send one over the websocket (the front end's *Clear cache* menu
item does). For a cache of results that costs a recomputation; for the models it means
reloading them, and for the decoding slots, the live-training queue or the class store's
connection pool it means the server's limits start again from zero while the old ones are
still held. So those live here, in module-level objects built once per process
(:func:`per_process`), and the ``guard_clear_cache`` patch (``server/streamlit_patches/patches.py``)
narrows the message to what it is for in a browser: it clears the sending session's own state.
"""
from __future__ import annotations

import functools
import threading


def per_process(fn):
    """Cache ``fn``'s result per arguments for the life of the process, built once even when
    sessions ask at the same moment (the others wait for it). ``fn.clear()`` empties it: for
    tests and for the server's own code, never reachable from a browser."""
    results: dict[tuple, object] = {}
    locks: dict[tuple, threading.Lock] = {}
    guard = threading.Lock()

    @functools.wraps(fn)
    def cached(*args):
        try:
            return results[args]
        except KeyError:
            pass
        with guard:
            lock = locks.setdefault(args, threading.Lock())
        with lock:
            if args not in results:
                results[args] = fn(*args)
            return results[args]

    def clear() -> None:
        with guard:
            results.clear()
            locks.clear()

    cached.clear = clear
    return cached
