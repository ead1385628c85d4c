"""A rerun replayed from another tab's (``replay_follows``, server/streamlit_patches/replay.py; the
app's policy in ui/class_follow.py): through a real server, each follower of a send draws the page
under its own name, answers in its own name, and its fragment and the teacher's reveal work as
after a run of its own, and the reveal's *Look again* is shared too, each tab showing the solution
under its own name; visitors of one link outside a class share runs, each with downloads of its
own; the policy's key tells apart what a run would draw differently; a run that shows the
student's id is never shared."""
from __future__ import annotations

import asyncio
import collections
import json
import re
import time
import urllib.request

import pytest

from server.class_store import ClassStore
from server.follow import FollowBoard
from server.streamlit_patches import replay
from ui import class_follow
from ui.class_follow import LINK_PAGES
from ui.class_session import (APPLIED, CLASS, FOLLOW, KEY, LESSON_DONE_COOKIE, LOOK, MEMBER, REMOVALS_SEEN, RESTORED,
                              SESSION)

TEACHER = "replay-teachers-key"
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))
NAMED = re.compile(r"Following class \*\*[A-Z0-9]+\*\* as \*\*([^*]+)\*\*")


def _counts(base: str) -> dict:
    ready = json.loads(OPENER.open(f"{base}/_attn/ready?format=json", timeout=10).read())
    return next(p for p in ready["patches"] if p["name"] == "replay_follows").get("counts") or {}


def _open_class(tiny_zoo, tmp_path) -> tuple[ClassStore, str, dict]:
    """A class opened on a store of its own, and the environment of a server on it (every patch on)."""
    store = ClassStore(f"sqlite:///{tmp_path / 'classes.sqlite3'}", teacher_key=TEACHER)
    env = {"ATTN_EXPLORER_CHECKPOINTS": str(tiny_zoo), "ATTN_EXPLORER_CLASS_DB": store.url,
           "ATTN_EXPLORER_TEACHER_KEY": TEACHER, "OMP_NUM_THREADS": "1", "ATTN_EXPLORER_STREAMLIT_PATCHES": "all"}
    return store, store.open_class(TEACHER).code, env


def _served(bench, env: dict, store: ClassStore, code: str, lesson) -> tuple[dict, set]:
    """``lesson(base)`` played on a real server over ``store``: (what it returned, the class's roster)."""
    try:
        with bench.server(None, env=env) as target:
            out = asyncio.run(lesson(target.base))
        return out, {m.nickname for m in store.roster_of(TEACHER, code)}
    finally:
        store.engine.dispose()


