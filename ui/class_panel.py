"""The sidebar's *Class* panel: a student joins with a code (or a link) and follows the teacher; the
teacher signs in with the key, opens, sends, locks and closes a class, sees the roster with
*Remove* / *Undo*, and replaces the key.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from html import escape
import time
from urllib.parse import urlsplit

import streamlit as st

from ui.url_state import set_query_params  # not ui.zoo_cache: that imports torch
from server import identity
from server.class_store import (AnswerRefused, class_store, normalise_code, NotTeacher, StoreUnavailable)
from server.follow import SENT
from server.sign_in import sign_in_attempts
from ui.class_session import (APPLIED, CLASS, connection, COOKIE_FOR, enter, FOLLOW, joined_class, KEY, nickname,
                              PANEL, signed_in_teacher, SIGNED_OUT, store_notice, teacher_key, TEACHER_OF,
                              TEACHER_SESSION, visitor_address)
from ui.class_admission import admission_panel, refused_notice
from ui.class_bulk import remove_many_panel
from ui.class_follow import _base_path, follow_panel, js_string, link_params, sent_link, take_sent_link
from ui.class_live import live_controls, live_look
from ui.class_notice import student_notice


def _key_checked(typed: str) -> bool | None:
    """Is ``typed`` the teacher key? Checked only when this tab and its address may try now
    (``server.sign_in.SignInAttempts``): None, with the wait noted for the panel, when not; a
    wrong key counts against both."""
    now, limits = time.monotonic(), sign_in_attempts()
    wait = limits.wait(connection(), visitor_address(), now)
    if wait > 0:  # not even checked: a script trying keys learns nothing while it waits
        st.session_state["class_key_wait"] = math.ceil(wait)
        return None
    if class_store().is_teacher(typed):
        return True
    limits.failed(connection(), visitor_address(), now)
    st.session_state["class_key_wrong"] = True
    return False


def _sign_in() -> None:
    key = st.session_state.get("class_key_box", "")
    st.session_state["class_key_box"] = ""
    try:
        if _key_checked(key):
            st.session_state[KEY] = key
    except StoreUnavailable as e:
        st.session_state["class_key_wrong"] = str(e)


def _sign_out() -> None:
    """This tab stops being the teacher's, and the teacher session behind its cookie ends in the
    store (every copy of the cookie with it); the browser's cookie is cleared on the next run."""
    for token in {st.session_state.get(TEACHER_SESSION), st.session_state.get(KEY)}:
        try:
            class_store().end_teacher_session(token)
        except StoreUnavailable:
            pass
    for name in (KEY, TEACHER_OF, COOKIE_FOR, TEACHER_SESSION):
        st.session_state.pop(name, None)
    st.session_state[SIGNED_OUT] = True


def _cookie_script(current: str) -> None:
    """Ask the browser to fetch the teacher's cookie for the open class (a signed ticket, POSTed:
    never the key, never in a URL), or to clear it after *Sign out*."""
    base = sent_link(st.context.url or "", current, "", {}).split("?")[0].rstrip("/")
    if st.session_state.pop(SIGNED_OUT, False):
        call = f"fetch({js_string(base + identity.SIGN_OUT_PATH)}, {{method: 'POST', credentials: 'same-origin'}})"
    else:
        code = st.session_state.get(CLASS)
        if not teacher_key() or not code or st.session_state.get(COOKIE_FOR) == code:
            return
        try:
            store = class_store()
            token = store.start_teacher_session(teacher_key(), code, identity.TICKET_SECONDS)
            ticket = identity.teacher_ticket(store.cookie_secret(), token, code)
        except (StoreUnavailable, NotTeacher, AnswerRefused):
            return
        st.session_state[COOKIE_FOR], st.session_state[TEACHER_SESSION] = code, token
        call = (f"fetch({js_string(base + identity.TEACHER_PATH)}, {{method: 'POST', credentials: 'same-origin', "
                "headers: {'Content-Type': 'application/x-www-form-urlencoded'}, "
                f"body: 'ticket=' + encodeURIComponent({js_string(ticket)})}})")
    with st.sidebar:
        st.html(f"<script>{call};</script>", unsafe_allow_javascript=True)


