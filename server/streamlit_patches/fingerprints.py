"""What a change to Streamlit (a patch, or a private read) was written against: the Streamlit
version and a fingerprint of each target's source, so that an upgrade fails loudly
(``tests/test_streamlit_patches.py``: "re-read patch X") rather than changes meaning unseen."""
from __future__ import annotations

import hashlib
import importlib
import inspect
import textwrap

WRITTEN_FOR = "1.67.0"  # the Streamlit every patch and private read was read against


def installed_streamlit() -> str:
    import streamlit
    return streamlit.__version__


def resolve(target: str):
    """``"module:Owner.attr"`` -> (the owner object, "attr")."""
    module, _, path = target.partition(":")
    owner = importlib.import_module(module)
    *owners, attr = path.split(".")
    for name in owners:
        owner = getattr(owner, name)
    return owner, attr


def streamlits(target: str):
    """The target as Streamlit wrote it, even while a patch has it replaced."""
    owner, attr = resolve(target)
    current = getattr(owner, attr)
    while getattr(current, "attn_patch", False):  # under each patch's wrapper, the one before
        current = current.attn_original
    return current


def fingerprint(source: str) -> str:
    """A short hash of a target's source: what the patch's author read."""
    return hashlib.sha256(textwrap.dedent(source).encode()).hexdigest()[:16]


def source_of(target: str) -> str:
    return inspect.getsource(streamlits(target))