@pytest.mark.server
def test_followers_of_a_send_each_get_the_page_under_their_own_name_and_answer_as_themselves(tiny_zoo, tmp_path):
    """Four tabs follow a "which mechanism" exercise (a page with a fragment: the options). One
    rerun runs, the others are replayed (the server's counts say so); each tab's follow line names
    its own student, and no other's; each picks in the fragment and answers, and the class's
    store holds the four picks, from four students. The same again for the worked example (no
    fragment) and the step by hand."""
    from helpers.lecture import load_bench
    bench = load_bench()
    from classroom_lesson import mechanism_choice
    from classroom_modes import until_sent
    store, code, env = _open_class(tiny_zoo, tmp_path)
    seed = 3

    async def lesson(base: str) -> dict:
        tabs = [bench.Tab(base, 60, load_page=True) for _ in range(4)]
        for tab in tabs[:2]:  # two browsers that kept the lesson's stops 1-3 done (app_pages/lesson.py's cookie)
            tab.headers["Cookie"] = f"{LESSON_DONE_COOKIE}=1.2.3"
        try:
            for tab in tabs:
                assert (await tab.do(("open", "exercises", f"class={code}")))[2] is None
            out = {}
            for page, params in (("exercises", {"ex": "which", "seed": str(seed)}), ("worked-example", {}),
                                 ("exercises", {"ex": "step", "seed": "4"})):
                await asyncio.sleep(0.5)  # every listener waiting again
                before = _counts(base).get("replayed", 0)
                await asyncio.to_thread(store.send, TEACHER, code, page, params)
                sent = await asyncio.gather(*(until_sent(tab, page, time.perf_counter() + 60) for tab in tabs))
                names = [NAMED.findall(tab.drawn.decode("utf-8", "replace")) for tab in tabs]
                out[params.get("ex", page)] = {"errors": [e for _, _, e in sent if e], "names": names,
                                               "replayed": _counts(base).get("replayed", 0) - before}
                if params.get("ex") == "which":
                    for tab in tabs:  # the options are a fragment: a pick reruns it alone
                        assert (await tab.do(("set", f"ex_which_{seed}", mechanism_choice(seed))))[2] is None
                        assert (await tab.do(("click", f"ex_check_which:{seed}", True)))[2] is None
                    out["answers"] = [a for a in store.summary(TEACHER, code) if a.exercise == f"which:{seed}"]
            # nobody answered the step by hand: the reveal reruns every tab (its listener's Look again)
            await asyncio.sleep(0.5)
            before = _counts(base).get("replayed", 0)
            await asyncio.to_thread(store.reveal, TEACHER, code, "step:4")
            shown = await asyncio.gather(*(until_sent(tab, "exercises", time.perf_counter() + 60) for tab in tabs))
            out["reveal"] = {"errors": [e for _, _, e in shown if e], "reran": [ms is not None for ms, _, _ in shown],
                             "names": [NAMED.findall(tab.drawn.decode("utf-8", "replace")) for tab in tabs],
                             "told": [b"The teacher revealed the answer." in tab.drawn for tab in tabs],
                             "replayed": _counts(base).get("replayed", 0) - before}
            # the lesson reads each browser's cookie of stops done: shared only between equal cookies
            await asyncio.sleep(0.5)
            before = _counts(base).get("replayed", 0)
            await asyncio.to_thread(store.send, TEACHER, code, "lesson", {"stop": "4"})
            sent = await asyncio.gather(*(until_sent(tab, "lesson", time.perf_counter() + 60) for tab in tabs))
            out["lesson"] = {"errors": [e for _, _, e in sent if e],
                             "done": [re.findall(rb"Stop 4 of \d+ \xc2\xb7 (\d+) done", tab.drawn) for tab in tabs],
                             "replayed": _counts(base).get("replayed", 0) - before}
            return out
        finally:
            for tab in tabs:
                await tab.close()

    try:
        with bench.server(None, env=env) as target:
            out = asyncio.run(lesson(target.base))
    finally:
        roster = {m.nickname for m in store.roster_of(TEACHER, code)}
        store.engine.dispose()
    for page in ("which", "worked-example", "step", "reveal"):
        assert out[page]["errors"] == [], (page, out[page])
        assert out[page]["replayed"] >= 1, (page, out[page])  # one ran; the others were copies of it
        names = [found[-1] for found in out[page]["names"] if found]
        assert len(names) == 4 and len(set(names)) == 4 and set(names) == roster, (page, names, roster)
        assert all(len(set(found)) == 1 for found in out[page]["names"]), out[page]["names"]  # no one else's name
    lesson = out["lesson"]
    assert lesson["errors"] == [] and lesson["replayed"] >= 1, lesson
    assert lesson["done"] == [[b"3"], [b"3"], [b"0"], [b"0"]], lesson  # each its own browser's
    assert out["reveal"]["reran"] == [True] * 4 and out["reveal"]["told"] == [True] * 4, out["reveal"]
    answers = out["answers"]  # each tab's own pick, made in the fragment, answered in its own name
    assert len(answers) == 4 and len({a.session for a in answers}) == 4, answers
    assert {a.answer["label"] for a in answers} == {mechanism_choice(seed)} and len({a.correct for a in answers}) == 1


@pytest.fixture
def board(tmp_path, monkeypatch):
    """A class with a student on its roster, and this process's follow board over its store (as the
    server's, held fresh): (board, code, the student's state as a following tab holds it)."""
    store = ClassStore(f"sqlite:///{tmp_path / 'classes.sqlite3'}", teacher_key=TEACHER)
    code = store.open_class(TEACHER).code
    nickname = store.join(code, "a" * 16).nickname
    here = FollowBoard(store)
    here.state(code)  # read once: fresh in memory, as the board's thread keeps it
    monkeypatch.setattr(class_follow, "follow_board", lambda: here)
    monkeypatch.setattr(class_follow.models_loaded, "is_set", lambda: True)
    state = {CLASS: code, FOLLOW: True, RESTORED: True, MEMBER: [code, nickname], SESSION: "a" * 16,
             "class_panel": False}
    yield here, code, state
    store.engine.dispose()


