"""The teacher's change signal (server/class_store/activity.py, server/class_live.py): a class's
activity signature moves with every join, wait, approval, removal and answer, and with nothing
else a student does; one read per process serves every waiting page; a wait ends when another
process changes the class; only a page with the teacher's ticket for the class may wait."""
from __future__ import annotations

import asyncio
import threading
import time

import pytest

from server.answers import answer_record
from server import class_live
from server.class_live import live_ticket, LiveBoard, ticket_valid
from server.class_store import AwaitingApproval, ClassStore, new_session_id

KEY = "live-teachers-key"


def two_processes(url: str) -> tuple[ClassStore, ClassStore]:
    """Two store objects on one database, as two server processes hold them."""
    return ClassStore(url, teacher_key=KEY), ClassStore(url, teacher_key=KEY)


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path):
    url = f"sqlite:///{tmp_path / 'classes.sqlite3'}" if request.param == "sqlite" else \
        request.getfixturevalue("postgres_url")
    s = ClassStore(url, teacher_key=KEY)
    yield s
    s.engine.dispose()


def test_the_signature_moves_with_what_the_teacher_watches_and_nothing_else(store):
    code, other = store.open_class(KEY).code, store.open_class(KEY).code
    seen = [store.activity_many([code])[code]]

    def moved() -> bool:
        now = store.activity_many([code])[code]
        changed = now != seen[-1]
        seen.append(now)
        return changed

    first, second = new_session_id(), new_session_id()
    store.join(code, first, "10.0.0.1")
    assert moved()  # a join
    store.join(code, first, "10.0.0.1")
    assert not moved()  # the same student back (a reload): nothing new
    store.submit(code, "which:3", first, answer_record("Bahdanau", True, []), True)
    assert moved()  # an answer
    store.submit(code, "which:4", first, answer_record("Luong", False, []), False)
    assert moved()  # another
    store.set_admission(KEY, code, approve=True)
    try:
        store.join(code, second, "10.0.0.2")
    except AwaitingApproval:
        pass
    assert moved()  # a student waiting
    assert store.approve_join(KEY, code) == 1
    assert moved()  # let in
    name = store.member(code, second).nickname
    store.remove(KEY, code, name)
    assert moved()  # removed
    store.readmit(KEY, code, name)
    assert moved()  # put back
    store.join(other, new_session_id(), "10.0.0.3")
    assert not moved()  # another class's join
    assert set(store.activity_many([code, other, "ZZZZZZ", ""])) == {code, other}  # one read, unknown left out


def test_one_read_serves_every_page_and_a_change_elsewhere_ends_the_wait(tmp_path):
    teacher, here = two_processes(f"sqlite:///{tmp_path / 'classes.sqlite3'}")
    code = teacher.open_class(KEY).code
    board = LiveBoard(here)
    seen = []

    def page():
        for _ in range(50):
            seen.append(board.signature(code))

    pages = [threading.Thread(target=page) for _ in range(8)]
    for t in pages:
        t.start()
    for t in pages:
        t.join()
    assert len(set(seen)) == 1 and board.reads < 40, board.reads  # 400 looks, a few reads
    start = seen[0]

    async def scenario():
        quiet = await board.wait(code, start, timeout=0.3)  # nothing happened: the same signature
        waiting = asyncio.create_task(board.wait(code, start, timeout=30))
        await asyncio.sleep(0.2)
        assert not waiting.done()
        await asyncio.to_thread(teacher.join, code, new_session_id(), "10.0.0.1")  # in "another process"
        joined = await asyncio.wait_for(waiting, 30)
        stale = await board.wait(code, start, timeout=30)  # a page still showing the old one: answered at once
        return quiet, joined, stale

    quiet, joined, stale = asyncio.run(scenario())
    assert quiet == start and joined != start and stale == joined
    assert board.signature("ABCDEF") is None


def test_only_the_teachers_ticket_for_the_class_waits():
    secret, other = b"s" * 32, b"t" * 32
    ticket = live_ticket(secret, "ABC234", now=1000.0)
    assert ticket_valid(secret, "ABC234", ticket, now=2000.0)
    assert ticket_valid(secret, "abc 234", ticket, now=2000.0)  # the code as typed
    assert not ticket_valid(secret, "ABC235", ticket, now=2000.0)  # another class
    assert not ticket_valid(other, "ABC234", ticket, now=2000.0)  # another store's secret
    assert not ticket_valid(secret, "ABC234", ticket, now=1000.0 + 13 * 3600)  # expired
    until, mac = ticket.split(".")
    assert not ticket_valid(secret, "ABC234", f"{int(until) + 3600}.{mac}", now=2000.0)  # a longer life forged
    assert not ticket_valid(secret, "ABC234", None) and not ticket_valid(None, "ABC234", ticket)


def test_a_quiet_class_is_not_read_again_and_a_commit_brings_a_read(tmp_path):
    """The board's thread reads the signatures again only after a commit (SQLite's ``data_version``)
    or QUIET_READ_S: a teacher watching a class where nothing happens costs no queries."""
    teacher, here = two_processes(f"sqlite:///{tmp_path / 'classes.sqlite3'}")
    code = teacher.open_class(KEY).code
    board = LiveBoard(here)
    start = board.signature(code)
    time.sleep(3 * class_live.POLL_S)  # the thread's first look, which knows nothing yet, reads
    before = board.reads
    time.sleep(6 * class_live.POLL_S)
    quiet = board.reads - before
    assert quiet <= 1, quiet  # the QUIET_READ_S read at most
    teacher.join(code, new_session_id(), "10.0.0.1")
    deadline = time.monotonic() + 30
    while board.signature(code) == start and time.monotonic() < deadline:
        time.sleep(0.05)
    assert board.signature(code) != start and board.reads > before + quiet
