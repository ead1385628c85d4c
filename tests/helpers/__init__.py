"""What several test files share (test files import from here, never from each other):
``apptest`` (driving the pages with Streamlit's AppTest), ``browser`` (a served app and
headless Chromium), ``lecture`` (the several-process hall behind HAProxy), ``hf_tiny``
(a tiny MarianMT made here); here, ``until`` (a wait on another thread's state) and
``as_stored`` (answers as the class store keeps them). Fixtures live in ``tests/conftest.py``."""
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository


def until(condition, what: str, timeout: float = 10.0) -> None:
    """Wait until another thread has reached a state (``condition()`` true), within ``timeout``:
    how a test orders threads, never by a fixed sleep that a busy host outlasts."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout:.0f} s waiting for {what}"
        time.sleep(0.002)


def as_stored(rows):
    """(session, exercise, answer, correct) rows, oldest first, as the store keeps them: each
    student's answers to an exercise numbered from 1."""
    from server.class_store import StoredAnswer
    seen = Counter()
    out = []
    for session, exercise, answer, correct in rows:
        seen[(exercise, session)] += 1
        out.append(StoredAnswer(exercise, session, seen[(exercise, session)], answer, correct, 0.0))
    return out
