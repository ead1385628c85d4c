"""How the Streamlit runtime is set up for a class server: each page compiled once per process,
no file polled, each tab's reruns paced to its share, each tab's page sent as its run ends.

Streamlit keeps each script's bytecode in one ``ScriptCache`` per process, but empties it
whenever the last browser session disconnects (``WebsocketSessionManager``: "avoid stale cached
scripts"), and a *Send to class* does exactly that: every follower closed its socket to load the
sent page, so for a moment no session was connected, and the pages were parsed and compiled
again (``add_magic`` → ``ast.parse``, a walk of the tree, ``compile``: 10–70 ms a page, under
the cache's lock, which every other session's rerun waits on). A server that does not watch its
files (``server.fileWatcherType = "none"``, ``.streamlit/config.toml``) never reloads a module
either, so a cached page cannot go stale there: :func:`compile_pages_once` keeps the bytecode
for the life of the process. Where files are watched (a developer's ``streamlit run`` with
``--server.fileWatcherType auto``) Streamlit's clearing stays as it is.

``st.App`` servers also poll every ``config.toml`` path (the project's and the user's) every
0.2 s on a thread pool, whatever ``server.fileWatcherType`` says (``bootstrap._install_config_watchers``):
:func:`stop_config_polling` stops those watchers under ``fileWatcherType = "none"``. A changed
config then takes a restart, as the ``[server]`` section already does.

Every rerun of ``navigation.py`` declares the app's pages, and ``st.Page`` resolves each page's
path on disk (``Path.resolve``, ``is_file``): one ``lstat`` per path component, each releasing
the GIL, so when thirty followers open the teacher's page at once their threads queue on those
calls (38 % of the server's busy time in a py-spy profile of thirty followers). Where no file is
watched :func:`page` builds each page once per process and gives every run a copy (a page
object carries per-run state, whether ``st.navigation`` chose it, so it is never shared).

Every full rerun starts with a ``new_session`` message, whose six theme sections Streamlit reads
option by option from its config each time (``_populate_theme_msg``: 7 % of the server's CPU
per follower in a profile); with no file watched the config cannot change while the server
runs, so :func:`theme_once` builds each section once and copies it into every message.

A tab that asks for full-page reruns faster than its share (``server.limits.rerun_rate``: a
script on the raw websocket sending twenty a second) would start a script run for each, every
one stopping the one before: :func:`pace_reruns` makes such a request wait on the event loop
instead, keeping only the newest, which runs when the tab's share allows (its page then says
"slow down", ``navigation.py``). A wait costs a timer, not a thread or a run. Fragment reruns
and the server's own reruns are not paced.

Every message a page run sends goes through the event loop, which also reads every tab's
clicks and starts every tab's run; when thirty followers rerun at once the page threads hold the
GIL and the loop gets it back only every few milliseconds, at each system call it makes, while
each page thread loses it at each system call of its own. Streamlit makes three of those per
message: the page thread's write to the loop's wake-up pipe (``call_soon_threadsafe`` in
``AppSession._on_scriptrunner_event``), the same write from the loop itself
(``Runtime._enqueued_some_message``) and a turn of the loop after every message it flushes
(``await asyncio.sleep(0)`` in ``Runtime._loop_coroutine``), so each tab's page would go out
only after every page had run. :func:`send_promptly` hands a session's script events to the
loop in order, with one wake-up for all those waiting; sets the flush event directly when
already on the loop; and lets a flush send a tab's messages in one turn (a message is only
serialised into the tab's send queue there; each socket has its own sender task). Each tab's
page leaves as its run ends (``bench/follow_cost.py`` measures a room's follow clicks).

Every rerun is a new thread, which Streamlit starts on the event loop; ``Thread.start`` waits
until the new thread holds the GIL, and with page threads running that takes a switch interval
or two (5–20 ms): thirty followers' reruns would keep the loop from reading the next click, or
sending anything, for 150–250 ms. :func:`start_runs_off_the_loop` hands that wait to one thread
per process, which starts the runs in the order asked.
"""
from __future__ import annotations

import asyncio
import copy
import gc
import logging
import queue
import threading
import time
from collections import deque

_LOG = logging.getLogger(__name__)


