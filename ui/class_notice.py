"""A student's place in the class, said in the page's main area at every width: removed by the
teacher, waiting to be let in, or refused (a locked class, no seat free, …). The sidebar, where
the Class panel says it too, is closed on a phone; the page is what a student looks at. Counted
answers are said beside each *Check* (``ui.class_session.record_answer``).

Drawn only while there is something to say: a following student's run costs a dictionary read
(the process's follow board) and a session read, no element."""
from __future__ import annotations

import streamlit as st

from server.class_store import StoreUnavailable
from server.follow import follow_board
from ui.class_follow import _removed_from
from ui.class_session import FOLLOW, REFUSED, teacher_key


def student_notice(code: str) -> None:
    """The notice, in the main area, for this tab's student in class ``code`` (or refused one)."""
    if teacher_key():
        return
    refused = st.session_state.get(REFUSED)
    if not code and refused:
        removed = "removed you" in refused[1]
        st.warning(f"Not in class {refused[0]}: {refused[1]}."
                   + ("" if removed else " The *Class* panel in the sidebar shows when you are in."),
                   icon=":material/block:" if removed else ":material/hourglass_top:")
        return
    if not code or not st.session_state.get(FOLLOW):
        return
    try:
        state = follow_board().state(code)
    except StoreUnavailable:
        return
    if state is not None and state.open and _removed_from(code, state):
        st.warning(f"The teacher removed you from class {code}: the teacher's pages no longer open here, and your "
                   "answers are not counted.", icon=":material/block:")
