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
  locked" when another thread or process writes alongside). What a class does all at once, a
  student let in and an answer counted, is one statement in autocommit instead, whose checks
  are its own ``WHERE`` (``statements.py``): the write lock is held only inside SQLite, never
  while the thread waits for the GIL; where it writes nothing, the transaction runs and says why.
  Safe for several server processes on one machine (the lecture setup behind HAProxy).
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

The package by concern: :mod:`~server.class_store.schema` (tables, limits, records),
:mod:`~server.class_store.engine` (the database), :mod:`~server.class_store.teacher` (the key and
the teacher's sessions), :mod:`~server.class_store.roster` (classes and rosters),
:mod:`~server.class_store.admission` (seats, approvals, the join window),
:mod:`~server.class_store.answers`, :mod:`~server.class_store.follow` (what the teacher sent) and
:mod:`~server.class_store.activity` (the teacher's live views' change signal);
:class:`ClassStore` joins them, and this module is what the rest of the server imports.
"""
from __future__ import annotations

import threading

from server import settings
from server.class_store.activity import ClassActivity
from server.class_store.admission import ClassAdmission
from server.class_store.answers import Answers, nesting_depth
from server.class_store.engine import engine_for, private_file, StoreEngine
from server.class_store.follow import FollowTheTeacher
from server.class_store.roster import ADJECTIVES, ANIMALS, ClassesAndRoster, in_practice, new_nickname, sent_exercise
from server.class_store.schema import (Admission, AnswerRefused, AwaitingApproval,  # noqa: F401 - the store's names
                                       ClassCounts, ClassInfo, CODE_ALPHABET, CODE_LENGTH, EXERCISE_ID,
                                       FIRST_ATTEMPT, FOLLOW_CHANNEL, FollowState, LESSON_STOP, MAX_ANSWER_BYTES,
                                       MAX_ANSWER_DEPTH, MAX_ATTEMPTS, MAX_EXERCISES, MAX_SENT_EXERCISES, MAX_STUDENT_ANSWERS,
                                       MAX_STUDENT_EXERCISES, MAX_STUDENTS, Member, new_session_id, normalise_code,
                                       NotTeacher, OutsideClass, PRACTICE_KINDS, PRACTICE_SEEDS, RosterEntry,
                                       SESSION_ID, SESSION_PREFIX, StoreBusy, StoredAnswer, StoreUnavailable)
from server.class_store.teacher import TeacherKeys


class ClassStore(TeacherKeys, ClassAdmission, ClassesAndRoster, Answers, FollowTheTeacher, ClassActivity, StoreEngine):
    """Classes, their answers and what the teacher sent, in one database (see the package)."""


_stores: dict[tuple, ClassStore] = {}

_stores_lock = threading.Lock()


def class_store() -> ClassStore:
    """This process's store (one engine and pool, shared by every session), as configured now.
    Kept in this module, not in ``st.cache_resource``: a visitor's ``clear_cache`` message empties
    that, and would drop the engine and its pool under every session (server/shared.py)."""
    config = _config()
    with _stores_lock:
        if config not in _stores:
            _stores[config] = ClassStore(*config)
        return _stores[config]


def built_class_store() -> ClassStore | None:
    """:func:`class_store` if this process has made it for the configuration now, else None: never
    makes one and never waits on the lock (for the event loop, which must not wait on a database)."""
    return _stores.get(_config())


def _config() -> tuple:
    return settings.class_db(), settings.class_hours(), settings.teacher_key()


__all__ = ["ClassStore", "class_store", "built_class_store", "Admission", "AwaitingApproval",
           "AnswerRefused", "ClassCounts", "ClassInfo", "CODE_ALPHABET", "CODE_LENGTH",
           "EXERCISE_ID", "FIRST_ATTEMPT", "FOLLOW_CHANNEL", "FollowState", "LESSON_STOP", "MAX_ANSWER_BYTES", "MAX_ANSWER_DEPTH",
           "MAX_ATTEMPTS", "MAX_EXERCISES", "MAX_SENT_EXERCISES", "MAX_STUDENT_ANSWERS", "MAX_STUDENT_EXERCISES",
           "MAX_STUDENTS", "Member", "new_session_id", "normalise_code", "NotTeacher", "OutsideClass",
           "PRACTICE_KINDS", "PRACTICE_SEEDS", "RosterEntry", "SESSION_ID", "SESSION_PREFIX", "StoreBusy",
           "StoredAnswer", "StoreUnavailable", "ADJECTIVES", "ANIMALS", "in_practice", "new_nickname",
           "sent_exercise", "nesting_depth", "engine_for", "private_file"]
