"""Following the teacher (server/follow.py): one read per process shared by its tabs, a wait
that a send in another process ends, on SQLite (the followed classes read together) and on
PostgreSQL (NOTIFY/LISTEN)."""
from __future__ import annotations

import asyncio
import os
import threading
import time

import pytest

from server import follow
from server.class_store import ClassStore
from server.follow import FollowBoard

KEY = "follow-teachers-key"


def two_processes(url: str) -> tuple[ClassStore, ClassStore]:
    """Two store objects on one database, as two server processes hold them."""
    return ClassStore(url, teacher_key=KEY), ClassStore(url, teacher_key=KEY)


def class_of_two(tmp_path):
    """A class opened in one process, its board in another, two students on its roster:
    (teacher's store, this process's store, code, board, the first student, the second, the
    second's nickname)."""
    teacher, here = two_processes(f"sqlite:///{tmp_path / 'classes.sqlite3'}")
    code = teacher.open_class(KEY).code
    first, second = "a" * 16, "b" * 16
    teacher.join(code, first)
    return teacher, here, code, FollowBoard(here), first, second, teacher.join(code, second).nickname


def test_tabs_asking_at_once_share_one_read(tmp_path):
    teacher, here = two_processes(f"sqlite:///{tmp_path / 'classes.sqlite3'}")
    code = teacher.open_class(KEY).code
    board = FollowBoard(here)
    seen = []

    def tab():
        for _ in range(50):
            seen.append(board.state(code).version)

    tabs = [threading.Thread(target=tab) for _ in range(8)]
    for t in tabs:
        t.start()
    for t in tabs:
        t.join()
    assert seen == [0] * 400
    # 400 looks; the store was read by the first tab and the board's thread (every POLL_S), not per look
    assert board.reads < 40, board.reads
    assert board.state("nonsense") is None and board.state("ABCDEF") is None  # not a class: None, as follow() says


def test_a_send_elsewhere_ends_the_wait_and_a_quiet_class_times_out(tmp_path):
    teacher, here = two_processes(f"sqlite:///{tmp_path / 'classes.sqlite3'}")
    code = teacher.open_class(KEY).code
    board = FollowBoard(here)

    async def scenario():
        quiet = await board.wait(code, 0, timeout=0.3)  # nothing sent: the same version after the wait
        waiting = asyncio.create_task(board.wait(code, 0, timeout=30))
        await asyncio.sleep(0.2)
        assert not waiting.done()
        await asyncio.to_thread(teacher.send, KEY, code, "worked-example", {})
        sent = await asyncio.wait_for(waiting, 30)
        stale = await board.wait(code, 0, timeout=30)  # a tab still showing version 0: answered at once
        return quiet, sent, stale

    quiet, sent, stale = asyncio.run(scenario())
    assert quiet.version == 0 and (sent.version, sent.page) == (1, "worked-example") and stale.version == 1


def test_a_send_in_another_process_ends_the_wait_before_the_periodic_read(tmp_path, monkeypatch):
    """On SQLite the board looks whether another process wrote (``PRAGMA data_version``) between
    its periodic reads: with those ten minutes apart, a send elsewhere still reaches a waiting tab."""
    monkeypatch.setattr(follow, "POLL_S", 600.0)
    teacher, here = two_processes(f"sqlite:///{tmp_path / 'classes.sqlite3'}")
    code = teacher.open_class(KEY).code
    board = FollowBoard(here)

    async def scenario():
        assert (await board.wait(code, 0, timeout=0.3)).version == 0  # the board's thread started, reading
        waiting = asyncio.create_task(board.wait(code, 0, timeout=60))
        await asyncio.sleep(0.3)
        await asyncio.to_thread(teacher.send, KEY, code, "worked-example", {})
        return await asyncio.wait_for(waiting, 30)  # not 600 s: the write was seen

    sent = asyncio.run(scenario())
    assert (sent.version, sent.page) == (1, "worked-example")


