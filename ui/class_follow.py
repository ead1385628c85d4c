"""Following the teacher: the sidebar's follow line, the teacher's sent page opened inside the
browser session, and the page's listener (``ui/follow_listener.js``) that waits on the server
(``server/follow.py``) for the class's next change.
"""
from __future__ import annotations

import hashlib
import json
import pickle
from collections.abc import Callable
from html import escape
from pathlib import Path
from urllib.parse import parse_qsl, quote, quote_plus, urlencode, urlsplit

import streamlit as st

from server import identity
from server.class_store import (built_class_store, class_store, normalise_code, StoreUnavailable)
from server.follow import FOLLOW_PATH, follow_board, page_signature, SENT, sent_link as link_of, sent_params
from server.limits import paced_lately
from server.proxies import client_address
from server.loading import models_loaded, warm_up
from server.streamlit_patches import replay
from ui.figures import Html
from ui.class_session import (APPLIED, CHARTS_READY, CLASS, first_run_cookies, FOLLOW, FOLLOW_SAFETY_S, JOINED_AGAIN,
                              KEPT, KEY, LOOK, MEMBER, nickname, OPENED, PANEL, REFUSED, REMOVALS_SEEN, RESTORED,
                              reveal_shown, REVEALED, SESSION, session_id, SIGNED_OUT, TEACHER_OF)


def link_params() -> dict:
    """This page's link's parameters, without the class and the ``sent`` mark: what a send carries."""
    return {k: v for k, v in st.query_params.to_dict().items() if k not in ("class", SENT)}


# the listener's script, read once: the same text for every tab (its settings are the element's data-)
LISTENER_JS = (Path(__file__).parent / "follow_listener.js").read_text(encoding="utf-8")


def follow_panel(pages: dict, code: str, current: str) -> Callable[[], None] | None:
    """The teacher's state, as this process's follow board holds it (``server/follow.py``: no
    store read per tab). The page's listener (``_listener``) waits on the server for the class's
    next change, so a tab costs nothing while nothing changes, and opens a sent page itself (one
    rerun, taken by ``take_sent_link``); any other change (a reveal, the class closed) clicks
    *Look again*, a rerun of the page, on which a sent page not yet shown opens inside this
    browser session (``_open_sent``). Drawn as plain elements, not a fragment: every follower's
    every rerun draws this panel, and a fragment's own bookkeeping (copies of the page's
    cursors, its container, its timer) cost more than the panel itself (docs/performance.md).
    Returns what ``navigation.py`` calls once the page has run (``_listening``)."""
    try:
        state = follow_board().state(code)
    except StoreUnavailable as e:
        st.caption(f"Cannot reach the class ({e}).")
        return None
    if state is None or not state.open:
        st.caption(f"Class {code} is {'closed' if state else 'unknown'}.")
        return None
    if _removed_from(code, state):  # still listening: an Undo of the teacher's puts the tab back
        st.caption(f"Not following class {code}: the teacher removed you (the page says so too).")
        st.button("Look again", key=LOOK, type="tertiary", icon=":material/refresh:")
        return _listening(code, pages, state, None, current, stay=True)
    if state.page is not None and st.session_state.get(APPLIED) != [state.page, state.params] and state.page in pages:
        _open_sent(pages[state.page], code, state)
    if st.session_state.get(REVEALED) != state.revealed:  # taken before the page draws: it shows on this run
        st.session_state[REVEALED] = state.revealed
    st.caption(f"Following class **{code}**" + (f" as **{nickname()}**" if nickname() else "")
               + ": the teacher's pages open here (*Class* above turns it off).")
    st.button("Look again", key=LOOK, type="tertiary", icon=":material/refresh:",
              help="The teacher's page opens by itself; this looks at once.")
    shown = st.session_state.get(APPLIED) == [state.page, state.params] and current == state.page
    listen = _listening(code, pages, state, link_of(code, state) if shown else None, current)
    if not st.session_state.get(CHARTS_READY):  # once per session, the panel's last element: see _warm_charts
        st.session_state[CHARTS_READY] = True
        _warm_charts()
    return listen


def _listening(code: str, pages: dict, state, sent: str | None, current: str, stay: bool = False) -> Callable[[], None]:
    """The listener, drawn now, before the page; and what draws it again in its place once the page
    has run, where the page took an answer to the exercise it shows (``reveal_shown`` then says "":
    the class's *Reveal* changes nothing there). So one element more, on an answer's run only."""
    shows = reveal_shown(current)
    drawn = _listener(st, code, pages, state, sent, shows, stay)

    def again() -> None:
        if shows and not reveal_shown(current):  # named an exercise before the page, answered in it
            _listener(drawn, code, pages, state, sent, "", stay)
    return again


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


