"""The class store: the one place a visitor's click is written down.

A teacher opens a *class* (a short code); while it is open, students' answers to the
Exercises page are stored in it, anonymously (a random, signed id per browser: the
``attn_student`` cookie of ``server/identity.py``, else one per browser session), and the
teacher's *Send to class* and *Reveal* are kept there for every following session to read.
Nothing else a visitor does is written anywhere.

One code path for two databases, through SQLAlchemy Core (2.x) with psycopg 3 for
PostgreSQL: the SQL is written once, as Python expressions, and SQLAlchemy speaks each
dialect, pools connections across the server's threads and gives one exception hierarchy.

- **SQLite** (the default; ``settings.class_db()``): one file, WAL journal (readers never
  wait for the writer), a busy timeout, and every writing transaction ``BEGIN IMMEDIATE`` (it
  takes the write lock before reading, so a read-then-write never fails with "database is
  locked" when another thread or process writes alongside). Safe for several server processes
  on one machine (the lecture setup behind HAProxy).
- **PostgreSQL** (``ATTN_EXPLORER_CLASS_DB=postgresql://…``): for servers on several machines.

Nothing a student does fills a class. A student answers once on the class's **roster**
(:meth:`ClassStore.join`: the class code, a nickname of their own; a locked class takes no new
id, a removed id never comes back, joins from one address are limited per minute,
``settings.joins_per_minute``), and only to an exercise the class **counts**: the practice
catalogue (``PRACTICE_SEEDS`` seeds of each kind, and the lesson's stops) or one the teacher sent
or revealed; any other exercise is the student's own practice and writes nothing. So the
exercises of a class are the teacher's choice (at most ``MAX_EXERCISES``, with the catalogue),
and its answers at most ``MAX_STUDENTS`` × ``MAX_STUDENT_ANSWERS``. An answer is at most
``MAX_ANSWER_BYTES`` of JSON; a student answers one exercise at most ``MAX_ATTEMPTS`` times (a
unique (class, exercise, session, attempt) key enforces it in the database, whichever process
writes), at most ``MAX_STUDENT_EXERCISES`` exercises and ``MAX_STUDENT_ANSWERS`` answers in a
class; a class refuses answers ``settings.class_hours()`` after it opens and is deleted, answers,
roster and all, by the next :meth:`ClassStore.purge_expired`.

The teacher is whoever holds the key: ``ATTN_EXPLORER_TEACHER_KEY`` if the server was started
with it, else one generated the first time a store is used and kept in the store, so that
every process on one store has the same key (shown on a terminal at start-up, never in a log;
*New key* replaces it). Every call that only the teacher may make takes the key and checks it
here, whatever the page does; what concerns one class also takes a **teacher session** of that
class (the token of the ``attn_teacher`` cookie, ``teacher_sessions``): made by the tab that holds
the key, redeemed once, ended by *Sign out* or *New key* in every process on the store. A session
never opens a class, makes a key or does the owner's actions: those need the key.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.exc import DBAPIError, IntegrityError, SQLAlchemyError

from server import settings

MAX_ANSWER_BYTES = 4096      # an alignment of 30 x 30 words is well under this
MAX_ATTEMPTS = 3             # answers per student and exercise: the first counts, two retries are kept
MAX_EXERCISES = 100          # distinct exercises per class
MAX_ANSWER_DEPTH = 6         # lists and dicts inside each other: an alignment is a list of pairs (3)
MAX_STUDENT_EXERCISES = 60   # distinct exercises per student and class: one student cannot fill a class
MAX_STUDENT_ANSWERS = 120    # answers per student and class, retries included
MAX_STUDENTS = 600           # students on a class's roster (removed ones not counted): a lecture hall of 400 and room
PRACTICE_KINDS = ("align", "step", "which")  # the Exercises page's kinds (model/exercises.py KINDS)
PRACTICE_SEEDS = 12          # free practice a class counts: seeds 0-11 of each kind, four per level (seed mod 3)
LESSON_STOP = re.compile(r"^lesson:(0[1-9]|[12][0-9]|30)-[a-z0-9-]{1,40}$")  # the guided lesson's stops, 1-30
CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I: read aloud, typed from a projector
CODE_LENGTH = 6
FOLLOW_CHANNEL = "attn_follow"  # PostgreSQL's NOTIFY channel of follow changes ("CODE:version")
EXERCISE_ID = re.compile(r"^[a-z0-9][a-z0-9:._-]{0,63}$")
SESSION_ID = re.compile(r"^[0-9a-f]{8,32}$")

metadata = sa.MetaData()
classes = sa.Table(
    "classes", metadata,
    sa.Column("code", sa.String(CODE_LENGTH), primary_key=True),
    sa.Column("opened_at", sa.Float, nullable=False),
    sa.Column("expires_at", sa.Float, nullable=False),
    sa.Column("closed", sa.Boolean, nullable=False, default=False),
    # what the teacher sent to the class: a page and its link's parameters; a version that
    # every send or reveal raises, so a following session sees a change by one number
    sa.Column("follow_version", sa.Integer, nullable=False, default=0),
    sa.Column("follow_page", sa.String(64)),
    sa.Column("follow_params", sa.Text),
    sa.Column("revealed", sa.String(64)),
)
answers = sa.Table(
    "answers", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("class_code", sa.String(CODE_LENGTH), nullable=False, index=True),
    sa.Column("exercise", sa.String(64), nullable=False),
    sa.Column("session", sa.String(32), nullable=False),
    sa.Column("attempt", sa.Integer, nullable=False),
    sa.Column("answer", sa.Text, nullable=False),
    sa.Column("correct", sa.Boolean),
    sa.Column("answered_at", sa.Float, nullable=False),
    sa.UniqueConstraint("class_code", "exercise", "session", "attempt", name="one_answer_per_attempt"),
)
meta = sa.Table(
    "meta", metadata,
    sa.Column("name", sa.String(32), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)
# the roster: who joined a class with its code (one row per student id and class, kept after a
# removal so that the id cannot join again); ``address`` is a keyed tag of the address the join
# came from (HMAC with the cookie secret, never the address), counted for the joins-per-minute limit
roster = sa.Table(
    "roster", metadata,
    sa.Column("class_code", sa.String(CODE_LENGTH), primary_key=True),
    sa.Column("session", sa.String(32), primary_key=True),
    sa.Column("nickname", sa.String(40), nullable=False),
    sa.Column("joined_at", sa.Float, nullable=False),
    sa.Column("address", sa.String(32), nullable=False),
    sa.Column("removed", sa.Boolean, nullable=False, default=False),
    sa.UniqueConstraint("class_code", "nickname", name="one_nickname_per_class"),
    sa.Index("roster_joins_by_address", "class_code", "address", "joined_at"),
)
# what the teacher sent or revealed to a class: the exercises it counts beyond the practice catalogue
class_exercises = sa.Table(
    "class_exercises", metadata,
    sa.Column("class_code", sa.String(CODE_LENGTH), primary_key=True),
    sa.Column("exercise", sa.String(64), primary_key=True),
    sa.Column("added_at", sa.Float, nullable=False),
)
# a locked class takes no new students (a row while locked)
class_locks = sa.Table(
    "class_locks", metadata,
    sa.Column("class_code", sa.String(CODE_LENGTH), primary_key=True),
    sa.Column("locked_at", sa.Float, nullable=False),
)
# the teacher's browser sessions of one class (the ``attn_teacher`` cookie names one by a random
# token; the store keeps its SHA-256): made by the tab holding the key, redeemed once by the
# ticket, ended by *Sign out* or *New key*, checked by every process on the store
teacher_sessions = sa.Table(
    "teacher_sessions", metadata,
    sa.Column("token_hash", sa.String(64), primary_key=True),
    sa.Column("class_code", sa.String(CODE_LENGTH), nullable=False, index=True),
    sa.Column("key_tag", sa.String(16), nullable=False),
    sa.Column("expires_at", sa.Float, nullable=False),
    sa.Column("ticket_until", sa.Float, nullable=False),
    sa.Column("redeemed", sa.Boolean, nullable=False, default=False),
    sa.Column("revoked", sa.Boolean, nullable=False, default=False),
)


class StoreUnavailable(RuntimeError):
    """The database cannot be reached: exercises still work, without a class."""


class NotTeacher(PermissionError):
    """A call only the teacher may make, made without the teacher's key."""


