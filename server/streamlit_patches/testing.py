"""What the suite's AppTests share, which Streamlit's testing API has no public way to say; and
:func:`widget_value`, a widget's value as a session keeps it (for ``replay_copies``' tests).

An AppTest makes a registry of v2 components (``st.components.v2``) at its first run. To make it,
it reads every installed distribution's metadata in search of a component manifest: about
0.2 CPU-seconds, paid by each of the suite's hundreds of AppTests. The app declares no such
component. So one registry, made once per test process, serves them all, and what each AppTest
finds is the same.

This is written for the Streamlit of :data:`~server.streamlit_patches.fingerprints.WRITTEN_FOR`,
with ``AppTest._run`` fingerprinted (``tests/test_streamlit_patches.py``). On another Streamlit,
each AppTest makes its own registry, as Streamlit does. The app's server never calls it: a server
makes one registry at start.
"""
from __future__ import annotations

from functools import lru_cache

from server.streamlit_patches.fingerprints import installed_streamlit, WRITTEN_FOR

TARGETS = {"streamlit.testing.v1.app_test:AppTest._run": "3e722d33d65ed480"}


def shared_components(at):
    """``at`` (a new AppTest), given the process's registry of v2 components before its first run."""
    if installed_streamlit() == WRITTEN_FOR and getattr(at, "_bidi_component_manager", False) is None:
        at._bidi_component_manager = _registry()
    return at


@lru_cache(maxsize=1)
def _registry():
    from streamlit.components.v2.component_manager import BidiComponentManager
    registry = BidiComponentManager()
    registry.discover_and_register_components(start_file_watching=False)
    return registry


def widget_value(value):
    """``value`` as Streamlit's session state keeps a widget's (``session_state.Value``)."""
    from streamlit.runtime.state.session_state import Value
    return Value(value)