def test_the_key_is_what_a_followers_run_reads_and_none_where_it_reads_more(board):
    here, code, state = board
    link = f"ex=which&seed=3&class={code}&sent=1"
    assert class_follow.replay_key("tab-1", link, state) is None  # nothing sent yet: not the opening of a sent page
    here.store.send(TEACHER, code, "exercises", {"ex": "which", "seed": "3"})
    here.changed(code)
    here.state(code)  # the board's next read: the sent page
    key = class_follow.replay_key("tab-1", link, state)
    assert key is not None
    # the same page once taken: a rerun of it (a box typed in, a reveal) draws the student's own values
    assert class_follow.replay_key("tab-1", link, {**state, APPLIED: ["exercises", {"ex": "which", "seed": "3"}]}) is None
    assert class_follow.replay_key("tab-1", f"ex=which&seed=4&class={code}&sent=1", state) is None  # not the sent link
    other = {**state, MEMBER: [code, "Another Student"], SESSION: "b" * 16}  # another student: the same run
    assert class_follow.replay_key("tab-2", link, other) == key
    assert class_follow.replay_key("tab-1", link, {**state, "class_panel": True}) != key  # the panel open: drawn
    for not_shared in (f"ex=which&seed=3&class={code}", "ex=which&seed=3&class=ZZZZZZ&sent=1"):
        assert class_follow.replay_key("tab-1", not_shared, state) is None, not_shared
    for left_out in ({**state, KEY: "a key"}, {**state, MEMBER: None}, {**state, RESTORED: False},
                     {**state, FOLLOW: False}):
        assert class_follow.replay_key("tab-1", link, left_out) is None, left_out
    # Look again pressed on the page taken (a reveal): the whole state is the key, but the student's own
    taken = {**state, APPLIED: ["exercises", {"ex": "which", "seed": "3"}], "ex_which_3": None}
    look = class_follow.replay_key("tab-1", link, taken, LOOK)
    assert look is not None and look != key
    assert class_follow.replay_key("tab-2", link, {**taken, MEMBER: [code, "Another Student"], SESSION: "b" * 16},
                                   LOOK) == look
    assert class_follow.replay_key("tab-1", link, {**taken, "ex_which_3": "RNNsearch"}, LOOK) != look  # a pick drawn
    assert class_follow.replay_key("tab-1", link, state, LOOK) is None  # not yet taken: the press opens the sent page
    assert class_follow.replay_key("tab-1", link, taken, "ex_check_which:3") is None  # a press the page reads
    assert class_follow.replay_key("tab-1", link, {**taken, "ex_hook": lambda: None}, LOOK) is None  # not comparable
    here.store.remove(TEACHER, code, here.store.roster_of(TEACHER, code)[0].nickname)
    here.changed(code)
    here.state(code)  # the board's next read: one removal in the class
    assert class_follow.replay_key("tab-1", link, state) is None  # not seen yet: the run asks the store
    assert class_follow.replay_key("tab-1", link, {**state, REMOVALS_SEEN: [[code, 1], False]}) is not None


def test_a_new_sessions_run_of_a_class_link_is_keyed_by_the_class_and_the_cookies_pages_read(board, monkeypatch):
    """A reload of a sent page, or the class's own link (a new session, no values yet), is shared
    between students this process saw join, whatever their id, each given their own id and
    nickname; a student it does not know joins first (``replay.Prepare``), then shares it; not a
    forged or missing cookie, a teacher's cookie, a page that reads more of the class, the class's
    own link while a page is sent (its run opens that page), a class with a student removed, or
    before the board holds the class's state."""
    from server import identity
    here, code, _ = board
    monkeypatch.setattr(class_follow, "built_class_store", lambda: here.store)
    secret = here.store.cookie_secret()
    first, second = identity.new_student_cookie(secret), identity.new_student_cookie(secret)
    names = [here.store.join(code, identity.student_id(secret, c)).nickname for c in (first, second)]
    link = f"ex=which&seed=3&class={code}&sent=1"

    def key(cookies: dict, query: str = link, page: str = "exercises", visitor=None):
        return class_follow.replay_key("tab-9", query, {}, page=page, cookies=lambda: cookies, visitor=visitor)
    one = key({identity.STUDENT_COOKIE: first})
    assert one is not None and key({identity.STUDENT_COOKIE: second}) == one
    assert key({identity.STUDENT_COOKIE: first, LESSON_DONE_COOKIE: "1.2"}) != one  # a cookie a page reads
    assert class_follow.own_state(link, lambda: {identity.STUDENT_COOKIE: second}, {}) == {
        SESSION: identity.student_id(secret, second), MEMBER: [code, names[1]]}
    stranger = identity.new_student_cookie(secret)  # signed, but never joined through this process
    forged = first[:-1] + ("0" if first[-1] != "0" else "1")
    for cookies in ({identity.STUDENT_COOKIE: stranger}, {identity.STUDENT_COOKIE: forged}, {},
                    {identity.STUDENT_COOKIE: first, identity.TEACHER_COOKIE: "x"}):
        assert key(cookies) is None, cookies
        assert class_follow.own_state(link, lambda c=cookies: c, {}) == {} or identity.TEACHER_COOKIE in cookies
    # the stranger joins first, from the address their socket came from, then shares the run
    join = key({identity.STUDENT_COOKIE: stranger}, visitor=lambda: ("203.0.113.9", None))
    assert isinstance(join, replay.Prepare)
    assert here.store.joined_as(code, identity.student_id(secret, stranger)) is None
    join.work()
    assert key({identity.STUDENT_COOKIE: stranger}) == one
    assert class_follow.own_state(link, lambda: {identity.STUDENT_COOKIE: stranger}, {})[MEMBER][1] == \
        here.store.joined_as(code, identity.student_id(secret, stranger))
    assert key({identity.STUDENT_COOKIE: first}, page="lesson") is None  # its check asks the store
    own_link = key({identity.STUDENT_COOKIE: first}, query=f"ex=which&seed=3&class={code}")  # the class's own link
    assert own_link is not None and own_link != one and key({identity.STUDENT_COOKIE: second},
                                                            query=f"ex=which&seed=3&class={code}") == own_link
    here.store.send(TEACHER, code, "worked-example", {})
    here.changed(code)
    here.state(code)
    assert key({identity.STUDENT_COOKIE: first}, query=f"ex=which&seed=3&class={code}") is None  # it opens that page
    assert key({identity.STUDENT_COOKIE: first}) is not None
    here.store.remove(TEACHER, code, names[1])
    here.changed(code)
    assert key({identity.STUDENT_COOKIE: first}) is None  # the board not read since: no fresh state
    here.state(code)
    assert key({identity.STUDENT_COOKIE: first}) is None  # a student removed: a reload must ask the store


