"""Removing a student and putting them back (``ClassStore.remove`` / ``readmit``), on SQLite and
PostgreSQL: the removed student's answers leave the summary and the counts but are kept, so an
undo brings them back; each change moves the class's follow version (every following tab hears
of it) and its count of removals (a tab looks whether it is the one removed only then)."""
from __future__ import annotations

import pytest

from server.class_store import AnswerRefused, ClassStore, new_session_id

KEY = "teacher-secret"


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path):
    url = (f"sqlite:///{tmp_path / 'classes.sqlite3'}" if request.param == "sqlite"
           else request.getfixturevalue("postgres_url"))
    s = ClassStore(url, hours=1, teacher_key=KEY)
    yield s
    s.engine.dispose()


def test_a_removal_hides_the_answers_and_an_undo_brings_them_back(store):
    code = store.open_class(KEY).code
    first, second = new_session_id(), new_session_id()
    names = [store.join(code, s, "10.0.0.1").nickname for s in (first, second)]
    for s in (first, second):
        store.submit(code, "which:0", s, {"label": "x"}, True)
    before = store.follow(code)
    assert before.removals == 0
    assert store.remove(KEY, code, names[0]) and not store.remove(KEY, code, names[0])  # once
    gone = store.follow(code)
    assert gone.version == before.version + 1 and gone.removals == 1
    assert {a.session for a in store.summary(KEY, code)} == {second}
    counts = store.class_counts(KEY, code)
    assert (counts.joined, counts.answered, counts.counted) == (1, 1, 1)
    assert store.member(code, first) is None and [m.nickname for m in store.roster_of(KEY, code)] == [names[1]]
    with pytest.raises(AnswerRefused, match="removed you"):
        store.submit(code, "which:1", first, {"label": "x"}, True)
    with pytest.raises(AnswerRefused, match="removed you"):
        store.join(code, first, "10.0.0.1")
    assert store.readmit(KEY, code, names[0]) and not store.readmit(KEY, code, names[0])
    back = store.follow(code)
    assert back.version == gone.version + 1 and back.removals == 0
    assert {a.session for a in store.summary(KEY, code)} == {first, second}
    assert store.member(code, first).nickname == names[0]
    assert [m.nickname for m in store.roster_of(KEY, code)] == names
    assert store.follow_many([code])[code].removals == 0


def test_a_batch_removal_takes_those_who_joined_lately_or_never_answered_and_its_undo_puts_them_back(store):
    """``remove_many``: by join time, by no answer, or both; one follow version for the batch; the
    teacher's key only; ``readmit_many`` undoes exactly that batch."""
    import time
    from server.class_store import NotTeacher
    code = store.open_class(KEY).code
    early = [new_session_id() for _ in range(3)]
    names = {s: store.join(code, s, "10.0.0.1").nickname for s in early}
    store.submit(code, "which:0", early[0], {"label": "x"}, True)
    cut = time.time()
    late = [new_session_id() for _ in range(4)]
    names |= {s: store.join(code, s, "10.0.0.1").nickname for s in late}
    store.submit(code, "which:0", late[0], {"label": "x"}, True)
    with pytest.raises(NotTeacher):
        store.remove_many("not-the-key", code, joined_since=cut)
    assert store.remove_many(KEY, code) == []  # no filter: nobody
    version = store.follow(code).version
    both = store.remove_many(KEY, code, joined_since=cut, unanswered=True)
    assert sorted(both) == sorted(names[s] for s in late[1:])
    assert store.follow(code).version == version + 1 and store.follow(code).removals == 3
    assert {m.nickname for m in store.roster_of(KEY, code)} == {names[s] for s in early + late[:1]}
    assert store.readmit_many(KEY, code, both) == 3 and store.follow(code).version == version + 2
    silent = store.remove_many(KEY, code, unanswered=True)
    assert sorted(silent) == sorted(names[s] for s in early[1:] + late[1:])
    assert store.readmit_many(KEY, code, silent) == 5
    recent = store.remove_many(KEY, code, joined_since=cut)
    assert sorted(recent) == sorted(names[s] for s in late)
    assert store.class_counts(KEY, code).joined == 3 and {a.session for a in store.summary(KEY, code)} == {early[0]}
    assert store.readmit_many(KEY, code, recent + ["Nobody Here"]) == 4
    assert store.class_counts(KEY, code).joined == 7