def test_a_quiet_class_costs_no_reads_and_a_teachers_move_brings_one(tmp_path):
    """With nothing committed that followers see, the board's thread keeps its states fresh
    without reading them (QUIET_READ_S apart at most): a student joining (a commit, though not to
    what followers see) brings no read where inotify hears the store's bell; a send brings one."""
    from server.class_store.writes import _inotify
    teacher, here = two_processes(f"sqlite:///{tmp_path / 'classes.sqlite3'}")
    code = teacher.open_class(KEY).code
    board = FollowBoard(here)
    assert board.state(code).version == 0
    time.sleep(4 * follow.POLL_S)  # the thread's first looks, which know nothing yet, read
    before = board.reads
    time.sleep(8 * follow.POLL_S)
    quiet = board.reads - before
    assert quiet <= 1, quiet  # one at most: the QUIET_READ_S read, were it due
    assert board._fresh(code) is not None  # and still fresh: a tab asking reads nothing itself
    teacher.join(code, "c" * 16)  # a commit, though not to what followers see
    time.sleep(4 * follow.POLL_S)
    watched = _inotify(str(tmp_path))
    if watched is not None:  # else every commit is asked about (WRITES_CHECK_S), and read
        os.close(watched)
        assert board.reads - before <= quiet + 1, (board.reads - before, quiet)
    before = board.reads
    teacher.send(KEY, code, "worked-example", {})
    deadline = time.monotonic() + 30
    while board.state(code).version == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert board.reads > before and board.state(code).version == 1


def test_with_no_class_followed_the_board_looks_at_nothing(tmp_path, monkeypatch):
    """A class no tab asked about for WATCH_S is dropped; then the board's thread looks at no
    write (no ``data_version`` twenty times a second on a server nobody follows on)."""
    monkeypatch.setattr(follow, "WATCH_S", 0.2)
    teacher, here = two_processes(f"sqlite:///{tmp_path / 'classes.sqlite3'}")
    code = teacher.open_class(KEY).code
    board = FollowBoard(here)
    looks = []
    real = here.wait_for_writes
    monkeypatch.setattr(here, "wait_for_writes", lambda *a: (looks.append(1), real(*a))[1])
    assert board.state(code).version == 0
    deadline = time.monotonic() + 30
    while (board._asked or not looks) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert looks and not board._asked  # it looked while the class was followed, then dropped it
    time.sleep(2 * follow.POLL_S)  # a look under way when it was dropped ends
    before = len(looks)
    time.sleep(6 * follow.POLL_S)
    assert len(looks) == before
    assert board.state(code).version == 0  # asked again: read, followed again


def test_the_board_sleeps_on_the_store_folder_not_on_a_timer(tmp_path, monkeypatch):
    """With inotify (Linux) a wait asks ``data_version`` only when the store's folder changed: a
    quiet half second costs no ask; another process's commit and this process's nudge each end it."""
    from server.class_store.writes import Nudge
    teacher, here = two_processes(f"sqlite:///{tmp_path / 'classes.sqlite3'}")
    code = teacher.open_class(KEY).code
    writes, nudge, asks = here._writes(), Nudge(), []
    real = writes.changed
    monkeypatch.setattr(writes, "changed", lambda: (asks.append(1), real())[1])
    assert writes.wait(0.5, nudge) is False  # nothing written
    if writes._watch is None:
        pytest.skip("the kernel gave no inotify instance: the wait asks every WRITES_CHECK_S instead")
    assert len(asks) == 2, asks  # its first look and its last, no timer (every WRITES_CHECK_S: ten)
    assert writes.wait(0.5, nudge, bell=True) is False and len(asks) == 2  # for the bell: no ask at the end
    threading.Timer(0.1, teacher.join, args=(code, "d" * 16)).start()  # a commit followers do not see
    assert writes.wait(0.5, nudge, bell=True) is False and len(asks) == 2  # heard, and no ask for it
    threading.Timer(0.2, teacher.send, args=(KEY, code, "worked-example", {})).start()
    start = time.monotonic()
    assert writes.wait(30, nudge, bell=True) is True and time.monotonic() - start < 10
    threading.Timer(0.2, nudge.set).start()
    start = time.monotonic()
    assert writes.wait(30, nudge, bell=True) is True and time.monotonic() - start < 10
    nudge.clear()
    assert writes.wait(0.3, nudge, bell=True) is False  # cleared: the eventfd drained too
    writes.changed()  # the commits a wait for the bell heard and let pass: seen
    threading.Timer(0.2, teacher.join, args=(code, "e" * 16)).start()
    start = time.monotonic()
    assert writes.wait(30, nudge) is True and time.monotonic() - start < 10  # without the bell: any commit


