"""The class store's database: one engine and pool per store (SQLite with WAL and BEGIN IMMEDIATE,
or PostgreSQL through psycopg 3), its schema upgraded to this code's on first use (migrations/),
one transaction per call, database errors as the store's own."""
from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections import OrderedDict
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.exc import DBAPIError, IntegrityError, SQLAlchemyError

from server import settings
from server.class_store import migrations

from server.class_store.schema import (AnswerRefused, meta, NotTeacher, StoreBusy, StoreUnavailable)

# PostgreSQL's lock_not_available, query_canceled (statement_timeout) and
# idle_in_transaction_session_timeout; SQLite's busy timeout
BUSY_SQLSTATES = {"55P03", "57014", "25P03"}
SQLITE_BUSY_S = 15  # how long a SQLite connection waits for another's lock


def _busy(error: DBAPIError) -> bool:
    state = getattr(error.orig, "sqlstate", None) or getattr(error.orig, "pgcode", None)
    return state in BUSY_SQLSTATES or "database is locked" in str(error.orig)


def engine_for(url: str) -> sa.Engine:
    """A pooled engine; SQLite gets WAL, a busy timeout and BEGIN IMMEDIATE for writes."""
    if url.startswith(("postgresql://", "postgres://")):
        url = "postgresql+psycopg://" + url.split("://", 1)[1]  # psycopg 3, whatever SQLAlchemy's default
    if not url.startswith("sqlite"):
        # at most settings.db_connections() per process (scripts/serve.py shares PostgreSQL's
        # max_connections among the replicas); every connection refuses rather than waits
        # (settings.pg_options: lock, statement and idle-in-transaction timeouts)
        most = settings.db_connections()
        connect_args = {"connect_timeout": 3}
        if url.startswith("postgresql"):
            connect_args["options"] = settings.pg_options()
        return sa.create_engine(url, pool_pre_ping=True, pool_size=min(8, most), max_overflow=most - min(8, most),
                                pool_timeout=10, connect_args=connect_args)
    path = sa.engine.make_url(url).database
    if path and path != ":memory:":
        private_file(Path(path))
    engine = sa.create_engine(url, pool_size=8, max_overflow=24, pool_timeout=10,
                              connect_args={"timeout": SQLITE_BUSY_S, "check_same_thread": False})

    @sa.event.listens_for(engine, "connect")
    def _sqlite_connect(dbapi_connection, _record):
        dbapi_connection.isolation_level = None  # SQLAlchemy's "begin" event below issues BEGIN itself
        cursor = dbapi_connection.cursor()
        write_ahead_log(cursor)
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_S * 1000}")
        cursor.execute("PRAGMA synchronous=NORMAL")  # WAL's usual setting: durable at each checkpoint
        cursor.close()

    @sa.event.listens_for(engine, "begin")
    def _sqlite_begin(conn):
        conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get("write") else "BEGIN")

    return engine


