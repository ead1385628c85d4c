"""Answers: a student's answer stored, bounded in size, depth and count, and the class's answers read."""
from __future__ import annotations

import json
import time

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError


from server.class_store.schema import (AnswerRefused, FIRST_ATTEMPT, answers, EXERCISE_ID, MAX_ANSWER_BYTES,
                                       MAX_ANSWER_DEPTH, MAX_ATTEMPTS, MAX_STUDENT_ANSWERS, MAX_STUDENT_EXERCISES,
                                       normalise_code, SESSION_ID, StoredAnswer)
from server.class_store.roster import in_practice
from server.class_store.statements import ANSWER, answer_at_once, ATTEMPT_OF, CLASS_OPEN, STUDENT_ANSWERS

ANSWER_AT_ONCE = answer_at_once(MAX_ATTEMPTS, MAX_STUDENT_ANSWERS, MAX_STUDENT_EXERCISES, FIRST_ATTEMPT)


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


class Answers:
    """Answers (a part of :class:`server.class_store.ClassStore`)."""

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

        if self.kind == "sqlite":  # the answer in one statement; where it is not stored, the transaction says why
            written, row = self._write_at_once(ANSWER_AT_ONCE, dict(
                code=code, exercise=exercise, session=session, answer=text, correct=correct, now=time.time(),
                practice=in_practice(exercise)))
            if written == 1:
                return self._run(lambda conn: conn.execute(ATTEMPT_OF, {"id": row}).scalar_one())

        def insert(conn):
            # the class's row locked until this answer is in (PostgreSQL's FOR UPDATE; SQLite's
            # BEGIN IMMEDIATE already runs one write at a time): answers arriving at once are
            # counted one after another, so the caps below hold exactly
            info = conn.execute(CLASS_OPEN, {"code": code}).first()
            if info is None:
                raise AnswerRefused(f"there is no class {code}")
            if info.closed or time.time() >= info.expires_at:
                raise AnswerRefused(f"class {code} is closed, so answers are no longer collected")
            self._admit(conn, code, session, exercise)  # on the roster, and an exercise the class counts
            # the student's answers in one read: to this exercise, in all, and how many exercises
            here, own, own_kinds = conn.execute(STUDENT_ANSWERS, {"code": code, "session": session,
                                                                  "exercise": exercise}).one()
            attempt = int(here) + 1
            if attempt > MAX_ATTEMPTS:
                raise AnswerRefused(f"you have answered this exercise {MAX_ATTEMPTS} times already; "
                                    "your first answer is the one counted")
            if own >= MAX_STUDENT_ANSWERS or (attempt == FIRST_ATTEMPT and own_kinds >= MAX_STUDENT_EXERCISES):
                raise AnswerRefused(f"you have answered {own_kinds} exercises in class {code}, the most one student "
                                    "may; the class still counts your earlier answers")
            conn.execute(ANSWER, dict(class_code=code, exercise=exercise, session=session, attempt=attempt,
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
