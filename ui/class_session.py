"""A browser session's place in a class: the class it joined, whether it follows the teacher,
whether it holds the teacher's key; the sidebar that shows all three on every page.

Everything here lives in the session's own state (``st.session_state``, server memory): the
teacher's key is typed into a password box and never enters the URL, so nothing a link
carries (``?class=CODE`` only names a class) makes a session the teacher's. Every call that
only the teacher may make also passes the key to the store, which checks it again
(``server/class_store/``). Two signed, HttpOnly cookies (``server/identity.py``) carry who
the browser is into a new session (a reload, a followed page, another replica): the student's
anonymous id, and the teacher of one class, which makes a new session the teacher's only while
it is in that class.
"""
from __future__ import annotations

import json
import math
from html import escape
import time
from urllib.parse import urlencode, urlsplit

import streamlit as st

from ui.url_state import set_query_params  # not ui.zoo: that imports torch
from server import identity
from server.class_store import (AnswerRefused, class_store, new_session_id, normalise_code, NotTeacher, OutsideClass,
                                StoreUnavailable)
from server.class_store import StoreBusy
from server.follow import FOLLOW_PATH, follow_board, SENT, sent_link as link_of, sent_params
from server.limits import client_address, sign_in_attempts

CLASS = "class_code"          # the joined class's code
FOLLOW = "class_follow"       # the "Follow the teacher" toggle
KEY = "class_teacher_key"     # the teacher's key, once the store accepted it
SESSION = "class_session"     # this browser session's anonymous id
APPLIED = "class_applied"     # the last [page, params] taken from the teacher
REVEALED = "class_revealed"   # the exercise the teacher revealed
FOLLOW_SAFETY_S = 30.0        # while the server cannot be asked for changes, the listener looks again this often
LOOK = "class_follow_look"    # the follow panel's "Look again" button, which the listener clicks
OPENED = "class_opened_sent"   # the follow panel opened the teacher's page: the panel is set as its link sets it
KEPT = "class_"               # session keys that survive following the teacher to a new page
PANEL = "class_panel"         # the sidebar's "Class" expander: open or closed
SIGN_IN_TRIES = 5             # wrong teacher keys one session may type…
SIGN_IN_WINDOW = 60.0         # …within this many seconds, before it waits
TEACHER_OF = "class_teacher_of"      # the class a teacher cookie made this browser tab the teacher of
RESTORED = "class_cookie_read"       # the teacher cookie was looked at (once per session)
COOKIE_FOR = "class_cookie_for"      # the class this browser's teacher cookie was last asked for
SIGNED_OUT = "class_signed_out"      # Sign out pressed: clear the cookie on the next run
TEACHER_SESSION = "class_teacher_session"  # the teacher session this tab started for its cookie (ended by Sign out)
MEMBER = "class_member"              # [class, nickname] once this tab is on the class's roster
REFUSED = "class_join_refused"       # [class, reason] when the class did not take this tab
CHARTS_READY = "class_charts_ready"  # the follow panel drew its chart warm-up (the browser loaded the chart library)
REMOVALS_SEEN = "class_removals_seen"  # [[class, removals], removed?]: the last look at the class's removals


def _cookie(name: str) -> str | None:
    """A cookie of the request that opened this browser tab (None outside a browser, as in AppTest)."""
    value = st.context.cookies.get(name)
    return value if isinstance(value, str) else None


def session_id() -> str:
    """The student's anonymous id: the signed ``attn_student`` cookie's (the same across reloads,
    followed pages and replicas), else a random one for this browser session."""
    if SESSION not in st.session_state:
        st.session_state[SESSION] = _cookie_student() or new_session_id()
    return st.session_state[SESSION]


def _cookie_student() -> str | None:
    value = _cookie(identity.STUDENT_COOKIE)
    if not value:
        return None
    try:
        return identity.student_id(class_store().cookie_secret(), value)
    except StoreUnavailable:
        return None