def _open_class() -> None:
    try:
        info = class_store().open_class(teacher_key())
        st.session_state[CLASS], st.session_state[FOLLOW] = info.code, False
        set_query_params(**{"class": info.code})  # else an older class in the link would be joined again
    except (StoreUnavailable, NotTeacher) as e:
        st.session_state["class_error"] = str(e)


def _new_key() -> None:
    """*New key*, for whoever types the current key (a teacher cookie, or a tab left signed in, is
    not enough); a wrong key counts as a wrong sign-in."""
    typed = st.session_state.get("class_new_key_current", "")
    st.session_state["class_new_key_current"] = ""
    try:
        if not _key_checked(typed):
            wait = st.session_state.pop("class_key_wait", None)
            st.session_state.pop("class_key_wrong", None)
            st.session_state["class_error"] = (f"Too many wrong keys: try again in {wait} s." if wait else
                                               "That is not the current teacher key: a new key needs it.")
            return
        st.session_state[KEY] = st.session_state["class_new_key_shown"] = class_store().new_key(typed)
        st.session_state.pop(COOKIE_FOR, None)  # every teacher session ended with the old key: a new one is fetched
    except (StoreUnavailable, NotTeacher, AnswerRefused) as e:
        st.session_state["class_error"] = str(e)


def _new_key_popover() -> None:
    """*New key*: the store makes a new teacher key, the old one stops working in every process
    and session; the new one is shown here once (never printed, never in a log)."""
    with st.popover("New key", icon=":material/key:"):
        st.caption("Replace the teacher key: the old one stops working everywhere, also for anyone who read it, "
                   "and every teacher cookie ends. The new key is shown here once; keep it off the projector.")
        st.text_input("Current key", type="password", key="class_new_key_current", autocomplete="current-password")
        st.button("Make a new key", key="class_new_key", on_click=_new_key)
        shown = st.session_state.pop("class_new_key_shown", None)
        if shown:
            st.code(shown, language="text")


def _close_class() -> None:
    try:
        class_store().close_class(teacher_key(), st.session_state[CLASS])
    except (StoreUnavailable, NotTeacher) as e:
        st.session_state["class_error"] = str(e)


def _send(page_path: str) -> None:
    params = link_params()
    try:
        class_store().send(teacher_key(), st.session_state[CLASS], page_path, params)
        st.session_state["class_sent"] = True
    except (StoreUnavailable, NotTeacher, AnswerRefused) as e:
        st.session_state["class_error"] = str(e)


def _join() -> None:
    typed = st.session_state.get("class_code_box", "")
    code = st.session_state[CLASS] = normalise_code(typed)
    st.session_state[FOLLOW] = bool(code)
    st.session_state["class_code_bad"] = bool(typed.strip()) and not code
    st.session_state.pop(APPLIED, None)
    if code and not teacher_key() and not enter(code):
        code = ""
    set_query_params(**{"class": code or None})


def _refollow() -> None:
    st.session_state.pop(APPLIED, None)  # coming back: take the teacher's page again


def class_sidebar(pages: dict, current: str) -> Callable[[], None] | None:
    """The class panel of every page. ``pages``: url path -> st.Page, ``current``: this page's.
    Returns, for a follower, what draws its listener once the page has run (``follow_panel``)."""
    code = joined_class()
    if code and st.session_state.get(FOLLOW) and not teacher_key() and st.query_params.get(SENT):
        take_sent_link(code, current)
    # drawn only while open (opening it reruns the page): most visitors never join a class, and
    # open, its boxes and buttons are five of the ~28 elements a rerun of Translate sends. Open
    # at first for the teacher, closed for a student (the browser's own state wins after that)
    panel = st.sidebar.expander("Class", expanded=bool(teacher_key()), key=PANEL, on_change="rerun",
                                icon=":material/groups:")
    if panel.open:
        with panel:
            if teacher_key():
                _teacher_panel(code, current)
            else:
                _student_panel(code)
    student_notice(code)  # removed, waiting or refused: said on the page too, the sidebar being closed on a phone
    listen = None
    if code and st.session_state.get(FOLLOW) and not teacher_key():
        with st.sidebar:
            listen = follow_panel(pages, code, current)
    if code and teacher_key():  # the live views' pause and listener, whether the panel is open or not
        with st.sidebar:
            live_controls(code, _base_path(pages))
    if teacher_key() or SIGNED_OUT in st.session_state:
        _cookie_script(current)
    return listen