def _run(*texts: str, kind: str = "markdown") -> list:
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    messages = [ForwardMsg()]
    messages[0].new_session.page_script_hash = "page"
    for text in texts:
        msg = ForwardMsg()
        if kind == "markdown":
            msg.delta.new_element.markdown.body = text
        else:
            msg.delta.new_element.json.body = text
        messages.append(msg)
    done = ForwardMsg()
    done.script_finished = ForwardMsg.FINISHED_SUCCESSFULLY
    return messages + [done]


def test_a_run_is_shared_only_with_the_students_name_in_one_text_and_their_id_in_none():
    words, refused = ("Clever Panda", "a" * 16), ("slow_down_again",)
    assert replay.scan(_run("Following class **ABC123** as **Clever Panda**", "a page"), words, refused) == (True, 1)
    assert replay.scan(_run("a page"), words, refused) == (True, None)
    assert not replay.scan(_run("as **Clever Panda**", "Clever Panda again"), words, refused)[0]  # name twice
    assert not replay.scan(_run("as **Clever Panda**", "id " + "a" * 16), words, refused)[0]  # the student's id
    assert not replay.scan(_run("as **Clever Panda**", "{}", kind="json"), words, refused)[0]  # not a shared kind
    assert not replay.scan(_run("as **Clever Panda**", "a button slow_down_again"), words, refused)[0]  # a limit hit
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    kept_by_one_browser = ForwardMsg(ref_hash="a1b2c3")  # a message sent as a reference to one a browser keeps
    assert not replay.scan(_run("as **Clever Panda**") + [kept_by_one_browser], words, refused)[0]


def test_a_link_pages_rerun_outside_a_class_is_keyed_by_every_value_but_the_students_own(monkeypatch):
    """A visitor's rerun of Translate, Compare, Step through or Beam search outside a class: one
    key for every tab holding the same values (the replay patch adds the link, the browser's
    context and the widgets' values), whoever the student, and for a first run the same cookies
    but the student's; the same for a rerun of one of its fragments (the patch adds the fragment's
    id); none for another page, a press, an open Class panel, a class or a teacher."""
    monkeypatch.setattr(class_follow.models_loaded, "is_set", lambda: True)
    state = {RESTORED: True, "class_panel": False, CLASS: "", SESSION: "a" * 16, "translate_text": "1 2 3"}
    key = class_follow.replay_key("tab-1", "text=1+2+3", state, page="")
    assert key is not None and class_follow.reads_widgets(key)
    assert class_follow.replay_key("tab-2", "text=1+2+3", {**state, SESSION: "b" * 16}, page="") == key
    assert class_follow.replay_key("tab-1", "text=1+2+3", {**state, "translate_text": "3 2 1"}, page="") != key
    for page in LINK_PAGES:
        assert class_follow.replay_key("tab-1", "", state, page=page) is not None, page
    for page in ("attribution", "exercises", "classroom", None):  # a page that reads more, or one not named
        assert class_follow.replay_key("tab-1", "", state, page=page) is None, page
    for left_out in ({**state, RESTORED: False}, {**state, "class_panel": True}, {**state, CLASS: "ABC123"},
                     {**state, KEY: "a key"}, {**state, "a hook": lambda: None}):
        assert class_follow.replay_key("tab-1", "text=1+2+3", left_out, page="") is None, left_out
    assert class_follow.replay_key("tab-1", "text=1+2+3&class=ABC123", state, page="") is None  # a class's link
    assert class_follow.replay_key("tab-1", "text=1+2+3", state, "translate_csv", page="") is None  # a press
    # a fragment's rerun (a slider move on Step through) as the page's; none in a class, on another page
    assert class_follow.replay_key("tab-1", "", state, page="step-through", fragment="f1") is not None
    assert class_follow.replay_key("tab-1", "", {**state, CLASS: "ABC123"}, page="step-through", fragment="f1") is None
    assert class_follow.replay_key("tab-1", "", state, page="exercises", fragment="f1") is None
    assert class_follow.replay_key("tab-1", "", {}, page="step-through", fragment="f1", cookies=dict) is None
    # a session's first run (no values yet) reads the browser's cookies too: all but the student's id
    first = class_follow.replay_key("tab-1", "text=1+2+3", {}, page="", cookies=lambda: {"attn_student": "one"})
    assert first is not None and first != key
    assert class_follow.replay_key("tab-2", "text=1+2+3", {}, page="", cookies=lambda: {"attn_student": "two"}) == first
    assert class_follow.replay_key("tab-2", "text=1+2+3", {}, page="",
                                   cookies=lambda: {LESSON_DONE_COOKIE: "1.2"}) not in (None, first)
    assert class_follow.replay_key("tab-2", "text=1+2+3", {}, page="", cookies=lambda: {"attn_teacher": "t"}) is None
    assert class_follow.replay_key("tab-2", "text=1+2+3", {}, page="") is None  # cookies not known: not shared
    monkeypatch.setattr(class_follow, "paced_lately", lambda session: session == "tab-1")
    assert class_follow.replay_key("tab-1", "text=1+2+3", state, page="") is None  # told to slow down


