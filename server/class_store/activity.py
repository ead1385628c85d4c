"""A class's activity, as its teacher's page watches it: one signature that changes whenever what
the teacher's live views show changes (a student joins or waits, is let in, removed or put back,
answers or hands in a check; the teacher sends or reveals), read for many classes in one query.

No write pays for it: the signature is made from what the store keeps anyway (the follow
version, the roster's and the waiting list's row counts, the class's newest answer id), so an
answer stays one insert and 400 students answering at once never queue on one row.
"""
from __future__ import annotations

import sqlalchemy as sa

from server.class_store.schema import answers, classes, join_requests, normalise_code, roster


class ClassActivity:
    """The teacher's change signal (a part of :class:`server.class_store.ClassStore`)."""

    def activity_many(self, codes) -> dict[str, str]:
        """Each known class's activity signature (``"version.roster.waiting.answer"``), in one read;
        a class that does not exist is left out. Equal signatures: nothing a live view shows moved."""
        wanted = sorted({c for c in map(normalise_code, codes) if c})
        if not wanted:
            return {}

        def count(table):
            return (sa.select(sa.func.count()).where(table.c.class_code == classes.c.code)
                    .scalar_subquery())
        newest = sa.select(sa.func.max(answers.c.id)).where(answers.c.class_code == classes.c.code).scalar_subquery()
        rows = self._run(lambda conn: conn.execute(
            sa.select(classes.c.code, classes.c.follow_version, classes.c.closed, count(roster).label("joined"),
                      count(join_requests).label("waiting"), newest.label("newest"))
            .where(classes.c.code.in_(wanted))).all())
        return {r.code: f"{r.follow_version}.{int(r.closed)}.{r.joined}.{r.waiting}.{r.newest or 0}" for r in rows}
