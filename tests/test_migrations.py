"""The class store's schema history (server/class_store/migrations/) on SQLite and on a real,
throwaway PostgreSQL cluster: a store at the base revision, or from before the history, upgraded
with every row kept; the tables and the revisions agreeing; a store from a newer version refused;
processes starting together upgrading one store once."""
from __future__ import annotations

import threading
import time

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from server.class_store import ClassStore, engine_for, StoreUnavailable
from server.class_store import migrations
from server.class_store.schema import metadata

KEY = "teacher-secret-key"
CODE = "ABC234"
STUDENT = "0123456789abcdef"
NOW = time.time()

# one row in every one of the base revision's tables, as the app writes them
BASE_ROWS = {
    "classes": {"code": CODE, "opened_at": NOW, "expires_at": NOW + 3600, "closed": False, "follow_version": 3,
                "follow_page": "exercises", "follow_params": '{"kind": "step"}', "revealed": "step:1"},
    "answers": {"id": 1, "class_code": CODE, "exercise": "step:1", "session": STUDENT, "attempt": 1,
                "answer": '{"weights": [0.5, 0.5]}', "correct": True, "answered_at": NOW + 1},
    "meta": {"name": "teacher_key", "value": KEY},
    "roster": {"class_code": CODE, "session": STUDENT, "nickname": "Brave Otter", "joined_at": NOW,
               "address": "a1b2c3", "removed": False},
    "class_exercises": {"class_code": CODE, "exercise": "step:1", "added_at": NOW},
    "class_admission": {"class_code": CODE, "seats": 40, "approve": True, "joins_until": NOW + 600},
    "join_requests": {"class_code": CODE, "session": "fedcba9876543210", "nickname": "Calm Heron",
                      "asked_at": NOW + 2, "address": "d4e5f6"},
    "class_locks": {"class_code": CODE, "locked_at": NOW + 3},
    "teacher_sessions": {"token_hash": "ab" * 32, "class_code": CODE, "key_tag": "0123abcd", "expires_at": NOW + 3600,
                         "ticket_until": NOW + 60, "redeemed": True, "revoked": False},
}


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'classes.sqlite3'}"
    url = request.getfixturevalue("postgres_url")
    engine = engine_for(url)  # one cluster for the session: each test starts from an empty database
    with engine.begin() as conn:
        conn.execute(sa.text("DROP SCHEMA public CASCADE"))
        conn.execute(sa.text("CREATE SCHEMA public"))
    engine.dispose()
    return url


@pytest.fixture
def engine(store_url):
    e = engine_for(store_url)
    yield e
    e.dispose()


def fill(engine) -> None:
    """BASE_ROWS written through the store's own tables as they are, not through schema.py."""
    with engine.begin() as conn:
        tables = sa.MetaData()
        tables.reflect(conn)
        for name, row in BASE_ROWS.items():
            conn.execute(tables.tables[name].insert().values(**row))


def every_row(engine) -> dict[str, list[dict]]:
    with engine.connect() as conn:
        tables = sa.MetaData()
        tables.reflect(conn, only=list(BASE_ROWS))
        return {name: [dict(r._mapping) for r in conn.execute(sa.select(tables.tables[name]))] for name in BASE_ROWS}


def revision_of(engine) -> str | None:
    with engine.connect() as conn:
        return migrations.store_revision(conn)


def differences(engine) -> list:
    """What Alembic's autogenerate finds between schema.py's tables and the store's."""
    with engine.connect() as conn:
        return compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}), metadata)


def assert_rows_kept(store_url: str, engine) -> None:
    """Every row as written (columns added since the base aside), and the class, its answer, its
    roster and its teacher key as the store reads them."""
    rows = {name: [{k: r[k] for k in BASE_ROWS[name]} for r in found] for name, found in every_row(engine).items()}
    assert rows == {name: [row] for name, row in BASE_ROWS.items()}
    store = ClassStore(store_url, hours=1)  # no key given: the store's own, from ``meta``
    try:
        assert store.teacher_key() == KEY
        assert store.class_info(CODE).open
        assert [(a.exercise, a.session, a.answer, a.correct) for a in store.summary(KEY, CODE)] == [
            ("step:1", STUDENT, {"weights": [0.5, 0.5]}, True)]
        assert [(r.nickname, r.answers) for r in store.roster_of(KEY, CODE)] == [("Brave Otter", 1)]
        assert store.locked(CODE) and store.admission(CODE).seats == 40
        assert store.waiting_students(KEY, CODE)[0][0] == "Calm Heron"
        assert (store.follow(CODE).version, store.follow(CODE).revealed) == (3, "step:1")
    finally:
        store.engine.dispose()


