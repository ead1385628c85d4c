"""The class store (server/class_store/) on SQLite and on a real, throwaway PostgreSQL
cluster (conftest.postgres_url): answers from many threads at once, its bounds, expiry, the
teacher's key, following the teacher, and a database that is down."""
from __future__ import annotations

import threading
import time

import pytest
import sqlalchemy as sa

from server.class_store import (AnswerRefused, ClassStore, MAX_ANSWER_BYTES, MAX_ATTEMPTS, new_session_id, NotTeacher,
                                normalise_code, StoreUnavailable)
from server.class_store.schema import answers

KEY = "teacher-secret"


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'classes.sqlite3'}"
    return request.getfixturevalue("postgres_url")


@pytest.fixture
def store(store_url):
    s = ClassStore(store_url, hours=1, teacher_key=KEY)
    yield s
    s.engine.dispose()


def joined(store, code: str, address: str = "10.0.0.1") -> str:
    """A new student id on the class's roster (a student answers once joined)."""
    session = new_session_id()
    store.join(code, session, address)
    return session


def rows(store) -> int:
    store._ensure_schema()
    with store.engine.connect() as conn:
        return conn.execute(sa.select(sa.func.count()).select_from(answers)).scalar_one()


def at_once(n: int, student, timeout: float) -> None:
    """``student(k)`` for k < n, each on its own thread, all released at the same moment."""
    start = threading.Barrier(n)

    def run(k: int):
        start.wait()
        student(k)
    threads = [threading.Thread(target=run, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)


def test_thirty_threads_of_ten_answers_lose_nothing(store_url):
    """30 students answer 10 exercises each, all at once, through two stores on one database
    (two server processes): 300 rows, and the teacher's summary counts exactly 300."""
    from server.answers import class_summary
    stores = [ClassStore(store_url, hours=1, teacher_key=KEY) for _ in range(2)]
    code = stores[0].open_class(KEY).code
    errors = []

    def student(k: int):
        store = stores[k % 2]
        session = joined(store, code)
        for n in range(10):
            try:
                store.submit(code, f"step:{n}", session, {"weights": [0.1 * k, 0.2, n]}, correct=k % 3 == 0)
            except Exception as e:  # noqa: BLE001 - every failure is counted, none may happen
                errors.append(repr(e))
    at_once(30, student, timeout=120)
    assert errors == []
    stored = stores[1].summary(KEY, code)
    assert len(stored) == 300 and len({(a.session, a.exercise) for a in stored}) == 300
    summary = class_summary(stored)
    assert sum(s.answers for s in summary.values()) == 300
    assert all(s.answers == 30 and s.correct == 10 for s in summary.values()) and len(summary) == 10
    for s in stores:
        s.engine.dispose()


def test_no_open_class_writes_nothing(store):
    before = rows(store)
    session = new_session_id()
    for code in ("", "NOPE22", "ABCDEF"):
        with pytest.raises(AnswerRefused):
            store.submit(code, "align:3", session, {"marks": [[0, 0]]}, True)
    closed = store.open_class(KEY).code
    store.close_class(KEY, closed)
    with pytest.raises(AnswerRefused, match="closed"):
        store.submit(closed, "align:3", session, {"marks": [[0, 0]]}, True)
    assert rows(store) == before


def test_an_expired_class_refuses_answers_then_is_deleted(store_url):
    store = ClassStore(store_url, hours=0.5 / 3600, teacher_key=KEY)  # half a second
    code = store.open_class(KEY).code
    session = joined(store, code)
    assert store.submit(code, "which:1", session, {"choice": "dot"}, False) == 1
    time.sleep(0.7)
    assert not store.class_info(code).open
    with pytest.raises(AnswerRefused, match="closed"):
        store.submit(code, "which:1", session, {"choice": "dot"}, False)
    assert store.purge_expired() >= 1
    assert store.class_info(code) is None
    with store.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(answers)
                            .where(answers.c.class_code == code)).scalar_one() == 0
    store.engine.dispose()


