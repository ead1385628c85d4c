"""Visitors see no tracebacks: a page that raises, served with the repository's settings
(``client.showErrorDetails``, .streamlit/config.toml) and opened in Debian's Chromium through
Playwright, shows Streamlit's short notice and nothing of the exception; the server's log keeps
the whole trace."""
from __future__ import annotations

import pytest

import re
import subprocess
import sys
import urllib.request
from pathlib import Path

from helpers.browser import find_chromium, headless_chromium, PAGE_BUDGET, stop, wait_for, wait_until
from server.lecture import free_port

pytestmark = [pytest.mark.browser, pytest.mark.server]

ROOT = Path(__file__).resolve().parent.parent


def test_a_failing_page_shows_no_stack_trace(tmp_path):
    chromium = find_chromium()
    assert chromium, "chromium is missing: scripts/setup_browser.sh installs it"
    port, log_path = free_port(), tmp_path / "server.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "tests/raising_page.py", "--server.headless",
                                 "true", "--server.port", str(port), "--server.address", "127.0.0.1"],
                                cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)  # the repository's config.toml
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until(lambda: urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok", 60, "the server")
        with headless_chromium(chromium, 1000, 800) as page:
            page.goto(url)
            wait_for(page, "document.body.innerText.includes('This app has encountered an error')", "the notice", PAGE_BUDGET)
            shown = page.locator("body").inner_text()
    finally:
        stop(proc)
    for hidden in ("Traceback", "RuntimeError", "secret-settings", "raising_page.py", 'File "'):
        assert hidden not in shown, f"the visitor sees {hidden!r}:\n{shown}"
    logged = re.sub(r"\x1b\[[0-9;]*m", "", log_path.read_text())  # without the terminal's colours
    assert "Traceback" in logged and "RuntimeError: internal detail" in logged  # the server's log keeps it
