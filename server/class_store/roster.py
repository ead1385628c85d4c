"""Classes and their rosters: opening, closing and expiring a class, who joined it (nicknames,
locks, removals), and which exercises it counts."""
from __future__ import annotations

import hmac
import secrets
import time

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from server import settings
from server.class_store.schema import (AnswerRefused, FIRST_ATTEMPT, answers, class_admission, class_exercises, class_locks,
                                       join_requests, ClassCounts, classes,
                                       ClassInfo, CODE_ALPHABET, CODE_LENGTH, EXERCISE_ID, LESSON_STOP, MAX_EXERCISES,
                                       MAX_SENT_EXERCISES, MAX_STUDENTS, Member, normalise_code, OutsideClass,
                                       PRACTICE_KINDS, PRACTICE_SEEDS, roster, RosterEntry, SESSION_ID,
                                       StoreUnavailable, teacher_sessions)
from server.class_store.statements import CLASS_OPEN, ENROL, JOIN_AT_ONCE, MEMBER, NICKNAMES, SENT_EXERCISE

ADJECTIVES = ("Amber", "Bold", "Brave", "Bright", "Calm", "Clever", "Cosy", "Daring", "Eager", "Gentle", "Glad",
              "Golden", "Happy", "Jolly", "Keen", "Kind", "Lively", "Lucky", "Merry", "Mighty", "Nimble", "Proud",
              "Quick", "Quiet", "Rapid", "Silver", "Sunny", "Swift", "Tidy", "Witty", "Wise", "Zesty")


ANIMALS = ("Badger", "Beaver", "Bison", "Crane", "Dolphin", "Eagle", "Falcon", "Ferret", "Finch", "Fox", "Gecko",
           "Heron", "Ibis", "Jaguar", "Koala", "Lemur", "Lynx", "Marten", "Moose", "Newt", "Otter", "Owl", "Panda",
           "Puffin", "Quail", "Raven", "Seal", "Stork", "Tapir", "Walrus", "Wombat", "Yak")


