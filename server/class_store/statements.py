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
