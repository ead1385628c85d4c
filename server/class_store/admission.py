"""Who joins a class, as its teacher decides: its seats, *approve joins*, a join window.

A class has ``settings.class_seats()`` seats unless its teacher sets others (up to
``MAX_STUDENTS``): a school's whole hall behind one address gets in, and no address, one
script's included, takes more seats than the class has. With *approve joins* a new student waits,
named, until the teacher lets them in (as Desmos Classroom and Kahoot's two-step join do); a join
window ends joining at a set time, as *Lock the class* does at once. The checks on each join are
in :meth:`ClassAdmission._may_join` (``roster.join`` calls it inside its transaction).
"""
from __future__ import annotations

import time

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from server import settings
from server.class_store.roster import new_nickname
from server.class_store.schema import (Admission, AnswerRefused, AwaitingApproval, class_admission, join_requests,
                                       MAX_STUDENTS, normalise_code, roster)
from server.class_store.statements import JOINS, RULES

MAX_WAITING = 2 * MAX_STUDENTS  # students waiting for approval in one class: a script cannot fill the teacher's list


class ClassAdmission:
    """Seats, approvals and the join window (a part of :class:`server.class_store.ClassStore`)."""

    def admission(self, code: str | None) -> Admission:
        """How the class admits students (the defaults until its teacher changes them)."""
        code = normalise_code(code)
        return self._run(lambda conn: self._admission(conn, code))

    @staticmethod
    def _admission(conn, code: str) -> Admission:
        return ClassAdmission._rules(conn.execute(sa.select(class_admission)
                                                  .where(class_admission.c.class_code == code)).first())

    @staticmethod
    def _rules(row) -> Admission:
        """A class's admission row as the rules (no row, or no seats in an outer join: the defaults)."""
        if row is None or row.seats is None:
            return Admission(min(MAX_STUDENTS, settings.class_seats()))
        return Admission(int(row.seats), bool(row.approve), row.joins_until)

    def set_admission(self, key: str | None, code: str, seats: int | None = None, approve: bool | None = None,
                      window_min: float | None = None, no_window: bool = False) -> Admission:
        """The teacher's choices: ``seats`` (1 … MAX_STUDENTS), ``approve`` each join, joins open for
        ``window_min`` more minutes (``no_window``: no end). What is not given stays."""
        self._check_teacher(key, code)
        code = normalise_code(code)

        def change(conn):
            now = self._admission(conn, code)
            until = None if no_window else (time.time() + 60 * window_min if window_min is not None else now.joins_until)
            new = Admission(max(1, min(MAX_STUDENTS, int(seats))) if seats is not None else now.seats,
                            now.approve if approve is None else bool(approve), until)
            conn.execute(class_admission.delete().where(class_admission.c.class_code == code))
            conn.execute(class_admission.insert().values(class_code=code, seats=new.seats, approve=new.approve,
                                                         joins_until=new.joins_until))
            return new
        return self._run(change, write=True)

    def _may_join(self, conn, code: str, tag: str, session: str = "", nickname: str = "") -> str | None:
        """A new student may join: not locked, the join window open, a seat free, not too many joins from
        one address (fewer still from an address a student was removed from). With *approve joins* they
        wait instead, as ``nickname`` (or the name they waited under): that name is returned, and
        ``join`` raises AwaitingApproval once the request is stored."""
        # two reads, not six: a join is what every student of a class does at once when the link goes up
        lock_and_rules = conn.execute(RULES, {"code": code}).one()
        if lock_and_rules.locked:
            raise AnswerRefused(f"class {code} is locked: the teacher has closed it to new students "
                                "(ask the teacher to unlock it)")
        rules = self._rules(lock_and_rules)
        if rules.joins_until is not None and time.time() >= rules.joins_until:
            raise AnswerRefused(f"class {code}'s time to join is over (the teacher set it); ask the teacher to open it")
        students, recent, removed_here = conn.execute(JOINS, {"code": code, "tag": tag, "since": time.time() - 60}).one()
        if students >= rules.seats:
            raise AnswerRefused(f"class {code} has its {rules.seats} seats taken; this tab joins by itself as soon "
                                "as one frees (or the teacher adds seats)")
        most = settings.joins_per_minute()
        if removed_here:
            most = min(most, settings.rejoins_per_minute())  # the teacher removed someone from this address
        if recent >= most:
            raise AnswerRefused(f"{most} students joined class {code} from your network within the last minute, "
                                "the most it takes: this tab tries again by itself")
        return self._ask_to_join(conn, code, session, nickname, tag) if rules.approve else None

    @staticmethod
    def _ask_to_join(conn, code: str, session: str, nickname: str, tag: str) -> str:
        mine = (join_requests.c.class_code == code) & (join_requests.c.session == session)
        asked = conn.execute(sa.select(join_requests.c.nickname).where(mine)).first()
        if asked is None:
            waiting = conn.execute(sa.select(sa.func.count()).where(join_requests.c.class_code == code)).scalar_one()
            if waiting >= MAX_WAITING:
                raise AnswerRefused(f"class {code} has {waiting} students waiting for the teacher already")
            conn.execute(join_requests.insert().values(class_code=code, session=session, nickname=nickname,
                                                       asked_at=time.time(), address=tag))
        return asked.nickname if asked else nickname

    @staticmethod
    def awaiting(code: str, nickname: str) -> AwaitingApproval:
        return AwaitingApproval(f"the teacher lets each student into class {code}: you wait as **{nickname}**, "
                                "and this tab joins by itself once let in")

    def waiting_students(self, key: str | None, code: str) -> list[tuple[str, float]]:
        """(nickname, when asked) of the students waiting for the teacher's approval, first asked first."""
        self._check_teacher(key, code)
        code = normalise_code(code)
        return [(r.nickname, r.asked_at) for r in self._run(lambda conn: conn.execute(
            sa.select(join_requests.c.nickname, join_requests.c.asked_at)
            .where(join_requests.c.class_code == code).order_by(join_requests.c.asked_at)).all())]

    def approve_join(self, key: str | None, code: str, nickname: str | None = None) -> int:
        """Let the waiting student ``nickname`` in (None: every one waiting, first asked first, while
        seats are free); how many were let in."""
        self._check_teacher(key, code)
        code = normalise_code(code)

        def let_in(conn):
            mine = join_requests.c.class_code == code
            if nickname is not None:
                mine = mine & (join_requests.c.nickname == str(nickname)[:40])
            waiting = conn.execute(sa.select(join_requests).where(mine).order_by(join_requests.c.asked_at)).all()
            seats = self._admission(conn, code).seats
            students = conn.execute(sa.select(sa.func.count()).where(
                (roster.c.class_code == code) & ~roster.c.removed)).scalar_one()
            admitted = 0
            on_roster = set(conn.execute(sa.select(roster.c.nickname).where(roster.c.class_code == code)).scalars())
            for row in waiting[:max(0, seats - students)]:
                conn.execute(join_requests.delete().where((join_requests.c.class_code == code)
                                                          & (join_requests.c.session == row.session)))
                # the name they waited under, unless someone on the roster took it meanwhile (joined
                # while approval was off): one name a class, or the insert would undo every admission
                name = row.nickname if row.nickname not in on_roster else new_nickname(on_roster)
                on_roster.add(name)
                conn.execute(roster.insert().values(class_code=code, session=row.session, nickname=name,
                                                    joined_at=time.time(), address=row.address, removed=False))
                admitted += 1
            return admitted
        try:
            admitted = self._run(let_in, write=True)
        except IntegrityError:  # the student joined meanwhile (the teacher turned approval off): look again
            admitted = 0
        if admitted:
            self._bump(code)
        return admitted
