"""One real-browser test: headless Chromium loads the running app, a sentence is typed into
the box, and the test waits for the alignment heatmap and saves a screenshot under
``test-output/browser/``.

Chromium is Debian's ``chromium`` package (``bash scripts/setup_browser.sh`` installs it;
the test runs that script itself when the browser is missing). It is driven over the Chrome
DevTools Protocol with a few lines of ``websockets`` (a Streamlit dependency), so no
Selenium or Playwright is needed.

The same driver makes the README's screenshot from the shipped checkpoints:

    python tests/test_browser.py --checkpoints checkpoints --out docs/screenshot.png
"""
from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "test-output" / "browser"
CHROMIUM = "/usr/bin/chromium"
SENTENCE_BOX = 'textarea[aria-label="English sentence"]'


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(check, timeout: float, what: str, interval: float = 0.25):
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


class DevTools:
    """A minimal Chrome DevTools Protocol client: send a command, wait for its answer."""

    def __init__(self, websocket):
        self.ws = websocket
        self.next_id = 0

    def call(self, method: str, **params) -> dict:
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:  # events arrive in between; skip them
            message = json.loads(self.ws.recv(timeout=120))
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})

    def evaluate(self, expression: str):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        return result.get("result", {}).get("value")


@contextmanager
def headless_chromium(chromium: str, width: int = 1440, height: int = 1700):
    """Chromium with remote debugging on a free port; yields a DevTools client for its first tab."""
    # Chromium may still be writing to its profile as it exits: a leftover file must not fail the test
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:
        port = free_port()
        proc = subprocess.Popen([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                                 "--no-first-run", "--disable-background-networking", "--disable-component-update",
                                 "--disable-sync", "--disable-dev-shm-usage", f"--user-data-dir={profile}",
                                 f"--remote-debugging-port={port}", "--remote-allow-origins=*",
                                 f"--window-size={width},{height}", "about:blank"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            def page_target():
                targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=2))
                return next((t["webSocketDebuggerUrl"] for t in targets if t.get("type") == "page"), None)
            from websockets.sync.client import connect
            with connect(wait_until(page_target, 60, "Chromium's DevTools endpoint"), max_size=None,
                         open_timeout=30) as websocket:
                tab = DevTools(websocket)
                tab.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1,
                         mobile=False)
                try:
                    yield tab
                except TimeoutError as e:
                    raise TimeoutError(f"{e}\n{describe_page(tab)}") from None
        finally:
            stop(proc)


def describe_page(tab: DevTools) -> str:
    """What the browser shows, for a timeout's message: the address, the page's text, and a
    screenshot saved as test-output/browser/timeout.png."""
    try:
        text = tab.evaluate("location.href + '\\n' + (document.body ? document.body.innerText : '(no body)')")
        OUTPUT.mkdir(parents=True, exist_ok=True)
        (OUTPUT / "timeout.png").write_bytes(base64.b64decode(tab.call("Page.captureScreenshot", format="png")["data"]))
        return f"--- the page (screenshot: {OUTPUT / 'timeout.png'}) ---\n{str(text)[:3000]}"
    except Exception as e:  # noqa: BLE001 - the browser itself may be what hangs
        return f"--- the page could not be read: {e!r} ---"


HEATMAP_TICKS = """(() => {
  const plots = [...document.querySelectorAll('.js-plotly-plot')]
    .filter(p => p.data && p.data[0] && p.data[0].type === 'heatmap' && p.querySelector('.hm'));
  return plots.length ? JSON.stringify(plots[0].layout.xaxis.ticktext) : null;
})()"""


def type_sentence_and_capture(tab: DevTools, url: str, sentence: str, expect_token: str | None, screenshot: Path,
                              timeout: float = 90) -> list[str]:
    """Open Translate, replace the sentence, press Ctrl+Enter, wait for a heatmap whose source
    tokens include ``expect_token`` (or, if None, differ from the first heatmap's), then save
    a PNG. Returns the heatmap's source labels."""
    tab.call("Page.enable")
    tab.call("Page.navigate", url=url)
    wait_until(lambda: tab.evaluate(f"!!document.querySelector('{SENTENCE_BOX}')"), timeout, "the sentence box")
    first = wait_until(lambda: tab.evaluate(HEATMAP_TICKS), timeout, "the first heatmap")
    tab.evaluate(f"(() => {{ const t = document.querySelector('{SENTENCE_BOX}'); t.focus(); t.select(); }})()")
    tab.call("Input.insertText", text=sentence)
    for kind in ("keyDown", "keyUp"):  # Ctrl+Enter commits a Streamlit text area
        tab.call("Input.dispatchKeyEvent", type=kind, modifiers=2, key="Enter", code="Enter",
                 windowsVirtualKeyCode=13, nativeVirtualKeyCode=13)
    def new_heatmap():
        t = tab.evaluate(HEATMAP_TICKS)
        return t if t and (expect_token in json.loads(t) if expect_token else t != first) else None
    ticks = wait_until(new_heatmap, timeout, f"a heatmap with the token {expect_token!r}" if expect_token
                       else "a heatmap of the new sentence")
    wait_until(lambda: tab.evaluate("!document.querySelector('[data-testid=\"stStatusWidget\"] button')"
                                    " && document.readyState === 'complete'"), 30, "the app to finish running")
    tab.evaluate("document.activeElement && document.activeElement.blur()")
    time.sleep(1.0)  # let Plotly finish drawing
    shot = tab.call("Page.captureScreenshot", format="png")
    screenshot.parent.mkdir(parents=True, exist_ok=True)
    screenshot.write_bytes(base64.b64decode(shot["data"]))
    return json.loads(ticks)


# -- the test -------------------------------------------------------------------------------------
def test_browser_types_a_sentence_and_sees_the_heatmap(tiny_zoo):
    import pytest
    chromium = find_chromium()
    if not chromium:
        pytest.skip("Chromium not found and scripts/setup_browser.sh could not install it (needs root and apt)")
    OUTPUT.mkdir(parents=True, exist_ok=True)
    sentence = "3 1 4 1 5 9 2 6"
    with streamlit_app(tiny_zoo, OUTPUT / "streamlit.log") as url, headless_chromium(chromium) as tab:
        ticks = type_sentence_and_capture(tab, url + "/", sentence, "▁9", OUTPUT / "translate.png")
        assert ticks == ["▁3", "▁1", "▁4", "▁1", "▁5", "▁9", "▁2", "▁6", "&lt;/s&gt;"]
        assert "text=3+1+4" in tab.evaluate("location.href").replace("%20", "+")
    png = (OUTPUT / "translate.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Screenshot of the Translate page with a typed sentence.")
    p.add_argument("--checkpoints", default=str(ROOT / "checkpoints"))
    p.add_argument("--sentence", default="It should be noted that the marine environment is the least known "
                                          "of environments.")
    p.add_argument("--expect", default=None, help="a source piece the heatmap must show before the shot "
                                                  "(default: any heatmap other than the first)")
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
            headless_chromium(chromium, args.width, args.height) as tab:
        ticks = type_sentence_and_capture(tab, f"{url}/?{args.query}", args.sentence, args.expect, Path(args.out))
    print(f"saved {args.out}; heatmap source tokens: {ticks}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
