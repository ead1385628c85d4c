"""Who joins a class, as its teacher decides (server/class_store/admission.py): seats, one address
behind a school's NAT, *approve joins*, a join window, an address a student was removed from."""
from __future__ import annotations

import pytest

from server import settings
from server.class_store import AnswerRefused, AwaitingApproval, ClassStore, new_session_id

KEY = "admission-teachers-key"
SCHOOL = "203.0.113.7"  # one address for a whole school


@pytest.fixture
def store(tmp_path):
    s = ClassStore(f"sqlite:///{tmp_path / 'classes.sqlite3'}", hours=1, teacher_key=KEY)
    yield s
    s.engine.dispose()


def test_a_school_behind_one_address_fills_the_default_seats_and_no_more(store):
    """With the defaults, a hall's worth of students from one address all join within the minute's
    joins; the next one is told the seats are taken, and joins by itself once one frees."""
    code = store.open_class(KEY).code
    seats = settings.class_seats()
    assert settings.joins_per_minute() >= seats  # the whole hall within one minute
    for _ in range(seats):
        store.join(code, new_session_id(), SCHOOL)
    late = new_session_id()
    with pytest.raises(AnswerRefused, match=f"its {seats} seats taken"):
        store.join(code, late, SCHOOL)
    assert store.class_counts(KEY, code).joined == seats
    store.set_admission(KEY, code, seats=seats + 1)  # a seat frees (the teacher adds one)
    assert store.join(code, late, SCHOOL).new  # the same id, asking again, is in


def test_the_teacher_sets_the_seats(store):
    code = store.open_class(KEY).code
    assert store.set_admission(KEY, code, seats=2).seats == 2
    for _ in range(2):
        store.join(code, new_session_id(), "10.0.0.1")
    with pytest.raises(AnswerRefused, match="its 2 seats taken"):
        store.join(code, new_session_id(), "10.0.0.2")
    store.set_admission(KEY, code, seats=3)
    store.join(code, new_session_id(), "10.0.0.2")


def test_approve_joins_keeps_a_student_waiting_by_name_until_let_in(store):
    code = store.open_class(KEY).code
    store.set_admission(KEY, code, approve=True)
    student = new_session_id()
    with pytest.raises(AwaitingApproval) as waiting:
        store.join(code, student, "10.0.0.1")
    (name, _), = store.waiting_students(KEY, code)
    assert f"you wait as **{name}**" in str(waiting.value)
    with pytest.raises(AwaitingApproval):  # asking again: still waiting, under the same name
        store.join(code, student, "10.0.0.1")
    assert store.class_counts(KEY, code).joined == 0 and len(store.waiting_students(KEY, code)) == 1
    assert store.approve_join(KEY, code, name) == 1
    member = store.join(code, student, "10.0.0.1")
    assert member.nickname == name and store.waiting_students(KEY, code) == []


def test_students_waiting_get_distinct_names_and_approve_all_lets_every_one_in(store, monkeypatch):
    """A waiting student's name is kept for the roster, so no two waiting share one: with every draw
    the same pair (as 1,024 pairs make likely in a hall), the second waits as "… 2", and *Approve
    all* lets both in (a shared name would break the roster's one-name rule and let nobody in)."""
    import server.class_store.roster as roster_module
    monkeypatch.setattr(roster_module.secrets, "choice", lambda seq: seq[0])
    code = store.open_class(KEY).code
    store.set_admission(KEY, code, approve=True)
    students = [new_session_id() for _ in range(3)]
    for student in students:
        with pytest.raises(AwaitingApproval):
            store.join(code, student, SCHOOL)
    names = [name for name, _ in store.waiting_students(KEY, code)]
    assert len(set(names)) == 3
    assert store.approve_join(KEY, code) == 3
    assert sorted(store.join(code, s, SCHOOL).nickname for s in students) == sorted(names)
    # a name on the roster meanwhile (approval off, then on again) is not given twice either
    store.set_admission(KEY, code, approve=False)
    store.join(code, new_session_id(), SCHOOL)
    store.set_admission(KEY, code, approve=True)
    late = new_session_id()
    with pytest.raises(AwaitingApproval):
        store.join(code, late, SCHOOL)
    assert store.approve_join(KEY, code) == 1
    roster = [entry.nickname for entry in store.roster_of(KEY, code)]
    assert len(roster) == 5 == len(set(roster))


def test_a_join_window_ends_joining_and_those_in_go_on(store):
    code = store.open_class(KEY).code
    inside = new_session_id()
    store.join(code, inside, "10.0.0.1")
    store.set_admission(KEY, code, window_min=0)
    with pytest.raises(AnswerRefused, match="time to join is over"):
        store.join(code, new_session_id(), "10.0.0.2")
    assert not store.join(code, inside, "10.0.0.1").new  # already in: goes on
    store.set_admission(KEY, code, no_window=True)
    store.join(code, new_session_id(), "10.0.0.2")


def test_a_removed_students_address_cannot_mint_fresh_ids_faster_than_a_few_a_minute(store):
    code = store.open_class(KEY).code
    store.join(code, new_session_id(), "10.6.6.6")
    store.remove(KEY, code, store.roster_of(KEY, code)[0].nickname)
    few = settings.rejoins_per_minute()
    for _ in range(few - 1):  # the removed one's join counts within the minute
        store.join(code, new_session_id(), "10.6.6.6")
    with pytest.raises(AnswerRefused, match=f"{few} students joined"):
        store.join(code, new_session_id(), "10.6.6.6")
    store.join(code, new_session_id(), "10.0.0.9")  # another address joins as before
