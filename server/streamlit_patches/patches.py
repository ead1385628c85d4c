"""Every change this app makes to Streamlit's private internals, each a record.

Each change is a :class:`Patch`: its targets (each with a fingerprint of the source it was read
against, :mod:`~server.streamlit_patches.fingerprints`), why (its section of
``docs/performance.md``), the Streamlit version it was written for, ``apply()`` and ``undo()``.
``server/serving.py`` applies them at start-up, refusing one written for another Streamlit;
``tests/test_streamlit_patches.py`` fails with "re-read patch X" when a target's source changed. A
target in ``replaces`` is re-implemented, not wrapped: a last resort, since whatever Streamlit
adds there is dropped until the patch is re-read. Most patches change something only where no
file is watched (``server.fileWatcherType = "none"``): there neither a page nor a config file can
change while the server runs.
"""
from __future__ import annotations

import asyncio
import copy
import functools
import gc
import inspect
import logging
import queue
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from server.streamlit_patches import no_delay, replay
from server.streamlit_patches.fingerprints import resolve, WRITTEN_FOR
from server.streamlit_patches.reads import forget_choices, script_run_ctx

_LOG = logging.getLogger(__name__)
WHY = "docs/performance.md#"


def files_watched() -> bool:
    from streamlit import config
    return config.get_option("server.fileWatcherType") != "none"


@dataclass(eq=False)
class Patch:
    """One change to Streamlit. ``targets`` maps each function it wraps, replaces or relies on
    (``"module:Owner.attr"``) to the fingerprint of its source as read; ``apply()`` returns False
    when this Streamlit lacks a target (nothing is then changed)."""
    name: str
    targets: dict[str, str]
    why: str
    apply: Callable[[], bool]
    undo: Callable[[], None]
    used: Callable[[], bool]  # has Streamlit's runtime gone through the change since it was applied?
    streamlit: str = WRITTEN_FOR
    replaces: tuple[str, ...] = ()
    counts: Callable[[], dict] | None = None  # what it did so far, listed on /_attn/ready
    applied: bool = field(default=False, compare=False)


class _Swap:
    """``owner.attr`` replaced by ``make(Streamlit's own)``; ``undo`` puts Streamlit's back.
    ``fingerprint``: of the target's source as read; ``replaces``: ``make`` re-implements it."""

    def __init__(self, target: str, make, fingerprint: str = "", replaces: bool = False):
        self.target, self.make, self.fingerprint, self.replaces = target, make, fingerprint, replaces
        self.used = False

    def apply(self) -> bool:
        try:
            owner, attr = resolve(self.target)
        except (ImportError, AttributeError):
            return False
        current = getattr(owner, attr, None)
        if current is None:
            return False
        if not self._in(current):  # two patches may wrap one target (replay_follows, then pace_reruns)
            ours = self.make(current)
            if inspect.isfunction(ours):
                ours = self._noting_use(ours)
            ours.attn_patch, ours.attn_original, ours.attn_swap = True, current, self
            ours.attn_owned = attr in vars(owner)  # Streamlit's own there, not a base class's
            setattr(owner, attr, ours)
        return True

    def _in(self, current) -> bool:
        """Is this swap in the target's chain of wrappers already?"""
        while getattr(current, "attn_patch", False):
            if getattr(current, "attn_swap", None) is self:
                return True
            current = current.attn_original
        return False

    def _noting_use(self, ours):
        """``ours``, noting its first call: Streamlit's runtime still calls the target
        (``/_attn/ready`` lists it)."""
        @functools.wraps(ours)
        def noted(*args, **kwargs):
            if not self.used:
                self.used = True
            return ours(*args, **kwargs)
        return noted

    def undo(self) -> None:
        try:
            owner, attr = resolve(self.target)
        except (ImportError, AttributeError):
            return
        current = getattr(owner, attr, None)
        if getattr(current, "attn_swap", None) is self:  # undone in the reverse order of applying (undo_all)
            if current.attn_owned:
                setattr(owner, attr, current.attn_original)
            else:
                delattr(owner, attr)


def _swaps(*swaps: _Swap) -> tuple[Callable[[], bool], Callable[[], None], Callable[[], bool]]:
    """apply/undo/used for several swaps, all or none."""
    def apply() -> bool:
        done = []
        for swap in swaps:
            if not swap.apply():
                for d in reversed(done):
                    d.undo()
                return False
            done.append(swap)
        return True

    def undo() -> None:
        for swap in reversed(swaps):
            swap.undo()
            swap.used = False
    return apply, undo, lambda: any(swap.used for swap in swaps)


