"""A served app and headless Chromium for the real-browser tests: Debian's chromium driven by
Playwright (no Playwright browser is downloaded), waits on the page's own signals."""
from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from playwright.sync_api import Page, sync_playwright, TimeoutError as PlaywrightTimeout

from server.lecture import free_port

from helpers import ROOT

OUTPUT = ROOT / "test-output" / "browser"


# Debian's headless build of Chromium (the `chromium-headless-shell` package, from the same
# source package as `chromium`): the browser without its windows, tabs and omnibox, which
# Playwright itself uses for headless runs. The same tests cost it about a tenth less CPU than
# the full `chromium` run headless (docs/testing.md, "The browser tests").
CHROMIUM = "/usr/bin/chromium-headless-shell"


# headless (Playwright's default), no sandbox (root in a container), nothing fetched from Google;
# Playwright gives every launch a fresh, temporary profile (user-data dir) of its own
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]


# How long the tests give a page (a run, a rerun, a send reaching a follower) before calling it
# lost. A budget, not a measurement: a rerun of a second alone takes many on a busy 2-core host
# (the suite beside other work, or beside `stress-ng --cpu 1`), and a wait ends as soon as the
# page's own signal (APP_IDLE, the text it draws) says it is done, so a large budget costs a
# passing run nothing.
PAGE_BUDGET = 180


def wait_until(check, timeout: float, what: str, interval: float = 0.25):
    """Poll ``check`` (a Python callable: the server's health, not the page) until it is true."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            value = check()
        except Exception:  # noqa: BLE001 - not up yet
            value = None
        if value:
            return value
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")


def find_chromium(install: bool = True) -> str | None:
    """Chromium's path, running scripts/setup_browser.sh once if it is missing."""
    found = shutil.which("chromium-headless-shell") or (CHROMIUM if os.path.exists(CHROMIUM) else None)
    if found or not install:
        return found
    subprocess.run(["bash", str(ROOT / "scripts" / "setup_browser.sh")], timeout=900, check=False)
    return find_chromium(install=False)


@contextmanager
def streamlit_app(checkpoints: Path, log_path: Path, settings: dict[str, str] | None = None):
    """``streamlit run app.py`` on a free port, serving the given checkpoints, with ``settings``
    (``ATTN_EXPLORER_*`` variables) in its environment alone; yields its URL."""
    port = free_port()
    env = dict(os.environ, **(settings or {}), ATTN_EXPLORER_CHECKPOINTS=str(checkpoints), OMP_NUM_THREADS="1")
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "w") as log:
        proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
                                 "--server.port", str(port), "--server.address", "127.0.0.1",
                                 "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
                                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            url = f"http://127.0.0.1:{port}"
            wait_until(lambda: proc.poll() is None and urllib.request.urlopen(f"{url}/_stcore/health", timeout=2)
                       .read() == b"ok", PAGE_BUDGET, "the Streamlit server")
            yield url
        except TimeoutError as e:
            # a page that never came: say what the server was doing (app.py dumps its threads on SIGUSR1)
            if proc.poll() is None:
                proc.send_signal(signal.SIGUSR1)
                time.sleep(2)
            raise TimeoutError(f"{e}\n--- server log {log_path}, last 6,000 characters ---\n"
                               f"{log_path.read_text(errors='replace')[-6000:]}") from None
        finally:
            stop(proc)


def stop(proc: subprocess.Popen) -> None:
    """End a child process: politely, then by force after 3 s. A server stopped politely waits
    for its open requests, and a follow or live-view request stays open up to 25 s
    (``server.follow.WAIT_S``): a test's server has nothing to finish that a test reads."""
    proc.terminate()
    try:
        proc.wait(3)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


# One Playwright driver and one Chromium per test process, launched on first use and closed at the
# end of the session (tests/conftest.py): a launch costs more CPU than the blank context each test
# gets instead, and a new context is all a new person needs (its own cookies and storage).
#
# A closed context is emptied (cookies, storage, permissions, pages) and kept for the next person
# asking for one with the same options: its HTTP cache and compiled code stay. In the full
# `chromium` a first page in a context whose cache was empty cost about twice the CPU of one whose
# cache was warm; in the headless build the two are within a tenth (bench/browser_cost.py,
# docs/testing.md), so what a kept context saves now is mostly the context's own making. Nobody's
# identity is carried over: a context is kept only when its storage state reads empty afterwards.
#
# Between two of its sync calls Playwright leaves its event loop marked as the thread's running
# loop (playwright/_impl/_greenlets.py, wait_for_future), and asyncio.run refuses to start beside
# it. A test process runs tests that use asyncio (the bench's tabs, the follow listener) between
# the browser's: so the browser's loop is marked running only while a test uses the browser
# (browser_in_use), and the mark is taken back after it.
_SHARED: dict = {}


