"""Attention Explorer: see how neural machine translation aligns while it translates.

    streamlit run app.py

This file is the server: an ``st.App`` that serves ``navigation.py`` (the pages) to every
browser session. It exists for one reason, start-up time: when the server starts, a
background thread imports torch, loads every checkpoint, translates the landing page's
sentence and draws one figure, while the browser is still fetching Streamlit's front end
(and, told by ``navigation.py``, Plotly's). The first page then finds the models and its
translation already in the shared caches (``ui/zoo_cache.py``).
"""
from __future__ import annotations

import faulthandler
import gc
import logging
import os
import signal
import sys
import threading
from contextlib import asynccontextmanager


def set_up() -> None:
    """What the process sets up before it serves, in this order:

    - one intra-op thread per decoding, before anything imports torch: the small products of a
      decoder step do not split well across threads, and the server runs several decodings side
      by side instead (ATTN_EXPLORER_DECODERS, server/limits.py). Pages never change it;
    - glibc's malloc arenas capped, before the server starts its threads (:func:`limit_malloc_arenas`);
    - a chosen teacher key too short to guard a class refused, with the reason, at start;
    - the chosen changes to Streamlit's internals (``server/serving.py``: each page compiled once
      per process, no config file polled, a browser's "clear cache" clearing its own session only,
      each tab's reruns paced to its share, each tab's page sent as its run ends), each printed as
      applied or not; the server runs with whichever applied."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    limit_malloc_arenas()
    from server.settings import teacher_key_problem
    if teacher_key_problem():
        sys.exit(f"Attention Explorer: {teacher_key_problem()}")
    from server.serving import apply_patches
    applied = [o.name for o in apply_patches() if o.applied]
    if not applied:
        print("Attention Explorer: no Streamlit patch applied; serving as Streamlit does", flush=True)


def limit_malloc_arenas() -> None:
    """Cap glibc's malloc arenas (``server.settings.malloc_arenas``) before the server starts
    its threads; a no-op off glibc."""
    from server.settings import malloc_arenas
    arenas = malloc_arenas()
    if not arenas:
        return
    try:
        import ctypes
        ctypes.CDLL("libc.so.6").mallopt(-8, arenas)  # -8 = M_ARENA_MAX
    except (OSError, AttributeError):
        pass


set_up()  # before anything below imports Streamlit, starts a thread or loads torch
import streamlit as st  # noqa: E402


def warm_up() -> None:
    """Load what the first page needs into this process's caches. Failures are only logged:
    the page loads (and reports) the same things itself. The page waits for each stage
    (``server.loading.warm_up``) rather than doing the same work alongside."""
    from server.loading import warm_up as state
    from server.streamlit_patches.reads import quiet_missing_context
    # the shared cache is filled from a thread with no browser session: Streamlit would log a
    # "missing ScriptRunContext" warning for that, which is expected here
    with quiet_missing_context():
        _warm_up(state)


def _warm_up(state) -> None:
    try:
        # in the order the first page needs them: Plotly for its loading chart, the models,
        # its translation
        # pandas first, whole: Plotly's serialiser uses pandas if it is in sys.modules, and a page
        # drawing its loading chart while this thread is half-way through importing pandas
        # would find a partially initialised module ("no attribute 'Series'")
        import pandas  # noqa: F401
        from viz.fast_figure import placeholder
        placeholder("").to_json()  # Plotly's lazy imports
        state.figures_ready.set()
        from ui.examples import DEFAULT_SENTENCE
        from ui.zoo_cache import cached_translate, DEFAULT_MODEL, zoo
        models = zoo()
        if DEFAULT_MODEL in models and models[DEFAULT_MODEL].available:
            cached_translate(DEFAULT_MODEL, DEFAULT_SENTENCE, 1)  # the landing page's own translation
        from viz.heatmap import alignment_heatmap
        import numpy as np
        alignment_heatmap(np.eye(2), ["a", "b"], ["c", "d"]).to_json()  # the heatmap trace's lazy imports
        from viz.fast_figure import import_plotly_objects
        import_plotly_objects()  # before a class opens a page at once (each lazy import holds a lock)
        # Streamlit's emoji catalogue: the first widget label of a process that is not ASCII (Step
        # through's "① Score") imports it, 0.3 s of compiling its pattern under the import lock, which
        # a class opening Step through at once waits on (docs/performance.md, "tried and not kept")
        import streamlit.emojis  # noqa: F401
    except Exception:  # noqa: BLE001 - never stop the server over a warm-up
        logging.getLogger(__name__).exception("warm-up failed; the pages will load the models themselves")
    finally:
        # What is loaded now (modules, the models, Streamlit) lives as long as the server: moved
        # out of the garbage collector's view, a full collection no longer walks its ~300,000
        # objects, 90–130 ms each time during a class (docs/performance.md)
        gc.freeze()
        state.figures_ready.set()
        state.finished.set()


def announce_class_store() -> None:
    """Show the teacher's key (the server's own, or the one the class store keeps for every
    process on it) on the terminal, and delete the classes past their hours. A store that is
    down is only reported: the exercises work without a class (docs/exercises.md)."""
    from server.class_store import class_store, StoreUnavailable
    from server.lecture import to_terminal
    store = class_store()
    try:
        store.purge_expired()
        key = store.teacher_key()
        print(f"Attention Explorer: class store {store.kind}", flush=True)
        if not to_terminal(f"Attention Explorer: teacher key: {key}"):
            print("Attention Explorer: the teacher key is shown on a terminal only: "
                  "`python scripts/teacher_key.py` shows it", flush=True)
    except StoreUnavailable as e:
        print(f"Attention Explorer: {e}; exercises work without classes", flush=True)


@asynccontextmanager
async def lifespan(_app):
    if hasattr(signal, "SIGUSR1"):  # `kill -USR1 <pid>` prints every thread's stack: what a hung page waits on
        faulthandler.register(signal.SIGUSR1, all_threads=True)
    from server.loading import warm_up as state
    state.started = True
    threading.Thread(target=warm_up, name="warm-up", daemon=True).start()
    threading.Thread(target=announce_class_store, name="class-store", daemon=True).start()
    yield


async def ready(request):
    """``/_attn/ready``: 200 once the warm-up thread has loaded the models, 503 before. A proxy in
    front of several servers (``server/lecture.py``) sends no student to a server still loading.
    The first line says so; a line per Streamlit patch and private read follows (applied or why not);
    ``?format=json`` gives the same as JSON."""
    from starlette.responses import JSONResponse, PlainTextResponse
    from server.loading import warm_up as state
    from server.serving import outcomes
    ready = state.finished.is_set()
    zoo_cache = sys.modules.get("ui.zoo_cache")  # how often the zoo was loaded: once, whatever visitors send
    loads = getattr(zoo_cache, "zoo_loads", 0)
    status = 200 if ready else 503
    if request.query_params.get("format") == "json":
        return JSONResponse({"ready": ready, "models_loaded": loads, "patches": outcomes()}, status_code=status)
    first = f"ready; models loaded {loads} time(s)" if ready else "loading the models"
    lines = [f"{o['kind']} {o['name']}: {o['reason']}" for o in outcomes()]
    return PlainTextResponse("\n".join([first, *lines]), status_code=status)


def _routes():
    from starlette.routing import Route
    from server.class_live import routes as live_routes  # /_attn/class-live: the teacher's views' changes, pushed
    from server.follow_requests import routes as follow_routes  # /_attn/follow: a followed class's changes, pushed
    from server.identity import routes as identity_routes  # the teacher's cookie: /_attn/teacher, /_attn/sign-out
    from server.lanes import routes as load_routes  # /_attn/load: costly runs decoding and waiting, cheap runs
    from server.loading import READY_PATH
    return [Route(READY_PATH, ready, methods=["GET", "HEAD"]), *identity_routes(), *follow_routes(), *live_routes(),
            *load_routes()]


def _middleware():
    from starlette.middleware import Middleware
    from server.identity import SameOriginSockets  # a websocket from another origin (another port too) refused
    from server.identity import StudentCookie  # one anonymous, signed student id per browser
    from server.app_shell import AppShell  # a page load's HTML from memory, as Streamlit first answered it
    from server.proxies import BelieveProxiesOnly  # X-Forwarded-For from ATTN_EXPLORER_PROXIES only
    return [Middleware(BelieveProxiesOnly), Middleware(SameOriginSockets), Middleware(StudentCookie),
            Middleware(AppShell)]


# `streamlit run app.py` finds the server by reading this file: an `app = st.App(...)` at the top level
app = st.App("navigation.py", lifespan=lifespan, routes=_routes(), middleware=_middleware())