def test_a_store_at_the_base_revision_keeps_every_row_through_upgrade_head(store_url, engine):
    assert migrations.upgrade(engine, migrations.BASE) == migrations.BASE
    assert revision_of(engine) == migrations.BASE
    fill(engine)
    assert migrations.upgrade(engine) == migrations.head()
    assert revision_of(engine) == migrations.head()
    assert_rows_kept(store_url, engine)


def test_a_store_from_before_the_history_is_the_base_revision_stamped(store_url, engine):
    """A store that create_all made (the base revision's tables, no alembic_version): the first
    start stamps it and upgrades it, every row kept."""
    migrations.upgrade(engine, migrations.BASE)
    with engine.begin() as conn:
        conn.execute(sa.text("DROP TABLE alembic_version"))
    fill(engine)
    assert_rows_kept(store_url, engine)  # a ClassStore's first call upgrades it
    assert revision_of(engine) == migrations.head()
    assert differences(engine) == []


def test_a_store_missing_a_table_gets_it_from_the_base_revision(store_url, engine):
    """A store from before the history that lacks a table (made by an older create_all): the
    base revision makes that table and keeps the others' rows."""
    migrations.upgrade(engine, migrations.BASE)
    with engine.begin() as conn:
        conn.execute(sa.text("DROP TABLE alembic_version"))
        conn.execute(sa.text("DROP TABLE teacher_sessions"))
        conn.execute(sa.text("DROP TABLE class_locks"))
    migrations.upgrade(engine)
    with engine.connect() as conn:
        assert {"teacher_sessions", "class_locks"} <= set(sa.inspect(conn).get_table_names())
    assert differences(engine) == []


def test_the_tables_and_the_revisions_agree(engine):
    """schema.py and versions/ describe one schema: after upgrade head autogenerate finds nothing
    to add, drop or change (a column added to schema.py without a revision fails here)."""
    migrations.upgrade(engine)
    assert differences(engine) == []
    assert migrations.revisions()[0] == migrations.BASE and migrations.revisions()[-1] == migrations.head()


def test_the_base_revision_downgrades_to_an_empty_store(engine):
    migrations.upgrade(engine)
    with engine.begin() as conn:
        command.downgrade(migrations.config(conn), "base")
    with engine.connect() as conn:
        assert set(sa.inspect(conn).get_table_names()) <= {"alembic_version"}


def test_a_store_from_a_newer_version_is_refused_naming_both_revisions(store_url, engine):
    migrations.upgrade(engine)
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE alembic_version SET version_num = '0099_from_the_future'"))
    store = ClassStore(store_url, hours=1, teacher_key=KEY)
    try:
        with pytest.raises(StoreUnavailable) as refused:
            store.open_class(KEY)
        assert isinstance(refused.value, migrations.NewerStore)
        assert "0099_from_the_future" in str(refused.value) and migrations.head() in str(refused.value)
        with pytest.raises(StoreUnavailable):  # every later call too, and nothing was written
            store.class_info(CODE)
    finally:
        store.engine.dispose()
    assert revision_of(engine) == "0099_from_the_future"


def test_processes_starting_together_upgrade_one_store_once(store_url):
    """Six engines (six server processes) upgrade one empty store at the same moment: each
    waits for the lock, none fails, and the store ends at head with one version row."""
    engines = [engine_for(store_url) for _ in range(6)]
    start, errors, reached = threading.Barrier(len(engines)), [], []

    def start_up(e):
        start.wait()
        try:
            reached.append(migrations.upgrade(e))
        except Exception as error:  # noqa: BLE001 - every failure is counted, none may happen
            errors.append(repr(error))
    threads = [threading.Thread(target=start_up, args=(e,)) for e in engines]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    try:
        assert errors == [] and reached == [migrations.head()] * len(engines)
        with engines[0].connect() as conn:
            assert conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalars().all() == [
                migrations.head()]
        assert differences(engines[0]) == []
    finally:
        for e in engines:
            e.dispose()


def test_a_connection_asking_for_wal_while_another_holds_the_new_file_asks_again(tmp_path):
    """SQLite answers a journal-mode change "database is locked" while another connection holds
    the file; ``write_ahead_log`` asks again within its wait (servers starting together on a new
    store: the test above failed 3 times in 40 without it), and gives up after it."""
    import sqlite3
    from server.class_store.engine import write_ahead_log
    path = tmp_path / "new.sqlite3"
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN EXCLUSIVE")
    asker = sqlite3.connect(path, timeout=0.05, isolation_level=None)
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        write_ahead_log(asker.cursor(), wait_s=0)
    release = threading.Timer(0.3, holder.rollback)
    release.start()
    write_ahead_log(asker.cursor(), wait_s=10)
    release.join()
    assert asker.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    asker.close()
    holder.close()
