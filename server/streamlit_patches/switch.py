"""The switch: which patches and private reads ``ATTN_EXPLORER_STREAMLIT_PATCHES`` chooses.

``all`` (the default), ``none`` (the server then runs as Streamlit does, and reads nothing private
of it), or names separated by commas; ``-name`` leaves one out of the rest (``all,-send_promptly``).
The names are the patches' (:mod:`~server.streamlit_patches.patches`) and the reads'
(:mod:`~server.streamlit_patches.reads`)."""
from __future__ import annotations

from server import settings

ENV = "ATTN_EXPLORER_STREAMLIT_PATCHES"


def chosen(names: list[str], value: str | None = None) -> tuple[list[str], list[str]]:
    """(the ``names`` that ``value`` chooses, in their order; the words of ``value`` that name
    none of them). ``value`` defaults to the environment's ``ATTN_EXPLORER_STREAMLIT_PATCHES``."""
    value = settings.streamlit_patches() if value is None else value
    words = [w.strip() for w in value.split(",") if w.strip()] or ["all"]
    picked = set()
    for word in words:
        if word == "all":
            picked.update(names)
        elif word != "none" and not word.startswith("-"):
            picked.add(word)
    picked -= {w[1:] for w in words if w.startswith("-")}
    unknown = sorted({w.lstrip("-") for w in words} - {"all", "none"} - set(names))
    return [n for n in names if n in picked], unknown