def test_the_write_check_waits_for_another_connections_commit_only(tmp_path):
    """``wait_for_writes``: a commit by another store object ends it; without one it lasts its seconds
    (and the nudge of this process's own change ends it too)."""
    teacher, here = two_processes(f"sqlite:///{tmp_path / 'classes.sqlite3'}")
    code = teacher.open_class(KEY).code
    nudge = threading.Event()
    start = time.monotonic()
    here.wait_for_writes(0.3, nudge)  # nothing written: its whole 0.3 s
    assert time.monotonic() - start >= 0.29
    done = threading.Event()
    waiter = threading.Thread(target=lambda: (here.wait_for_writes(600.0, nudge), done.set()))
    waiter.start()
    time.sleep(0.2)
    teacher.send(KEY, code, "worked-example", {})
    assert done.wait(30)
    waiter.join(5)
    nudged = threading.Thread(target=lambda: here.wait_for_writes(600.0, nudge))
    nudged.start()
    nudge.set()
    nudged.join(30)
    assert not nudged.is_alive()


def test_a_send_in_this_process_is_seen_before_the_next_read(tmp_path, monkeypatch):
    """The store object tells its own board (the in-process version): no wait for a read."""
    monkeypatch.setattr(follow, "POLL_S", 60.0)  # the board's thread reads only when nudged
    store = ClassStore(f"sqlite:///{tmp_path / 'classes.sqlite3'}", teacher_key=KEY)
    code = store.open_class(KEY).code
    board = FollowBoard(store)
    assert board.state(code).version == 0
    store.send(KEY, code, "exercises", {"ex": "step"})
    assert board.state(code).version == 1 and board.state(code).params == {"ex": "step"}


def test_too_many_waiting_tabs_are_told_busy(tmp_path, monkeypatch):
    monkeypatch.setattr(follow, "MAX_WAITERS", 3)
    teacher, here = two_processes(f"sqlite:///{tmp_path / 'classes.sqlite3'}")
    code = teacher.open_class(KEY).code
    board = FollowBoard(here)

    async def scenario():
        waiting = [asyncio.create_task(board.wait(code, 0, timeout=5)) for _ in range(3)]
        await asyncio.sleep(0.2)
        with pytest.raises(follow.Busy):
            await board.wait(code, 0, timeout=5)
        teacher.close_class(KEY, code)  # closing ends every wait: the tabs say "closed"
        return await asyncio.gather(*waiting)

    assert [s.open for s in asyncio.run(scenario())] == [False] * 3


def test_postgresql_notifies_the_other_process(postgres_url, monkeypatch):
    """On PostgreSQL the send's NOTIFY wakes the other process's board: with its periodic read
    set to a minute, only the notification can end the wait within it."""
    monkeypatch.setattr(follow, "PG_POLL_S", 60.0)
    teacher, here = two_processes(postgres_url)
    try:
        code = teacher.open_class(KEY).code
        board = FollowBoard(here)
        assert board.state(code).version == 0

        async def scenario():
            waiting = asyncio.create_task(board.wait(code, 0, timeout=45))
            await asyncio.sleep(1.0)  # the board's thread is LISTENing
            await asyncio.to_thread(teacher.send, KEY, code, "exercises", {"ex": "which", "seed": "3"})
            return await asyncio.wait_for(waiting, 50)

        state = asyncio.run(scenario())
        assert (state.version, state.page, state.params["seed"]) == (1, "exercises", "3")
    finally:
        teacher.engine.dispose()
        here.engine.dispose()