def test_answers_are_bounded(store):
    code = store.open_class(KEY).code
    session = joined(store, code)
    with pytest.raises(AnswerRefused, match=f"{MAX_ANSWER_BYTES} bytes"):
        store.submit(code, "align:1", session, {"marks": "x" * MAX_ANSWER_BYTES}, None)
    for attempt in range(1, MAX_ATTEMPTS + 1):
        assert store.submit(code, "align:1", session, {"marks": [[attempt, 0]]}, False) == attempt
    with pytest.raises(AnswerRefused, match="already"):
        store.submit(code, "align:1", session, {"marks": [[0, 0]]}, True)
    for exercise, who in (("Bad id!", session), ("align:1", "not-hex"), ("x" * 80, session)):
        with pytest.raises(AnswerRefused):
            store.submit(code, exercise, who, {}, None)
    assert len(store.summary(KEY, code)) == MAX_ATTEMPTS


def test_the_roster_cap_holds_when_students_join_at_once(store_url, monkeypatch):
    """Sixteen students join at the same moment, through two stores on one database (two server
    processes), when the class has room for one more: exactly one joins, whatever the database."""
    monkeypatch.setenv("ATTN_EXPLORER_CLASS_SEATS", "5")
    stores = [ClassStore(store_url, hours=1, teacher_key=KEY) for _ in range(2)]
    code = stores[0].open_class(KEY).code
    for n in range(4):
        stores[0].submit(code, f"which:{n}", joined(stores[0], code), {"pick": n}, True)
    stored, refused = [], []

    def student(k: int):
        try:
            stores[k % 2].join(code, new_session_id(), f"10.0.1.{k}")
            stored.append(k)
        except AnswerRefused as e:
            refused.append(str(e))
    at_once(16, student, timeout=60)
    assert len(stored) == 1 and len(refused) == 15 and all("its 5 seats taken" in r for r in refused)
    assert stores[1].class_counts(KEY, code).joined == 5
    for s in stores:
        s.engine.dispose()


def test_without_the_key_nothing_of_the_teachers(store):
    code = store.open_class(KEY).code
    store.submit(code, "which:2", joined(store, code), {"choice": "general"}, True)
    for key in (None, "", "teacher", KEY + " ", KEY.upper()):
        with pytest.raises(NotTeacher):
            store.open_class(key)
        with pytest.raises(NotTeacher):
            store.summary(key, code)
        with pytest.raises(NotTeacher):
            store.send(key, code, "exercises", {"ex": "which", "seed": "2"})
        with pytest.raises(NotTeacher):
            store.reveal(key, code, "which:2")
        with pytest.raises(NotTeacher):
            store.close_class(key, code)
    assert store.class_info(code).open and store.follow(code).version == 0


def test_following_the_teacher(store):
    code = store.open_class(KEY).code
    assert store.follow(code.lower()).page is None
    v1 = store.send(KEY, code, "step-through", {"text": "Où est la gare ?", "model": "rnnsearch", "step": 3})
    state = store.follow(code)
    assert (state.version, state.page, state.params, state.revealed) == (
        v1, "step-through", {"text": "Où est la gare ?", "model": "rnnsearch", "step": "3"}, None)
    v2 = store.reveal(KEY, code, "align:7")
    assert store.follow(code).revealed == "align:7" and v2 == v1 + 1
    store.send(KEY, code, "exercises", {"ex": "step", "seed": "4"})
    assert store.follow(code).revealed is None  # a new exercise starts unrevealed
    store.close_class(KEY, code)
    assert not store.follow(code).open
    assert store.follow("ZZZZZZ") is None and store.follow("bad") is None


def test_the_class_says_whether_it_counts_an_exercise(store):
    """ClassStore.counts: what a student is told before answering (the lesson's check): counted once
    the teacher sent it, practice before; the practice catalogue always; any other id never."""
    code = store.open_class(KEY).code
    assert not store.counts(code, "check:before:weights-recall")
    store.add_exercise(KEY, code, "check:before:weights-recall")
    assert store.counts(code.lower(), "check:before:weights-recall")
    assert not store.counts(code, "check:after:weights-recall") and not store.counts(None, "check:before:weights-recall")
    assert not store.counts(code, "not an id at all!") and not store.counts("ZZZZZZ", "check:before:weights-recall")


def test_a_generated_key_is_shared_by_every_process_on_the_store(store_url):
    first, second = ClassStore(store_url), ClassStore(store_url)
    key = first.teacher_key()
    assert len(key) >= 12 and second.teacher_key() == key and second.is_teacher(key)
    assert not second.is_teacher(key[:-1]) and ClassStore(store_url, teacher_key="given").teacher_key() == "given"
    for s in (first, second):
        s.engine.dispose()


