"""The class store when something goes wrong: a row locked by another connection, PostgreSQL
stopped mid-lesson and started again, a SQLite folder that cannot be written; and what it
refuses (ids with a trailing newline, answers nested too deep), the files it writes (0600) and
the teacher's *New key*."""
from __future__ import annotations

import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from conftest import _postgres_bin
from helpers import until
from server.class_store import (AnswerRefused, ClassStore, MAX_ANSWER_DEPTH, new_session_id, NotTeacher, StoreBusy,
                                StoreUnavailable)
from server.class_store.schema import classes

KEY = "teacher-secret-key"
ROOT = Path(__file__).resolve().parent.parent


def test_ids_match_whole_strings_and_deep_answers_are_refused(tmp_path):
    store = ClassStore(f"sqlite:///{tmp_path / 'c.sqlite3'}", teacher_key=KEY)
    code = store.open_class(KEY).code
    session = new_session_id()
    store.join(code, session, "10.0.0.1")
    for exercise, who in (("align:1\n", session), ("align:1", session + "\n")):
        with pytest.raises(AnswerRefused, match="valid exercise"):
            store.submit(code, exercise, who, {}, None)
    with pytest.raises(AnswerRefused):
        store.reveal(KEY, code, "align:1\n")
    deep: list = []
    for _ in range(100_000):  # json.dumps alone would raise RecursionError
        deep = [deep]
    with pytest.raises(AnswerRefused, match="nested"):
        store.submit(code, "align:1", session, {"pairs": deep}, None)
    shallow = {"pairs": [[0, 1], [1, 0]]}
    assert store.submit(code, "align:1", session, shallow, True) == 1
    nested = {"a": [[[[[1]]]]]}  # depth 6: the limit itself
    assert MAX_ANSWER_DEPTH == 6 and store.submit(code, "align:2", session, nested, None) == 1
    store.engine.dispose()


def test_a_locked_class_row_answers_busy_within_two_seconds(postgres_url):
    """Another connection holds the class row FOR UPDATE (a stuck transaction): submit refuses
    with "busy, try again" in at most 2 s, and the same answer is stored once the lock goes."""
    store = ClassStore(postgres_url, hours=1, teacher_key=KEY)
    code = store.open_class(KEY).code
    session = new_session_id()
    store.join(code, session, "10.0.0.1")
    holder = sa.create_engine(postgres_url.replace("postgresql://", "postgresql+psycopg://"))
    with holder.connect() as conn:
        conn.begin()
        conn.execute(sa.select(classes).where(classes.c.code == code).with_for_update())
        start = time.monotonic()
        with pytest.raises(StoreBusy, match="busy.*try again"):
            store.submit(code, "which:1", session, {"label": "dot"}, True)
        assert time.monotonic() - start <= 2.0
        conn.rollback()
    assert store.submit(code, "which:1", session, {"label": "dot"}, True) == 1
    assert len(store.summary(KEY, code)) == 1
    holder.dispose()
    store.engine.dispose()


def test_every_postgresql_connection_carries_the_timeouts(postgres_url):
    from server import settings
    store = ClassStore(postgres_url, teacher_key=KEY)
    with store.engine.connect() as conn:
        shown = dict(conn.exec_driver_sql(  # in milliseconds, as pg_settings keeps them
            "SELECT name, setting::int FROM pg_settings WHERE name IN "
            "('lock_timeout', 'statement_timeout', 'idle_in_transaction_session_timeout')").all())
    assert shown == {"lock_timeout": settings.PG_LOCK_TIMEOUT_MS, "statement_timeout": settings.PG_STATEMENT_TIMEOUT_MS,
                     "idle_in_transaction_session_timeout": settings.PG_IDLE_IN_TRANSACTION_MS}
    assert store.engine.pool.size() + store.engine.pool._max_overflow == settings.db_connections()
    assert settings.db_connections_for(4) * 4 <= settings.PG_APP_CONNECTIONS <= 100 - 3
    store.engine.dispose()


