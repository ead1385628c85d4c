"""One real-browser test: headless Chromium loads the running app, a sentence is typed into
the box, and the test waits for the alignment heatmap and saves a screenshot under
``test-output/browser/``.

Chromium is Debian's ``chromium`` package (``bash scripts/setup_browser.sh`` installs it;
the test runs that script itself when the browser is missing), driven by Playwright
(``playwright.sync_api``, pinned in requirements-dev.txt). Playwright launches
``/usr/bin/chromium`` through ``executable_path``; no Playwright browser is downloaded
(``playwright install`` is never needed).

The same driver makes the README's screenshot from the shipped checkpoints:

    python tests/test_browser.py --checkpoints checkpoints --out docs/screenshot.png --expect policy.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from playwright.sync_api import Page, expect, sync_playwright
from playwright.sync_api import TimeoutError as PlaywrightTimeout

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script (see the top), not only under pytest
    sys.path.insert(0, str(ROOT))
from server.lecture import free_port  # noqa: E402
OUTPUT = ROOT / "test-output" / "browser"
CHROMIUM = "/usr/bin/chromium"
# headless (Playwright's default), no sandbox (root in a container), nothing fetched from Google;
# Playwright gives every launch a fresh, temporary profile (user-data dir) of its own
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]
SENTENCE_BOX = 'textarea[aria-label="English sentence"]'


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
    found = shutil.which("chromium") or (CHROMIUM if os.path.exists(CHROMIUM) else None)
    if found or not install:
        return found
    subprocess.run(["bash", str(ROOT / "scripts" / "setup_browser.sh")], timeout=900, check=False)
    return find_chromium(install=False)


@contextmanager
def streamlit_app(checkpoints: Path, log_path: Path):
    """``streamlit run app.py`` on a free port, serving the given checkpoints; yields its URL."""
    port = free_port()
    env = dict(os.environ, ATTN_EXPLORER_CHECKPOINTS=str(checkpoints), OMP_NUM_THREADS="1")
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "w") as log:
        proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
                                 "--server.port", str(port), "--server.address", "127.0.0.1",
                                 "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
                                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            url = f"http://127.0.0.1:{port}"
            wait_until(lambda: proc.poll() is None and urllib.request.urlopen(f"{url}/_stcore/health", timeout=2)
                       .read() == b"ok", 90, "the Streamlit server")
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
    """End a child process: politely, then by force after 15 s."""
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextmanager
def headless_chromium(chromium: str, width: int = 1440, height: int = 1700):
    """Debian's Chromium launched by Playwright; yields a page (one tab) of ``width`` x ``height``.
    A timeout inside, Playwright's or :func:`wait_for`'s, leaves as a :class:`TimeoutError`
    carrying what the page showed (so :func:`streamlit_app` adds the server's side)."""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": height}, device_scale_factor=1)
            try:
                yield page
            except (TimeoutError, PlaywrightTimeout) as e:
                raise TimeoutError(f"{e}\n{describe_page(page)}") from None
        finally:
            browser.close()


def wait_for(page: Page, expression: str, what: str, timeout: float = 90, arg=None):
    """Wait until the JavaScript ``expression`` (which may use ``arg``) is truthy on the page,
    checked every 250 ms, and return its value; an expression that throws (the page is
    still being drawn) counts as not yet."""
    predicate = f"arg => {{ try {{ return ({expression}); }} catch (e) {{ return null; }} }}"
    try:
        return page.wait_for_function(predicate, arg=arg, polling=250, timeout=timeout * 1000).json_value()
    except PlaywrightTimeout:
        raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}") from None


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


def type_sentence_and_capture(page: Page, url: str, sentence: str, expect_token: str | None, screenshot: Path,
                              timeout: float = 90) -> list[str]:
    """Open Translate, replace the sentence, press Ctrl+Enter, wait for a heatmap whose source
    tokens include ``expect_token`` (or, if None, differ from the first heatmap's), then save
    a PNG. Returns the heatmap's source labels."""
    page.goto(url, wait_until="domcontentloaded", timeout=timeout * 1000)
    box = page.locator(SENTENCE_BOX)
    box.wait_for(timeout=timeout * 1000)
    first = wait_for(page, HEATMAP_TICKS, "the first heatmap", timeout)
    box.fill(sentence)  # focuses the box, selects its text and types over it
    box.press("Control+Enter")  # Ctrl+Enter commits a Streamlit text area
    if expect_token:
        ticks = wait_for(page, f"(t => t && t.includes(arg) && t)({HEATMAP_TICKS})",
                         f"a heatmap with the token {expect_token!r}", timeout, arg=expect_token)
    else:
        ticks = wait_for(page, f"(t => t && JSON.stringify(t) !== JSON.stringify(arg) && t)({HEATMAP_TICKS})",
                         "a heatmap of the new sentence", timeout, arg=first)
    wait_for(page, APP_IDLE, "the app to finish running", 30)
    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.wait_for_timeout(1000)  # let Plotly finish drawing
    screenshot.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=screenshot)
    return ticks


# -- the test -------------------------------------------------------------------------------------
def test_browser_types_a_sentence_and_sees_the_heatmap(tiny_zoo):
    import pytest
    chromium = find_chromium()
    if not chromium:
        pytest.skip("Chromium not found and scripts/setup_browser.sh could not install it (needs root and apt)")
    OUTPUT.mkdir(parents=True, exist_ok=True)
    sentence = "3 1 4 1 5 9 2 6"
    with streamlit_app(tiny_zoo, OUTPUT / "streamlit.log") as url, headless_chromium(chromium) as page:
        ticks = type_sentence_and_capture(page, url + "/", sentence, "▁9", OUTPUT / "translate.png")
        assert ticks == ["▁3", "▁1", "▁4", "▁1", "▁5", "▁9", "▁2", "▁6", "&lt;/s&gt;"]
        expect(page).to_have_url(re.compile(r"text=3(\+|%20)1(\+|%20)4"))  # the sentence is in the address
    png = (OUTPUT / "translate.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Screenshot of the Translate page with a typed sentence.")
    p.add_argument("--checkpoints", default=str(ROOT / "checkpoints"))
    # not the landing sentence: the shot waits for the heatmap to change from the landing one
    p.add_argument("--sentence", default="The agreement on the European Economic Area was signed in August 1992.",
                   help="default: the paper's Figure 3a sentence")
    p.add_argument("--expect", default="August", help="a source label the heatmap must show before the shot "
                                                      "(empty: any heatmap other than the first)")
    p.add_argument("--query", default="view=words", help="URL parameters for the page, e.g. view=words&beam=5")
    p.add_argument("--out", default=str(ROOT / "docs" / "screenshot.png"))
    p.add_argument("--width", type=int, default=1440)
    p.add_argument("--height", type=int, default=1900)
    args = p.parse_args(argv)
    chromium = find_chromium()
    if not chromium:
        print("error: chromium not found; run scripts/setup_browser.sh", file=sys.stderr)
        return 1
    with streamlit_app(Path(args.checkpoints), OUTPUT / "streamlit.log") as url, \
            headless_chromium(chromium, args.width, args.height) as page:
        ticks = type_sentence_and_capture(page, f"{url}/?{args.query}", args.sentence, args.expect or None,
                                         Path(args.out))
    print(f"saved {args.out}; heatmap source tokens: {ticks}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