def files_watched() -> bool:
    from streamlit import config
    return config.get_option("server.fileWatcherType") != "none"


def _wrap_once(owner, name: str, wrap) -> bool:
    """Replace ``owner.name`` by ``wrap(Streamlit's own)``, once per process however often asked;
    False when this Streamlit has no such attribute (the server then runs as Streamlit does)."""
    streamlits = getattr(owner, name, None)
    if streamlits is None:
        return False
    if not getattr(streamlits, "attn_wrapped", False):
        ours = wrap(streamlits)
        ours.attn_wrapped = True
        setattr(owner, name, ours)
    return True


def compile_pages_once() -> bool:
    """Make the runtime's ScriptCache keep its bytecode when no file is watched (see the module).
    Returns False when this Streamlit has no such cache."""
    try:
        from streamlit.runtime.scriptrunner.script_cache import ScriptCache
    except ImportError:
        return False

    def wrap(streamlits_clear):
        def clear(self) -> None:
            if files_watched():  # a watched file may have changed: Streamlit's own behaviour
                streamlits_clear(self)
        return clear
    return _wrap_once(ScriptCache, "clear", wrap)


def theme_once() -> bool:
    """Build each theme section of the ``new_session`` message once per process where no file is
    watched (see the module). Returns False when this Streamlit has no such function."""
    try:
        from streamlit.runtime import app_session
    except ImportError:
        return False

    def wrap(streamlits):
        built: dict[str, object] = {}

        def populate(msg, section: str = "theme") -> None:
            if files_watched():  # a watched config file may have changed: Streamlit's own behaviour
                return streamlits(msg, section)
            theme = built.get(section)
            if theme is None:
                theme = type(msg)()
                streamlits(theme, section)
                built[section] = theme
            msg.MergeFrom(theme)
        return populate
    return _wrap_once(app_session, "_populate_theme_msg", wrap)


_PAGES: dict[tuple, object] = {}  # (the app's folder, page, its options) -> the page as st.Page built it


def page(script: str, **options):
    """``st.Page(script, **options)``, resolved on disk once per process where no file is watched
    (see the module); a developer's watching server builds it every run, as Streamlit does."""
    import streamlit as st
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx
    ctx = get_script_run_ctx()
    if ctx is None or files_watched():
        return st.Page(script, **options)
    key = (str(ctx.pages_manager.main_script_parent), script, tuple(sorted(options.items())))
    built = _PAGES.get(key)
    if built is None:
        built = _PAGES[key] = st.Page(script, **options)
    return copy.copy(built)


def stop_config_polling() -> int:
    """Stop the polling watchers of Streamlit's config files when no file is watched; returns how
    many were stopped. Called once, while the server imports ``app.py`` (before the models load,
    so the search of the heap is short)."""
    if files_watched():
        return 0
    try:
        from streamlit.watcher.polling_path_watcher import PollingPathWatcher
    except ImportError:
        return 0
    stopped = 0
    for watcher in gc.get_objects():
        # type(), not isinstance(): the heap holds weak proxies whose object may be gone
        # (isinstance would raise ReferenceError) and lazy modules that warn when touched
        if type(watcher) is PollingPathWatcher and str(watcher._path).endswith("config.toml"):
            watcher.close()  # its next poll sees it inactive and does not schedule another
            stopped += 1
    _LOG.debug("stopped %d config file poller(s)", stopped)
    return stopped


def pace_reruns() -> bool:
    """Hold a tab's full-page rerun requests beyond its share (see the module). Returns False when
    this Streamlit's AppSession has no ``request_rerun``."""
    try:
        from streamlit.runtime.app_session import AppSession
    except ImportError:
        return False

    def wrap(streamlits):
        def request_rerun(self, client_state=None) -> None:
            from server.limits import paced, rerun_rate
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                loop = None
            if loop is None or client_state is None or client_state.fragment_id:
                return streamlits(self, client_state)  # the server's own, or a fragment's: as Streamlit does
            wait = rerun_rate().take(self.id, time.monotonic())
            if not wait:
                return streamlits(self, client_state)
            paced(self.id)
            newest = getattr(self, "_attn_held", None)
            self._attn_held = client_state  # only the newest request of the tab is kept
            if newest is None:
                def run_newest():
                    held, self._attn_held = self._attn_held, None
                    if held is not None:
                        request_rerun(self, held)
                loop.call_later(wait, run_newest)
        return request_rerun
    return _wrap_once(AppSession, "request_rerun", wrap)