def joined_class() -> str:
    """The class this browser tab answers in ("" for none): first from the link's ``?class=``."""
    in_link = normalise_code(st.query_params.get("class"))
    refused = (st.session_state.get(REFUSED) or [None])[0]
    if CLASS not in st.session_state or (in_link and in_link != st.session_state[CLASS] and in_link != refused):
        code = in_link  # a link naming a class joins it
        st.session_state[CLASS] = code
        st.session_state[FOLLOW] = bool(code)  # opened from the class link: following
        # the Class panel stays closed: the follow line under it says which class and under which
        # nickname, and a class of followers would otherwise draw its boxes on every sent page
        if code and st.query_params.get(SENT):  # opened by following: this is the teacher's page already
            try:
                state = follow_board().state(code)
                if state is not None:
                    st.session_state[APPLIED] = [state.page, state.params]
                    st.session_state[REVEALED] = state.revealed
            except StoreUnavailable:
                pass
        if code and not teacher_key():
            _enter(code)
    if st.session_state.pop(OPENED, False) and st.session_state[CLASS]:  # as a fresh load of the sent link sets it
        st.session_state[FOLLOW] = True
        st.session_state["class_code_box"] = st.session_state[CLASS]
    return st.session_state[CLASS]


def _enter(code: str, quiet: bool = True) -> bool:
    """Put this tab's student on the roster of class ``code`` (the store counts them from now on);
    a class that does not take them (locked, removed, too many joins from their network) is left,
    with the reason kept for the Class panel."""
    try:
        member = class_store().join(code, session_id(), _address())
    except AnswerRefused as e:
        st.session_state[REFUSED] = [code, str(e)]
        st.session_state[CLASS], st.session_state[FOLLOW], st.session_state[PANEL] = "", False, True
        return False
    except StoreUnavailable:
        if not quiet:
            raise
        return False  # the answers say so when they are not counted
    st.session_state[MEMBER] = [code, member.nickname]
    st.session_state.pop(REFUSED, None)
    return True


def nickname() -> str | None:
    """The nickname this tab's student has in the joined class (what the teacher's roster shows)."""
    member = st.session_state.get(MEMBER)
    return member[1] if member and member[0] == st.session_state.get(CLASS) else None


def teacher_key() -> str | None:
    """The teacher's key while this browser tab is the teacher's: signed in with the key, or by the
    teacher cookie of the class it is in (and only while in that class)."""
    if RESTORED not in st.session_state:
        st.session_state[RESTORED] = True
        _restore_teacher()
    bound = st.session_state.get(TEACHER_OF)
    if bound and st.session_state.get(CLASS, bound) != bound:
        return None
    return st.session_state.get(KEY)


def signed_in_teacher() -> bool:
    """Does this browser tab hold the teacher's key now (checked by the store, every time: a key
    replaced by *New key* stops counting at once)? The owner's actions (BLEU vs length's
    *Recompute*, anything that writes results) ask this, never a server-wide switch."""
    try:
        return bool(teacher_key()) and class_store().is_teacher(teacher_key())
    except StoreUnavailable:
        return False


def _restore_teacher() -> None:
    """A new session (a reload, another replica) whose browser holds a valid teacher cookie for an
    open class becomes that class's teacher; a link naming another class does not."""
    value = _cookie(identity.TEACHER_COOKIE)
    if not value or KEY in st.session_state:
        return
    try:
        store = class_store()
        named = identity.teacher_class(store.cookie_secret(), value)
        code = named and store.teacher_session_class(named[1])  # live: not signed out, no new key since
        info = store.class_info(code) if code and code == named[0] else None
    except StoreUnavailable:
        return
    in_link = normalise_code(st.query_params.get("class"))
    if info is None or not info.open or (in_link and in_link != code):
        return
    # the tab holds the session's token, not the key: the teacher of this class, nothing more
    st.session_state[KEY], st.session_state[TEACHER_OF], st.session_state[COOKIE_FOR] = named[1], code, code
    st.session_state[CLASS], st.session_state[FOLLOW] = code, False
    set_query_params(**{"class": code})


def store_notice(error: Exception) -> None:
    st.info(f"The class is unavailable ({error}); the exercises work as usual, without the class.",
            icon=":material/cloud_off:")


def class_answers() -> list | None:
    """The joined class's stored answers, for its signed-in teacher (the live summaries of the
    Exercises and Lesson pages); None, after a notice if the store is down, for anyone else."""
    try:
        return class_store().summary(teacher_key(), joined_class())
    except StoreUnavailable as e:
        store_notice(e)
    except NotTeacher:
        pass
    return None