def _element(kind: str):
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    msg = ForwardMsg()
    getattr(msg.delta.new_element, kind).SetInParent()
    return msg


def test_a_download_is_shared_only_when_made_on_click_and_a_table_only_with_its_rows():
    made_on_click, kept, lazy, table = (_element(k) for k in ("download_button", "download_button", "dataframe",
                                                              "dataframe"))
    made_on_click.delta.new_element.download_button.deferred_file_id = "f" * 32
    kept.delta.new_element.download_button.url = "/media/abc.csv"  # a file kept for one session
    lazy.delta.new_element.dataframe.lazy_data.source_id = "s1"  # rows fetched from one session's source
    assert replay.scan(_run("a page") + [made_on_click, table], (), ())[0]
    assert not replay.scan(_run("a page") + [kept], (), ())[0]
    assert not replay.scan(_run("a page") + [lazy], (), ())[0]


@pytest.mark.server
def test_tabs_on_one_link_share_a_run_and_each_downloads_its_own_file(tiny_zoo, tmp_path):
    """Three visitors of one link change its sentence: the second to the first's sentence is
    replayed from the first's run and draws the same page; the third, another sentence, runs its
    own. The replayed tab's download button gives the file the first tab's gives, under a file
    id of its own, and still does after the first tab has moved on (its own files let go)."""
    from helpers.lecture import load_bench
    bench = load_bench()
    env = {"ATTN_EXPLORER_CHECKPOINTS": str(tiny_zoo), "ATTN_EXPLORER_CLASS_DB": f"sqlite:///{tmp_path / 'c.sqlite3'}",
           "OMP_NUM_THREADS": "1", "ATTN_EXPLORER_STREAMLIT_PATCHES": "all"}
    csv = "Download attention matrix (CSV)"

    async def visit(base: str) -> dict:
        tabs = [bench.Tab(base, 60, load_page=True) for _ in range(3)]
        try:
            for tab in tabs:
                assert (await tab.do(("open", "", "text=1+2+3+4&model=rnnsearch")))[2] is None
            out = {"replayed": []}
            for tab, text in zip(tabs, ("4 4 1 2 3", "4 4 1 2 3", "2 2 2 1")):
                before = _counts(base).get("replayed", 0)
                _, digest, error = await tab.do(("set", "translate_text", text))
                assert error is None
                out["replayed"].append(_counts(base).get("replayed", 0) - before)
                out.setdefault("digests", []).append(digest)
            out["ids"] = [tab.downloads[csv] for tab in tabs]
            out["files"] = [await tab.download(csv) for tab in tabs]
            assert (await tabs[0].do(("goto", "compare", "text=1+2")))[2] is None  # the first tab's files let go
            out["after"] = await tabs[1].download(csv)
            return out
        finally:
            for tab in tabs:
                await tab.close()

    with bench.server(None, env=env) as target:
        out = asyncio.run(visit(target.base))
    assert out["replayed"] == [0, 1, 0], out["replayed"]
    digests = out["digests"]
    assert digests[0] == digests[1] != digests[2]
    assert len(set(out["ids"])) == 3  # each tab's button asks for a file of its own session
    first, second, third = out["files"]
    assert first and first == second == out["after"] and third != first


def test_a_replay_copies_the_values_a_run_may_change_and_shares_the_rest():
    from server.streamlit_patches.replay_copies import copied_state
    from server.streamlit_patches.testing import widget_value as Value
    applied = ["exercises", {"ex": "which"}]
    old = {"class_applied": applied, "ex_seed": 3, "pair": ("a", 1)}
    new = {"same": applied, "stops": {1, 2}, "nothing": None}
    widgets = {"box": Value(None), "ticked": Value(True), "picked": Value(["dot"])}
    c_old, c_new, c_widgets = copied_state((old, new, widgets))
    assert (c_old, c_new, c_widgets) == (old, new, widgets)
    assert c_old["class_applied"] is not applied and c_old["class_applied"][1] is not applied[1]
    assert c_new["same"] is c_old["class_applied"]  # one value in two dicts stays one value
    assert c_new["stops"] is not new["stops"] and c_widgets["picked"].value is not widgets["picked"].value
    assert c_old["pair"] is old["pair"] and c_widgets["box"] is widgets["box"]  # immutable: shared