def take_sent_link(code: str, current: str) -> None:
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
    if link_params() != state.params:
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


def _listener(where, code: str, pages: dict, state, sent: str | None, shows: str, stay: bool = False):
    """The page's wait for the class's next change: an HTTP request the server answers when the
    version is no longer ``version`` (``server/follow.py``). The answer names the teacher's page
    (its link): a page other than this one opens inside the session as the browser's Back
    button opens one (the address set, then a ``popstate`` event, which Streamlit's front end
    answers with one rerun of that page with that query; ``take_sent_link`` takes it before it
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
    opens: every change clicks *Look again*. The page's signature (``server.follow.page_signature``:
    what this page shows of the class's state, ``stay`` being this student removed) is drawn too: a
    change whose answer carries the same one (another student removed or let back in) leaves this
    page as it is, and the listener waits again with no rerun. ``shows`` (``ui.class_session.reveal_shown``),
    sent with the request, is the exercise whose reveal changes this page: a tab that answered it
    already shows the solution, so the class's *Reveal* reruns only the tabs it changes."""
    base = _base_path(pages)
    url = f"{base}{FOLLOW_PATH}?{urlencode({'class': code, 'v': state.version, 'shows': shows})}"
    here = f"{base}/{sent}" if sent else ""
    # Html: Streamlit takes it as it is, where a plain string is looked up on the disk and dedented
    return where.html(Html(f"""<div id="attn-follow" hidden data-url="{escape(url)}" data-version="{int(state.version)}"
 data-here="{escape(here)}" data-base="{escape(base)}" data-stay="{int(stay)}" data-look="{LOOK}"
 data-page="{page_signature(code, state, stay, shows)}" data-safety-ms="{int(1000 * FOLLOW_SAFETY_S)}"></div>
<script>{LISTENER_JS}</script>"""), unsafe_allow_javascript=True)


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


def js_string(text: str) -> str:
    return json.dumps(text).replace("<", "\\u003c")  # never closes the <script> it sits in


# -- a follower's rerun of a sent page, shared (server/streamlit_patches/replay.py) -----------------------
PERSONAL = (MEMBER, SESSION)  # the student's nickname and id: each tab keeps its own


# pages whose run reads nothing of a visitor outside a class but their session's values, the
# link, the browser's context and widgets, and the process's shared caches (decodings, figures):
# a class's start opens one link, and each student's reruns of it may share one run
LINK_PAGES = ("", "compare", "step-through", "beam-tree")
# pages a teacher sends whose first run in a class reads of the student only what a join gives
# (their id and nickname) and the cookies pages read: not the lesson, whose check asks the store
# which halves the class counts
SENT_FIRST_PAGES = (*LINK_PAGES, "exercises", "worked-example")