@pytest.mark.server
def test_tabs_on_the_websocket_follow_a_send_inside_their_session(tiny_zoo, tmp_path):
    """bench/classroom.py's followers against a real server: each holds /_attn/follow open, is
    answered at the send, clicks *Look again* and draws the sent Step through page (its sentence
    at its step) without a new socket; then the worked example, an exercise and its reveal."""
    import argparse
    from helpers.lecture import load_bench
    bench = load_bench()
    store = ClassStore(f"sqlite:///{tmp_path / 'classes.sqlite3'}", teacher_key=KEY)
    code = store.open_class(KEY).code
    env = {"ATTN_EXPLORER_CHECKPOINTS": str(tiny_zoo), "ATTN_EXPLORER_CLASS_DB": store.url,
           "ATTN_EXPLORER_TEACHER_KEY": KEY, "OMP_NUM_THREADS": "1"}
    try:
        with bench.server(None, env=env) as target:
            args = argparse.Namespace(timeout=60.0, idle=0.0)
            result = asyncio.run(bench.follow_the_teacher(target, args, store, KEY, code, 4))
    finally:
        store.engine.dispose()
    assert result["follow_errors"] == 0, result["follow_error_kinds"]
    assert result["followers"] == 4 and result["follow_max_ms"] is not None
    # then the worked example, an exercise and its reveal, each timed to every follower's page drawn
    for kind in ("worked-example", "exercise", "reveal"):
        assert result[f"follow_{kind}_errors"] == 0 and result[f"follow_{kind}_p95_ms"] is not None, (kind, result)


def test_the_sent_link_opened_by_the_listener_is_taken_once_with_its_values(store, monkeypatch):
    """The page's listener opens the teacher's link as the Back button opens a page (a rerun of that
    page with that query, ui/class_follow.py ``take_sent_link``): the previous page's values are
    dropped, so the sent exercise shows as its link sets it; a later change of the student's is
    kept on the next rerun of the same link (taken once), and a link that is not the teacher's
    last send changes nothing. One run: the follow panel never has to switch page itself."""
    from helpers.apptest import new_app
    from conftest import ROOT, TEACHER_KEY
    from server.follow import follow_board
    from ui import class_follow
    switched = []
    opened = class_follow._open_sent
    monkeypatch.setattr(class_follow, "_open_sent", lambda *a: (switched.append(a[2].page), opened(*a)))
    code = store.open_class(TEACHER_KEY).code
    at = new_app(str(ROOT / "navigation.py"), 60)
    at.query_params.update({"class": code, "ex": "which", "seed": "2"})
    at.run()
    at.switch_page("app_pages/exercises.py")
    at.run()
    assert at.number_input(key="ex_seed").value == 2 and at.session_state["class_follow"]

    def open_link(query: dict) -> None:  # what the listener's popstate makes the front end ask for
        at.query_params.clear()
        at.query_params.update({**query, "class": code, "sent": "1"})
        at.run()
        assert not at.exception, [e.value for e in at.exception]

    open_link({"ex": "which", "seed": "5"})  # not sent by the teacher: the student's values stand
    assert at.number_input(key="ex_seed").value == 2
    store.send(TEACHER_KEY, code, "exercises", {"ex": "which", "seed": "5"})
    deadline = time.monotonic() + 10
    while follow_board().state(code).version == 0 and time.monotonic() < deadline:
        time.sleep(0.05)  # as the listener: answered once this process's board has read the send
    open_link({"ex": "which", "seed": "5"})
    assert at.number_input(key="ex_seed").value == 5 and not switched
    # the listener's data-page, drawn before the page took its exercise from the sent link: any reveal
    # changes it (reveal_shown's "*")
    signature = class_follow.page_signature(code, follow_board().state(code), False, "*")
    assert any(f'data-page="{signature}"' in h.proto.body for h in at.get("html"))
    assert at.session_state["class_applied"] == ["exercises", {"ex": "which", "seed": "5"}]
    at.number_input(key="ex_seed").set_value(7).run()
    open_link({"ex": "which", "seed": "5"})  # the same link again: taken already, the student's 7 stays
    assert at.number_input(key="ex_seed").value == 7


