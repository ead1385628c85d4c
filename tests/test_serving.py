"""What each of Streamlit's patches (server/streamlit_patches/patches.py) does, on Streamlit's own objects:
pages compiled once per process (and Streamlit's magic off because no page uses it), no config
file polled, each page resolved once, the theme built once, script events handed to the loop in
order, runs started by one thread. Each test applies the patch it checks and undoes it; the
patches in a real server's runtime are tests/test_streamlit_patches.py's."""
from __future__ import annotations

import ast
import asyncio
import re
import time
import weakref
import tomllib
from pathlib import Path

import pytest
from helpers.browser import wait_until
from streamlit import config

from server.streamlit_patches.patches import _CONFIG_POLLING, BY_NAME

ROOT = Path(__file__).resolve().parent.parent


def page_scripts() -> list[Path]:
    """The scripts Streamlit compiles: the pages script and every page it lists."""
    main = ROOT / "navigation.py"
    pages = re.findall(r'\bpage\("(app_pages/[^"]+)"', main.read_text())
    assert len(pages) >= 10, pages
    return [main] + [ROOT / p for p in pages]


def test_no_page_relies_on_magic_and_magic_is_off():
    """Magic rewrites a lone expression statement into st.write; with it off such a statement would
    silently show nothing. No page has one (Streamlit's own rewrite adds no call), so the setting
    changes nothing a visitor sees."""
    from streamlit.runtime.scriptrunner import magic
    for script in page_scripts():
        source = script.read_text()
        rewritten = magic.add_magic(source, str(script))
        writes = [n for n in ast.walk(rewritten) if isinstance(n, ast.Name) and n.id == "__streamlitmagic__"]
        assert not writes, f"{script.name} writes a lone expression at line {writes[0].lineno}"
    settings = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert settings["runner"]["magicEnabled"] is False
    assert settings["server"]["fileWatcherType"] == "none"


@pytest.fixture
def applied():
    """apply(name): the named patch applied for this test, undone after it."""
    from server.streamlit_patches.patches import BY_NAME
    done = []

    def apply(name: str) -> bool:
        done.append(BY_NAME[name])
        return BY_NAME[name].apply()
    yield apply
    for patch in reversed(done):
        patch.undo()


@pytest.fixture
def watcher_type():
    before = config.get_option("server.fileWatcherType")
    yield lambda kind: config.set_option("server.fileWatcherType", kind)
    config.set_option("server.fileWatcherType", before)


def test_the_script_cache_keeps_its_bytecode_when_no_file_is_watched(watcher_type, tmp_path, applied):
    from streamlit.runtime.scriptrunner.script_cache import ScriptCache
    script = tmp_path / "page.py"
    script.write_text("x = 1\n")
    assert applied("compile_pages_once") and applied("compile_pages_once")  # idempotent
    cache = ScriptCache()
    first = cache.get_bytecode(str(script))
    watcher_type("none")
    cache.clear()  # what Streamlit does when the last session disconnects
    assert cache.get_bytecode(str(script)) is first
    watcher_type("auto")  # a developer's server, watching its files: Streamlit's behaviour
    cache.clear()
    assert cache.get_bytecode(str(script)) is not first


def test_the_config_files_are_not_polled_when_no_file_is_watched(watcher_type):
    from streamlit.watcher.polling_path_watcher import PollingPathWatcher
    from streamlit.web import bootstrap
    calls = []
    checked = PollingPathWatcher._check_if_path_changed

    def counting(self):
        calls.append(self._path)
        return checked(self)

    class Gone:
        pass

    gone = Gone()
    dead_proxy = weakref.proxy(gone)  # on the heap, as a server's heap holds them: touching it raises
    del gone
    PollingPathWatcher._check_if_path_changed = counting
    try:
        bootstrap._install_config_watchers({})  # what `streamlit run` does for an st.App
        watcher_type("none")
        polling = BY_NAME["stop_config_polling"]
        assert polling.apply() and polling.used()  # at least one poller stopped
        assert type(dead_proxy) is weakref.ProxyType
        time.sleep(0.5)  # every poller's last check (0.2 s after the one before) finds it stopped
        seen = len(calls)
        time.sleep(0.6)
        assert len(calls) == seen
        polling.undo()  # the pollers it stopped poll again
        wait_until(lambda: len(calls) > seen, 30, "a config file polled again")
        assert polling.apply()
        _CONFIG_POLLING.stopped.clear()  # this test's own pollers: left stopped
    finally:
        PollingPathWatcher._check_if_path_changed = checked