def record_answer(exercise: str, answer: dict, correct: bool | None) -> None:
    """Store the student's answer in the joined class, if any, and say what became of it."""
    code = joined_class()
    if not code or teacher_key():  # the teacher's own tries are not the class's
        return
    try:
        if not nickname() and not _enter(code, quiet=False):
            st.warning(f"Not counted in the class: {st.session_state[REFUSED][1]}.", icon=":material/block:")
            return
        attempt = class_store().submit(code, exercise, session_id(), answer, correct)
        if attempt == 1:
            st.caption(f"Counted in class **{code}** as *{nickname()}*: your first answer is the one the class counts.")
        else:
            st.caption(f"Kept as a retry (answer {attempt}); class **{code}** counts your first answer.")
    except OutsideClass as e:  # practice of the student's own: nothing is written
        st.caption(f"Not counted: {e}.")
    except AnswerRefused as e:
        st.warning(f"Not counted in the class: {e}.", icon=":material/block:")
    except StoreBusy as e:  # up, but a lock or a slow statement made it refuse: the same click later works
        st.warning(f"Not counted yet: {e}.", icon=":material/hourglass_empty:")
    except StoreUnavailable as e:
        store_notice(e)


def _address() -> str:
    return client_address(st.context.ip_address, st.context.headers.get("X-Forwarded-For"))


def _connection() -> str:
    """This browser tab's connection (Streamlit's session id): what the sign-in limits count by,
    in the process, out of the reach of a ``clear_cache`` that empties the session's state."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx
    ctx = get_script_run_ctx()
    if ctx is None:
        return session_id()
    # the session's SessionState (SafeSessionState wraps it anew for every script runner) lives as long as
    # the connection; with the session id it also tells apart AppTest's sessions, which share one id
    return f"{ctx.session_id}:{id(getattr(ctx.session_state, '_state', ctx.session_state))}"


def _key_checked(typed: str) -> bool | None:
    """Is ``typed`` the teacher key? Checked only when this tab and its address may try now
    (``server.limits.SignInAttempts``): None, with the wait noted for the panel, when not; a
    wrong key counts against both."""
    now, limits = time.monotonic(), sign_in_attempts()
    wait = limits.wait(_connection(), _address(), now)
    if wait > 0:  # not even checked: a script trying keys learns nothing while it waits
        st.session_state["class_key_wait"] = math.ceil(wait)
        return None
    if class_store().is_teacher(typed):
        return True
    limits.failed(_connection(), _address(), now)
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
        call = f"fetch({_js_string(base + identity.SIGN_OUT_PATH)}, {{method: 'POST', credentials: 'same-origin'}})"
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
        call = (f"fetch({_js_string(base + identity.TEACHER_PATH)}, {{method: 'POST', credentials: 'same-origin', "
                "headers: {'Content-Type': 'application/x-www-form-urlencoded'}, "
                f"body: 'ticket=' + encodeURIComponent({_js_string(ticket)})}})")
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
        st.text_input("Current key", type="password", key="class_new_key_current")
        st.button("Make a new key", key="class_new_key", on_click=_new_key)
        shown = st.session_state.pop("class_new_key_shown", None)
        if shown:
            st.code(shown, language="text")


def _close_class() -> None:
    try:
        class_store().close_class(teacher_key(), st.session_state[CLASS])
    except (StoreUnavailable, NotTeacher) as e:
        st.session_state["class_error"] = str(e)


def _link_params() -> dict:
    """This page's link's parameters, without the class and the ``sent`` mark: what a send carries."""
    return {k: v for k, v in st.query_params.to_dict().items() if k not in ("class", SENT)}


def _send(page_path: str) -> None:
    params = _link_params()
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
    if code and not teacher_key() and not _enter(code):
        code = ""
    set_query_params(**{"class": code or None})


def _refollow() -> None:
    st.session_state.pop(APPLIED, None)  # coming back: take the teacher's page again


def class_sidebar(pages: dict, current: str) -> None:
    """The class panel of every page. ``pages``: url path -> st.Page, ``current``: this page's."""
    code = joined_class()
    if code and st.session_state.get(FOLLOW) and not teacher_key() and st.query_params.get(SENT):
        _take_sent_link(code, current)
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
    if code and st.session_state.get(FOLLOW) and not teacher_key():
        with st.sidebar:
            _follow(pages, code, current)
    if teacher_key() or SIGNED_OUT in st.session_state:
        _cookie_script(current)


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
    refused = st.session_state.get(REFUSED)
    if refused and not code:
        st.warning(f"Not in class {refused[0]}: {refused[1]}.", icon=":material/block:")
    with st.popover("I am the teacher"):
        st.text_input("Teacher key", type="password", key="class_key_box",
                      help="Printed by the server when it starts (or ATTN_EXPLORER_TEACHER_KEY).")
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
        st.button("Send this page to the class", key="class_send", on_click=_send, args=(current,),
                  icon=":material/cast:", help="Every student following the class sees this page, its sentence, "
                  "model and step (what this page's link holds).")
        if st.session_state.pop("class_sent", False):
            st.caption("Sent.")
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


