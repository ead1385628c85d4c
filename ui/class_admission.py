"""Who joins a class, in the Class panel: the teacher's seats, *approve joins* and join window with
the students waiting (``server/class_store/admission.py``), and a refused student's tab, which says
why and tries again by itself every ``RETRY_JOIN_S`` (a seat freed, the teacher let them in): no
reload, no code typed again."""
from __future__ import annotations

import time

import streamlit as st

from server.class_store import class_store, MAX_STUDENTS, NotTeacher, StoreUnavailable
from ui.class_session import CLASS, join_again, REFUSED, teacher_key

RETRY_JOIN_S = 5.0  # a refused tab asks again this often (one read of the store)
WINDOWS = {"no end": None, "5 more minutes": 5, "10 more minutes": 10, "30 more minutes": 30}


def refused_notice() -> None:
    """The reason this tab is not in the class it asked for; where it may change (seats, approval,
    a minute's joins, a lock, the window), asked again by itself."""
    refused = st.session_state.get(REFUSED)
    if not refused or st.session_state.get(CLASS):
        return
    if "removed you" in refused[1]:
        st.warning(f"Not in class {refused[0]}: {refused[1]}.", icon=":material/block:")
    else:
        _waiting_room()


@st.fragment(run_every=RETRY_JOIN_S)
def _waiting_room() -> None:
    refused = st.session_state.get(REFUSED)
    if not refused or st.session_state.get(CLASS):
        return
    if join_again(refused[0]):
        st.rerun(scope="app")  # in: the whole page, as a joined tab draws it
    refused = st.session_state.get(REFUSED) or refused
    st.warning(f"Not in class {refused[0]}: {refused[1]}.", icon=":material/hourglass_top:")


def _change(code: str, **what) -> None:
    try:
        class_store().set_admission(teacher_key(), code, **what)
    except (StoreUnavailable, NotTeacher) as e:
        st.session_state["class_error"] = str(e)


def _let_in(code: str, nickname: str | None) -> None:
    try:
        class_store().approve_join(teacher_key(), code, nickname)
    except (StoreUnavailable, NotTeacher) as e:
        st.session_state["class_error"] = str(e)


def _window(code: str) -> None:
    minutes = WINDOWS.get(st.session_state.get("class_join_window"))
    _change(code, window_min=minutes, no_window=minutes is None)


def admission_panel(code: str) -> None:
    """The teacher's *Joining* popover: seats, approve joins, how long joins stay open, who waits."""
    try:
        rules = class_store().admission(code)
        waiting = class_store().waiting_students(teacher_key(), code) if rules.approve else []
    except (StoreUnavailable, NotTeacher):
        return
    st.session_state["class_seats"] = rules.seats
    st.session_state["class_approve"] = rules.approve
    if waiting:  # said beside the popover, whose label never changes (a new label would close it)
        st.markdown(f"**{len(waiting)} waiting** to join: *Joining* lets them in.")
    with st.popover("Joining", icon=":material/door_open:", key="class_joining"):
        st.caption(f"{rules.seats} seats" + (f", {len(waiting)} waiting." if waiting else "; nobody waits."))
        st.number_input("Seats", 1, MAX_STUDENTS, key="class_seats", step=10,
                        on_change=lambda: _change(code, seats=st.session_state["class_seats"]),
                        help="The most students the class takes (one network, a school's, included); a "
                             "refused student joins by themselves when a seat frees.")
        st.toggle("Approve joins", key="class_approve", on_change=lambda: _change(code, approve=st.session_state[
            "class_approve"]), help="A new student waits, under their nickname, until you let them in.")
        st.selectbox("Joins stay open", list(WINDOWS), key="class_join_window", on_change=_window, args=(code,),
                     help="After this, no new student joins (as *Lock the class*); those in it go on.")
        if rules.joins_until:
            closes = time.strftime("%H:%M", time.localtime(rules.joins_until))
            st.caption(f"Joins close at {closes}." if rules.joins_until > time.time() else f"Joins closed at {closes}.")
        for n, (name, _) in enumerate(waiting[:50]):
            row = st.container(horizontal=True, vertical_alignment="center", key=f"class_waiting_row_{n}")
            row.markdown(f"**{name}** waits")
            row.button(f"Let {name} in", key=f"class_let_in_{name}", on_click=_let_in, args=(code, name),
                       type="tertiary", icon=":material/how_to_reg:")
        if len(waiting) > 1:
            st.button(f"Let all {len(waiting)} in", key="class_let_all_in", on_click=_let_in, args=(code, None),
                      icon=":material/group_add:")