class Cluster:
    """A PostgreSQL cluster of this test's own (conftest's is shared by the suite), to stop and
    start again mid-lesson; as the ``postgres`` user when the suite runs as root."""

    def __init__(self):
        bin_dir = _postgres_bin()
        if bin_dir is None:
            if os.environ.get("ATTN_EXPLORER_REQUIRE_PG") == "1":
                pytest.fail("PostgreSQL is not installed: run bash scripts/setup_postgres.sh")
            pytest.skip("PostgreSQL is not installed (bash scripts/setup_postgres.sh)")
        self.bin, self.folder = bin_dir, Path(tempfile.mkdtemp(prefix="attn-pg-fault-"))
        self.as_user = []
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres", "postgres")
            self.as_user = ["runuser", "-u", "postgres", "--"]
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        self.pg("initdb", "-D", str(self.folder / "data"), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
        self.start()

    def pg(self, *cmd: str) -> None:
        subprocess.run([*self.as_user, str(self.bin / cmd[0]), *cmd[1:]], check=True, capture_output=True, timeout=120)

    def start(self) -> None:
        self.pg("pg_ctl", "-D", str(self.folder / "data"), "-l", str(self.folder / "log"), "-w", "-t", "60", "start",
                "-o", f"-h 127.0.0.1 -p {self.port} -k {self.folder}")

    def stop(self, mode: str = "fast") -> None:
        self.pg("pg_ctl", "-D", str(self.folder / "data"), "-m", mode, "-w", "stop")

    def remove(self) -> None:
        try:
            self.stop("immediate")
        except subprocess.CalledProcessError:
            pass  # stopped already
        shutil.rmtree(self.folder, ignore_errors=True)


@pytest.mark.postgres
def test_postgresql_stopped_mid_lesson_loses_no_acknowledged_answer():
    """Students answer while the database stops (as if it crashed) and starts again: while it is
    down every answer is refused with the store's notice; afterwards every answer that was
    acknowledged is there, and the same store (no server restart) takes answers again."""
    cluster = Cluster()
    try:
        store = ClassStore(cluster.url, hours=1, teacher_key=KEY)
        code = store.open_class(KEY).code
        acked, refused, done = [], [], threading.Event()

        def students():
            n = 0
            while not done.is_set():
                session, n = new_session_id(), n + 1
                try:
                    store.join(code, session, f"10.0.{n % 200}.{id(acked) % 200}")
                    store.submit(code, f"which:{n % 12}", session, {"label": "dot"}, True)
                    acked.append(session)
                except StoreUnavailable as e:
                    refused.append(str(e))
                time.sleep(0.01)
        writers = [threading.Thread(target=students) for _ in range(4)]
        for w in writers:
            w.start()
        until(lambda: len(acked) >= 20, "answers taken before the outage")
        cluster.stop("immediate")  # mid-lesson, without a clean shutdown
        down_at, before = time.monotonic(), len(acked)
        until(lambda: len(refused) >= 8, "every writer refused during the outage", 60)
        assert len(acked) - before <= 4  # at most the answers in flight when it stopped
        cluster.start()
        try:
            until(lambda: len(acked) >= before + 40, "answers taken after the restart", 30)
        except AssertionError:
            pass  # said below, with the numbers
        done.set()
        for w in writers:
            w.join(30)
        assert refused and all("class store" in r for r in refused), refused[:3]
        assert len(acked) >= before + 40, "the store took no answers after the restart"
        stored = {a.session for a in store.summary(KEY, code)}
        assert set(acked) <= stored and len(stored) - len(acked) <= 4, (len(acked), len(stored))
        assert time.monotonic() - down_at < 40
        store.engine.dispose()
    finally:
        cluster.remove()


NO_WRITE = """
import sys
sys.path.insert(0, {root!r})
from server.class_store import ClassStore, StoreUnavailable, new_session_id
store = ClassStore({url!r}, teacher_key={key!r})
for call in (lambda: store.submit({code!r}, "which:1", new_session_id(), {{}}, None), lambda: store.open_class({key!r})):
    try:
        call()
        print("stored")
    except StoreUnavailable as e:
        print("refused:", e)
"""


def test_a_sqlite_folder_that_cannot_be_written_gives_a_notice(tmp_path):
    """The store's folder made read-only mid-lesson: a server process refuses answers with a
    notice and keeps running. Run as a process of its own, without root's power to write past
    the folder's mode when the suite runs as root."""
    folder = tmp_path / "store"
    url = f"sqlite:///{folder / 'classes.sqlite3'}"
    store = ClassStore(url, teacher_key=KEY)
    code = store.open_class(KEY).code
    student = new_session_id()
    store.join(code, student, "10.0.0.1")
    store.submit(code, "which:1", student, {"label": "dot"}, True)
    store.engine.dispose()
    folder.chmod(0o500)
    (folder / "classes.sqlite3").chmod(0o400)
    try:
        as_user = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"] if os.geteuid() == 0 else []
        out = subprocess.run([*as_user, sys.executable, "-c", NO_WRITE.format(root=str(ROOT), url=url, key=KEY, code=code)],
                             capture_output=True, text=True, timeout=120)
    finally:
        folder.chmod(0o700)
    lines = out.stdout.splitlines()
    assert out.returncode == 0 and len(lines) == 2 and all(line.startswith("refused: the class store") for line in lines), \
        out.stdout + out.stderr
    assert "Traceback" not in out.stderr and "readonly" in lines[0]


def test_a_corrupt_sqlite_store_says_so_to_a_join_and_an_answer(tmp_path):
    """The store's files overwritten mid-lesson: an answer and a join (each one statement on its own
    connection, ``StoreEngine._write_at_once``) are told the store cannot be reached, as every
    other call is, never the driver's own error."""
    path = tmp_path / "classes.sqlite3"
    store = ClassStore(f"sqlite:///{path}", teacher_key=KEY)
    code = store.open_class(KEY).code
    student = new_session_id()
    store.join(code, student, "10.0.0.1")
    store.engine.dispose()
    for part in tmp_path.iterdir():
        part.write_bytes(b"not a database " * 300)
    with pytest.raises(StoreUnavailable, match="cannot be reached"):
        store.submit(code, "which:1", student, {"label": "dot"}, True)
    with pytest.raises(StoreUnavailable, match="cannot be reached"):
        store.join(code, new_session_id(), "10.0.0.2")
    store.engine.dispose()


def test_the_sqlite_store_and_its_journal_are_readable_by_nobody_else(tmp_path):
    folder = tmp_path / "new" / "store"
    store = ClassStore(f"sqlite:///{folder / 'classes.sqlite3'}")
    code = store.open_class(store.teacher_key()).code
    with store.engine.connect():  # WAL and shared memory exist while a connection is open
        student = new_session_id()
        store.join(code, student, "10.0.0.1")
        store.submit(code, "which:1", student, {"label": "dot"}, True)
        files = sorted(p.name for p in folder.iterdir())
        modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in folder.iterdir()}
    assert files == ["classes.sqlite3", "classes.sqlite3-shm", "classes.sqlite3-wal"]
    assert set(modes.values()) == {0o600} and stat.S_IMODE(folder.stat().st_mode) == 0o700
    store.engine.dispose()


def test_a_new_key_replaces_the_old_one_in_every_process(tmp_path):
    url = f"sqlite:///{tmp_path / 'classes.sqlite3'}"
    first, second = ClassStore(url), ClassStore(url)
    old = first.teacher_key()
    new = first.new_key(old)
    assert new != old and len(new) >= 12 and second.is_teacher(new) and not second.is_teacher(old)
    with pytest.raises(NotTeacher):
        second.new_key(old)
    with pytest.raises(AnswerRefused, match="ATTN_EXPLORER_TEACHER_KEY"):  # a key the server was given wins
        ClassStore(url, teacher_key=KEY).new_key(KEY)
    for s in (first, second):
        s.engine.dispose()