def test_each_page_is_resolved_on_disk_once_per_process_and_each_run_gets_its_own(watcher_type, tmp_path,
                                                                                   monkeypatch, applied):
    """st.Page resolves its file (an lstat per path component, each releasing the GIL) on every run:
    under fileWatcherType "none" the pages are built once and every run gets a copy, since
    st.navigation marks the copy it chose (per-run state); a watching server builds them each run."""
    from streamlit.navigation.page import StreamlitPage
    from streamlit.testing.v1 import AppTest
    assert applied("page_once")
    (tmp_path / "one.py").write_text("import streamlit as st\nst.write('page one')\n")
    (tmp_path / "two.py").write_text("import streamlit as st\nst.write('page two')\n")
    main = tmp_path / "main.py"
    main.write_text("import streamlit as st\nfrom server.serving import page\n"
                    "chosen = st.navigation([page('one.py', title='One', default=True), page('two.py', title='Two')])\n"
                    "st.session_state.setdefault('chosen', []).append(chosen)\nchosen.run()\n")
    built = []
    streamlits = StreamlitPage.__init__

    def counting(self, *args, **kwargs):
        built.append(args[0])
        streamlits(self, *args, **kwargs)

    monkeypatch.setattr(StreamlitPage, "__init__", counting)
    watcher_type("none")
    at = AppTest.from_file(str(main)).run()
    at.run()
    assert [m.value for m in at.markdown] == ["page one"] and not at.exception
    assert built == ["one.py", "two.py"]  # the first run built them; the second copied them
    first, second = at.session_state["chosen"]
    assert first is not second and first._url_path == second._url_path
    watcher_type("auto")  # a developer's server sees a page file that changed: Streamlit's behaviour
    at.run()
    assert built[2:] == ["one.py", "two.py"]


def test_the_new_session_message_carries_the_theme_streamlit_builds(watcher_type, applied):
    """theme_once: with no file watched each theme section is read from the config once and copied
    into every new_session message, equal to what Streamlit builds; a changed option is then seen
    only after a restart (a watching server sees it at once, as Streamlit does)."""
    from streamlit.proto.NewSession_pb2 import CustomThemeConfig
    from streamlit.runtime import app_session
    streamlits = app_session._populate_theme_msg
    config.set_option("theme.primaryColor", "#123456")
    try:
        assert applied("theme_once") and applied("theme_once")  # idempotent
        watcher_type("none")
        for section in ("theme", "theme.light", "theme.dark.sidebar"):
            expected, first, again = CustomThemeConfig(), CustomThemeConfig(), CustomThemeConfig()
            streamlits(expected, section)
            app_session._populate_theme_msg(first, section)
            app_session._populate_theme_msg(again, section)
            assert first == expected and again == expected
        config.set_option("theme.primaryColor", "#654321")
        kept = CustomThemeConfig()
        app_session._populate_theme_msg(kept, "theme")
        assert kept.primary_color == "#123456"
        watcher_type("auto")
        seen = CustomThemeConfig()
        app_session._populate_theme_msg(seen, "theme")
        assert seen.primary_color == "#654321"
    finally:
        config.set_option("theme.primaryColor", None)


def test_a_flush_sends_a_tabs_messages_in_one_turn_of_the_event_loop(applied):
    """Streamlit's flush loop yields the event loop after every message it sends (each yield, under
    a class's GIL contention, a wait of milliseconds): after send_promptly only that yield,
    sleep(0), returns at once; every other sleep and every other asyncio name is asyncio's own."""
    import inspect
    from streamlit.runtime import runtime
    assert applied("send_promptly") and applied("send_promptly")  # idempotent
    # the yield it removes is still where Streamlit has it (its fingerprint: test_streamlit_patches.py)
    assert "await asyncio.sleep(0)" in inspect.getsource(runtime.Runtime._loop_coroutine)
    turns = []

    async def flush():
        async def other_task():
            turns.append("other")
        asyncio.get_running_loop().create_task(other_task())
        for _ in range(3):
            await runtime.asyncio.sleep(0)
            turns.append("message")
        await runtime.asyncio.sleep(0.01)  # a real sleep: the other task runs
        turns.append("after")

    asyncio.run(flush())
    assert turns == ["message", "message", "message", "other", "after"]
    assert runtime.asyncio.wait is asyncio.wait and runtime.asyncio.create_task is asyncio.create_task