def test_a_removal_changes_the_removed_students_page_signature_only(tmp_path, monkeypatch):
    """What a follower's page shows of the class (``page_signature``): another student removed or
    let back in leaves it as it is, so that tab's listener reruns nothing; the removed student's
    changes, and so do a reveal and a send. The removed ids are read once per process and version."""
    from server.follow import page_signature
    teacher, here, code, board, stays, goes, gone = class_of_two(tmp_path)
    reads = []
    removed_sessions = here.removed_sessions
    monkeypatch.setattr(here, "removed_sessions", lambda c: (reads.append(c), removed_sessions(c))[1])

    def signatures():
        state = here.follow(code)
        return state, {who: page_signature(code, state, board.removed(state, who)) for who in (stays, goes)}

    before, first = signatures()
    assert first[stays] == first[goes] and not reads  # nobody removed: no read at all
    assert teacher.remove(KEY, code, gone)
    after, second = signatures()
    assert after.version > before.version and second[stays] == first[stays] and second[goes] != first[goes]
    assert reads == [code]  # both asked at one version: one read
    assert teacher.readmit(KEY, code, gone)
    assert signatures()[1] == first
    teacher.reveal(KEY, code, "which:3")
    assert signatures()[1][stays] != first[stays]
    teacher.send(KEY, code, "worked-example", {})
    sent = signatures()[1]
    assert sent[stays] == sent[goes] and sent[stays] not in first.values()  # a send changes it, for both alike


def test_made_up_codes_cost_one_read_a_second_and_a_new_class_is_found_at_the_next(tmp_path, monkeypatch):
    """``known``: a flood of made-up codes reads the store's codes at most once a CODES_READ_S; a
    class opened in another process since the last read is not known yet, ``codes_wait`` says how
    long until it is, and ``member`` then finds its student (removed or not) and no one else."""
    from server.class_store import new_session_id
    monkeypatch.setattr(follow, "CODES_READ_S", 600.0)  # no read again within the test, however slow the host
    teacher, here = two_processes(f"sqlite:///{tmp_path / 'classes.sqlite3'}")
    board = FollowBoard(here)
    reads = []
    real = here.class_codes
    here.class_codes = lambda: reads.append(1) or real()
    assert not any(board.known(f"ZZZZ{n:02d}") for n in range(200)) and len(reads) == 1
    code = teacher.open_class(KEY).code
    student, stranger = new_session_id(), new_session_id()
    teacher.join(code, student, "10.0.0.1")
    assert 590 < board.codes_wait(code) <= 600 and not board.known(code) and not board.member(code, student)
    monkeypatch.setattr(follow, "CODES_READ_S", 0.0)  # the time has come: the next look reads again
    assert board.codes_wait(code) == 0 and board.member(code, student) and not board.member(code, stranger)
    assert len(reads) == 2
    teacher.remove(KEY, code, teacher.member(code, student).nickname)
    assert board.member(code, student)  # a removed student's tab still hears of an Undo


def test_a_followers_request_needs_no_read_once_its_place_is_in_memory(tmp_path, monkeypatch):
    """``read=False``: what a follow request may answer on the event loop, with no worker thread (a
    send wakes a whole class's listeners at once). None ("ask with a read") before the read that
    finds it and after MEMBER_S; a removal's new version needs its read; "no" needs none."""
    teacher, here, code, board, student, other, gone = class_of_two(tmp_path)
    assert board.known(code, read=False) is None and board.member(code, student, read=False) is None
    assert board.member(code, student) and board.member(code, student, read=False) is True
    assert board.known(code, read=False) is True and board.known("ZZZZ99", read=False) is None
    assert board.member(code, other, read=False) is None and not board.member("", student, read=False)
    monkeypatch.setattr(follow, "MEMBER_S", 0.0)
    assert board.member(code, student, read=False) is None  # too old: read again
    state = here.follow(code)
    assert board.removed(state, student, read=False) is False  # nobody removed: nothing to read
    teacher.remove(KEY, code, gone)
    state = here.follow(code)
    assert board.removed(state, other, read=False) is None  # this version's removed ids are not read yet
    assert board.removed(state, other) and board.removed(state, other, read=False) is True
    assert board.removed(state, student, read=False) is False
    teacher.readmit(KEY, code, gone)
    assert board.removed(here.follow(code), other, read=False) is False  # let back in: nobody removed again