class _FlushInOneTurn:
    """``asyncio`` as ``streamlit.runtime.runtime`` sees it after :func:`send_promptly`: the same
    module, but ``sleep(0)``, the flush loop's yield after each message, returns at once."""

    def __getattr__(self, name: str):
        return getattr(asyncio, name)

    @staticmethod
    def sleep(delay: float, result=None):
        return _at_once(result) if delay == 0 else asyncio.sleep(delay, result)


async def _at_once(result=None):
    return result


def send_promptly() -> bool:
    """Let the event loop send each tab's messages as its run produces them (see the module).
    Returns False when this Streamlit's AppSession or Runtime lacks one of the three parts."""
    try:
        from streamlit.runtime import runtime
        from streamlit.runtime.app_session import AppSession
    except ImportError:
        return False
    if getattr(runtime, "asyncio", None) is asyncio:
        runtime.asyncio = _FlushInOneTurn()

    def wrap_enqueued(streamlits):
        def enqueued_some_message(self) -> None:
            objs = self._get_async_objs()
            try:
                on_loop = asyncio.get_running_loop() is objs.eventloop
            except RuntimeError:
                on_loop = False
            if on_loop:  # Streamlit's call_soon_threadsafe would write to the loop's own pipe
                objs.need_send_data.set()
            else:
                streamlits(self)
        return enqueued_some_message

    def wrap_event(_streamlits):
        def on_scriptrunner_event(self, *args, **kwargs) -> None:
            # a session's events in order, as Streamlit's one callback per event kept them; one
            # wake-up of the loop for all the events waiting, not one per message
            state = self.__dict__.get("_attn_events") or self.__dict__.setdefault(
                "_attn_events", (threading.Lock(), deque(), [False]))
            lock, waiting, draining = state
            with lock:
                waiting.append((args, kwargs))
                if draining[0]:
                    return  # the loop's drain, already asked for, takes this one too
                draining[0] = True
            try:
                self._call_soon_on_event_loop(lambda: _drain_events(self, lock, waiting, draining))
            except BaseException:
                with lock:
                    draining[0] = False
                raise
        return on_scriptrunner_event

    return (_wrap_once(runtime.Runtime, "_enqueued_some_message", wrap_enqueued)
            and _wrap_once(AppSession, "_on_scriptrunner_event", wrap_event))


def _drain_events(session, lock, waiting, draining) -> None:
    """On the event loop: handle the session's waiting script events, oldest first, until none is
    left (an event that fails is logged, as asyncio logs a failed callback, and the next runs)."""
    while True:
        with lock:
            if not waiting:
                draining[0] = False
                return
            args, kwargs = waiting.popleft()
        try:
            session._handle_scriptrunner_event_on_event_loop(*args, **kwargs)
        except Exception:  # noqa: BLE001 - one event's failure must not stop the session's others
            _LOG.exception("script event %s", args[1:2] or kwargs.get("event"))


class _Starter:
    """The thread that starts this process's script runs (see the module), in the order asked."""

    def __init__(self):
        self._asked: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def start(self, start) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="script-starter", daemon=True)
                self._thread.start()
        self._asked.put(start)

    def _run(self) -> None:
        while True:
            start = self._asked.get()
            try:
                start()
            except Exception:  # noqa: BLE001 - one run that cannot start must not stop the others'
                _LOG.exception("a script run did not start")


_STARTER = _Starter()


def start_runs_off_the_loop() -> bool:
    """Start each script run's thread from ``_STARTER``'s thread when asked on the event loop, so
    the loop does not wait for the new thread to take the GIL (see the module); elsewhere (a
    test's AppTest) as Streamlit does. False when this Streamlit's ScriptRunner has no ``start``."""
    try:
        from streamlit.runtime.scriptrunner.script_runner import ScriptRunner
    except ImportError:
        return False

    def wrap(streamlits):
        def start(self) -> None:
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                return streamlits(self)
            _STARTER.start(lambda: streamlits(self))
        return start
    return _wrap_once(ScriptRunner, "start", wrap)
