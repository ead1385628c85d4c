"""What several test files share (test files import from here, never from each other):
``apptest`` (driving the pages with Streamlit's AppTest), ``browser`` (a served app and
headless Chromium), ``lecture`` (the several-process hall behind HAProxy), ``hf_tiny``
(a tiny MarianMT made here). Fixtures live in ``tests/conftest.py``."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository
