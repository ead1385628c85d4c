"""The class store's tables, limits and records: what every part of the store shares."""
from __future__ import annotations

import hashlib
import re
import secrets
import time
from dataclasses import dataclass

import sqlalchemy as sa


MAX_ANSWER_BYTES = 4096      # an alignment of 30 x 30 words is well under this

FIRST_ATTEMPT = 1            # the attempt a class counts: each student's first answer (StoredAnswer.counted)
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

SESSION_PREFIX = "ts-"  # a teacher session's token, never a key (a key is 12+ url-safe characters, "ts-" aside)

MAX_SENT_EXERCISES = MAX_EXERCISES - PRACTICE_SEEDS * len(PRACTICE_KINDS)


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

# how a class admits students, as its teacher set it (no row: the defaults): its seats, whether the
# teacher approves each join, and until when it takes new students (a join window; None: no end)
class_admission = sa.Table(
    "class_admission", metadata,
    sa.Column("class_code", sa.String(CODE_LENGTH), primary_key=True),
    sa.Column("seats", sa.Integer, nullable=False),
    sa.Column("approve", sa.Boolean, nullable=False, default=False),
    sa.Column("joins_until", sa.Float),
)

# students waiting for the teacher's approval (a class with *approve joins*): let in, they move to the roster
join_requests = sa.Table(
    "join_requests", metadata,
    sa.Column("class_code", sa.String(CODE_LENGTH), primary_key=True),
    sa.Column("session", sa.String(32), primary_key=True),
    sa.Column("nickname", sa.String(40), nullable=False),
    sa.Column("asked_at", sa.Float, nullable=False),
    sa.Column("address", sa.String(32), nullable=False),
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


class AwaitingApproval(AnswerRefused):
    """A join the teacher has still to approve (a class with *approve joins*): the student waits, named."""


class OutsideClass(AnswerRefused):
    """An answer to an exercise the class does not count (practice outside its set): the student's own."""


class StoreBusy(StoreUnavailable):
    """The database is up but did not answer in time (a lock held elsewhere, a slow statement):
    nothing was written, and the same call a moment later may succeed."""


    def __init__(self, what: str = "the class store"):
        super().__init__(f"{what} is busy; nothing was saved, try again in a moment")


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
class Admission:
    """How a class admits students: ``seats`` (its most students), ``approve`` (the teacher lets each
    new one in), ``joins_until`` (no new student after it; None: no end)."""
    seats: int
    approve: bool = False
    joins_until: float | None = None


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
    """One stored answer; ``attempt`` numbers a student's answers to one exercise from 1."""
    exercise: str
    session: str
    attempt: int
    answer: dict
    correct: bool | None
    answered_at: float

    @property
    def counted(self) -> bool:
        """Is this the answer the class counts? The rule, written once: a student's first
        committed answer to an exercise (attempt ``FIRST_ATTEMPT``); later ones are retries."""
        return self.attempt == FIRST_ATTEMPT


def normalise_code(code: str | None) -> str:
    """A class code as typed ("abc 234" → "ABC234"); "" for anything that cannot be one."""
    code = re.sub(r"[\s-]", "", str(code or "")).upper()
    return code if len(code) == CODE_LENGTH and set(code) <= set(CODE_ALPHABET) else ""


def new_session_id() -> str:
    """The anonymous id of one browser session's answers: random, never a name."""
    return secrets.token_hex(8)


def token_hash(token: str) -> str:
    return hashlib.sha256(str(token).encode()).hexdigest()