@st.fragment(run_every=2.0)
def live_counts(code: str) -> None:
    """:func:`counts_line`, read again every 2 s: the sidebar and the pages' live summaries (which
    call this too) show the same store counts, as fresh as each other."""
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


def roster_panel(code: str) -> None:
    """The roster: joined / answered / counted, *Lock the class* (no new students; a late one is
    told so) and the students, by join time and nickname, each with a *Remove* button of its own
    (nothing selected that could carry over to the next row); the last removal offers *Undo* for
    ``UNDO_S``. A removed student's answers leave the summary, their tab is told at once and
    stops following, and their id cannot join again until put back."""
    live_counts(code)
    try:
        st.session_state["class_locked"] = class_store().locked(code)
        students = class_store().roster_of(teacher_key(), code)
    except (StoreUnavailable, NotTeacher):
        return
    st.toggle("Lock the class", key="class_locked", on_change=_lock, args=(code,),
              help="No new student can join (they are told the class is locked); those in it go on.")
    removed = st.session_state.get("class_removed")
    if removed and time.time() - removed[1] > UNDO_S:
        st.session_state.pop("class_removed")
        removed = None
    with st.popover(f"Students ({len(students)})", icon=":material/group:", key="class_students"):
        if not students:
            st.caption("Nobody has joined yet.")
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


def plain_name(nickname: str) -> str:
    """A nickname (the store's, two words of letters) as Markdown shows it, never as markup."""
    return escape(nickname).replace("*", "").replace("_", "")


def _follow(pages: dict, code: str, current: str) -> None:
    """The teacher's state, as this process's follow board holds it (``server/follow.py``: no
    store read per tab). The page's listener (``_listener``) waits on the server for the class's
    next change, so a tab costs nothing while nothing changes, and opens a sent page itself (one
    rerun, taken by ``_take_sent_link``); any other change (a reveal, the class closed) clicks
    *Look again*, a rerun of the page, on which a sent page not yet shown opens inside this
    browser session (``_open_sent``). Drawn as plain elements, not a fragment: every follower's
    every rerun draws this panel, and a fragment's own bookkeeping (copies of the page's
    cursors, its container, its timer) cost more than the panel itself (docs/performance.md)."""
    try:
        state = follow_board().state(code)
    except StoreUnavailable as e:
        st.caption(f"Cannot reach the class ({e}).")
        return
    if state is None or not state.open:
        st.caption(f"Class {code} is {'closed' if state else 'unknown'}.")
        return
    if _removed_from(code, state):  # still listening: an Undo of the teacher's puts the tab back
        st.warning(f"The teacher removed you from class {code}: the teacher's pages no longer open here, and your "
                   "answers are not counted.", icon=":material/block:")
        st.button("Look again", key=LOOK, type="tertiary", icon=":material/refresh:")
        _listener(code, pages, state.version, None, stay=True)
        return
    if state.page is not None and st.session_state.get(APPLIED) != [state.page, state.params] and state.page in pages:
        _open_sent(pages[state.page], code, state)
    if st.session_state.get(REVEALED) != state.revealed:  # taken before the page draws: it shows on this run
        st.session_state[REVEALED] = state.revealed
    st.caption(f"Following class **{code}**" + (f" as **{nickname()}**" if nickname() else "")
               + ": the teacher's pages open here (*Class* above turns it off).")
    st.button("Look again", key=LOOK, type="tertiary", icon=":material/refresh:",
              help="The teacher's page opens by itself; this looks at once.")
    shown = st.session_state.get(APPLIED) == [state.page, state.params] and current == state.page
    _listener(code, pages, state.version, link_of(code, state) if shown else None)
    if not st.session_state.get(CHARTS_READY):  # once per session, the panel's last element: see _warm_charts
        st.session_state[CHARTS_READY] = True
        _warm_charts()