class AnswerRefused(ValueError):
    """An answer that is not stored, with the reason a student can read."""


class OutsideClass(AnswerRefused):
    """An answer to an exercise the class does not count (practice outside its set): the student's own."""


class StoreBusy(StoreUnavailable):
    """The database is up but did not answer in time (a lock held elsewhere, a slow statement):
    nothing was written, and the same call a moment later may succeed."""

    def __init__(self, what: str = "the class store"):
        super().__init__(f"{what} is busy; nothing was saved, try again in a moment")


# PostgreSQL's lock_not_available, query_canceled (statement_timeout) and
# idle_in_transaction_session_timeout; SQLite's busy timeout
BUSY_SQLSTATES = {"55P03", "57014", "25P03"}


def _busy(error: DBAPIError) -> bool:
    state = getattr(error.orig, "sqlstate", None) or getattr(error.orig, "pgcode", None)
    return state in BUSY_SQLSTATES or "database is locked" in str(error.orig)


def nesting_depth(value, limit: int) -> int:
    """How deeply lists and dicts sit inside each other in ``value`` (a number: 0, ``[1]``: 1),
    counted up to ``limit + 1``, level by level without recursion: an answer nested 100,000 deep
    is refused as cheaply as a shallow one is counted."""
    depth, level = 0, [value]
    while depth <= limit:
        containers = [item for item in level if isinstance(item, (list, tuple, dict))]
        if not containers:
            break
        depth += 1
        level = [v for item in containers for v in (item.values() if isinstance(item, dict) else item)]
    return depth


@dataclass(frozen=True)
class ClassInfo:
    code: str
    opened_at: float
    expires_at: float
    closed: bool

    @property
    def open(self) -> bool:
        return not self.closed and time.time() < self.expires_at


@dataclass(frozen=True)
class FollowState:
    """What the teacher last sent: a page (its url path) with its link's parameters, and the
    exercise whose answer is revealed (None: none). ``version`` grows with every change."""
    code: str
    version: int
    page: str | None
    params: dict
    revealed: str | None
    open: bool
    removals: int = 0  # students removed so far: a tab whose count differs looks whether it is one of them


