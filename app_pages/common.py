"""What every page shares: the model zoo (loaded once per process), the URL state, and
the text-input rules. No model logic lives here: only loading and wiring."""
from __future__ import annotations

import os
from pathlib import Path

import streamlit as st

from model.search import DecodingRecord, InputError, translate
from model.zoo import load_zoo, ZooEntry

ROOT = Path(__file__).resolve().parent.parent
# tests point this at a folder of tiny checkpoints; the app itself reads the shipped ones
CHECKPOINTS = Path(os.environ.get("ATTN_EXPLORER_CHECKPOINTS", ROOT / "checkpoints"))
MAX_INPUT_CHARS = 1000  # the text box's limit; the model further cuts at MAX_SOURCE_TOKENS pieces


@st.cache_resource(show_spinner="Loading the models…")
def zoo(root: str = str(CHECKPOINTS)) -> dict[str, ZooEntry]:
    """Every checkpoint, loaded once per process and shared by all browser sessions."""
    return load_zoo(root)


def available_models() -> dict[str, ZooEntry]:
    return {n: e for n, e in zoo().items() if e.available}


def unavailable_models() -> dict[str, ZooEntry]:
    return {n: e for n, e in zoo().items() if not e.available}


def show_unavailable() -> None:
    """List the models that could not be loaded, with the reason, without stopping the page."""
    broken = unavailable_models()
    if broken:
        with st.expander(f"{len(broken)} model(s) unavailable", expanded=not available_models()):
            for e in broken.values():
                st.warning(f"**{e.display_name}** is unavailable: {e.error}")


@st.cache_data(show_spinner=False, max_entries=256)
def cached_translate(model_name: str, text: str, beam: int) -> DecodingRecord:
    """Translate through the shared model; the same (model, text, beam) is computed once."""
    entry = zoo()[model_name]
    return translate(entry.model, entry.vocab, text, beam=beam)


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


__all__ = ["zoo", "available_models", "unavailable_models", "show_unavailable", "cached_translate",
           "query_param", "set_query_params", "InputError", "MAX_INPUT_CHARS", "CHECKPOINTS"]