# ---- compile_pages_once: the script cache kept when the last session disconnects

def _keep_bytecode(streamlits_clear):
    def clear(self) -> None:
        if files_watched():  # a watched file may have changed: Streamlit's own behaviour
            streamlits_clear(self)
    return clear


# ---- theme_once: the new_session message's theme sections built once

def _theme_once(streamlits_populate):
    built: dict[str, object] = {}

    def populate(msg, section: str = "theme") -> None:
        if files_watched():  # a watched config file may have changed: Streamlit's own behaviour
            return streamlits_populate(msg, section)
        theme = built.get(section)
        if theme is None:
            theme = type(msg)()
            streamlits_populate(theme, section)
            built[section] = theme
        msg.MergeFrom(theme)
    return populate


# ---- page_once: st.Page resolved on disk once per process

class _Switch:
    """A patch that changes only this app's own calls (``page``: no Streamlit attribute replaced)."""

    def __init__(self):
        self.on = self.used = False

    def apply(self) -> bool:
        self.on = True
        return True

    def undo(self) -> None:
        self.on = self.used = False
        _PAGES.clear()


_PAGE_ONCE = _Switch()
_PAGES: dict[tuple, object] = {}  # (the app's folder, page, its options) -> the page as st.Page built it


def page(script: str, **options):
    """``st.Page(script, **options)``; with ``page_once`` applied and no file watched, resolved on
    disk once per process, every run getting a copy (a page object carries per-run state: whether
    ``st.navigation`` chose it)."""
    import streamlit as st
    ctx = script_run_ctx()
    if not _PAGE_ONCE.on or ctx is None or files_watched():
        return st.Page(script, **options)
    key = (str(ctx.pages_manager.main_script_parent), script, tuple(sorted(options.items())))
    built = _PAGES.get(key)
    if built is None:
        built = _PAGES[key] = st.Page(script, **options)
    else:
        _PAGE_ONCE.used = True
    return copy.copy(built)


# ---- stop_config_polling: the config files' pollers stopped where no file is watched

class _ConfigPolling:
    def __init__(self):
        self.stopped: list[tuple[str, object, bool]] = []

    def apply(self) -> bool:
        if files_watched():
            return False
        try:
            from streamlit.watcher.polling_path_watcher import PollingPathWatcher
        except ImportError:
            return False
        for watcher in gc.get_objects():
            # type(), not isinstance(): the heap holds weak proxies whose object may be gone
            # (isinstance would raise ReferenceError) and lazy modules that warn when touched
            if (type(watcher) is PollingPathWatcher and getattr(watcher, "_active", False)
                    and str(watcher._path).endswith("config.toml")):
                watcher.close()  # its next poll sees it inactive and does not schedule another
                self.stopped.append((str(watcher._path), watcher._on_changed, watcher._allow_nonexistent))
        _LOG.debug("stopped %d config file poller(s)", len(self.stopped))
        return True

    def undo(self) -> None:
        from streamlit.watcher.polling_path_watcher import PollingPathWatcher
        while self.stopped:
            path, on_changed, allow_nonexistent = self.stopped.pop()
            PollingPathWatcher(path, on_changed, allow_nonexistent=allow_nonexistent)


_CONFIG_POLLING = _ConfigPolling()


# ---- guard_clear_cache: a browser's clear_cache clears its own session state only

def _clear_own_state(_streamlits):
    def clear_own_state(session) -> None:
        _LOG.info("a browser asked to clear the cache: its own session state is cleared, the server's caches kept")
        session._session_state.clear()
    return clear_own_state


# ---- pace_reruns: a tab's full-page reruns beyond its share wait on the event loop

_PACER: list = []  # [pacer]: server/serving.py's rule, (session id) -> seconds the request waits (0: none)


def set_rerun_pacer(pacer: Callable[[str], float]) -> None:
    _PACER[:] = [pacer]


def _paced(streamlits_request):
    def request_rerun(self, client_state=None) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is None or client_state is None or client_state.fragment_id or not _PACER:
            return streamlits_request(self, client_state)  # the server's own, or a fragment's: as Streamlit does
        wait = _PACER[0](self.id)
        if not wait:
            return streamlits_request(self, client_state)
        newest = getattr(self, "_attn_held", None)
        # only the newest request of the tab is kept, with the presses of the one it replaces
        self._attn_held = client_state if newest is None else _with_presses_of(newest, client_state)
        if newest is None:
            def run_newest():
                held, self._attn_held = self._attn_held, None
                if held is not None:
                    request_rerun(self, held)
            loop.call_later(wait, run_newest)
    return request_rerun


