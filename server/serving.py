"""How the Streamlit runtime is set up for a class server: each page compiled once per process,
no file polled.

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
"""
from __future__ import annotations

import gc
import logging

_LOG = logging.getLogger(__name__)


def files_watched() -> bool:
    from streamlit import config
    return config.get_option("server.fileWatcherType") != "none"


def compile_pages_once() -> bool:
    """Make the runtime's ScriptCache keep its bytecode when no file is watched (see the module).
    Returns False when this Streamlit has no such cache."""
    try:
        from streamlit.runtime.scriptrunner.script_cache import ScriptCache
    except ImportError:
        return False
    if getattr(ScriptCache.clear, "keeps_bytecode", False):
        return True
    streamlits_clear = ScriptCache.clear

    def clear(self) -> None:
        if files_watched():  # a watched file may have changed: Streamlit's own behaviour
            streamlits_clear(self)

    clear.keeps_bytecode = True
    ScriptCache.clear = clear
    return True


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
        if isinstance(watcher, PollingPathWatcher) and str(watcher._path).endswith("config.toml"):
            watcher.close()  # its next poll sees it inactive and does not schedule another
            stopped += 1
    _LOG.debug("stopped %d config file poller(s)", stopped)
    return stopped
