"""The statements a class's bursts run most, built once with bound parameters: a student's join
(every student when the link goes up) and an answer (every student within seconds of a reload).

Built for each call, a statement's construction, coercion and cache key are most of its cost in
SQLAlchemy: a first join of a class of 200 took 1.90–2.08 ms, 0.66–0.69 with these
(``python bench/join_cost.py --app DIR``, docs/performance.md). Executed as
``conn.execute(MEMBER, {"code": ..., "session": ...})``."""
from __future__ import annotations

import sqlalchemy as sa

from server.class_store.schema import answers, class_admission, class_exercises, class_locks, classes, join_requests, roster

CODE = sa.bindparam("code", type_=sa.String)
SESSION = sa.bindparam("session", type_=sa.String)
EXERCISE = sa.bindparam("exercise", type_=sa.String)
TAG = sa.bindparam("tag", type_=sa.String)
SINCE = sa.bindparam("since", type_=sa.Float)
NOW = sa.bindparam("now", type_=sa.Float)


def how_many(condition):
    """The number of rows where ``condition`` holds, as one column of an aggregate select."""
    return sa.func.coalesce(sa.func.sum(sa.case((condition, 1), else_=0)), 0)


# the class's row, locked until the transaction ends (PostgreSQL's FOR UPDATE; SQLite's BEGIN
# IMMEDIATE runs one write at a time already): is it open?
CLASS_OPEN = sa.select(classes.c.closed, classes.c.expires_at).where(classes.c.code == CODE).with_for_update()
# a student's row on the class's roster
MEMBER = sa.select(roster.c.nickname, roster.c.joined_at, roster.c.removed).where(
    (roster.c.class_code == CODE) & (roster.c.session == SESSION))
# the names on the roster and those students wait under (each keeps theirs when let in)
NICKNAMES = sa.union_all(sa.select(roster.c.nickname).where(roster.c.class_code == CODE),
                         sa.select(join_requests.c.nickname).where(join_requests.c.class_code == CODE))
ENROL = roster.insert()
# the class locked? and its admission rules (no row: the defaults), in one read
RULES = sa.select(
    sa.exists().where(class_locks.c.class_code == CODE).label("locked"),
    class_admission.c.seats, class_admission.c.approve, class_admission.c.joins_until).select_from(
    sa.outerjoin(sa.select(CODE.label("code")).subquery("wanted"), class_admission, class_admission.c.class_code == CODE))
# the seats taken, the joins from one address within the last minute, and the students removed from it
JOINS = sa.select(how_many(~roster.c.removed), how_many((roster.c.address == TAG) & (roster.c.joined_at > SINCE)),
                  how_many((roster.c.address == TAG) & roster.c.removed)).where(roster.c.class_code == CODE)
# an exercise the teacher sent or revealed to the class
SENT_EXERCISE = sa.select(class_exercises.c.exercise).where(
    (class_exercises.c.class_code == CODE) & (class_exercises.c.exercise == EXERCISE))
# a student's answers in one read: to this exercise, in all, and how many exercises
STUDENT_ANSWERS = sa.select(
    sa.func.coalesce(sa.func.sum(sa.case((answers.c.exercise == EXERCISE, 1), else_=0)), 0),
    sa.func.count(), sa.func.count(sa.distinct(answers.c.exercise))).where(
    (answers.c.class_code == CODE) & (answers.c.session == SESSION))
ANSWER = answers.insert()

# an answer in one statement (``Answers.submit`` on SQLite: ``StoreEngine._write_at_once``): stored
# only where the transaction's checks would all pass (the class open, the student on its roster,
# an exercise it counts, the attempts and the student's caps), as attempt = their answers to it + 1;
# no row written: the transaction runs and says why
_MINE = sa.select(how_many(answers.c.exercise == EXERCISE).label("here"), sa.func.count().label("own"),
                  sa.func.count(sa.distinct(answers.c.exercise)).label("kinds")).where(
    (answers.c.class_code == CODE) & (answers.c.session == SESSION)).subquery("mine")


def answer_at_once(max_attempts: int, max_answers: int, max_exercises: int, first: int):
    counted = sa.or_(sa.bindparam("practice", type_=sa.Boolean), sa.exists().where(
        (class_exercises.c.class_code == CODE) & (class_exercises.c.exercise == EXERCISE)))
    return answers.insert().from_select(
        ["class_code", "exercise", "session", "attempt", "answer", "correct", "answered_at"],
        sa.select(CODE, EXERCISE, SESSION, _MINE.c.here + 1, sa.bindparam("answer", type_=sa.Text),
                  sa.bindparam("correct", type_=sa.Boolean), NOW).select_from(_MINE).where(
            sa.exists().where((classes.c.code == CODE) & ~classes.c.closed & (classes.c.expires_at > NOW)),
            sa.exists().where((roster.c.class_code == CODE) & (roster.c.session == SESSION) & ~roster.c.removed),
            counted, _MINE.c.here < max_attempts, _MINE.c.own < max_answers,
            (_MINE.c.here + 1 != first) | (_MINE.c.kinds < max_exercises)))


ATTEMPT_OF = sa.select(answers.c.attempt).where(answers.c.id == sa.bindparam("id", type_=sa.Integer))


# a new student's join in one statement (``ClassesAndRoster.join`` on SQLite): written only where
# the transaction would let them in at once (the class open and unlocked, its join window open, no
# approval asked, a seat free, fewer joins from their address within the minute than ``most``, or
# ``most_again`` after a removal there); no row written (or the nickname drawn from a read before
# it taken meanwhile): the transaction runs and says why
_COUNTS = sa.select(how_many(~roster.c.removed).label("students"),
                    how_many((roster.c.address == TAG) & (roster.c.joined_at > SINCE)).label("recent"),
                    how_many((roster.c.address == TAG) & roster.c.removed).label("removed_here")).where(
    roster.c.class_code == CODE).subquery("counts")


def _rule(column):
    return sa.select(column).where(class_admission.c.class_code == CODE).scalar_subquery()


JOIN_AT_ONCE = roster.insert().from_select(
    ["class_code", "session", "nickname", "joined_at", "address", "removed"],
    sa.select(CODE, SESSION, sa.bindparam("nickname", type_=sa.String), NOW, TAG, sa.false()).select_from(_COUNTS).where(
        sa.exists().where((classes.c.code == CODE) & ~classes.c.closed & (classes.c.expires_at > NOW)),
        ~sa.exists().where((roster.c.class_code == CODE) & (roster.c.session == SESSION)),
        ~sa.exists().where(class_locks.c.class_code == CODE),
        sa.func.coalesce(_rule(class_admission.c.approve), sa.false()) == sa.false(),
        sa.or_(_rule(class_admission.c.joins_until).is_(None), _rule(class_admission.c.joins_until) > NOW),
        _COUNTS.c.students < sa.func.coalesce(_rule(class_admission.c.seats), sa.bindparam("seats", type_=sa.Integer)),
        _COUNTS.c.recent < sa.case((_COUNTS.c.removed_here > 0, sa.bindparam("most_again", type_=sa.Integer)),
                                   else_=sa.bindparam("most", type_=sa.Integer))))