def replay_key(session: str, query_string: str, state: dict, pressed: str | None = None, page: str | None = None,
               cookies: Callable[[], dict] | None = None, visitor: Callable[[], tuple] | None = None,
               fragment: str = ""):
    """What a rerun reads, when it may be shared with other tabs' (``server/streamlit_patches/replay.py``).

    Outside a class, a rerun of one of ``LINK_PAGES`` (``page``) reads the session's values, the
    link and the page's widgets: its key is a digest of every value but the student's own
    (``_whole_state``), and the replay patch adds the link, the browser's context and the
    widgets' values. A session's first run reads the browser's cookies too (``cookies``), those
    ``ui.class_session.first_run_cookies`` names. So does a rerun of one of the page's fragments
    (``fragment``: Step through's step, a slider move), which the patch keys with the fragment's
    id; a fragment's rerun anywhere else is not shared. Not a press, a tab with the Class panel
    open (its sign-in limits read the clock), or one told to slow down.

    A new session on a class's link to one of ``SENT_FIRST_PAGES`` (the class's start; a reload
    of a followed page, a fresh load of the sent link) reads the class's state on the board, the
    cookies, and the student's place on the roster: ``_class_first_key``. So does a session's
    opening of a class's link, which drops the session's other values (``joined_class``):
    ``_class_link_key``. Where the student is not yet on this process's roster, their join comes
    first (``replay.Prepare``), and the key then names the class they joined.

    A follower's rerun reads the class's state on this process's follow board (its version
    moves with every send, reveal, removal and close) and the link, with

    - for a listener's opening of the sent page not yet taken (``sent`` and this tab's class in
      the link), every kept session key but the student's own: that run drops every other key
      before the page draws (``take_sent_link``);
    - for a press of *Look again* (``pressed``; the listener's, at a reveal) on the page already
      taken, the whole session state but the student's own keys: the page draws the student's
      own values, and another tab shares the run only where it holds the same (the replay
      patch adds the values of the page's widgets, as the client reports them).

    None where the run reads more than that: any other rerun, the teacher's tab, one not yet on
    the roster, signed out or let in again, one that must ask the store whether it was removed,
    one told to slow down, before the models are loaded, or while the board holds no fresh state
    (asking the store is for a run)."""
    code, member, params = state.get(CLASS), state.get(MEMBER), dict(parse_qsl(query_string, keep_blank_values=True))
    if not code and pressed is None and page in LINK_PAGES and "class" not in params and (state or not fragment):
        return _link_page_key(session, state, cookies)
    if fragment:
        return None
    linked = normalise_code(params.get("class")) if pressed is None and page in SENT_FIRST_PAGES else ""
    if linked and not state and cookies is not None:
        return _class_first_key(session, linked, cookies(), bool(params.get(SENT)), visitor)
    if linked and state and linked != code and not params.get(SENT) and cookies is not None:
        return _class_link_key(session, linked, state, cookies, visitor)
    if not (code and normalise_code(params.get("class")) == code and state.get(FOLLOW)):
        return None
    if not (isinstance(member, list) and len(member) == 2 and member[0] == code and member[1] and state.get(SESSION)):
        return None
    if (KEY in state or TEACHER_OF in state or SIGNED_OUT in state or JOINED_AGAIN in state or REFUSED in state
            or not state.get(RESTORED) or paced_lately(session) or not models_loaded.is_set() or warm_up.pending):
        return None
    try:
        board = follow_board().state(code, read=False)
    except StoreUnavailable:
        return None
    if board is None or not board.open or (board.removals and state.get(REMOVALS_SEEN) != [[code, board.removals], False]):
        return None
    taken = board.page is not None and state.get(APPLIED) == [board.page, board.params]
    if pressed is not None:
        whole = _whole_state(state) if pressed == LOOK and taken else None
        return None if whole is None else ("look", board.version, whole)
    # only the opening of a sent page not yet taken; a rerun of a page already taken (a box
    # typed in) draws the student's own values
    sent = {k: v for k, v in params.items() if k not in ("class", SENT)}
    if not params.get(SENT) or board.page is None or taken or sent != board.params:
        return None
    return board.version, tuple(sorted((k, repr(v)) for k, v in state.items() if k.startswith(KEPT) and k not in PERSONAL))


def _link_page_key(session: str, state: dict, cookies: Callable[[], dict] | None):
    """A visitor's rerun of a link page outside a class (``replay_key``), or None."""
    if paced_lately(session) or not models_loaded.is_set() or warm_up.pending:
        return None
    if not state:  # the session's first run
        read = first_run_cookies(cookies()) if cookies is not None else None
        return None if read is None else ("first", read)
    if (not state.get(RESTORED) or state.get(PANEL) or state.get(CLASS) or state.get(MEMBER)
            or any(k in state for k in (KEY, TEACHER_OF, SIGNED_OUT, JOINED_AGAIN, REFUSED))):
        return None
    whole = _whole_state(state)
    return None if whole is None else ("page", whole)


def _class_first_key(session: str, code: str, cookies: dict, sent: bool, visitor):
    """A new session on a class's link (the class's start; with ``sent``, a reload of a followed
    page, a fresh load of the sent link: ``replay_key``), or None, or its join first.

    Its run joins the class (a known student: one read of the roster, for their nickname), takes the
    class's state from the follow board and reads the cookies pages read. Shared where this process
    knows the student's nickname from their join (``ClassStore.joined_as``, no read), the board's
    state is fresh and open, nobody is removed from the class (a removed student's run says so; the
    count moves with every removal and *Undo*) and, for the class's own link, no page is sent (the
    run would open it)."""
    if paced_lately(session) or not models_loaded.is_set() or warm_up.pending:
        return None
    read = first_run_cookies(cookies)
    board = _board(code)
    if read is None or board is None or (board.page is not None and not sent):
        return None
    student = _cookie_student(cookies)
    if student is None:
        return None
    if _joined(code, student) is None:
        return _join_first(code, student, visitor)
    return "sent-first" if sent else "class-first", code, board.version, read


