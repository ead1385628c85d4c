"""Follow the teacher: what the teacher sent or revealed, a version every change raises, and the
notice to every process listening (PostgreSQL's NOTIFY; ``server/follow.py``)."""
from __future__ import annotations

import json
import threading
import time

import sqlalchemy as sa


from server.class_store.roster import sent_exercise
from server.class_store.writes import ring, Writes
from server.class_store.schema import (AnswerRefused, classes, EXERCISE_ID, FOLLOW_CHANNEL, FollowState,
                                       MAX_ANSWER_BYTES, normalise_code, roster)


class FollowTheTeacher:
    """What following sessions read (a part of :class:`server.class_store.ClassStore`)."""

    def wait_for_writes(self, seconds: float, nudge: threading.Event) -> bool:
        """Return once ``nudge`` is set (a change in this process), once another process (the
        teacher's on another replica) has committed a change to what followers see to a SQLite store
        (:class:`~server.class_store.writes.Writes`: woken by the store's bell where Linux's inotify
        is, else by any commit, asking every WRITES_CHECK_S), or after ``seconds``: a send on another
        replica reaches this process's followers at once, not at the next periodic read, and a
        class's joins and answers wake no one. Elsewhere (PostgreSQL has NOTIFY, an in-memory store
        no other process) it waits for the nudge or the seconds. False: the seconds passed and
        nothing was committed since the last call (the last read still holds); True otherwise."""
        writes = self._writes()
        if writes is None:
            nudge.wait(seconds)
            return True
        return writes.wait(seconds, nudge, bell=True)

    def unwritten(self) -> bool:
        """True when this thread can tell that nothing was committed to the store since its last
        look (SQLite's ``data_version``, a few microseconds); False when something was, at the
        first look, or where it cannot tell (PostgreSQL, an in-memory store)."""
        writes = self._writes()
        return writes is not None and not writes.changed()

    def _writes(self) -> Writes | None:
        local = self.writes_seen
        if not hasattr(local, "writes"):
            database = self.engine.url.database if self.kind == "sqlite" else None
            local.writes = Writes(database) if database and database != ":memory:" else None
        return local.writes

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
        """This process changed the class's follow state (committed): its own listeners (the follow
        board, server/follow.py) hear it at once, before any notification or read, and on SQLite the
        other processes' boards by the store's bell (server/class_store/writes.py)."""
        if self._writes() is not None:
            ring(self.engine.url.database)
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