_COALESCE = "streamlit.runtime.scriptrunner_utils.script_requests:_coalesce_widget_states"


def _with_presses_of(older, newer):
    """``newer`` (a ``ClientState``) keeping what ``older``, which it replaces, pressed: a button's,
    a chat input's or a selection's trigger, which the browser sends once and never again. As
    Streamlit merges two rerun requests of a running script (its ``_coalesce_widget_states``):
    the newer value wins for everything else."""
    owner, attr = resolve(_COALESCE)
    states = getattr(owner, attr)(older.widget_states, newer.widget_states)
    merged = type(newer)()
    merged.CopyFrom(newer)
    if states is not None:
        merged.widget_states.CopyFrom(states)
    return merged


# ---- send_promptly: one wake-up of the loop per burst of script events, a flush in one turn

class _FlushInOneTurn:
    """``asyncio`` as ``streamlit.runtime.runtime`` sees it: the same module, but ``sleep(0)``,
    the flush loop's yield after each message, returns at once."""

    def __getattr__(self, name: str):
        return getattr(asyncio, name)

    @staticmethod
    def sleep(delay: float, result=None):
        return _at_once(result) if delay == 0 else asyncio.sleep(delay, result)


async def _at_once(result=None):
    return result


def _flush_set_on_loop(streamlits_enqueued):
    def enqueued_some_message(self) -> None:
        objs = self._get_async_objs()
        try:
            on_loop = asyncio.get_running_loop() is objs.eventloop
        except RuntimeError:
            on_loop = False
        if on_loop:  # Streamlit's call_soon_threadsafe would write to the loop's own pipe
            objs.need_send_data.set()
        else:
            streamlits_enqueued(self)
    return enqueued_some_message


def _events_in_one_wake_up(_streamlits):
    """A re-implementation of ``AppSession._on_scriptrunner_event`` (a last resort: the
    scheduling is the method's whole body): a session's events in order, as Streamlit's one
    callback per event kept them, with one wake-up of the loop for all the events waiting."""
    def on_scriptrunner_event(self, *args, **kwargs) -> None:
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


# ---- start_runs_off_the_loop: a run's thread started by one starter thread, not the loop

class _Starter:
    """The thread that starts this process's script runs, in the order asked."""

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


def _started_off_the_loop(streamlits_start):
    def start(self) -> None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return streamlits_start(self)  # no event loop (AppTest): as Streamlit does
        _STARTER.start(lambda: streamlits_start(self))
    return start


# ---- the records

_AS, _RT = "streamlit.runtime.app_session", "streamlit.runtime.runtime"
_SR, _SS = "streamlit.runtime.scriptrunner.script_runner", "streamlit.runtime.state.session_state"


def _swapping(name: str, *swaps: _Swap, relies_on: dict[str, str] | None = None, counts=None) -> Patch:
    return Patch(name, {s.target: s.fingerprint for s in swaps if s.fingerprint} | (relies_on or {}), WHY + name,
                 *_swaps(*swaps), replaces=tuple(s.target for s in swaps if s.replaces), counts=counts)