def test_a_record_answers_while_it_is_used_and_no_longer_than_its_life():
    record = replay._Record(1000.0, [], None, None, {}, None, "", 0, {}, {})
    age, life = replay.MAX_AGE_S, replay.MAX_LIFE_S
    assert record.answers(1000.0 + age - 1) and not record.answers(1000.0 + age + 1)  # never answered: its age
    record.used = 1000.0 + age - 1  # answered just before it would have gone
    assert record.answers(1000.0 + 2 * age - 2)  # past its first minute, a minute after its last answer
    assert not record.answers(1000.0 + 2 * age)
    record.used = 1000.0 + life - 1  # answered all along: its life ends it
    assert record.answers(1000.0 + life - 0.5) and not record.answers(1000.0 + life + 0.5)


def test_records_are_bounded_in_count_and_in_bytes_the_oldest_dropped_first(monkeypatch):
    monkeypatch.setattr(replay, "RECORDS_KEPT", 10)
    monkeypatch.setattr(replay, "RECORDS_BYTES", 250)
    replay.forget()

    def record(size: int):
        return replay._Record(0.0, [], None, None, {}, None, "", size, {}, {})

    try:
        with replay._LOCK:
            replay._RECORDS["waiting"] = []  # a recording tabs wait for: never dropped
            for key in "abc":
                replay._RECORDS[key] = record(100)
                replay._trim()
            assert list(replay._RECORDS) == ["waiting", "b", "c"]  # 300 bytes: the oldest record went
            replay._RECORDS["d"] = 5.0  # a refused key
            replay._RECORDS["e"] = record(10)
            replay._trim()
            assert list(replay._RECORDS) == ["waiting", "b", "c", "d", "e"]  # 210 bytes, 5 keys
            monkeypatch.setattr(replay, "RECORDS_KEPT", 4)
            replay._trim()
            assert list(replay._RECORDS) == ["waiting", "c", "d", "e"]  # 5 keys: the oldest went
    finally:
        replay.forget()


@pytest.mark.server
def test_tabs_sharing_a_page_with_a_fragment_each_draw_their_own_step(tiny_zoo, tmp_path):
    """Step through's step is a fragment, shared with the run that drew it: tabs that opened one
    link (replayed from one run) move their sliders at once, and each draws the step it chose,
    as a tab alone draws it (a fragment that wrote the page's globals drew another tab's step).
    A move made twice before from the same step is replayed: the fragment's rerun, shared."""
    from helpers.lecture import load_bench
    bench = load_bench()
    env = {"ATTN_EXPLORER_CHECKPOINTS": str(tiny_zoo), "ATTN_EXPLORER_CLASS_DB": f"sqlite:///{tmp_path / 'c.sqlite3'}",
           "OMP_NUM_THREADS": "1", "ATTN_EXPLORER_STREAMLIT_PATCHES": "all"}
    link = "text=1+2+3+4+5+6&model=rnnsearch&sections=weights,output"
    moves = [2, 5, 3, 6, 1, 4, 2, 6]

    async def play(base: str, order: list[int]) -> dict:
        tab = bench.Tab(base, 60, load_page=True)
        try:
            assert (await tab.do(("open", "step-through", link)))[2] is None
            drawn = {}
            for step in order:
                _, digest, error = await tab.do(("set", "step_i", step))
                assert error is None
                drawn.setdefault(step, set()).add(digest)
                await asyncio.sleep(0)
            return drawn
        finally:
            await tab.close()

    async def visit(base: str) -> tuple[dict, list, int, int]:
        alone = await play(base, moves)
        before = _counts(base)
        tabs = await asyncio.gather(*(play(base, moves[k:] + moves[:k]) for k in range(6)))
        return alone, tabs, _counts(base).get("replayed", 0) - before.get("replayed", 0), before.get("recorded", 0)

    with bench.server(None, env=env) as target:
        alone, tabs, replayed, recorded_alone = asyncio.run(visit(target.base))
    assert recorded_alone <= 1  # the lone tab's opening at most: its moves, each asked once, ran as Streamlit's
    # the openings are shared, and so is a move (a fragment's rerun, keyed by the page's values and
    # the slider's) that the lone tab made from the same step, at its third ask: the first ran
    # alone, the second was recorded
    made = set(zip([1] + moves, moves))
    asked = collections.Counter(t for k in range(6) for t in zip([1] + moves[k:] + moves[:k], moves[k:] + moves[:k]))
    sure = sum(n - 1 for t, n in asked.items() if t in made)
    assert replayed >= 1 + sure, (replayed, sure)
    assert all(len(digests) == 1 for digests in alone.values()) and len({d for s in alone.values() for d in s}) > 1
    for drawn in tabs:
        assert drawn == alone, (drawn, alone)