def _mark_running(loop) -> None:
    asyncio._set_running_loop(loop)  # the mark Playwright's own sync calls set and expect


def _shared_browser(chromium: str):
    """The test process's Chromium (Debian's, at ``chromium``), its loop marked running; its
    contexts wait up to the page budget, not Playwright's 30 s: on a busy host a rerun can take
    longer, and a wait ends at once when the element is there."""
    if "browser" not in _SHARED:
        playwright = sync_playwright().start()
        browser = playwright.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_FLAGS)
        new_context = browser.new_context
        browser.new_context = lambda **options: _person(new_context, options)
        _SHARED.update(playwright=playwright, browser=browser, idle={}, made=0, reused=0)
    _mark_running(_SHARED["playwright"]._loop)
    return _SHARED["browser"]


KEPT_PER_KIND = 4  # emptied contexts kept per set of options


def _person(new_context, options: dict):
    """A context for a new person (nobody's cookies or storage), waiting up to the page budget
    (not Playwright's 30 s: on a busy host a rerun can take longer, and a wait ends at once when
    the element is there); its pages get ``options``' viewport."""
    viewport = options.pop("viewport", None)
    kind = repr(sorted(options.items()))
    idle = _SHARED["idle"].setdefault(kind, [])
    if idle:
        context = idle.pop()
        _SHARED["reused"] += 1
    else:
        context = new_context(**options, **({"viewport": viewport} if viewport else {}))
        context.set_default_timeout(PAGE_BUDGET * 1000)
        context.attn_close, context.attn_new_page = context.close, context.new_page
        context.close = lambda **_: _empty_and_keep(context, kind)
        _SHARED["made"] += 1
    context.attn_idle = False

    def new_page():
        page = context.attn_new_page()
        if viewport:
            page.set_viewport_size(viewport)
        return page
    context.new_page = new_page
    return context


def _empty_and_keep(context, kind: str) -> None:
    """Close ``context``'s pages and forget its cookies, storage and permissions; keep it for the
    next person if its storage state then reads empty, else close it."""
    if context.attn_idle:
        return
    try:
        origins = {o["origin"] for o in context.storage_state(indexed_db=True)["origins"]}
        if origins:
            page = context.attn_new_page()
            cdp = context.new_cdp_session(page)
            for origin in origins:
                cdp.send("Storage.clearDataForOrigin", {"origin": origin, "storageTypes": "all"})
            cdp.detach()
        context.clear_cookies()
        context.clear_permissions()
        for page in context.pages:
            page.close()
        idle = _SHARED["idle"][kind]
        if context.storage_state(indexed_db=True) == {"cookies": [], "origins": []} and len(idle) < KEPT_PER_KIND:
            context.attn_idle = True
            idle.append(context)
            return
    except Exception:  # noqa: BLE001 - a context that cannot be emptied is closed, not kept
        pass
    context.attn_close()


@contextmanager
def browser_in_use(chromium: str):
    """The process's Chromium for one test; every context opened in it is emptied afterwards, its
    pages closed (a page left on a stopped server keeps reconnecting)."""
    before = asyncio._get_running_loop()
    browser = _shared_browser(chromium)
    try:
        yield browser
    finally:
        for context in list(browser.contexts):
            context.close()
        _mark_running(before)


def close_shared_browser() -> None:
    """End the process's Chromium and Playwright's driver (the session's end)."""
    if "browser" in _SHARED:
        OUTPUT.mkdir(parents=True, exist_ok=True)  # how many people had a context made, how many an emptied one
        (OUTPUT / f"contexts-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.json").write_text(
            json.dumps({"made": _SHARED["made"], "reused": _SHARED["reused"]}))
        _mark_running(_SHARED["playwright"]._loop)
        _SHARED.pop("browser").close()
        _SHARED.pop("playwright").stop()
        _mark_running(None)


@contextmanager
def headless_chromium(chromium: str, width: int = 1440, height: int = 1700):
    """A new context (a new visitor) in the process's headless Chromium; yields its one page (tab)
    of ``width`` x ``height``. A timeout inside, Playwright's or :func:`wait_for`'s, leaves as a
    :class:`TimeoutError` carrying what the page showed (so :func:`streamlit_app` adds the
    server's side)."""
    before = asyncio._get_running_loop()
    context = _shared_browser(chromium).new_context(viewport={"width": width, "height": height}, device_scale_factor=1)
    try:
        page = context.new_page()
        try:
            yield page
        except (TimeoutError, PlaywrightTimeout) as e:
            raise TimeoutError(f"{e}\n{describe_page(page)}") from None
    finally:
        context.close()
        _mark_running(before)