PATCHES: tuple[Patch, ...] = (
    _swapping("compile_pages_once", _Swap("streamlit.runtime.scriptrunner.script_cache:ScriptCache.clear",
                                          _keep_bytecode, "cac44290c76d799f")),
    Patch("stop_config_polling", {"streamlit.web.bootstrap:_install_config_watchers": "de8db30263cb41f2",
                                  "streamlit.watcher.polling_path_watcher:PollingPathWatcher.__init__": "7d781599b8d659d8"},
          WHY + "stop_config_polling", _CONFIG_POLLING.apply, _CONFIG_POLLING.undo, lambda: bool(_CONFIG_POLLING.stopped)),
    Patch("page_once", {"streamlit.navigation.page:StreamlitPage.__init__": "bbf241635f644678"}, WHY + "page_once",
          _PAGE_ONCE.apply, _PAGE_ONCE.undo, lambda: _PAGE_ONCE.used),
    Patch("no_delay", {"streamlit.web.server.starlette.starlette_server:_bind_socket": "1ef84ad793634a3a"},
          WHY + "no_delay", no_delay.LISTENERS.apply, no_delay.LISTENERS.undo, lambda: bool(no_delay.LISTENERS.set)),
    _swapping("theme_once", _Swap(f"{_AS}:_populate_theme_msg", _theme_once, "844b9eb40d0f7d97")),
    _swapping("guard_clear_cache", _Swap(f"{_AS}:AppSession._handle_clear_cache_request", _clear_own_state,
                                         "06374e0ae3505882", replaces=True)),
    # before pace_reruns, which then wraps it: a tab's reruns are paced whether replayed or run
    _swapping("replay_follows", _Swap(f"{_AS}:AppSession.request_rerun", replay.replaying_rerun, "4cb6506c80c5701a"),
              _Swap(f"{_AS}:AppSession._enqueue_forward_msg", replay.recording_enqueue, "036c935c2804003e"),
              _Swap(f"{_AS}:AppSession._handle_scriptrunner_event_on_event_loop", replay.recording_ends,
                    "595154772c71b329"),
              relies_on={f"{_AS}:AppSession._create_new_session_message": "c4f42b9c484c2249",  # the ids a replay sets
                         f"{_AS}:AppSession._clear_queue": "179e82ba685848a2",
                         # what a run leaves in the session: its state, fragments and page (a replay sets them)
                         f"{_SR}:ScriptRunner._run_script": "267f825d4089b403",
                         f"{_SR}:ScriptRunner._on_script_finished": "fe736c2698dd2c98",
                         f"{_SS}:SessionState.on_script_finished": "1fad1f3aca517499",
                         f"{_SS}:KeyIdMapper": "265dac217e451752",
                         f"{_SS}:Value": "f62d6998d8d27067",  # frozen: one of an immutable value is shared
                         # a pressed button's key, read from its element id (a harmless press is shared)
                         "streamlit.runtime.state.common:user_key_from_element_id": "a2dcf55a565d90dc",
                         "streamlit.runtime.fragment:MemoryFragmentStorage.__init__": "4bcfaed342e60ff0",
                         "streamlit.runtime.fragment:_fragment": "40a2d1a20a6b5049",  # what a fragment holds
                         "streamlit.runtime.pages_manager:PagesManager.set_current_page_script_hash": "caa4c5cfcbacf3cd",
                         # a first run's pages, the page a rerun asks for, a callback's test, the socket's cookies
                         "streamlit.runtime.pages_manager:PagesManager._set_pages": "0e69f28501d5f77d",
                         "streamlit.runtime.pages_manager:PagesManager.get_pages": "74d1a8929f6ea1dc",
                         f"{_SS}:SessionState._widget_changed": "d672cf1ffbc741e1",
                         "streamlit.runtime.state.common:unpack_widget_state_value": "b3f399b3245488ec",
                         f"{_RT}:Runtime.get_client": "c21090532e2628ef",
                         # a download made when clicked, registered again for each replayed session
                         "streamlit.elements.widgets.button:marshall_file": "4fac6404e9b10422",
                         "streamlit.runtime.media_file_manager:MediaFileManager.add_deferred": "0f9593a171ca07cf",
                         "streamlit.runtime.media_file_manager:MediaFileManager.clear_session_refs": "e5145ae976775739"},
              counts=lambda: dict(replay.COUNTS)),
    _swapping("pace_reruns", _Swap(f"{_AS}:AppSession.request_rerun", _paced, "4cb6506c80c5701a"),
              relies_on={_COALESCE: "b2f3775c99ff1694"}),  # a held request's presses kept (_with_presses_of)
    _swapping("send_promptly", _Swap(f"{_RT}:asyncio", lambda _asyncio: _FlushInOneTurn()),
              _Swap(f"{_RT}:Runtime._enqueued_some_message", _flush_set_on_loop, "bb83a3758a4e237c"),
              _Swap(f"{_AS}:AppSession._on_scriptrunner_event", _events_in_one_wake_up, "ad85d5ec989dc8a6", replaces=True),
              relies_on={f"{_RT}:Runtime._loop_coroutine": "f2bf0cf6b7bd78b7"}),  # its yield after each message
    _swapping("start_runs_off_the_loop", _Swap("streamlit.runtime.scriptrunner.script_runner:ScriptRunner.start",
                                               _started_off_the_loop, "7467332775df9b66")),
)
BY_NAME = {p.name: p for p in PATCHES}

def undo_all() -> None:
    """Put every target back as Streamlit has it, and the reads back to the environment's choice
    (tests; a process that started with patches)."""
    for patch in reversed(PATCHES):
        patch.undo()
        patch.applied = False
    forget_choices()
    replay.forget()
