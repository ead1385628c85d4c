"""The signed cookies of server/identity.py: a student's id cannot be made up, a teacher's
cookie names one class and one key, and a ticket expires."""
from __future__ import annotations

import time

from server import identity

SECRET, OTHER = b"s" * 32, b"t" * 32


def test_a_student_cookie_is_signed():
    value = identity.new_student_cookie(SECRET)
    student = identity.student_id(SECRET, value)
    assert student and len(student) == 24 and student in value
    assert identity.student_id(OTHER, value) is None  # another server's secret
    forged = ("0" * 24) + value[24:]  # another id under the same signature
    assert identity.student_id(SECRET, forged) is None
    assert identity.student_id(SECRET, None) is None and identity.student_id(SECRET, "x" * 57) is None
    assert identity.new_student_cookie(SECRET) != value


def test_a_teacher_cookie_names_one_class_and_one_session():
    token = "ts-" + "ab" * 16
    ticket = identity.teacher_ticket(SECRET, token, "ABCDEF")
    assert identity.ticket_parts(SECRET, ticket) == ("ABCDEF", token)
    assert identity.ticket_parts(OTHER, ticket) is None
    assert identity.ticket_parts(SECRET, "GHJKLM" + ticket[6:]) is None  # another class, same signature
    assert identity.ticket_parts(SECRET, ticket, now=time.time() + 3 * identity.TICKET_SECONDS) is None  # late
    value = identity.teacher_cookie(SECRET, "ABCDEF", token)
    assert identity.teacher_class(SECRET, value) == ("ABCDEF", token)
    assert identity.teacher_class(OTHER, value) is None
    assert identity.teacher_class(SECRET, "GHJKLM" + value[6:]) is None
    assert identity.teacher_class(SECRET, value.replace("ab", "cd", 1)) is None  # another session, same signature


def test_cookie_headers_are_http_only():
    header = identity.cookie_header(identity.TEACHER_COOKIE, "v", 60, secure=True)
    assert "HttpOnly" in header and "SameSite=Strict" in header and "Secure" in header and "Max-Age=60" in header
    assert "SameSite=Lax" in identity.cookie_header(identity.STUDENT_COOKIE, "v", 60, secure=False)
    assert identity.request_cookies([(b"cookie", b"a=1; attn_student=x.y")]) == {"a": "1", "attn_student": "x.y"}
