"""The teacher's live views, and the one control that pauses them all (WCAG 2.2.2 Pause, Stop, Hide).

Each live view (the sidebar's roster with its counts and waiting list, the Exercises and Lesson
pages' answers) is an ``st.fragment`` without a timer that draws :func:`live_look` first: a
hidden button the page's script (``ui/class_live.js``) clicks when the class's activity
signature changes (``server/class_live.py``), so a view reruns, alone, when a student joins,
waits or answers, and never while nothing changes. :func:`live_controls`, in the sidebar of every
page of a teacher with an open class, draws *Pause live updates* and the script's settings; paused,
the script clicks nothing, so nothing on the page moves until the teacher resumes or acts.
"""
from __future__ import annotations

from html import escape
from pathlib import Path
from urllib.parse import urlencode

import streamlit as st

from server.class_live import LIVE_PATH, live_board, live_ticket
from server.class_store import class_store, StoreUnavailable
from ui.figures import Html

LOOK = "class_live_look_"     # the key prefix of each live view's hidden button (hidden by ui/figures.ACCESSIBLE_CSS)
PAUSED = "class_live_paused"  # the teacher paused the live views (kept across reruns and pages)
PAUSE_BOX = "class_live_pause_box"  # the toggle itself (a widget's state is dropped on a run that does not draw it)
GAP_S = 1.0                   # at most one round of reruns a second while a class keeps answering
STEP_S = 0.15                 # between two live views' clicks of one round (one click, one batch, one fragment)
SAID_PAUSED = "Live updates paused: the counts, the roster, the waiting list and the answers stay as they are."
SAID_RESUMED = "Live updates resumed."
LIVE_JS = (Path(__file__).parent / "class_live.js").read_text(encoding="utf-8")


def live_look(name: str) -> None:
    """The first element of a live view's fragment: the hidden button whose click reruns it."""
    st.button("Show the class's changes", key=LOOK + name)


def paused() -> bool:
    return bool(st.session_state.get(PAUSED))


def _pause_changed() -> None:
    st.session_state[PAUSED] = bool(st.session_state.get(PAUSE_BOX))


def live_controls(code: str, base: str) -> None:
    """*Pause live updates* and the page's listener, for the teacher of the open class ``code``
    (``base``: the app's path in the browser's address, "" at the root)."""
    try:
        signature = live_board().signature(code)
        ticket = live_ticket(class_store().cookie_secret(), code)
    except StoreUnavailable:
        return
    if signature is None or signature.split(".")[1] == "1":  # no such class, or closed: nothing moves
        return
    st.session_state[PAUSE_BOX] = paused()
    st.toggle("Pause live updates", key=PAUSE_BOX, on_change=_pause_changed,
              help="Stops the counts, the roster, the waiting list and the answers from changing by themselves; "
                   "your own clicks still update them.")
    if paused():
        st.caption("Paused: what you see stays until you resume.")
    url = f"{base}{LIVE_PATH}?{urlencode({'class': code, 't': ticket})}"
    st.html(Html(f"""<div id="attn-live" hidden data-url="{escape(url)}" data-version="{escape(signature)}"
 data-paused="{int(paused())}" data-look="{LOOK}" data-gap-ms="{int(1000 * GAP_S)}" data-step-ms="{int(1000 * STEP_S)}"
 data-said-paused="{escape(SAID_PAUSED)}" data-said-resumed="{escape(SAID_RESUMED)}"></div><script>{LIVE_JS}</script>"""),
            unsafe_allow_javascript=True)