def _warm_charts() -> None:
    """An empty, 8 px chart in the follow panel, drawn on the tab's first following run only: the
    browser fetches and starts its chart library (Plotly, loaded on a page's first chart, several
    seconds of a busy phone's or host's CPU) while the student waits for the teacher, not when the
    first sent page with a chart arrives (tests/test_browser_follow.py times the sent page's
    chart drawn)."""
    from viz.fast_figure import placeholder
    st.plotly_chart(placeholder("", height=8), config={"displayModeBar": False, "staticPlot": True},
                    key="class_charts_warm")


def _removed_from(code: str, state) -> bool:
    """Did the teacher remove this tab's student from the class? Asked of the store only when the
    class's count of removals changed since this tab last asked (never while nobody was removed):
    a removal, or its undo, moves the class's follow version, so every tab's listener reruns it."""
    seen = st.session_state.get(REMOVALS_SEEN)
    if seen is not None and seen[0] == [code, state.removals]:
        return seen[1]
    gone = False
    if state.removals and nickname():
        try:
            gone = class_store().member(code, session_id()) is None
        except StoreUnavailable:
            gone = bool(seen and seen[1])
    st.session_state[REMOVALS_SEEN] = [[code, state.removals], gone]
    return gone


def _open_sent(page, code: str, state) -> None:
    """Open the teacher's page as its link would, inside this session (no page load: the browser
    keeps its scripts, the server its session): every widget as the link sets it."""
    _apply_sent(state)
    st.session_state[OPENED] = True  # the class panel too is set as the link sets it, on the page's run (joined_class)
    st.switch_page(page, query_params=sent_params(code, state))


def _take_sent_link(code: str, current: str) -> None:
    """This run is the page's listener opening the teacher's page (``_listener``: the sent link,
    opened inside the session as the Back button opens a page): if this page and its link's
    parameters are what the teacher sent and not yet taken, take them before the page draws,
    as ``_open_sent`` does (the page's widgets as the link sets them)."""
    try:
        state = follow_board().state(code)
    except StoreUnavailable:
        return
    if state is None or state.page != current or st.session_state.get(APPLIED) == [state.page, state.params]:
        return
    if _link_params() != state.params:
        return
    _apply_sent(state)
    st.session_state[FOLLOW] = True
    st.session_state["class_code_box"] = code


def _apply_sent(state) -> None:
    """Take the teacher's [page, params]: the previous page's values are dropped (only the class's
    own ``class_*`` keys stay), so every widget starts as the sent link sets it."""
    st.session_state[APPLIED] = [state.page, state.params]
    for name in [n for n in st.session_state.keys() if not str(n).startswith(KEPT)]:
        del st.session_state[name]


