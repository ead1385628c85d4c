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

The class panel in the sidebar is :mod:`ui.class_panel`; following the teacher, :mod:`ui.class_follow`.
"""
from __future__ import annotations


import streamlit as st

from ui.url_state import set_query_params  # not ui.zoo_cache: that imports torch
from server import identity
from server.class_store import (AnswerRefused, class_store, new_session_id, normalise_code, NotTeacher, OutsideClass,
                                StoreUnavailable)
from server.class_store import FIRST_ATTEMPT, StoreBusy
from server.follow import follow_board, SENT
from server.proxies import client_address
from server.streamlit_patches.reads import connection_id
from teaching.exercises import exercise_id


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
EXERCISES = "exercises"       # the Exercises page's url path (app_pages/exercises.py), and its session keys:
EX_KIND = "ex_kind"           # the exercise's kind
EX_SEED = "ex_seed"           # its number
ANSWERED = "ex_checked_{}"    # this tab answered exercise {} (or gave up on it)
TEACHER_OF = "class_teacher_of"      # the class a teacher cookie made this browser tab the teacher of
RESTORED = "class_cookie_read"       # the teacher cookie was looked at (once per session)
COOKIE_FOR = "class_cookie_for"      # the class this browser's teacher cookie was last asked for
SIGNED_OUT = "class_signed_out"      # Sign out pressed: clear the cookie on the next run
TEACHER_SESSION = "class_teacher_session"  # the teacher session this tab started for its cookie (ended by Sign out)
MEMBER = "class_member"              # [class, nickname] once this tab is on the class's roster
REFUSED = "class_join_refused"       # [class, reason] when the class did not take this tab
CHARTS_READY = "class_charts_ready"  # the follow panel drew its chart warm-up (the browser loaded the chart library)
REMOVALS_SEEN = "class_removals_seen"  # [[class, removals], removed?]: the last look at the class's removals
LESSON_CHECK_COOKIE = "attn_lesson_check"  # the browser's cookies a page reads: the check's answers (ui/lesson_check.py)
LESSON_DONE_COOKIE = "attn_lesson_done"    # and the lesson's stops done (app_pages/lesson.py)
PAGE_COOKIES = "class_page_cookies"  # those cookies as this tab's socket brought them, read once a session


def _cookie(name: str) -> str | None:
    """A cookie of the request that opened this browser tab (None outside a browser, as in AppTest)."""
    value = st.context.cookies.get(name)
    return value if isinstance(value, str) else None


def first_run_cookies(cookies: dict) -> tuple | None:
    """What a session's first run reads of its browser's cookies, but the student's id (kept in
    their own ``SESSION``, read on demand): the cookies pages read (``page_cookie``); None where it
    reads more, a teacher cookie (``_restore_teacher``)."""
    if cookies.get(identity.TEACHER_COOKIE):
        return None
    return tuple((name, cookies.get(name)) for name in (LESSON_CHECK_COOKIE, LESSON_DONE_COOKIE))


def page_cookie(name: str) -> str | None:
    """A cookie a page reads (``LESSON_CHECK_COOKIE``, ``LESSON_DONE_COOKIE``), as the request that
    opened this browser tab had it. All are read at once, on the session's first run (with the
    teacher cookie), into a kept session key: what a follower's run reads of its browser is then
    in the key of a shared run (ui/class_follow.replay_key), so a run is shared only between tabs
    whose cookies are the same."""
    if PAGE_COOKIES not in st.session_state:
        st.session_state[PAGE_COOKIES] = {n: _cookie(n) for n in (LESSON_CHECK_COOKIE, LESSON_DONE_COOKIE)}
    return st.session_state[PAGE_COOKIES].get(name)


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
        if code and not teacher_key():
            # and opens its page as the link sets it, as a sent page opens (ui/class_follow.py): the
            # earlier pages' values are dropped, only the class's own ``class_*`` keys stay. So a
            # student's run of the class's link reads nothing of theirs but those and their join,
            # and thirty students opening it share one run (ui/class_follow.py, replay_key)
            for name in [n for n in st.session_state.keys() if not str(n).startswith(KEPT)]:
                del st.session_state[name]
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
            enter(code)
    if st.session_state.pop(JOINED_AGAIN, False):  # let in by the refused panel's own asking again
        st.session_state[FOLLOW] = True
    if st.session_state.pop(OPENED, False) and st.session_state[CLASS]:  # as a fresh load of the sent link sets it
        st.session_state[FOLLOW] = True
        st.session_state["class_code_box"] = st.session_state[CLASS]
    return st.session_state[CLASS]


def enter(code: str, quiet: bool = True) -> bool:
    """Put this tab's student on the roster of class ``code`` (the store counts them from now on);
    a class that does not take them (locked, removed, too many joins from their network) is left,
    with the reason kept for the Class panel."""
    try:
        member = class_store().join(code, session_id(), visitor_address())
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


JOINED_AGAIN = "class_joined_again"  # let in after a refusal: the next full run turns following on


def join_again(code: str, quiet: bool = True) -> bool:
    """A refused tab asking again (``ui/class_admission.py``, inside a fragment, where no widget's
    value may change): in, it is in the class, and follows from the next full run."""
    try:
        member = class_store().join(code, session_id(), visitor_address())
    except AnswerRefused as e:
        st.session_state[REFUSED] = [code, str(e)]
        return False
    except StoreUnavailable:
        if not quiet:
            raise
        return False
    st.session_state[MEMBER] = [code, member.nickname]
    st.session_state.pop(REFUSED, None)
    st.session_state[CLASS], st.session_state[JOINED_AGAIN] = code, True
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
        page_cookie(LESSON_CHECK_COOKIE)  # every cookie a page reads, before any run may be shared
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
    """Store the student's answer in the joined class, if any, and say what became of it: a tab the
    class refused says so beside every *Check*, never nothing."""
    code = joined_class()
    if teacher_key():  # the teacher's own tries are not the class's
        return
    refused = st.session_state.get(REFUSED)
    if not code:
        if refused:
            st.warning(f"Not counted in class {refused[0]}: {refused[1]}.", icon=":material/block:")
        return
    try:
        if not nickname() and not join_again(code, quiet=False):
            refused = st.session_state.get(REFUSED) or [code, "the class store did not answer; try again"]
            st.warning(f"Not counted in the class: {refused[1]}.", icon=":material/block:")
            return
        attempt = class_store().submit(code, exercise, session_id(), answer, correct)
        if attempt == FIRST_ATTEMPT:
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


def visitor_address() -> str:
    return client_address(st.context.ip_address, st.context.headers.get("X-Forwarded-For"))


def connection() -> str:
    """This browser tab's connection (Streamlit's session id): what the sign-in limits count by,
    in the process, out of the reach of a ``clear_cache`` that empties the session's state."""
    return connection_id() or session_id()


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


def reveal_shown(current: str) -> str:
    """The exercise whose *Reveal* would change this tab's page ``current`` (a url path), for the
    follow listener's page signature (``server.follow.page_signature``): the one the Exercises page
    shows while this tab has not answered it; "" on another page or once answered (the solution
    shows already), so a class's reveal reruns only the tabs it changes; "*" (any) before the page
    has taken its exercise from its link (a tab's first run of a sent page). Read before the page runs
    (its widgets' values are in the session's state by then) and again after it (an answer taken on
    that run)."""
    if current != EXERCISES:
        return ""
    kind, seed = st.session_state.get(EX_KIND), st.session_state.get(EX_SEED)
    if not isinstance(kind, str) or not isinstance(seed, int):
        return "*"
    exercise = exercise_id(kind, seed)
    return "" if st.session_state.get(ANSWERED.format(exercise)) else exercise
