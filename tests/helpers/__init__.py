"""What several test files share (test files import from here, never from each other):
``apptest`` (driving the pages with Streamlit's AppTest), ``browser`` (a served app and
headless Chromium), ``lecture`` (the several-process hall behind HAProxy), ``hf_tiny``
(a tiny MarianMT made here). Fixtures live in ``tests/conftest.py``."""
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository


def until(condition, what: str, timeout: float = 10.0) -> None:
    """Wait until another thread has reached a state (``condition()`` true), within ``timeout``:
    how a test orders threads, never by a fixed sleep that a busy host outlasts."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout:.0f} s waiting for {what}"
        time.sleep(0.002)