def wait_for(page: Page, expression: str, what: str, timeout: float = PAGE_BUDGET, arg=None):
    """Wait until the JavaScript ``expression`` (which may use ``arg``) is truthy on the page,
    checked every 250 ms, and return its value; an expression that throws (the page is
    still being drawn) counts as not yet."""
    predicate = f"arg => {{ try {{ return ({expression}); }} catch (e) {{ return null; }} }}"
    try:
        return page.wait_for_function(predicate, arg=arg, polling=250, timeout=timeout * 1000).json_value()
    except PlaywrightTimeout:
        raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}") from None


def open_a_class(page: Page, key: str) -> str:
    """On a page with the class panel: sign in as the teacher with ``key`` and open a class;
    returns the class's code, once the page shows it open.

    The panel's expander and the *I am the teacher* popover open in the browser alone, but a
    run still drawing the page (its first, or a link's) can draw them closed again after the
    click: so each is opened until the key's box shows, within the page budget."""
    teacher = page.get_by_role("button", name="I am the teacher")
    box = page.locator('input[type="password"][aria-label="Teacher key"]')
    deadline = time.time() + PAGE_BUDGET
    while not box.is_visible():
        if time.time() > deadline:
            raise TimeoutError(f"timed out after {PAGE_BUDGET} s waiting for the teacher key's box")
        if teacher.is_visible():
            teacher.click()
        else:
            page.get_by_text("Class", exact=True).first.click()
        try:
            box.wait_for(state="visible", timeout=10_000)
        except PlaywrightTimeout:
            pass
    # the same for *Sign in* and *Open a class*: on a busy host a click that lands while a run
    # redraws its popover or panel can be lost, so each is clicked again, once the page is idle,
    # until what it does shows (a second *Open a class* is drawn only if the first opened nothing)
    opened = "(document.body.innerText.match(/Class ([A-Z2-9]{6}) is open/) || [])[1]"
    open_button = page.get_by_role("button", name="Open a class")
    while not page.evaluate(opened):
        if time.time() > deadline + PAGE_BUDGET:
            raise TimeoutError(f"timed out after {2 * PAGE_BUDGET} s signing in and opening a class\n{describe_page(page)}")
        try:  # an element a run has just taken away is not waited for: the loop looks again
            if open_button.is_visible():
                open_button.click(timeout=10_000)
            elif box.is_visible():
                box.fill(key, timeout=10_000)
                box.press("Enter", timeout=10_000)
                wait_for(page, APP_IDLE, "the key taken")
                page.get_by_role("button", name="Sign in").click(timeout=10_000)
            elif teacher.is_visible():
                teacher.click(timeout=10_000)
            else:
                page.get_by_text("Class", exact=True).first.click(timeout=10_000)
            # the click's run: Streamlit shows its status a moment after a run starts
            page.wait_for_timeout(1_000)
            wait_for(page, f"{opened} || {APP_IDLE}", "the click's run")
        except (TimeoutError, PlaywrightTimeout):
            pass
    return page.evaluate(opened)


def describe_page(page: Page) -> str:
    """What the browser shows, for a timeout's message: the address, the page's text, and a
    screenshot saved as test-output/browser/timeout.png."""
    try:
        text = page.locator("body").inner_text(timeout=10_000)
        OUTPUT.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=OUTPUT / "timeout.png", timeout=30_000)
        return f"--- the page {page.url} (screenshot: {OUTPUT / 'timeout.png'}) ---\n{text[:3000]}"
    except Exception as e:  # noqa: BLE001 - the browser itself may be what hangs
        return f"--- the page {page.url} could not be read: {e!r} ---"


# the first drawn heatmap's source labels (its x-axis tick text), or null
HEATMAP_TICKS = """(() => {
  const plots = [...document.querySelectorAll('.js-plotly-plot')]
    .filter(p => p.data && p.data[0] && p.data[0].type === 'heatmap' && p.querySelector('.hm'));
  return plots.length ? plots[0].layout.xaxis.ticktext : null;
})()"""


APP_IDLE = "!document.querySelector('[data-testid=\"stStatusWidget\"] button') && document.readyState === 'complete'"