def test_a_change_made_while_the_board_reads_is_not_hidden_by_that_read(tmp_path):
    """The teacher's *Reveal* changes the class, then their own page asks the board (the projected
    page follows nobody, so nothing redraws it later). A read of the board's thread that began
    before the change and ends after it must not be taken for fresh: the page would draw the class
    as it was, without the solution."""
    teacher, here = two_processes(f"sqlite:///{tmp_path / 'classes.sqlite3'}")
    code = teacher.open_class(KEY).code
    board = FollowBoard(here)
    assert board.state(code).revealed is None
    real, began, go = here.follow_many, threading.Event(), threading.Event()

    def slow_read(codes):
        states = real(codes)  # read before the change…
        began.set()
        go.wait(10)  # …and handed back after it
        return states
    here.follow_many = slow_read
    reading = threading.Thread(target=board._read, args=([code],))
    reading.start()
    assert began.wait(10)
    here.follow_many = real
    here.reveal(KEY, code, "which:3")  # this process's change: the board is told (changed)
    go.set()
    reading.join(10)
    assert board.state(code).revealed == "which:3"


@pytest.mark.server
def test_a_page_followed_inside_the_session_is_the_page_its_link_opens(tiny_zoo, tmp_path):
    """What the class bench checks on every follow (its "mismatches"): the teacher's page opened by
    a follower's listener inside its session draws what a fresh load of the sent link draws, every
    element at its place, the listener's too (its version and address aside, as the bench's digest
    leaves them; the follow panel's one-off chart warm-up is not the page's)."""
    from helpers.lecture import load_bench
    bench = load_bench()  # and the bench's folder on the path, for its modules below
    from classroom_lesson import sent_link
    from classroom_modes import until_sent
    store = ClassStore(f"sqlite:///{tmp_path / 'classes.sqlite3'}", teacher_key=KEY)
    code = store.open_class(KEY).code
    env = {"ATTN_EXPLORER_CHECKPOINTS": str(tiny_zoo), "ATTN_EXPLORER_CLASS_DB": store.url,
           "ATTN_EXPLORER_TEACHER_KEY": KEY, "OMP_NUM_THREADS": "1"}

    async def both(base: str) -> list[tuple]:
        follower = bench.Tab(base, 60, load_page=True)
        await follower.do(("open", "exercises", f"class={code}"))
        digests = []
        for page, params in (("worked-example", {}), ("exercises", {"ex": "which", "seed": "3"})):
            await asyncio.sleep(0.5)  # the listener waiting again
            await asyncio.to_thread(store.send, KEY, code, page, params)
            _, followed, error = await until_sent(follower, page, time.perf_counter() + 60)
            fresh = bench.Tab(base, 60, load_page=True)
            _, opened, fresh_error = await fresh.do(("open", *sent_link(page, params, code)))
            await fresh.close()
            digests.append((page, error, fresh_error, followed, opened))
        await follower.close()
        return digests

    try:
        with bench.server(None, env=env) as target:
            digests = asyncio.run(both(target.base))
    finally:
        store.engine.dispose()
    for page, error, fresh_error, followed, opened in digests:
        assert error is None and fresh_error is None and followed == opened, (page, error, fresh_error)


