"""*Remove many*, in the teacher's Class panel: every student who joined in the last minutes, or who
has not answered, or both, taken off the roster in one press, with *Undo* (``ClassStore.remove_many``).
One script on the school's network can join fakes as fast as the seats allow; the teacher removes
the batch at once rather than name by name."""
from __future__ import annotations

import time

import streamlit as st

from server.class_store import class_store, NotTeacher, StoreUnavailable
from ui.class_session import teacher_key

WHO = {"joined in the last minutes": (True, False), "has not answered": (False, True),
       "joined in the last minutes and has not answered": (True, True)}
UNDO_S = 60.0  # how long a batch removal offers its *Undo* (as one student's removal does)
REMOVED = "class_removed_many"  # [nicknames, when]: the last batch removed, for its *Undo*


def chosen(students: list, who: str, minutes: int, now: float) -> list[str]:
    """The nicknames ``who`` names among ``students`` (the roster as drawn: nickname, joined_at,
    answers), as the store will choose them at the press (``remove_many``)."""
    recent, silent = WHO[who]
    return [s.nickname for s in students
            if (not recent or s.joined_at >= now - 60 * minutes) and (not silent or s.answers == 0)]


def _remove_many(code: str) -> None:
    recent, silent = WHO[st.session_state["class_bulk_who"]]
    since = time.time() - 60 * st.session_state["class_bulk_minutes"] if recent else None
    try:
        names = class_store().remove_many(teacher_key(), code, joined_since=since, unanswered=silent)
        st.session_state[REMOVED] = [names, time.time()]
    except (StoreUnavailable, NotTeacher) as e:
        st.session_state["class_error"] = str(e)


def _undo(code: str, names: list[str]) -> None:
    try:
        class_store().readmit_many(teacher_key(), code, names)
        st.session_state.pop(REMOVED, None)
    except (StoreUnavailable, NotTeacher) as e:
        st.session_state["class_error"] = str(e)


def remove_many_panel(code: str, students: list) -> None:
    """The *Remove many* pop-over: who (joined in the last N minutes, not answered, or both), how
    many that is now and who, one button, and *Undo* for UNDO_S after it."""
    done = st.session_state.get(REMOVED)
    if done and time.time() - done[1] > UNDO_S:
        st.session_state.pop(REMOVED)
        done = None
    with st.popover("Remove many", icon=":material/group_remove:", key="class_bulk"):
        st.selectbox("Remove every student who", list(WHO), key="class_bulk_who")
        if WHO[st.session_state["class_bulk_who"]][0]:
            st.number_input("Minutes", 1, 24 * 60, 5, key="class_bulk_minutes",
                            help="Students who joined this many minutes ago or later.")
        else:
            st.session_state.setdefault("class_bulk_minutes", 5)
        names = chosen(students, st.session_state["class_bulk_who"], st.session_state["class_bulk_minutes"],
                       time.time())
        shown = ", ".join(names[:12]) + (f" and {len(names) - 12} more" if len(names) > 12 else "")
        st.caption(f"Now: {len(names)} student{'s' if len(names) != 1 else ''}" + (f" ({shown})." if names else "."))
        st.button(f"Remove {len(names)} student{'s' if len(names) != 1 else ''}", key="class_bulk_remove",
                  on_click=_remove_many, args=(code,), disabled=not names, icon=":material/group_remove:",
                  help="Their answers leave the summary; they are told at once and cannot join again "
                       "(Undo puts them all back).")
        if done:
            st.caption(f"Removed {len(done[0])}: their answers left the summary.")
            st.button(f"Undo: put {len(done[0])} back", key="class_bulk_undo", on_click=_undo,
                      args=(code, done[0]), icon=":material/undo:")