def _listener(code: str, pages: dict, version: int, sent: str | None, stay: bool = False) -> None:
    """The page's wait for the class's next change: an HTTP request the server answers when the
    version is no longer ``version`` (``server/follow.py``). The answer names the teacher's page
    (its link): a page other than this one opens inside the session as the browser's Back
    button opens one (the address set, then a ``popstate`` event, which Streamlit's front end
    answers with one rerun of that page with that query; ``_take_sent_link`` takes it before it
    draws); any other change (a reveal, the class closed) clicks *Look again*, which reruns the
    page. One rerun per tab for a send. While the server cannot be asked (the request fails: a
    proxy that does not pass it, the server busy), the script clicks *Look again* every
    ``FOLLOW_SAFETY_S``, so the tab still follows, by the store's state its reruns read. The
    browser runs the script once per page load (Streamlit updates an ``st.html`` element's
    contents in place, without running its script again), so the script reads what to wait for
    from the element's ``data-`` attributes, which each rerun updates. With ``sent`` (the
    teacher's page's link, ``server.follow.sent_link``, shown now) it also puts that link in the
    address bar: Streamlit's front end keeps the old address after a page switch the server made, and a
    reload must show the teacher's page. With ``stay`` (a removed student's tab) no sent page
    opens: every change clicks *Look again*."""
    base = _base_path(pages)
    url = f"{base}{FOLLOW_PATH}?{urlencode({'class': code, 'v': version})}"
    here = f"{base}/{sent}" if sent else ""
    st.html(f"""<div id="attn-follow" hidden data-url="{escape(url)}" data-version="{int(version)}"
 data-here="{escape(here)}" data-base="{escape(base)}" data-stay="{int(stay)}"></div><script>(() => {{
  if (window.attnFollowing) return;
  window.attnFollowing = true;
  const sleep = ms => new Promise(done => setTimeout(done, ms));
  const data = () => document.getElementById('attn-follow');
  const look = () => {{ const b = document.querySelector('.st-key-{LOOK} button'); if (b) b.click(); }};
  (async () => {{
    let pause = 1000, looked = Date.now();
    for (;;) {{
      const d = data();
      if (!d) {{ await sleep(500); continue; }}
      const url = d.dataset.url, here = d.dataset.here;
      if (here && location.pathname + location.search !== here) history.replaceState(history.state, '', here);
      try {{
        const r = await fetch(url, {{credentials: 'same-origin', cache: 'no-store'}});
        if (r.ok) {{
          const s = await r.json();
          if (s.version !== Number(d.dataset.version) || !s.open) {{
            const sent = s.open && s.link && d.dataset.stay !== '1' ? d.dataset.base + '/' + s.link : '';
            if (sent && location.pathname + location.search !== sent) {{
              history.replaceState(history.state, '', sent);
              window.dispatchEvent(new PopStateEvent('popstate', {{state: history.state}}));
              window.attnSentOpened = (window.attnSentOpened || 0) + 1;  // the browser tests count them
            }} else {{
              look();
            }}
            for (let i = 0; i < 200 && data() && data().dataset.url === url; i++) await sleep(50);
          }}
          pause = 1000;
          continue;
        }}
      }} catch (e) {{}}
      if (Date.now() - looked >= {int(1000 * FOLLOW_SAFETY_S)}) {{ look(); looked = Date.now(); }}
      await sleep(pause);
      pause = Math.min(2 * pause, 15000);
    }}
  }})();
}})();</script>""", unsafe_allow_javascript=True)


def _base_path(pages: dict) -> str:
    """The app's path in the browser's address ("" at the root; a proxy's prefix otherwise): the
    address without the page it names, whichever of ``pages`` (url path -> st.Page) that is."""
    path = urlsplit(st.context.url or "").path.rstrip("/")
    for url_path in sorted((p for p in pages if p), key=len, reverse=True):
        if path.endswith("/" + url_path):
            return path[: -len(url_path) - 1]
    return path


def sent_link(here: str, current: str, page: str, params: dict) -> str:
    """The address of ``page`` with ``params``, beside ``here`` (the address of page ``current``),
    so it works behind a proxy's path prefix too."""
    path = urlsplit(here).path or "/"
    base = path[: len(path) - len(current)] if current and path.endswith(current) else path
    return base.rstrip("/") + "/" + page + "?" + urlencode(params)


def _js_string(text: str) -> str:
    return json.dumps(text).replace("<", "\\u003c")  # never closes the <script> it sits in


def revealed_to_class(exercise: str) -> bool:
    """Has the teacher revealed ``exercise`` to the joined class? A follower knows from its follow
    panel (taken before the page draws); the teacher's own page, which follows nobody, asks the
    process's follow board (a dictionary read), so that the projected page shows the solution
    from *Reveal* on, and not before."""
    code = joined_class()
    if not code:
        return False
    if teacher_key():
        try:
            state = follow_board().state(code)
        except StoreUnavailable:
            return False
        return state is not None and state.revealed == exercise
    return st.session_state.get(REVEALED) == exercise


__all__ = ["class_sidebar", "record_answer", "joined_class", "teacher_key", "signed_in_teacher", "session_id",
           "revealed_to_class", "nickname", "counts_line", "live_counts", "roster_panel", "store_notice"]