def test_a_sessions_script_events_reach_the_loop_in_order_with_one_wake_up_for_all_those_waiting(caplog, applied):
    """Streamlit scheduled one event-loop callback per message a page sends (a write to the loop's
    pipe, releasing the GIL, each): now the events waiting are handled by one callback, in the
    order sent; one that fails is logged and the others still run, and later events still come."""
    import threading
    from streamlit.runtime.app_session import AppSession
    assert applied("send_promptly")

    class Session:
        def __init__(self, loop):
            self.loop, self.handled, self.wake_ups = loop, [], 0

        def _call_soon_on_event_loop(self, callback):
            self.wake_ups += 1
            self.loop.call_soon_threadsafe(callback)

        def _handle_scriptrunner_event_on_event_loop(self, sender, event=None, forward_msg=None):
            if event == "fails":
                raise ValueError("this event fails")
            self.handled.append(event)

    async def main():
        session = Session(asyncio.get_running_loop())
        for i in range(40):  # a run's messages, sent while the loop is busy (here: with this coroutine)
            AppSession._on_scriptrunner_event(session, "runner", event=i, forward_msg=object())
        AppSession._on_scriptrunner_event(session, "runner", event="fails")
        AppSession._on_scriptrunner_event(session, "runner", event="after")
        await asyncio.sleep(0.01)
        burst = (list(session.handled), session.wake_ups)
        thread = threading.Thread(target=lambda: [AppSession._on_scriptrunner_event(session, "runner", event=f"t{i}")
                                                  for i in range(20)])
        thread.start()
        thread.join()
        await asyncio.sleep(0.01)
        return burst, session.handled[len(burst[0]):]

    with caplog.at_level("ERROR", logger="server.streamlit_patches.patches"):
        (handled, wake_ups), from_thread = asyncio.run(main())
    assert handled == list(range(40)) + ["after"] and wake_ups == 1
    assert from_thread == [f"t{i}" for i in range(20)]
    assert "this event fails" in caplog.text


def test_script_runs_asked_for_on_the_event_loop_are_started_by_the_starter_thread_in_order(monkeypatch, applied):
    """Thread.start waits for the new thread to take the GIL (5–20 ms with pages running): on the
    event loop a run's thread is started by the process's starter thread instead, in the order
    asked, and the loop goes on at once; off the loop (AppTest) as Streamlit does."""
    import threading
    from streamlit.runtime.scriptrunner.script_runner import ScriptRunner
    assert applied("start_runs_off_the_loop") and applied("start_runs_off_the_loop")  # idempotent
    starters = []
    real_start = threading.Thread.start

    def start(thread):
        if thread.name == "ScriptRunner.scriptThread":
            starters.append((threading.current_thread().name, thread._target.__self__.n))
        real_start(thread)
    monkeypatch.setattr(threading.Thread, "start", start)

    class Runner:
        def __init__(self, n):
            self.n, self._script_thread, self.done = n, None, threading.Event()

        def _run_script_thread(self):
            self.done.set()

    async def on_the_loop():
        runners = [Runner(i) for i in range(5)]
        for runner in runners:
            ScriptRunner.start(runner)
        return runners

    runners = asyncio.run(on_the_loop())
    assert all(r.done.wait(10) for r in runners)
    assert starters == [("script-starter", i) for i in range(5)]
    alone = Runner(5)
    ScriptRunner.start(alone)  # no event loop: Streamlit's own start, here
    assert alone.done.wait(10) and starters[-1] == (threading.current_thread().name, 5)


def test_the_servers_listening_socket_hands_out_connections_that_send_at_once(applied):
    """Streamlit's Starlette server binds its socket without naming TCP, so asyncio left Nagle's
    algorithm on for every connection it accepted: a run's later messages waited for the browser's
    delayed ACK (bench/exercise_cost.py: 40 ms more per page switch). ``no_delay`` sets TCP_NODELAY
    on the process's listening sockets, which the accepted ones inherit; undone, they are as
    Streamlit's were."""
    import socket

    def accepted(listener) -> int:
        with socket.create_connection(listener.getsockname()) as _:
            conn, _ = listener.accept()
            with conn:
                return conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)

    with socket.socket(family=socket.AF_INET) as listener:  # as Streamlit's _bind_socket makes it
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        assert accepted(listener) == 0
        assert applied("no_delay")
        assert accepted(listener) == 1
        from server.streamlit_patches.patches import BY_NAME
        BY_NAME["no_delay"].undo()
        assert accepted(listener) == 0


def test_looking_for_the_listening_sockets_leaves_no_descriptor_open():
    """``no_delay`` looks at every open descriptor of the process: one it duplicated and left open
    would keep a pipe's end open, and a reader of that pipe (a test's subprocess) would never see
    its end."""
    import os
    from server.streamlit_patches.no_delay import LISTENERS
    read_end, write_end = os.pipe()
    try:
        before = sorted(os.listdir("/dev/fd"))
        for _ in range(3):
            LISTENERS.apply()
            LISTENERS.undo()
        assert sorted(os.listdir("/dev/fd")) == before
    finally:
        os.close(read_end)
        os.close(write_end)