@dataclass(frozen=True)
class Member:
    """A student's place in a class: the nickname they see, when they joined; ``new``: just now."""
    code: str
    nickname: str
    joined_at: float
    new: bool


@dataclass(frozen=True)
class RosterEntry:
    nickname: str
    joined_at: float
    answers: int


@dataclass(frozen=True)
class ClassCounts:
    """The class in three numbers, as the teacher's summary shows them, and whether it is locked."""
    joined: int
    answered: int
    counted: int
    locked: bool


@dataclass(frozen=True)
class StoredAnswer:
    exercise: str
    session: str
    attempt: int
    answer: dict
    correct: bool | None
    answered_at: float


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
                              connect_args={"timeout": 15, "check_same_thread": False})

    @sa.event.listens_for(engine, "connect")
    def _sqlite_connect(dbapi_connection, _record):
        dbapi_connection.isolation_level = None  # SQLAlchemy's "begin" event below issues BEGIN itself
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA busy_timeout=15000")
        cursor.execute("PRAGMA synchronous=NORMAL")  # WAL's usual setting: durable at each checkpoint
        cursor.close()

    @sa.event.listens_for(engine, "begin")
    def _sqlite_begin(conn):
        conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get("write") else "BEGIN")

    return engine


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


class ClassStore:
    """Classes, their answers and what the teacher sent, in one database (see the module)."""

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

    @property
    def kind(self) -> str:
        return self.engine.dialect.name if self.engine is not None else "none"  # "sqlite" or "postgresql"

    # -- plumbing -------------------------------------------------------------------------------
    def _ensure_schema(self) -> None:
        if self._schema_ready:
            return
        with self._schema_lock:
            if self._schema_ready:
                return
            try:
                metadata.create_all(self.engine)
            except SQLAlchemyError as e:
                if "already exists" not in str(e) and not isinstance(e, IntegrityError):
                    raise  # the database is unreachable: no second wait
                metadata.create_all(self.engine)  # another process created them alongside: look again
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
        """``work(conn)`` in one transaction; database errors become StoreUnavailable."""
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

    def _why(self, error: SQLAlchemyError) -> str:
        """The error's kind; for SQLite also its reason, which names no address or user."""
        if self.kind != "sqlite" or getattr(error, "orig", None) is None:
            return type(error).__name__
        return f"{error.orig} (the server must be able to write the store's folder, ATTN_EXPLORER_CLASS_DIR)"

    # -- the teacher's key ------------------------------------------------------------------------
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

    def teacher_key(self) -> str:
        """The key: the one the server was started with, else the store's own (made once)."""
        if self._given_key:
            return self._given_key
        return self._meta_value("teacher_key", lambda: secrets.token_urlsafe(9))

    def cookie_secret(self) -> bytes:
        """The secret that signs the student's and the teacher's cookies (``server/identity.py``):
        made once and kept in the store, as the teacher key is, so every process on one store
        checks the same signatures. Read once per store object."""
        cached = getattr(self, "_cookie_secret", None)
        if cached:
            return cached
        self._cookie_secret = bytes.fromhex(self._meta_value("cookie_secret", lambda: secrets.token_hex(32)))
        return self._cookie_secret

    def is_teacher(self, key: str | None) -> bool:
        return bool(key) and hmac.compare_digest(str(key).encode(), self.teacher_key().encode())

    def _check_teacher(self, key: str | None, code: str | None = None) -> None:
        """The key, or (for what concerns class ``code`` only) a live teacher session of that class."""
        if self.is_teacher(key):
            return
        if code and str(key or "").startswith(SESSION_PREFIX) and self.teacher_session_class(key) == normalise_code(code):
            return
        raise NotTeacher("only the teacher (who holds the server's teacher key) may do this")

    def new_key(self, key: str | None) -> str:
        """Replace the store's generated key with a new one (for the teacher only) and return it:
        the old key stops working in every process on this store, for every session signed in
        with it. A key the server was started with (ATTN_EXPLORER_TEACHER_KEY) wins: it is
        changed where it is set, not here."""
        self._check_teacher(key)
        if self._given_key:
            raise AnswerRefused("this server's key is set by ATTN_EXPLORER_TEACHER_KEY: change it there and restart")
        new = secrets.token_urlsafe(12)

        def replace(conn):
            conn.execute(meta.update().where(meta.c.name == "teacher_key").values(value=new))
            conn.execute(teacher_sessions.update().values(revoked=True))  # every teacher cookie ends with the old key
        self._run(replace, write=True)
        return new

    # -- classes -------------------------------------------------------------------------------------
    def open_class(self, key: str | None) -> ClassInfo:
        self._check_teacher(key)
        self.purge_expired()
        now = time.time()
        for _ in range(5):  # a new random code; another class may hold it (1 in a billion)
            code = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))
            info = ClassInfo(code, now, now + self.hours * 3600, False)
            try:
                row = dict(code=code, opened_at=now, expires_at=info.expires_at, closed=False, follow_version=0)
                self._run(lambda conn, row=row: conn.execute(classes.insert().values(**row)), write=True)
                return info
            except IntegrityError:
                continue
        raise StoreUnavailable("could not draw a free class code")

    def close_class(self, key: str | None, code: str) -> None:
        self._check_teacher(key, code)

        def close(conn):
            conn.execute(classes.update().where(classes.c.code == code).values(closed=True))
            self._notify(conn, code, -1)  # followers see "closed" at once
        self._run(close, write=True)
        self._changed(normalise_code(code))

    def class_info(self, code: str | None) -> ClassInfo | None:
        """The class with this code (open, closed or expired), or None."""
        code = normalise_code(code)
        if not code:
            return None
        row = self._run(lambda conn: conn.execute(sa.select(classes).where(classes.c.code == code)).first())
        return ClassInfo(row.code, row.opened_at, row.expires_at, bool(row.closed)) if row else None

    def purge_expired(self) -> int:
        """Delete the classes past their hours, with their answers; returns how many."""
        now = time.time()

        def purge(conn):
            old = sa.select(classes.c.code).where(classes.c.expires_at < now)
            conn.execute(answers.delete().where(answers.c.class_code.in_(old)))
            for table in (roster, class_exercises, class_locks, teacher_sessions):
                conn.execute(table.delete().where(table.c.class_code.in_(old)))
            return conn.execute(classes.delete().where(classes.c.expires_at < now)).rowcount
        return self._run(purge, write=True)

    # -- the roster: who is in the class ----------------------------------------------------------
    def join(self, code: str | None, session: str, address: str = "") -> Member:
        """Put student ``session`` on the class's roster (or find them there): a nickname of their
        own, the join time. Refused, with a reason a student can read: no such class, closed,
        locked (a new id), removed, full, or too many joins from ``address`` within a minute
        (``settings.joins_per_minute``; counted across every process on the store)."""
        code = normalise_code(code)
        if not SESSION_ID.fullmatch(session or ""):
            raise AnswerRefused("this browser has no valid student id")
        known = self._run(lambda conn: conn.execute(sa.select(roster.c.nickname, roster.c.joined_at, roster.c.removed)
                                                    .where((roster.c.class_code == code)
                                                           & (roster.c.session == session))).first())
        if known is not None and not known.removed:  # back (a reload, a followed page): one read, no write
            return Member(code, known.nickname, known.joined_at, False)
        tag = self._address_tag(address)

        def enter(conn):
            info = conn.execute(sa.select(classes.c.closed, classes.c.expires_at)
                                .where(classes.c.code == code).with_for_update()).first()
            if info is None:
                raise AnswerRefused(f"there is no class {code or '(none)'}")
            row = conn.execute(sa.select(roster.c.nickname, roster.c.joined_at, roster.c.removed)
                               .where((roster.c.class_code == code) & (roster.c.session == session))).first()
            if row is not None:
                if row.removed:
                    raise AnswerRefused(f"the teacher removed you from class {code}; your answers are not counted")
                return Member(code, row.nickname, row.joined_at, False)
            if info.closed or time.time() >= info.expires_at:
                raise AnswerRefused(f"class {code} is closed, so it takes no new students")
            self._may_join(conn, code, tag)
            taken = set(conn.execute(sa.select(roster.c.nickname).where(roster.c.class_code == code)).scalars())
            member = Member(code, new_nickname(taken), time.time(), True)
            conn.execute(roster.insert().values(class_code=code, session=session, nickname=member.nickname,
                                                joined_at=member.joined_at, address=tag, removed=False))
            return member
        for _ in range(3):
            try:
                return self._run(enter, write=True)
            except IntegrityError:
                continue  # the same id joining twice at once (two tabs), or one nickname drawn twice: look again
        raise AnswerRefused("joining collided with another join; try again")

    def _may_join(self, conn, code: str, tag: str) -> None:
        """A new student may join: not locked, not full, not too many joins from one address."""
        if conn.execute(sa.select(class_locks.c.class_code).where(class_locks.c.class_code == code)).first():
            raise AnswerRefused(f"class {code} is locked: the teacher has closed it to new students "
                                "(ask the teacher to unlock it)")
        here = roster.c.class_code == code
        students = conn.execute(sa.select(sa.func.count()).where(here & ~roster.c.removed)).scalar_one()
        if students >= MAX_STUDENTS:
            raise AnswerRefused(f"class {code} has {MAX_STUDENTS} students already, the most a class holds")
        most = settings.joins_per_minute()
        recent = conn.execute(sa.select(sa.func.count()).where(
            here & (roster.c.address == tag) & (roster.c.joined_at > time.time() - 60))).scalar_one()
        if recent >= most:
            raise AnswerRefused(f"{most} students joined class {code} from your network within the last minute, "
                                "the most it takes: try again in a minute")

    def _address_tag(self, address: str) -> str:
        """A keyed tag of the address (never the address itself): equal for one address, within one store."""
        return hmac.new(self.cookie_secret(), b"address:" + str(address).encode(), "sha256").hexdigest()[:32]

    def member(self, code: str | None, session: str) -> Member | None:
        """The student's place on the class's roster (None: not joined, or removed)."""
        code = normalise_code(code)
        row = self._run(lambda conn: conn.execute(sa.select(roster.c.nickname, roster.c.joined_at).where(
            (roster.c.class_code == code) & (roster.c.session == session) & ~roster.c.removed)).first())
        return Member(code, row.nickname, row.joined_at, False) if row else None

    def _admit(self, conn, code: str, session: str, exercise: str) -> None:
        """Inside ``submit``: the student is on the roster (not removed), and the exercise is one the
        class counts: the practice catalogue, or one the teacher sent or revealed."""
        row = conn.execute(sa.select(roster.c.removed).where(
            (roster.c.class_code == code) & (roster.c.session == session))).first()
        if row is None:
            raise AnswerRefused(f"join class {code} first (its link, or its code in the Class panel)")
        if row.removed:
            raise AnswerRefused(f"the teacher removed you from class {code}; your answers are not counted")
        if not in_practice(exercise) and not conn.execute(sa.select(class_exercises.c.exercise).where(
                (class_exercises.c.class_code == code) & (class_exercises.c.exercise == exercise))).first():
            raise OutsideClass(f"exercise {exercise} is practice outside class {code}'s set (the exercises the "
                               f"teacher sent, and numbers 0–{PRACTICE_SEEDS - 1} of each kind): it is yours alone, "
                               "and the class does not count it")

    def add_exercise(self, key: str | None, code: str, exercise: str) -> None:
        """An exercise the class counts from now on (sent or revealed by the teacher); at most
        MAX_EXERCISES with the practice catalogue: past that, open a new class."""
        self._check_teacher(key, code)
        code = normalise_code(code)
        if in_practice(exercise) or not EXERCISE_ID.fullmatch(exercise or ""):
            return

        def add(conn):
            here = class_exercises.c.class_code == code
            if conn.execute(sa.select(class_exercises.c.exercise).where(here & (class_exercises.c.exercise == exercise))
                            ).first():
                return
            if conn.execute(sa.select(sa.func.count()).where(here)).scalar_one() >= MAX_SENT_EXERCISES:
                raise AnswerRefused(f"class {code} counts {MAX_EXERCISES} exercises already, the most a class "
                                    "holds: open a new class")
            conn.execute(class_exercises.insert().values(class_code=code, exercise=exercise, added_at=time.time()))
        try:
            self._run(add, write=True)
        except IntegrityError:
            pass  # sent from two tabs at once: it is there

    def lock(self, key: str | None, code: str, locked: bool = True) -> None:
        """Lock the class (no new students; those on the roster go on) or unlock it."""
        self._check_teacher(key, code)
        code = normalise_code(code)

        def change(conn):
            conn.execute(class_locks.delete().where(class_locks.c.class_code == code))
            if locked:
                conn.execute(class_locks.insert().values(class_code=code, locked_at=time.time()))
        self._run(change, write=True)

    def locked(self, code: str | None) -> bool:
        code = normalise_code(code)
        return bool(self._run(lambda conn: conn.execute(
            sa.select(class_locks.c.class_code).where(class_locks.c.class_code == code)).first()))

    def remove(self, key: str | None, code: str, nickname: str) -> bool:
        """Take a student off the roster: their answers leave the class's summary and counts, their
        id cannot join it again nor answer, and the class's follow version moves on, so that their
        tab hears of it at once. The answers are kept, hidden, so that :meth:`readmit` undoes it all.
        False when no such student is on it."""
        return self._set_removed(key, code, nickname, True)

    def readmit(self, key: str | None, code: str, nickname: str) -> bool:
        """Undo :meth:`remove`: the student is on the roster again, with their answers."""
        return self._set_removed(key, code, nickname, False)

    def _set_removed(self, key: str | None, code: str, nickname: str, removed: bool) -> bool:
        self._check_teacher(key, code)
        code = normalise_code(code)

        def change(conn):
            done = conn.execute(roster.update().where(
                (roster.c.class_code == code) & (roster.c.nickname == str(nickname)[:40])
                & (roster.c.removed == (not removed))).values(removed=removed))
            return bool(done.rowcount)
        changed = self._run(change, write=True)
        if changed:
            self._bump(code)
        return changed

    def _removed_sessions(self, code: str):
        """The ids the teacher removed from the class (a subquery: their answers are not the class's)."""
        return sa.select(roster.c.session).where((roster.c.class_code == code) & roster.c.removed)

    def roster_of(self, key: str | None, code: str) -> list[RosterEntry]:
        """The students on the class's roster, first joined first, each with their answers so far."""
        self._check_teacher(key, code)
        code = normalise_code(code)
        given = (sa.select(answers.c.session, sa.func.count().label("n")).where(answers.c.class_code == code)
                 .group_by(answers.c.session).subquery())
        rows = self._run(lambda conn: conn.execute(
            sa.select(roster.c.nickname, roster.c.joined_at, sa.func.coalesce(given.c.n, 0).label("n"))
            .select_from(roster.outerjoin(given, given.c.session == roster.c.session))
            .where((roster.c.class_code == code) & ~roster.c.removed).order_by(roster.c.joined_at)).all())
        return [RosterEntry(r.nickname, r.joined_at, int(r.n)) for r in rows]

    def class_counts(self, key: str | None, code: str) -> ClassCounts:
        """Joined (on the roster), answered (of them, students with an answer) and counted (first
        answers, one per student and exercise; retries are not)."""
        self._check_teacher(key, code)
        code = normalise_code(code)

        def count(conn):
            joined = conn.execute(sa.select(sa.func.count()).where(
                (roster.c.class_code == code) & ~roster.c.removed)).scalar_one()
            answered, counted = conn.execute(sa.select(
                sa.func.count(sa.distinct(answers.c.session)),
                sa.func.coalesce(sa.func.sum(sa.case((answers.c.attempt == 1, 1), else_=0)), 0))
                .where((answers.c.class_code == code) & answers.c.session.not_in(self._removed_sessions(code)))).one()
            locked = conn.execute(sa.select(class_locks.c.class_code).where(class_locks.c.class_code == code)).first()
            return ClassCounts(int(joined), int(answered), int(counted), bool(locked))
        return self._run(count)

    # -- the teacher's sessions (the teacher cookie) -----------------------------------------------
    def start_teacher_session(self, key: str | None, code: str, ticket_seconds: float) -> str:
        """A new teacher session of class ``code`` for the tab holding the key: its token (to put in
        a single-use ticket; it counts once the ticket is redeemed)."""
        if not self.is_teacher(key):
            raise NotTeacher("only the teacher (who holds the server's teacher key) may do this")
        info = self.class_info(code)
        if info is None or not info.open:
            raise AnswerRefused(f"class {code} is not open")
        token = SESSION_PREFIX + secrets.token_hex(16)
        row = dict(token_hash=_hash(token), class_code=info.code, key_tag=self._key_tag(), expires_at=info.expires_at,
                   ticket_until=time.time() + ticket_seconds, redeemed=False, revoked=False)
        self._run(lambda conn: conn.execute(teacher_sessions.insert().values(**row)), write=True)
        return token

    def redeem_teacher_ticket(self, token: str, code: str) -> float | None:
        """Turn a ticket's session into the cookie's, once: the class's expiry, or None for a ticket
        used before, past its time, ended, or of another class."""
        now = time.time()

        def redeem(conn):
            done = conn.execute(teacher_sessions.update().where(
                (teacher_sessions.c.token_hash == _hash(token)) & (teacher_sessions.c.class_code == code)
                & ~teacher_sessions.c.redeemed & ~teacher_sessions.c.revoked
                & (teacher_sessions.c.ticket_until >= now)).values(redeemed=True))
            if done.rowcount != 1:
                return None
            return conn.execute(sa.select(teacher_sessions.c.expires_at).where(
                teacher_sessions.c.token_hash == _hash(token))).scalar_one()
        return self._run(redeem, write=True)

    def teacher_session_class(self, token: str | None) -> str | None:
        """The class a redeemed, live teacher session is for (None: unknown, ended, expired, or made
        under another key)."""
        if not str(token or "").startswith(SESSION_PREFIX):
            return None
        row = self._run(lambda conn: conn.execute(sa.select(teacher_sessions).where(
            teacher_sessions.c.token_hash == _hash(token))).first())
        if (row is None or not row.redeemed or row.revoked or row.expires_at <= time.time()
                or not hmac.compare_digest(row.key_tag, self._key_tag())):
            return None
        return row.class_code

    def end_teacher_session(self, token: str | None) -> None:
        """*Sign out*: the session ends in every process on the store (a copy of its cookie too)."""
        if str(token or "").startswith(SESSION_PREFIX):
            self._run(lambda conn: conn.execute(teacher_sessions.update().where(
                teacher_sessions.c.token_hash == _hash(token)).values(revoked=True)), write=True)

    def _key_tag(self) -> str:
        return hashlib.sha256(self.teacher_key().encode()).hexdigest()[:16]

    # -- answers -------------------------------------------------------------------------------------
    def submit(self, code: str, exercise: str, session: str, answer: dict, correct: bool | None) -> int:
        """Store one student's answer to an exercise of an open class; returns its attempt
        number (1…MAX_ATTEMPTS). AnswerRefused, with a reason, for anything not stored."""
        code = normalise_code(code)
        if not EXERCISE_ID.fullmatch(exercise or "") or not SESSION_ID.fullmatch(session or ""):
            raise AnswerRefused("this answer does not name a valid exercise and session")
        if nesting_depth(answer, MAX_ANSWER_DEPTH) > MAX_ANSWER_DEPTH:
            raise AnswerRefused(f"this answer is nested more than {MAX_ANSWER_DEPTH} levels deep, so it is not stored")
        try:
            text = json.dumps(answer, separators=(",", ":"), ensure_ascii=False)
        except (TypeError, ValueError):
            raise AnswerRefused("this answer is not plain data") from None
        if len(text.encode("utf-8")) > MAX_ANSWER_BYTES:
            raise AnswerRefused(f"this answer is larger than {MAX_ANSWER_BYTES} bytes, so it is not stored")

        def insert(conn):
            # the class's row locked until this answer is in (PostgreSQL's FOR UPDATE; SQLite's
            # BEGIN IMMEDIATE already runs one write at a time): answers arriving at once are
            # counted one after another, so the caps below hold exactly
            info = conn.execute(sa.select(classes.c.closed, classes.c.expires_at)
                                .where(classes.c.code == code).with_for_update()).first()
            if info is None:
                raise AnswerRefused(f"there is no class {code}")
            if info.closed or time.time() >= info.expires_at:
                raise AnswerRefused(f"class {code} is closed, so answers are no longer collected")
            self._admit(conn, code, session, exercise)  # on the roster, and an exercise the class counts
            # the student's answers in one read: to this exercise, in all, and how many exercises
            student = (answers.c.class_code == code) & (answers.c.session == session)
            here, own, own_kinds = conn.execute(sa.select(
                sa.func.coalesce(sa.func.sum(sa.case((answers.c.exercise == exercise, 1), else_=0)), 0),
                sa.func.count(), sa.func.count(sa.distinct(answers.c.exercise))).where(student)).one()
            attempt = int(here) + 1
            if attempt > MAX_ATTEMPTS:
                raise AnswerRefused(f"you have answered this exercise {MAX_ATTEMPTS} times already; "
                                    "your first answer is the one counted")
            if own >= MAX_STUDENT_ANSWERS or (attempt == 1 and own_kinds >= MAX_STUDENT_EXERCISES):
                raise AnswerRefused(f"you have answered {own_kinds} exercises in class {code}, the most one student "
                                    "may; the class still counts your earlier answers")
            conn.execute(answers.insert().values(class_code=code, exercise=exercise, session=session, attempt=attempt,
                                                 answer=text, correct=correct, answered_at=time.time()))
            return attempt
        for _ in range(3):
            try:
                return self._run(insert, write=True)
            except IntegrityError:
                continue  # the same session answered twice at once (two tabs): count again
        raise AnswerRefused("this answer collided with another from the same session; try again")

    def summary(self, key: str | None, code: str) -> list[StoredAnswer]:
        """Every answer of the class, oldest first: for the teacher's key only."""
        self._check_teacher(key, code)
        code = normalise_code(code)
        rows = self._run(lambda conn: conn.execute(
            sa.select(answers).where((answers.c.class_code == code)
                                     & answers.c.session.not_in(self._removed_sessions(code)))
            .order_by(answers.c.id)).all())
        return [StoredAnswer(r.exercise, r.session, r.attempt, json.loads(r.answer), r.correct, r.answered_at)
                for r in rows]

    # -- follow the teacher ------------------------------------------------------------------------
    def send(self, key: str | None, code: str, page: str, params: dict) -> int:
        """Put a page and its parameters on every following screen; returns the new version. An
        exercise sent is one the class counts (``add_exercise``)."""
        self._check_teacher(key, code)
        text = json.dumps({str(k): str(v) for k, v in params.items()}, ensure_ascii=False)
        if len(text.encode("utf-8")) > MAX_ANSWER_BYTES:
            raise AnswerRefused("the page's link is too long to send")
        sent = sent_exercise(page, params)
        if sent:
            self.add_exercise(key, code, sent)
        return self._bump(code, follow_page=str(page)[:64], follow_params=text, revealed=None)

    def reveal(self, key: str | None, code: str, exercise: str) -> int:
        """Show the answer of ``exercise`` on every following screen; returns the new version."""
        self._check_teacher(key, code)
        if not EXERCISE_ID.fullmatch(exercise or ""):
            raise AnswerRefused("not an exercise")
        self.add_exercise(key, code, exercise)
        return self._bump(code, revealed=exercise)

    def _bump(self, code: str, **values) -> int:
        code = normalise_code(code)

        def bump(conn):
            done = conn.execute(classes.update().where(classes.c.code == code)
                                .values(follow_version=classes.c.follow_version + 1, **values))
            if not done.rowcount:
                raise AnswerRefused(f"there is no class {code}")
            version = conn.execute(sa.select(classes.c.follow_version).where(classes.c.code == code)).scalar_one()
            self._notify(conn, code, version)
            return version
        version = self._run(bump, write=True)
        self._changed(code)
        return version

    def _changed(self, code: str) -> None:
        """This process changed the class's follow state: its own listeners (the follow board,
        server/follow.py) hear it at once, before any notification or read."""
        for listener in list(self.follow_listeners):
            listener(code)

    def _notify(self, conn, code: str, version: int) -> None:
        """Tell every process listening on this database (PostgreSQL's NOTIFY, delivered when the
        transaction commits; ``server/follow.py`` listens) that the class's follow state changed.
        SQLite has no such channel: its processes, on one machine, read the versions instead."""
        if self.kind == "postgresql":
            conn.execute(sa.select(sa.func.pg_notify(FOLLOW_CHANNEL, f"{code}:{version}")))

    def follow_many(self, codes) -> dict[str, FollowState]:
        """:meth:`follow` for several classes in one read (a process's follow board, server/follow.py)."""
        wanted = sorted({c for c in map(normalise_code, codes) if c})
        if not wanted:
            return {}
        rows = self._run(lambda conn: conn.execute(
            sa.select(classes.c.code, classes.c.follow_version, classes.c.follow_page, classes.c.follow_params,
                      classes.c.revealed, classes.c.closed, classes.c.expires_at, _removals(classes.c.code))
            .where(classes.c.code.in_(wanted))).all())
        now = time.time()
        return {r.code: FollowState(r.code, r.follow_version, r.follow_page, json.loads(r.follow_params or "{}"),
                                    r.revealed, not r.closed and now < r.expires_at, int(r.removals)) for r in rows}

    def follow(self, code: str | None) -> FollowState | None:
        """What a following session shows: one primary-key read, made every poll."""
        code = normalise_code(code)
        if not code:
            return None
        row = self._run(lambda conn: conn.execute(
            sa.select(classes.c.follow_version, classes.c.follow_page, classes.c.follow_params, classes.c.revealed,
                      classes.c.closed, classes.c.expires_at, _removals(classes.c.code))
            .where(classes.c.code == code)).first())
        if row is None:
            return None
        return FollowState(code, row.follow_version, row.follow_page, json.loads(row.follow_params or "{}"),
                           row.revealed, not row.closed and time.time() < row.expires_at, int(row.removals))