def _student_panel(code: str) -> None:
    if normalise_code(st.session_state.get("class_code_box")) != code:
        st.session_state["class_code_box"] = code  # joined by a link: the box says so
    st.text_input("Class code", key="class_code_box", max_chars=12, on_change=_join,
                  placeholder="e.g. K7PQ2M", help="The code the teacher shows. Answers are counted "
                  "anonymously; nobody else sees yours.")
    if st.session_state.pop("class_code_bad", False):
        st.warning("A class code is 6 letters and digits.")
    if code:
        if nickname():
            st.caption(f"You are **{nickname()}** in class {code} (the teacher's list shows this name, nobody "
                       "else's answers).")
        st.toggle("Follow the teacher", key=FOLLOW, on_change=_refollow,
                  help="Show what the teacher sends to the class; turn off to explore alone.")
    if not code:
        refused_notice()  # why not, asked again by itself where that may change (ui/class_admission.py)
    with st.popover("I am the teacher"):
        # WCAG 3.3.8: the key may be pasted or filled in by a password manager; nothing to solve
        st.text_input("Teacher key", type="password", key="class_key_box", autocomplete="current-password",
                      help="Printed by the server when it starts (or ATTN_EXPLORER_TEACHER_KEY). Paste it, or let "
                           "your password manager fill it in.")
        st.button("Sign in", key="class_sign_in", on_click=_sign_in)
    wrong = st.session_state.pop("class_key_wrong", None)
    if wrong:
        st.warning("That is not the teacher key." if wrong is True else f"Cannot check the key: {wrong}")
    wait = st.session_state.pop("class_key_wait", None)
    if wait:
        st.warning(f"Too many wrong keys: try again in {wait} s.")


def _teacher_panel(code: str, current: str) -> None:
    st.success("Teacher", icon=":material/school:")
    info = None
    try:
        info = class_store().class_info(code) if code else None
    except StoreUnavailable as e:
        store_notice(e)
    if info is not None and info.open:
        here = urlsplit(st.context.url or "")
        base = f"{here.scheme}://{here.netloc}" if here.netloc else "http://ADDRESS:8501"
        st.markdown(f"Class **{info.code}** is open.")
        st.code(f"{base}/exercises?class={info.code}", language="text")
        # said in a caption, not a tooltip: a tooltip stays while the pointer or the focus does, over
        # the class link the projector shows
        st.button("Send this page to the class", key="class_send", on_click=_send, args=(current,),
                  icon=":material/cast:")
        st.caption("Sent: every student following sees this page." if st.session_state.pop("class_sent", False)
                   else "Every student following sees this page, its sentence, model and step.")
        roster_panel(info.code)
        st.button("Close the class", key="class_close", on_click=_close_class)
    elif signed_in_teacher():
        st.button("Open a class", key="class_open", on_click=_open_class, type="primary")
    else:  # a teacher cookie's session acts for its class only
        st.caption("This browser is the teacher of its class only: sign in with the key to open another.")
    _new_key_popover()
    st.button("Sign out", key="class_sign_out", on_click=_sign_out, help="This browser stops being the teacher's.")
    error = st.session_state.pop("class_error", None)
    if error:
        st.warning(error)


def counts_line(code: str) -> str | None:
    """The class in numbers for its teacher: joined, answered, counted (the store counts)."""
    try:
        n = class_store().class_counts(teacher_key(), code)
    except (StoreUnavailable, NotTeacher):
        return None
    return (f"**{n.joined}** joined · **{n.answered}** answered · **{n.counted}** answers counted"
            + (" · locked" if n.locked else ""))