def test_a_store_that_is_down_says_so(tmp_path):
    down = ClassStore("postgresql://postgres@127.0.0.1:9/nowhere", teacher_key=KEY)
    with pytest.raises(StoreUnavailable):
        down.submit("ABCDEF", "align:1", new_session_id(), {}, None)
    with pytest.raises(StoreUnavailable):
        down.follow("ABCDEF")
    with pytest.raises(StoreUnavailable, match="ATTN_EXPLORER_CLASS_DB"):
        ClassStore("nosuchdb://x/y", teacher_key=KEY).submit("ABCDEF", "align:1", new_session_id(), {}, None)
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    with pytest.raises(StoreUnavailable):
        ClassStore(f"sqlite:///{blocked / 'classes.sqlite3'}", teacher_key=KEY).follow("ABCDEF")


def test_class_codes_as_typed():
    assert normalise_code(" abc-234 ") == "ABC234" and normalise_code("ABC23") == "" and normalise_code("ABC10O") == ""


WRITER = """
import sys, threading
sys.path.insert(0, {root!r})
from server.class_store import ClassStore, new_session_id
store = ClassStore({url!r}, teacher_key={key!r})
errors = []
def student():
    session = new_session_id()
    store.join({code!r}, session, "10.0.0.1")
    for n in range(10):
        try:
            store.submit({code!r}, f"which:{{n}}", session, {{"label": "dot"}}, False)
        except Exception as e:
            errors.append(repr(e))
threads = [threading.Thread(target=student) for _ in range(8)]
[t.start() for t in threads]
[t.join() for t in threads]
print(len(errors), errors[:3])
"""


def test_two_server_processes_share_one_sqlite_file(tmp_path):
    """The lecture setup: separate processes (as behind HAProxy), 8 threads each, one file."""
    import subprocess
    import sys
    from conftest import ROOT
    url = f"sqlite:///{tmp_path / 'classes.sqlite3'}"
    store = ClassStore(url, teacher_key=KEY)
    code = store.open_class(KEY).code
    script = WRITER.format(root=str(ROOT), url=url, key=KEY, code=code)
    procs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert outputs == ["0 []", "0 []"] and len(store.summary(KEY, code)) == 2 * 8 * 10
    store.engine.dispose()


def test_one_student_is_stopped_at_their_own_cap_and_another_is_still_counted(store):
    """One id answering every exercise the class counts (the practice catalogue and 40 the teacher
    sent) is refused at its own cap; a second student's answer is then accepted."""
    from server.class_store import MAX_STUDENT_EXERCISES, PRACTICE_SEEDS
    code = store.open_class(KEY).code
    for n in range(100, 140):
        store.send(KEY, code, "exercises", {"ex": "which", "seed": n})
    counted = [f"{kind}:{n}" for kind in ("align", "step", "which") for n in range(PRACTICE_SEEDS)]
    counted += [f"which:{n}" for n in range(100, 140)]
    greedy, honest = joined(store, code), joined(store, code)
    refused = 0
    for exercise in counted:
        try:
            store.submit(code, exercise, greedy, {"label": "x"}, correct=False)
        except AnswerRefused as e:
            refused += 1
            assert "the most one student may" in str(e)
    assert refused == len(counted) - MAX_STUDENT_EXERCISES
    assert store.submit(code, "which:139", honest, {"label": "y"}, correct=True) == 1
    assert store.submit(code, "which:0", honest, {"label": "y"}, correct=True) == 1


def test_the_cookie_secret_is_one_per_store(store_url):
    stores = [ClassStore(store_url, hours=1, teacher_key=KEY) for _ in range(2)]
    assert stores[0].known_cookie_secret() is None  # not read yet: the event loop's fast path finds nothing
    secret = stores[0].cookie_secret()
    assert len(secret) == 32 and stores[1].cookie_secret() == secret
    assert stores[0].known_cookie_secret() == secret  # read once, then known without a read
    for s in stores:
        s.engine.dispose()