def test_the_widgets_a_browser_reports_key_a_run_by_their_values_not_their_order():
    """Browsers on one page send the same widget values in different orders (three browsers, three
    orders): the key reads them by id, so they share a run."""
    from streamlit.proto.ClientState_pb2 import ClientState
    one, other, changed = ClientState(), ClientState(), ClientState()
    for state, order in ((one, ("text", "model")), (other, ("model", "text")), (changed, ("text", "model"))):
        for name in order:
            widget = state.widget_states.widgets.add(id=f"$$ID-{name}")
            widget.string_value = "3 2 1" if state is changed and name == "text" else name
    assert replay._widget_values(one) == replay._widget_values(other) != replay._widget_values(changed)


@pytest.mark.server
def test_reloads_of_a_sent_page_share_a_run_each_under_its_own_name_and_answer_as_themselves(tiny_zoo, tmp_path):
    """Four students follow a sent exercise, then reload it one after another (a new session each,
    the same student by their cookie): the first reload runs, the others are replayed from it; each
    page names its own student and each answer after the reload is stored as that student's. A
    new browser on the sent link (a student cookie this class never saw) joins first, then is
    replayed too, under a name of its own; once a student is removed, a reload runs (it must say
    so), and the removed student is told."""
    from helpers.lecture import load_bench
    bench = load_bench()
    from classroom_lesson import mechanism_choice
    from classroom_modes import until_sent
    store, code, env = _open_class(tiny_zoo, tmp_path)
    seed = 2

    async def lesson(base: str) -> dict:
        tabs = [bench.Tab(base, 60, load_page=True) for _ in range(4)]
        try:
            for tab in tabs:
                assert (await tab.do(("open", "exercises", f"class={code}")))[2] is None
            await asyncio.sleep(0.5)
            await asyncio.to_thread(store.send, TEACHER, code, "exercises", {"ex": "which", "seed": str(seed)})
            sent = await asyncio.gather(*(until_sent(tab, "exercises", time.perf_counter() + 60) for tab in tabs))
            out = {"errors": [e for _, _, e in sent if e], "replayed": []}
            for tab in tabs:
                before = _counts(base).get("replayed", 0)
                out["errors"].append((await tab.do(("reload", "", "")))[2])
                out["replayed"].append(_counts(base).get("replayed", 0) - before)
            out["names"] = [NAMED.findall(tab.drawn.decode("utf-8", "replace")) for tab in tabs]
            for tab in tabs:  # the reloaded page works as the student's own: a pick, then Check
                assert (await tab.do(("set", f"ex_which_{seed}", mechanism_choice(seed))))[2] is None
                assert (await tab.do(("click", f"ex_check_which:{seed}", True)))[2] is None
            out["answers"] = [a for a in store.summary(TEACHER, code) if a.exercise == f"which:{seed}"]
            newcomer = bench.Tab(base, 60, load_page=True)  # the sent link in a new browser: a new student
            before = _counts(base).get("replayed", 0)
            out["newcomer"] = [(await newcomer.do(("open", tabs[0].path, tabs[0].query)))[2],
                               _counts(base).get("replayed", 0) - before,
                               NAMED.findall(newcomer.drawn.decode("utf-8", "replace"))]
            await newcomer.close()
            removed = out["names"][1][-1]
            assert await asyncio.to_thread(store.remove, TEACHER, code, removed)
            await asyncio.sleep(1.0)  # the board hears of it
            before = _counts(base).get("replayed", 0)
            reloads = [(await tab.do(("reload", "", "")))[2] for tab in tabs[:2]]
            out["removed"] = removed
            out["after_removal"] = [reloads, _counts(base).get("replayed", 0) - before,
                                    [b"removed you from class" in tab.drawn for tab in tabs[:2]]]
            return out
        finally:
            for tab in tabs:
                await tab.close()

    out, roster = _served(bench, env, store, code, lesson)
    assert not any(out["errors"]), out["errors"]
    assert out["replayed"] == [0, 1, 1, 1], out["replayed"]  # the first reload ran; the others were copies of it
    names = [found[-1] for found in out["names"] if found]
    assert all(len(found) == 1 for found in out["names"]) and len(set(names)) == 4, out["names"]
    answers = out["answers"]  # each reloaded tab answered in its own name
    assert len(answers) == 4 and len({a.session for a in answers}) == 4, answers
    error, replayed, named = out["newcomer"]
    assert error is None and replayed == 1 and len(named) == 1 and named[0] not in names, out["newcomer"]
    assert named[0] in roster and set(names) - {out["removed"]} <= roster, (named, roster)  # the roster's: not removed
    assert out["after_removal"] == [[None, None], 0, [False, True]], out["after_removal"]