def _removals(code_column):
    """How many students were removed from the class: a count the follow state carries."""
    return (sa.select(sa.func.count()).where((roster.c.class_code == code_column) & roster.c.removed)
            .scalar_subquery().label("removals"))


SESSION_PREFIX = "ts-"  # a teacher session's token, never a key (a key is 12+ url-safe characters, "ts-" aside)
MAX_SENT_EXERCISES = MAX_EXERCISES - PRACTICE_SEEDS * len(PRACTICE_KINDS)
ADJECTIVES = ("Amber", "Bold", "Brave", "Bright", "Calm", "Clever", "Cosy", "Daring", "Eager", "Gentle", "Glad",
              "Golden", "Happy", "Jolly", "Keen", "Kind", "Lively", "Lucky", "Merry", "Mighty", "Nimble", "Proud",
              "Quick", "Quiet", "Rapid", "Silver", "Sunny", "Swift", "Tidy", "Witty", "Wise", "Zesty")
ANIMALS = ("Badger", "Beaver", "Bison", "Crane", "Dolphin", "Eagle", "Falcon", "Ferret", "Finch", "Fox", "Gecko",
           "Heron", "Ibis", "Jaguar", "Koala", "Lemur", "Lynx", "Marten", "Moose", "Newt", "Otter", "Owl", "Panda",
           "Puffin", "Quail", "Raven", "Seal", "Stork", "Tapir", "Walrus", "Wombat", "Yak")