def test_a_processs_writes_to_sqlite_take_turns_before_they_hold_a_connection(tmp_path):
    """While one write transaction of this process is under way, another waits for it on the
    process's lock, holding no connection, instead of sleeping in SQLite's busy handler on a
    connection of its own (which backs off up to 100 ms a try). Reads go on meanwhile (WAL); an
    answer, one statement that holds SQLite's lock only inside SQLite, waits in the busy handler
    and is stored once the transaction ends."""
    store = ClassStore(f"sqlite:///{tmp_path / 'classes.sqlite3'}", hours=1, teacher_key=KEY)
    code = store.open_class(KEY).code
    store.add_exercise(KEY, code, "which:0")
    first, second = joined(store, code), joined(store, code)
    inside, release = threading.Event(), threading.Event()

    def slow_write(conn):  # a transaction begun as a write (BEGIN IMMEDIATE): it holds SQLite's write lock
        inside.set()
        assert release.wait(10)
    writer = threading.Thread(target=store._run, args=(slow_write,), kwargs={"write": True})
    writer.start()
    assert inside.wait(10)
    other = threading.Thread(target=store._run, args=(lambda conn: None,), kwargs={"write": True})
    answer = threading.Thread(target=store.submit, args=(code, "which:0", second, {"label": "x"}, True))
    try:
        other.start()
        answer.start()
        time.sleep(0.3)
        assert store.engine.pool.checkedout() == 2  # the slow write and the answer; the other write waits on the lock
        assert store.member(code, first) is not None  # a read is not held up
        assert store.summary(KEY, code) == []  # the answer waits for SQLite's lock
    finally:
        release.set()
        writer.join(10)
        other.join(10)
        answer.join(20)
    assert [a.session for a in store.summary(KEY, code)] == [second]  # then its turn came
    store.engine.dispose()


def test_a_join_and_an_answer_on_sqlite_write_in_one_statement(tmp_path):
    """A student let in at once and an answer the class counts are each one statement in autocommit,
    so SQLite's write lock is never held while the thread waits for the GIL between statements
    (``python bench/store_burst.py --busy 2``); where one would be refused, the transaction runs
    and says why, as before."""
    store = ClassStore(f"sqlite:///{tmp_path / 'classes.sqlite3'}", hours=1, teacher_key=KEY)
    ran: list[str] = []

    @sa.event.listens_for(store.engine, "connect")
    def trace(dbapi_connection, record):
        dbapi_connection.set_trace_callback(ran.append)
    code = store.open_class(KEY).code
    store.add_exercise(KEY, code, "which:0")
    store.cookie_secret()  # the store's own secret, made once by its first join

    def written(act) -> list[str]:
        ran.clear()
        act()
        return [s.split()[0] + " " + s.split()[2] if s.startswith("INSERT") else s.split()[0] + " " + s.split()[1]
                for s in ran if s.startswith(("INSERT", "BEGIN IMMEDIATE", "UPDATE", "DELETE"))]

    student = new_session_id()
    assert written(lambda: store.join(code, student, "10.0.0.1")) == ["INSERT roster"]
    assert written(lambda: store.submit(code, "which:0", student, {"label": "x"}, True)) == ["INSERT answers"]
    assert store.summary(KEY, code)[0].attempt == 1
    assert store.submit(code, "which:0", student, {"label": "y"}, False) == 2
    assert store.submit(code, "which:0", student, {"label": "z"}, False) == 3
    ran.clear()
    with pytest.raises(AnswerRefused, match="3 times already"):
        store.submit(code, "which:0", student, {"label": "w"}, False)
    assert any(s.startswith("BEGIN IMMEDIATE") for s in ran)  # the one statement wrote nothing: the transaction says why
    store.lock(KEY, code)
    late = new_session_id()
    with pytest.raises(AnswerRefused, match="locked"):
        store.join(code, late, "10.0.0.1")
    assert store.member(code, late) is None
    stranger = new_session_id()
    with pytest.raises(AnswerRefused, match="join class"):
        store.submit(code, "which:0", stranger, {"label": "x"}, True)
    assert len(store.summary(KEY, code)) == 3
    store.engine.dispose()


def test_joins_get_distinct_nicknames_when_the_drawn_ones_are_taken(store, monkeypatch):
    """Once the drawn pairs are taken (four pairs here; 1,024 in the app), a join numbers one:
    never a name twice in a class."""
    from server.class_store import roster
    monkeypatch.setattr(roster, "ADJECTIVES", ("Calm", "Bold"))
    monkeypatch.setattr(roster, "ANIMALS", ("Heron", "Otter"))
    code = store.open_class(KEY).code
    store.set_admission(KEY, code, seats=40)
    names = [store.join(code, new_session_id(), f"10.0.{k}.1").nickname for k in range(12)]
    assert len(set(names)) == 12 and sum(" " in n and n.rsplit(" ", 1)[1].isdigit() for n in names) == 8, names
