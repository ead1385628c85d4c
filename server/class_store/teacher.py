"""The teacher's key and sessions: the key that makes a teacher, the cookie secret, and the
teacher sessions (the ``attn_teacher`` cookie) made, redeemed once and ended in every process."""
from __future__ import annotations

import hashlib
import hmac
import secrets
import time

import sqlalchemy as sa


from server.class_store.schema import (AnswerRefused, meta, normalise_code, NotTeacher, SESSION_PREFIX,
                                       teacher_sessions, token_hash)


class TeacherKeys:
    """The key and the teacher's sessions (a part of :class:`server.class_store.ClassStore`)."""

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

    def known_cookie_secret(self) -> bytes | None:
        """The cookie secret if this store object has read it, else None: no read (for the event loop)."""
        return getattr(self, "_cookie_secret", None)

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

    def start_teacher_session(self, key: str | None, code: str, ticket_seconds: float) -> str:
        """A new teacher session of class ``code`` for the tab holding the key: its token (to put in
        a single-use ticket; it counts once the ticket is redeemed)."""
        if not self.is_teacher(key):
            raise NotTeacher("only the teacher (who holds the server's teacher key) may do this")
        info = self.class_info(code)
        if info is None or not info.open:
            raise AnswerRefused(f"class {code} is not open")
        token = SESSION_PREFIX + secrets.token_hex(16)
        row = dict(token_hash=token_hash(token), class_code=info.code, key_tag=self._key_tag(), expires_at=info.expires_at,
                   ticket_until=time.time() + ticket_seconds, redeemed=False, revoked=False)
        self._run(lambda conn: conn.execute(teacher_sessions.insert().values(**row)), write=True)
        return token

    def redeem_teacher_ticket(self, token: str, code: str) -> float | None:
        """Turn a ticket's session into the cookie's, once: the class's expiry, or None for a ticket
        used before, past its time, ended, or of another class."""
        now = time.time()

        def redeem(conn):
            done = conn.execute(teacher_sessions.update().where(
                (teacher_sessions.c.token_hash == token_hash(token)) & (teacher_sessions.c.class_code == code)
                & ~teacher_sessions.c.redeemed & ~teacher_sessions.c.revoked
                & (teacher_sessions.c.ticket_until >= now)).values(redeemed=True))
            if done.rowcount != 1:
                return None
            return conn.execute(sa.select(teacher_sessions.c.expires_at).where(
                teacher_sessions.c.token_hash == token_hash(token))).scalar_one()
        return self._run(redeem, write=True)

    def teacher_session_class(self, token: str | None) -> str | None:
        """The class a redeemed, live teacher session is for (None: unknown, ended, expired, or made
        under another key)."""
        if not str(token or "").startswith(SESSION_PREFIX):
            return None
        row = self._run(lambda conn: conn.execute(sa.select(teacher_sessions).where(
            teacher_sessions.c.token_hash == token_hash(token))).first())
        if (row is None or not row.redeemed or row.revoked or row.expires_at <= time.time()
                or not hmac.compare_digest(row.key_tag, self._key_tag())):
            return None
        return row.class_code

    def end_teacher_session(self, token: str | None) -> None:
        """*Sign out*: the session ends in every process on the store (a copy of its cookie too)."""
        if str(token or "").startswith(SESSION_PREFIX):
            self._run(lambda conn: conn.execute(teacher_sessions.update().where(
                teacher_sessions.c.token_hash == token_hash(token)).values(revoked=True)), write=True)

    def _key_tag(self) -> str:
        return hashlib.sha256(self.teacher_key().encode()).hexdigest()[:16]