def _class_link_key(session: str, code: str, state: dict, cookies: Callable[[], dict], visitor):
    """A session's opening of a class's link (``replay_key``), or None, or its join first.

    Its run drops every value but the class's own ``class_*`` ones before the page draws
    (``joined_class``), joins (as ``_class_first_key``) and draws the page as the link sets it: it
    reads those kept values, the student's nickname, the board, the link and the widgets the
    browser reports (the replay patch adds them). Not a tab with the Class panel open, a
    teacher's, one refused, signed out or in another class, one told to slow down, or while a
    page is sent."""
    if paced_lately(session) or not models_loaded.is_set() or warm_up.pending:
        return None
    if not state.get(RESTORED) or state.get(PANEL) or any(k in state for k in (KEY, TEACHER_OF, SIGNED_OUT, MEMBER,
                                                                               JOINED_AGAIN, REFUSED)):
        return None
    board = _board(code)
    if board is None or board.page is not None:
        return None
    student = state.get(SESSION) or _cookie_student(cookies())
    if not student:
        return None
    if _joined(code, student) is None:
        return _join_first(code, student, visitor)
    return "class-link", code, board.version, tuple(sorted((k, repr(v)) for k, v in state.items()
                                                           if k.startswith(KEPT) and k not in PERSONAL))


def _board(code: str):
    """The class's state on this process's board, where it is fresh, open and nobody is removed (no read)."""
    try:
        board = follow_board().state(code, read=False)
    except StoreUnavailable:
        return None
    return None if board is None or not board.open or board.removals else board


def _cookie_student(cookies: dict) -> str | None:
    """The student's id from their signed cookie, with no store read (for the event loop); None if none."""
    store = built_class_store()
    secret = store.known_cookie_secret() if store is not None else None
    return identity.student_id(secret, cookies.get(identity.STUDENT_COOKIE)) if secret else None


def _joined(code: str, student: str) -> str | None:
    """The nickname ``student`` had at their last join of class ``code`` in this process (no read), or None."""
    store = built_class_store()
    return store.joined_as(code, student) if store is not None else None


def _join_first(code: str, student: str, visitor):
    """The student's join, before their run (``replay.Prepare``), as their run would join them:
    the same store, id and address (``ui.class_session.enter``)."""
    store = built_class_store()
    if store is None or visitor is None:
        return None
    address = client_address(*visitor())
    return replay.Prepare(lambda: store.join(code, student, address))


def own_state(query_string: str, cookies: Callable[[], dict], state: dict) -> dict:
    """What a run joining the class its link names sets of the student's own (``_class_first_key``,
    ``_class_link_key``): their id and their place on the roster, as their join did; {} for any
    other run."""
    code = normalise_code(dict(parse_qsl(query_string, keep_blank_values=True)).get("class"))
    if not code or state.get(CLASS) == code:
        return {}
    student = state.get(SESSION) or _cookie_student(cookies())
    name = _joined(code, student) if student else None
    return {} if name is None else {SESSION: student, MEMBER: [code, name]}


def reads_widgets(key) -> bool:
    """A link page's rerun, a class link's opening in a session and a press of *Look again* read
    the page's widgets; a sent page's opening and a new session's first run do not."""
    return isinstance(key, tuple) and key[:1] in (("page",), ("first",), ("look",), ("class-link",))


def _whole_state(state: dict) -> bytes | None:
    """A digest of every session value but the student's own: equal for two tabs only where their
    values are (pickled, never unpickled: a value that cannot be pickled shares nothing)."""
    try:
        values = pickle.dumps(sorted(((k, v) for k, v in state.items() if k not in PERSONAL), key=lambda kv: kv[0]),
                              protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - any value pickle refuses: this run is the tab's own
        return None
    return hashlib.sha256(values).digest()


def personal_words(state: dict) -> tuple[str, ...]:
    """The student's nickname (in the follow line), then what a page shows of them nowhere: their
    id, and their nickname as a link would write it."""
    member = state.get(MEMBER)
    name = member[1] if isinstance(member, list) and len(member) == 2 and isinstance(member[1], str) else ""
    return name, str(state.get(SESSION) or ""), *((quote(name), quote_plus(name)) if " " in name else ())


# a run that hit a limit (its "Try again" button) is the session's own, never shared
# *Look again*'s press reruns the page and is read nowhere (the listener clicks it at a reveal)
replay.set_policy(replay.Policy(replay_key, PERSONAL, personal_words, ("slow_down_again", "work_cut_again"), (LOOK,),
                                reads_widgets, own_state))