def test_a_sessions_opening_of_a_class_link_is_keyed_by_its_class_values_and_joins_first(board, monkeypatch):
    """A tab that browsed (its own sentence, its own values) opening the class's link: its run drops
    every value but the class's own (``joined_class``), so two students' openings share one key
    whatever else they held; a student not yet on this process's roster joins first
    (``replay.Prepare``, from their socket's address), and the key then names the class. Not a tab
    with the Class panel open, a teacher's, a refused one, one whose class is this one already, a
    page that reads more of the class, or while a page is sent (the run opens it)."""
    here, code, _ = board
    monkeypatch.setattr(class_follow, "built_class_store", lambda: here.store)
    link = f"ex=which&seed=3&class={code}"
    browsed = {CLASS: "", FOLLOW: False, RESTORED: True, SESSION: "c" * 16, "translate_text": "A cat.",
               "beam_hypothesis": 0}

    def key(state: dict, query: str = link, page: str = "exercises", visitor=None):
        return class_follow.replay_key("tab-3", query, state, page=page, cookies=lambda: {}, visitor=visitor)
    assert key(browsed) is None  # not yet on the roster, and no socket to join from
    join = key(browsed, visitor=lambda: (None, None))
    assert isinstance(join, replay.Prepare)
    join.work()
    first = key(browsed)
    assert first is not None and first[0] == "class-link" and class_follow.reads_widgets(first)
    other = {**browsed, SESSION: "d" * 16, "translate_text": "Another sentence.", "step_i": 4}
    here.store.join(code, "d" * 16)
    assert key(other) == first  # another student, other values: the same run
    assert class_follow.own_state(link, lambda: {}, other) == {SESSION: "d" * 16,
                                                                MEMBER: [code, here.store.joined_as(code, "d" * 16)]}
    assert class_follow.own_state(link, lambda: {}, {**other, CLASS: code}) == {}  # in the class already: its own
    assert key({**browsed, "class_cookie_for": code}) != first  # a class value the run keeps
    for left_out in ({**browsed, "class_panel": True}, {**browsed, KEY: "k"}, {**browsed, RESTORED: False},
                     {**browsed, "class_join_refused": [code, "locked"]}, {**browsed, CLASS: code},
                     {**browsed, CLASS: "ZZZZZZ", MEMBER: ["ZZZZZZ", "Old Name"]}):
        assert key(left_out) is None, left_out
    assert key(browsed, page="lesson") is None
    assert key(browsed, query=link + "&sent=1") is None  # following: the sent page's own key
    here.store.send(TEACHER, code, "worked-example", {})
    here.changed(code)
    here.state(code)
    assert key(browsed) is None


@pytest.mark.server
def test_tabs_opening_a_class_link_share_a_run_each_joined_under_its_own_name(tiny_zoo, tmp_path):
    """Four tabs translate sentences of their own, then open the class's exercise link: each joins
    first (the server's counts say so), one run is recorded and the three others are replayed from
    it, each page naming its own student (no other's); each then picks and answers, stored as
    itself. Back on Translate, a tab's page is its link's, not the sentence it had before."""
    from helpers.lecture import load_bench
    bench = load_bench()
    from classroom_lesson import mechanism_choice
    store, code, env = _open_class(tiny_zoo, tmp_path)
    seed = 1

    async def lesson(base: str) -> dict:
        tabs = [bench.Tab(base, 60, load_page=True) for _ in range(5)]
        try:
            # the class's first student (a link of its own) builds the process's class store: its id and
            # nickname are known only from a read of that store, and a rerun's key reads no store
            assert (await tabs.pop().do(("open", "exercises", f"class={code}")))[2] is None
            for i, tab in enumerate(tabs):
                assert (await tab.do(("open", "", f"text={'1+2+' * (i + 1)}4&model=rnnsearch")))[2] is None
            before = _counts(base)
            for tab in tabs:
                assert (await tab.do(("goto", "exercises", f"ex=which&seed={seed}&class={code}")))[2] is None
            after = _counts(base)
            out = {k: after.get(k, 0) - before.get(k, 0) for k in ("prepared", "recorded", "replayed")}
            out["names"] = [NAMED.findall(tab.drawn.decode("utf-8", "replace")) for tab in tabs]
            for tab in tabs:
                assert (await tab.do(("set", f"ex_which_{seed}", mechanism_choice(seed))))[2] is None
                assert (await tab.do(("click", f"ex_check_which:{seed}", True)))[2] is None
            out["answers"] = [a for a in store.summary(TEACHER, code) if a.exercise == f"which:{seed}"]
            assert (await tabs[3].do(("goto", "", "model=rnnsearch")))[2] is None
            out["translate"] = tabs[3].drawn
            return out
        finally:
            for tab in tabs:
                await tab.close()

    out, roster = _served(bench, env, store, code, lesson)
    assert (out["prepared"], out["recorded"], out["replayed"]) == (4, 1, 3), out
    names = [found[-1] for found in out["names"] if found]
    assert all(len(found) == 1 for found in out["names"]) and len(set(names)) == 4 and set(names) < roster, out["names"]
    answers = out["answers"]
    assert len(answers) == 4 and len({a.session for a in answers}) == 4, answers
    assert b"1 2 1 2 1 2 1 2 4" not in out["translate"]  # its earlier sentence dropped with the class's link