def test_a_reveal_changes_the_page_signature_of_the_tabs_it_changes_only(tmp_path):
    """``page_signature``'s ``shows``: the exercise whose reveal would change a tab's page. A tab that
    answered it ("": the solution shows already) or is on another page keeps its signature at a
    reveal, so its listener reruns nothing; a tab on the exercise that did not answer changes when
    that exercise is revealed and again when another one is; "*" (the page not known) at any reveal."""
    from server.follow import page_signature
    teacher, here, code, board, *_ = class_of_two(tmp_path)
    teacher.send(KEY, code, "exercises", {"ex": "which", "seed": "3"})

    def signatures():
        state = here.follow(code)
        return {shows: page_signature(code, state, False, shows) for shows in ("", "which:3", "which:4", "*")}

    before = signatures()
    teacher.reveal(KEY, code, "which:3")
    revealed = signatures()
    assert revealed[""] == before[""] and revealed["which:4"] == before["which:4"]
    assert revealed["which:3"] != before["which:3"] and revealed["*"] != before["*"]
    teacher.reveal(KEY, code, "which:4")  # another exercise revealed: which:3's solution is no longer shown
    again = signatures()
    assert again[""] == before[""] and again["which:3"] == before["which:3"]
    assert again["which:4"] != before["which:4"] and len(set(again.values())) == 3


def test_a_followers_listener_names_the_exercise_it_shows_until_it_is_answered(store):
    """The listener's signature says what a reveal would change on the page: on the Exercises page
    opened by its link, any reveal ("*": drawn before the page took its exercise); then the exercise
    shown (``shows`` in its request, and in its data-page); and nothing once this tab answered it,
    drawn again in its place on the very run of the answer (here *Show me the solution*, which counts
    as an answer given up), so the class's reveal reruns nothing there."""
    from urllib.parse import parse_qs, urlsplit
    from helpers.apptest import new_app
    from conftest import ROOT, TEACHER_KEY
    from server.follow import follow_board, page_signature
    code = store.open_class(TEACHER_KEY).code
    store.send(TEACHER_KEY, code, "exercises", {"ex": "which", "seed": "2"})
    at = new_app(str(ROOT / "navigation.py"), 60)
    at.query_params.update({"class": code, "ex": "which", "seed": "2"})
    at.switch_page("app_pages/exercises.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]

    def listener() -> tuple[str, str]:
        bodies = [h.proto.body for h in at.get("html") if 'id="attn-follow"' in h.proto.body]
        assert len(bodies) == 1  # drawn again in its place, not beside
        body = bodies[0]
        url = body.split('data-url="', 1)[1].split('"', 1)[0].replace("&amp;", "&")
        return parse_qs(urlsplit(url).query, keep_blank_values=True)["shows"][0], body

    assert listener()[0] == "*"
    at.run()
    shows, body = listener()
    assert shows == "which:2"
    assert f'data-page="{page_signature(code, follow_board().state(code), False, "which:2")}"' in body
    at.button(key="ex_give_up_which:2").click().run()
    assert not at.exception, [e.value for e in at.exception]
    shows, body = listener()
    assert shows == ""
    assert f'data-page="{page_signature(code, follow_board().state(code), False, "")}"' in body


def test_the_bell_is_heard_by_its_name_or_when_events_were_lost():
    """An inotify read wakes a board for the store's bell (once a ring: at its close), or for an
    overflowed queue (the bell's own event may be among those lost), never for the store's other files."""
    from server.class_store.writes import _IN_HEADER, _rang

    def event(mask: int, name: bytes = b"") -> bytes:
        padded = name + b"\0" * (-len(name) % 16 or (16 if name else 0))
        return _IN_HEADER.pack(1, mask, 0, len(padded)) + padded
    bell = b"classes.sqlite3-follow"
    assert _rang(event(0x2, b"classes.sqlite3-wal") + event(0x8, bell), bell)
    assert not _rang(event(0x100, bell) + event(0x2, bell), bell)  # made and written: heard once, at its close
    assert not _rang(event(0x2, b"classes.sqlite3-wal") + event(0x2, b"classes.sqlite3-shm"), bell)
    assert not _rang(event(0x2, b"x" + bell), bell)
    assert _rang(_IN_HEADER.pack(-1, 0x4000, 0, 0), bell)