class ClassesAndRoster:
    """Classes and rosters (a part of :class:`server.class_store.ClassStore`)."""

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
            for table in (roster, class_exercises, class_locks, teacher_sessions, class_admission, join_requests):
                conn.execute(table.delete().where(table.c.class_code.in_(old)))
            return conn.execute(classes.delete().where(classes.c.expires_at < now)).rowcount
        return self._run(purge, write=True)

    def join(self, code: str | None, session: str, address: str = "") -> Member:
        """Put student ``session`` on the class's roster (or find them there): a nickname of their
        own, the join time. Refused, with a reason a student can read: no such class, closed,
        locked (a new id), removed, its seats taken, its join window over, too many joins from
        ``address`` within a minute (``settings.joins_per_minute``, or ``rejoins_per_minute`` from
        an address the teacher removed a student of; counted across every process on the store), or
        waiting for the teacher's approval (AwaitingApproval; ``server/class_store/admission.py``)."""
        code = normalise_code(code)
        if not SESSION_ID.fullmatch(session or ""):
            raise AnswerRefused("this browser has no valid student id")
        who = {"code": code, "session": session}
        known = self._run(lambda conn: conn.execute(MEMBER, who).first())
        if known is not None and not known.removed:  # back (a reload, a followed page): one read, no write
            return self._noted(Member(code, known.nickname, known.joined_at, False), session)
        tag = self._address_tag(address)
        if self.kind == "sqlite":  # let in with one statement; where that writes nothing, the transaction says why
            joined = self._join_at_once(code, session, tag)
            if joined is not None:
                return self._noted(joined, session)

        def enter(conn):
            info = conn.execute(CLASS_OPEN, who).first()
            if info is None:
                raise AnswerRefused(f"there is no class {code or '(none)'}")
            row = conn.execute(MEMBER, who).first()
            if row is not None:
                if row.removed:
                    raise AnswerRefused(f"the teacher removed you from class {code}; your answers are not counted")
                return Member(code, row.nickname, row.joined_at, False)
            if info.closed or time.time() >= info.expires_at:
                raise AnswerRefused(f"class {code} is closed, so it takes no new students")
            taken = set(conn.execute(NICKNAMES, who).scalars())
            member = Member(code, new_nickname(taken), time.time(), True)
            waiting = self._may_join(conn, code, tag, session, member.nickname)  # server/class_store/admission.py
            if waiting:
                return waiting  # asked the teacher (stored with this transaction): refused below
            conn.execute(ENROL, dict(class_code=code, session=session, nickname=member.nickname,
                                     joined_at=member.joined_at, address=tag, removed=False))
            return member
        for _ in range(3):
            try:
                joined = self._run(enter, write=True)
            except IntegrityError:
                continue  # the same id joining twice at once (two tabs), or one nickname drawn twice: look again
            if isinstance(joined, str):
                raise self.awaiting(code, joined)
            return self._noted(joined, session)
        raise AnswerRefused("joining collided with another join; try again")

    def _join_at_once(self, code: str, session: str, tag: str) -> Member | None:
        """A new student on the roster by one statement (``JOIN_AT_ONCE``, ``_write_at_once``), its
        nickname drawn from a read just before; None where it wrote nothing."""
        taken = set(self._run(lambda conn: conn.execute(NICKNAMES, {"code": code}).scalars().all()))
        now = time.time()
        member = Member(code, new_nickname(taken), now, True)
        most = settings.joins_per_minute()
        try:
            written, _ = self._write_at_once(JOIN_AT_ONCE, dict(
                code=code, session=session, nickname=member.nickname, now=now, tag=tag, since=now - 60,
                seats=min(MAX_STUDENTS, settings.class_seats()), most=most,
                most_again=min(most, settings.rejoins_per_minute())))
        except IntegrityError:  # the nickname drawn taken meanwhile, or the same id joining in two tabs at once
            return None
        return member if written == 1 else None

    JOINED_KEPT = 20_000  # students this process remembers the nickname of (a class's seats are 400 at most)

    def _noted(self, member: Member, session: str) -> Member:
        with self.joined_lock:
            self.joined.pop((member.code, session), None)
            self.joined[(member.code, session)] = member.nickname  # last: the most recent
            while len(self.joined) > self.JOINED_KEPT:
                self.joined.popitem(last=False)
        return member

    def joined_as(self, code: str, session: str) -> str | None:
        """The nickname ``session`` had when it last joined class ``code`` through this object, or
        None: no read (for the event loop). A student removed since is still found here; whoever
        asks checks the class's removals (``FollowState.removals``), as a follower's tab does."""
        with self.joined_lock:
            return self.joined.get((normalise_code(code), session))

    def on_roster(self, code: str | None, session: str) -> bool:
        """Is student ``session`` on the class's roster, removed or not? (What a follow request's
        named place rests on, ``server/follow.py``: a removed student's tab still hears of an *Undo*.)"""
        code = normalise_code(code)
        if not code or not SESSION_ID.fullmatch(session or ""):
            return False
        return self._run(lambda conn: conn.execute(sa.select(roster.c.session).where(
            (roster.c.class_code == code) & (roster.c.session == session))).first()) is not None

    def removed_sessions(self, code: str | None) -> frozenset[str]:
        """The ids of the students removed from the class, in one read: the tabs a removal or its
        *Undo* concerns (``server/follow.py``: the others have nothing to redraw)."""
        code = normalise_code(code)
        return frozenset(self._run(lambda conn: conn.execute(sa.select(roster.c.session).where(
            (roster.c.class_code == code) & roster.c.removed)).scalars().all()))

    def class_codes(self) -> set[str]:
        """The codes of every class the store holds (open, closed, not yet purged): one read, so that a
        follow request naming a code that is none of them costs no read of its own."""
        return set(self._run(lambda conn: conn.execute(sa.select(classes.c.code)).scalars().all()))

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
        row = conn.execute(MEMBER, {"code": code, "session": session}).first()
        if row is None:
            raise AnswerRefused(f"join class {code} first (its link, or its code in the Class panel)")
        if row.removed:
            raise AnswerRefused(f"the teacher removed you from class {code}; your answers are not counted")
        if not in_practice(exercise) and not conn.execute(SENT_EXERCISE, {"code": code, "exercise": exercise}).first():
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

    def counts(self, code: str | None, exercise: str) -> bool:
        """Does class ``code`` count ``exercise`` now (the practice catalogue, or one its teacher sent
        or revealed)? What a student is told before answering: counted, or practice of their own."""
        if not code or not EXERCISE_ID.fullmatch(exercise or ""):
            return False
        if in_practice(exercise):
            return True
        code = normalise_code(code)
        return self._run(lambda conn: conn.execute(sa.select(class_exercises.c.exercise).where(
            (class_exercises.c.class_code == code) & (class_exercises.c.exercise == exercise))).first()) is not None

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

    def remove_many(self, key: str | None, code: str, joined_since: float | None = None,
                    unanswered: bool = False) -> list[str]:
        """Take off the roster, in one move, every student who joined at ``joined_since`` or later
        (a time, ``time.time()``'s), or who has given no answer (``unanswered``), or both at once
        (either filter alone, or the two together: those who joined since then *and* never
        answered): a batch of fakes that one script joined. Their nicknames (for :meth:`readmit_many`'s
        *Undo*); the follow version moves once, so every removed tab hears of it."""
        self._check_teacher(key, code)
        code = normalise_code(code)
        if joined_since is None and not unanswered:
            return []

        def change(conn):
            who = (roster.c.class_code == code) & ~roster.c.removed
            if joined_since is not None:
                who &= roster.c.joined_at >= float(joined_since)
            if unanswered:
                who &= roster.c.session.not_in(sa.select(answers.c.session).where(answers.c.class_code == code))
            names = list(conn.execute(sa.select(roster.c.nickname).where(who).order_by(roster.c.joined_at)).scalars())
            if names:
                conn.execute(roster.update().where((roster.c.class_code == code)
                                                   & roster.c.nickname.in_(names)).values(removed=True))
            return names
        names = self._run(change, write=True)
        if names:
            self._bump(code)
        return names

    def readmit_many(self, key: str | None, code: str, nicknames: list[str]) -> int:
        """Undo :meth:`remove_many`: those students are on the roster again, with their answers. How many."""
        self._check_teacher(key, code)
        code = normalise_code(code)
        names = [str(n)[:40] for n in nicknames][:MAX_STUDENTS]  # a batch is at most a roster

        def change(conn):
            return conn.execute(roster.update().where((roster.c.class_code == code) & roster.c.removed
                                                      & roster.c.nickname.in_(names)).values(removed=False)).rowcount
        back = self._run(change, write=True) if names else 0
        if back:
            self._bump(code)
        return int(back)

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

    def nicknames(self, key: str | None, code: str) -> dict[str, str]:
        """Each student's nickname by their anonymous id (removed students left out): what the
        teacher's per-student views and exports show in place of the id."""
        self._check_teacher(key, code)
        code = normalise_code(code)
        rows = self._run(lambda conn: conn.execute(sa.select(roster.c.session, roster.c.nickname).where(
            (roster.c.class_code == code) & ~roster.c.removed)).all())
        return {r.session: r.nickname for r in rows}

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
                sa.func.coalesce(sa.func.sum(sa.case((answers.c.attempt == FIRST_ATTEMPT, 1), else_=0)), 0))
                .where((answers.c.class_code == code) & answers.c.session.not_in(self._removed_sessions(code)))).one()
            locked = conn.execute(sa.select(class_locks.c.class_code).where(class_locks.c.class_code == code)).first()
            return ClassCounts(int(joined), int(answered), int(counted), bool(locked))
        return self._run(count)


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
