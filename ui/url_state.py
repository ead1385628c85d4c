"""The page's state in its URL (``?text=…&model=…``), so a teacher can share a link.

Torch-free on purpose: ``navigation.py`` draws the class panel (``class_session``) on the first
visit while the server's warm-up thread is still importing torch (``server/loading.py``)."""
from __future__ import annotations

import streamlit as st


def query_param(name: str, default: str | None = None) -> str | None:
    value = st.query_params.get(name)
    return value if value not in (None, "") else default


def set_query_params(**values) -> None:
    """Keep the current choices in the URL so a teacher can share a link."""
    for k, v in values.items():
        if v is None or v == "":
            st.query_params.pop(k, None)
        elif st.query_params.get(k) != str(v):
            st.query_params[k] = str(v)