def live_counts(code: str) -> None:
    """:func:`counts_line`, read again with the roster (:func:`roster_panel`, a live view): the
    sidebar and the pages' live summaries show the same store counts, as fresh as each other."""
    line = counts_line(code)
    if line:
        st.markdown(line)


def _lock(code: str) -> None:
    try:
        class_store().lock(teacher_key(), code, bool(st.session_state.get("class_locked")))
    except (StoreUnavailable, NotTeacher) as e:
        st.session_state["class_error"] = str(e)


UNDO_S = 60.0  # how long a removal offers its *Undo*


def _remove(code: str, name: str) -> None:
    try:
        if class_store().remove(teacher_key(), code, name):
            st.session_state["class_removed"] = [name, time.time()]
    except (StoreUnavailable, NotTeacher) as e:
        st.session_state["class_error"] = str(e)


def _readmit(code: str, name: str) -> None:
    try:
        class_store().readmit(teacher_key(), code, name)
        st.session_state.pop("class_removed", None)
    except (StoreUnavailable, NotTeacher) as e:
        st.session_state["class_error"] = str(e)


@st.fragment
def roster_panel(code: str) -> None:
    """A live view (``ui/class_live.py``: it reruns when a student joins, waits or answers). The
    roster: joined / answered / counted, *Lock the class* (no new students; a late one is
    told so) and the students, by join time and nickname, each with a *Remove* button of its own
    (nothing selected that could carry over to the next row); the last removal offers *Undo* for
    ``UNDO_S``. A removed student's answers leave the summary, their tab is told at once and
    stops following, and their id cannot join again until put back."""
    live_look("roster")
    live_counts(code)
    try:
        st.session_state["class_locked"] = class_store().locked(code)
        students = class_store().roster_of(teacher_key(), code)
    except (StoreUnavailable, NotTeacher):
        return
    st.toggle("Lock the class", key="class_locked", on_change=_lock, args=(code,),
              help="No new student can join (they are told the class is locked); those in it go on.")
    admission_panel(code)  # seats, approve joins, the join window, who waits (ui/class_admission.py)
    remove_many_panel(code, students)  # a batch at once: joined lately, or not answered (ui/class_bulk.py)
    removed = st.session_state.get("class_removed")
    if removed and time.time() - removed[1] > UNDO_S:
        st.session_state.pop("class_removed")
        removed = None
    # a label that never changes: a popover whose label changes is drawn anew, closed, and the
    # roster must stay open while students join
    with st.popover("Students", icon=":material/group:", key="class_students"):
        st.caption(f"{len(students)} on the roster, first joined first." if students else "Nobody has joined yet.")
        for n, m in enumerate(students):
            row = st.container(horizontal=True, vertical_alignment="center", key=f"class_roster_row_{n}")
            row.markdown(f"**{plain_name(m.nickname)}** · {time.strftime('%H:%M', time.localtime(m.joined_at))} · "
                         f"{m.answers} answer{'s' if m.answers != 1 else ''}")
            row.button(f"Remove {m.nickname}", key=f"class_remove_{m.nickname}", on_click=_remove,
                       args=(code, m.nickname), type="tertiary", icon=":material/person_remove:",
                       help="Their answers leave the summary; they are told at once and cannot join again "
                            "(Undo puts them back).")
        if removed:
            st.caption(f"Removed {plain_name(removed[0])}: their answers left the summary.")
            st.button(f"Undo: put {removed[0]} back", key="class_undo_remove", on_click=_readmit,
                      args=(code, removed[0]), icon=":material/undo:")
    error = st.session_state.pop("class_error", None)  # a click in this fragment reruns it alone: said here
    if error:
        st.warning(error)


def plain_name(nickname: str) -> str:
    """A nickname (the store's, two words of letters) as Markdown shows it, never as markup."""
    return escape(nickname).replace("*", "").replace("_", "")