def write_ahead_log(cursor, wait_s: float = SQLITE_BUSY_S) -> None:
    """``PRAGMA journal_mode=WAL``. The first connection to a new file converts it, and one asking
    while another holds a lock then is told "database is locked" at once: SQLite does not wait its
    busy timeout for a journal-mode change. So it asks again, within the busy timeout (servers
    starting together on a new store, ``tests/test_migrations.py``)."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(0.005)


def private_file(path: Path) -> None:
    """The SQLite file (its folder 0700, the file 0600) made before SQLite opens it: SQLite gives its
    WAL and shared-memory files the database file's mode, so answers and the generated key are
    never readable by other users of the machine. An older store is narrowed to 0600 too."""
    try:
        if not path.parent.exists():
            path.parent.mkdir(parents=True, mode=0o700)
        os.close(os.open(path, os.O_CREAT | os.O_RDWR, 0o600))
        for part in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
            if part.exists():
                part.chmod(0o600)
    except OSError:
        pass  # a folder that cannot be written: the first connection says so, as StoreUnavailable


class StoreEngine:
    """The store's connection to its database (see the package)."""

    def __init__(self, url: str, hours: float = 4.0, teacher_key: str | None = None):
        self.url = url
        self.hours = hours
        self._given_key = teacher_key
        self._broken: str | None = None  # why the URL gives no engine (a typo, a missing driver)
        try:
            self.engine = engine_for(url)
        except (SQLAlchemyError, ImportError, ValueError) as e:
            self.engine, self._broken = None, f"ATTN_EXPLORER_CLASS_DB is not usable ({type(e).__name__}: {e})"
        self._schema_ready = False
        self._schema_lock = threading.Lock()
        self.follow_listeners: list = []  # called with a class code after this object changed its follow state
        self.writes_seen = threading.local()  # per thread: its look at the store's writes (FollowTheTeacher.wait_for_writes)
        # this process's writes to SQLite take turns here, not in SQLite's busy handler (_run)
        self._one_writer = threading.RLock() if self.kind == "sqlite" else None
        self.joined: OrderedDict[tuple[str, str], str] = OrderedDict()  # (code, student) -> nickname (ClassesAndRoster.joined_as)
        self.joined_lock = threading.Lock()
        self._statements: dict = {}  # statement -> (its SQL, its parameters' names, its constants): _write_at_once

    @property
    def kind(self) -> str:
        return self.engine.dialect.name if self.engine is not None else "none"  # "sqlite" or "postgresql"

    def _ensure_schema(self) -> None:
        """The store brought to this code's schema once per process (server/class_store/migrations):
        upgraded under a lock that other processes starting alongside wait for, refused
        (NewerStore, a StoreUnavailable) when a newer version of the app has upgraded it."""
        if self._schema_ready:
            return
        with self._schema_lock:
            if not self._schema_ready:
                migrations.upgrade(self.engine)
                self._schema_ready = True

    def _connect(self, write: bool = False):
        """A transaction (BEGIN IMMEDIATE on SQLite when ``write``); StoreUnavailable when the
        database cannot be reached."""
        if self.engine is None:
            raise StoreUnavailable(self._broken)
        try:
            self._ensure_schema()
            conn = self.engine.connect()
        except SQLAlchemyError as e:
            raise StoreUnavailable(f"the class store ({self.kind}) cannot be reached: {self._why(e)}") from e
        return conn.execution_options(write=True) if write else conn

    def _run(self, work, write: bool = False):
        """``work(conn)`` in one transaction; database errors become StoreUnavailable.

        On SQLite a process's write transactions take turns on a lock before they connect. SQLite
        runs one write at a time, and a writer waiting in its busy handler sleeps up to 100 ms a try:
        100 answers at once from each of two processes waited p95 0.46 s (0.96–1.06 at ``c0d2c47``),
        against 0.29–0.30 s in turns (``python bench/store_burst.py``). Reads never wait for it (WAL).
        A class's joins and answers are single statements instead (``_write_at_once``), which take
        no turn: in turns, each waits for the GIL at its turn's hand-over."""
        if write and self._one_writer is not None:
            with self._one_writer:
                return self._transaction(work, write)
        return self._transaction(work, write)

    def _transaction(self, work, write: bool):
        conn = self._connect(write)
        try:
            with conn, conn.begin():
                return work(conn)
        except (AnswerRefused, NotTeacher, IntegrityError):
            raise
        except DBAPIError as e:
            if _busy(e):
                raise StoreBusy() from e
            raise StoreUnavailable(f"the class store ({self.kind}) failed: {self._why(e)}") from e

    def _write_at_once(self, statement, values: dict) -> tuple[int, int | None]:
        """One writing ``statement`` on SQLite, in autocommit: (rows written, the last row's id).

        The statement takes SQLite's write lock, writes and commits inside one call into SQLite, so
        the lock is never held while this thread waits for the GIL. A transaction of several
        statements holds it across each of their returns to Python, and a replica running pages
        gives the GIL back only every switch interval (5 ms): 200 answers from each of two
        processes beside two threads running Python waited p50 4.2–4.4 s, max 9.2–9.7 s as
        transactions, p50 0.15–0.47 s, max 0.84–0.90 s as one statement each, and p50 1.58 s, max
        3.57 s as one statement
        taking turns on the process's lock (``python bench/store_burst.py --answers 200 --busy 2``):
        so no turns here, every writer waits in SQLite's busy handler. The statement is compiled
        once per store (``_compiled``)."""
        sql, names, fixed = self._compiled(statement)
        raw = self._raw_connection()
        try:
            cursor = raw.cursor()
            try:
                cursor.execute(sql, [values[name] if name in values else fixed[name] for name in names])
                return cursor.rowcount, cursor.lastrowid
            finally:
                cursor.close()
        except sqlite3.IntegrityError:
            raise IntegrityError(sql, None, None) from None  # as a transaction's: the caller looks again
        except sqlite3.Error as e:  # a busy timeout, a store gone or corrupt: as a transaction's errors
            if "database is locked" in str(e):
                raise StoreBusy() from e
            raise StoreUnavailable(f"the class store ({self.kind}) failed: {self._why(e)}") from e
        finally:
            raw.close()

    def _raw_connection(self):
        if self.engine is None:
            raise StoreUnavailable(self._broken)
        try:
            self._ensure_schema()
            return self.engine.raw_connection()
        except (SQLAlchemyError, sqlite3.Error) as e:  # the pool's connect hooks (PRAGMAs) raise the driver's own
            raise StoreUnavailable(f"the class store ({self.kind}) cannot be reached: {self._why(e)}") from e

    def _compiled(self, statement) -> tuple[str, tuple[str, ...], dict]:
        """``statement``'s SQL for this store's dialect, its parameters' names in order and the
        values of those the statement fixes itself (its constants), once."""
        known = self._statements.get(statement)
        if known is None:
            compiled = statement.compile(dialect=self.engine.dialect)
            known = self._statements[statement] = (str(compiled), tuple(compiled.positiontup), compiled.params)
        return known

    def _why(self, error: Exception) -> str:
        """The error's kind; for SQLite also its reason (SQLAlchemy's, or the driver's own), which
        names no address or user."""
        reason = error if isinstance(error, sqlite3.Error) else getattr(error, "orig", None)
        if self.kind != "sqlite" or reason is None:
            return type(error).__name__
        return f"{reason} (the server must be able to write the store's folder, ATTN_EXPLORER_CLASS_DIR)"

    def _meta_value(self, name: str, make) -> str:
        """The store's own ``name`` (the generated teacher key, the cookie secret): read, or made
        once by ``make()`` and kept for every process on this store."""
        def read_or_make(conn):
            row = conn.execute(sa.select(meta.c.value).where(meta.c.name == name)).first()
            if row:
                return row.value
            value = make()
            conn.execute(meta.insert().values(name=name, value=value))
            return value
        try:
            return self._run(read_or_make, write=True)
        except IntegrityError:  # another process made it first (PostgreSQL): read theirs
            return self._run(read_or_make)