def new_nickname(taken: set[str]) -> str:
    """A short nickname not in ``taken`` ("Calm Heron"; "Calm Heron 2" once the 1,024 pairs run short)."""
    for _ in range(20):
        name = f"{secrets.choice(ADJECTIVES)} {secrets.choice(ANIMALS)}"
        if name not in taken:
            return name
    n = 2
    while f"{name} {n}" in taken:
        n += 1
    return f"{name} {n}"


def in_practice(exercise: str) -> bool:
    """Is ``exercise`` in the practice catalogue every class counts: seeds 0 … PRACTICE_SEEDS - 1 of
    each kind (four per level), and the guided lesson's stops?"""
    kind, _, seed = str(exercise).partition(":")
    if kind in PRACTICE_KINDS:
        return seed.isdigit() and len(seed) <= 2 and int(seed) < PRACTICE_SEEDS and str(int(seed)) == seed
    return bool(LESSON_STOP.fullmatch(str(exercise)))


def sent_exercise(page: str, params: dict) -> str | None:
    """The exercise a sent Exercises page shows (``?ex=step&seed=40`` → "step:40"), else None."""
    kind, seed = str(params.get("ex", "align")), str(params.get("seed", "0"))
    if page != "exercises" or kind not in PRACTICE_KINDS or not seed.isdigit() or int(seed) > 9999:
        return None
    return f"{kind}:{int(seed)}"


def _hash(token: str) -> str:
    return hashlib.sha256(str(token).encode()).hexdigest()


def normalise_code(code: str | None) -> str:
    """A class code as typed ("abc 234" → "ABC234"); "" for anything that cannot be one."""
    code = re.sub(r"[\s-]", "", str(code or "")).upper()
    return code if len(code) == CODE_LENGTH and set(code) <= set(CODE_ALPHABET) else ""


def new_session_id() -> str:
    """The anonymous id of one browser session's answers: random, never a name."""
    return secrets.token_hex(8)


_stores: dict[tuple, ClassStore] = {}
_stores_lock = threading.Lock()


def class_store() -> ClassStore:
    """This process's store (one engine and pool, shared by every session), as configured now.
    Kept in this module, not in ``st.cache_resource``: a visitor's ``clear_cache`` message empties
    that, and would drop the engine and its pool under every session (server/shared.py)."""
    config = (settings.class_db(), settings.class_hours(), settings.teacher_key())
    with _stores_lock:
        if config not in _stores:
            _stores[config] = ClassStore(*config)
        return _stores[config]


__all__ = ["ClassStore", "ClassInfo", "FollowState", "StoredAnswer", "StoreUnavailable", "NotTeacher", "AnswerRefused",
           "StoreBusy", "OutsideClass", "Member", "RosterEntry", "ClassCounts", "class_store", "normalise_code",
           "new_session_id", "in_practice", "sent_exercise", "MAX_ANSWER_BYTES", "MAX_ATTEMPTS", "MAX_STUDENT_EXERCISES",
           "MAX_STUDENT_ANSWERS", "MAX_STUDENTS", "PRACTICE_SEEDS", "FOLLOW_CHANNEL"]
