"""A class takes the check before the lesson and after it (``ui/class_check.py``, ``ui/lesson_check.py``):
AppTest on the tiny checkpoints and a class store of the test's own. The teacher opens the check
before; three students, following, take it with set answers, walk the lesson and take the check
after; a fourth takes the check before only. The gains each student's closing card shows and the
teacher's gain view (per concept and kind, the students apart, the most missed item) are checked
against the gains computed here by hand from the set answers; the CSV names nicknames only."""
from __future__ import annotations

import zlib

import pytest

from conftest import TEACHER_KEY
from server.class_store import OutsideClass
from helpers.lesson import N, open_lesson, stop_title
from teaching import check as ch
from test_lesson_check import DIGITS, fill, indexed, items_of, sources  # noqa: F401  (the fixture)

KEY = TEACHER_KEY
ALL = {f"{c}-{k}" for c, k in ch.SLOTS}
PLANS = {  # each student's right items: before, after
    "a": ({"alignment-recall", "weights-recall"}, ALL),
    "b": (set(), {"alignment-recall", "weights-recall", "weights-transfer", "scoring-recall"}),
    "c": (ALL, ALL - {"context-transfer"}),
}


def share(right: set[str], concept: str, by: str = "concept") -> float:
    slots = [f"{c}-{k}" for c, k in ch.SLOTS if (c if by == "concept" else k) == concept]
    return sum(s in right for s in slots) / len(slots)


def said_gain(pre: float, post: float) -> str:
    if pre == 1:
        return "at the top before" + (", and after" if post == 1 else f"; {post:.0%} after")
    return f"g = {(post - pre) / (1 - pre):+.2f}"


def sign_in(teacher) -> None:
    teacher.session_state["class_panel"] = True
    teacher.run()
    teacher.text_input(key="class_key_box").set_value(KEY)
    teacher.button(key="class_sign_in").click().run()
    assert not teacher.exception, [e.value for e in teacher.exception]


def test_a_class_of_three_gains_per_concept_for_the_teacher_and_each_student(store, sources):  # noqa: F811
    code = store.open_class(KEY).code
    teacher = open_lesson(text=DIGITS, **{"class": code})
    sign_in(teacher)
    teacher.button(key="class_check_open_before").click().run()
    sent = store.follow(code)
    assert (sent.page, sent.params) == ("lesson", {"check": "before", "stop": "1"})
    before, after = (items_of(sources, zlib.crc32(code.encode()), h) for h in ch.HALVES)  # the class's items
    students = {}
    for name, (pre, _) in [*PLANS.items(), ("d", (set(), None))]:
        s = open_lesson(**sent.params, **{"class": code, "sent": "1"})  # following: the check opens
        assert any(b.label == "Hand in" for b in s.button), name
        fill(s, "before", before, pre)
        students[name] = s
    nick = {name: s.session_state["class_member"][1] for name, s in students.items()}
    for name in PLANS:  # the lesson, stop by stop
        s = students[name]
        for k in range(1, N + 1):
            assert stop_title(s).startswith(f"{k}. "), (name, k)
            s.button(key="lesson_next").click().run()
        assert stop_title(s).startswith("The end")
    teacher.button(key="class_check_open_after").click().run()  # counted from now on
    for name, (pre, post) in PLANS.items():
        s = students[name]
        s.run()  # a follower's screen opens the check after; else its button on the closing card
        if not any(b.label == "Hand in" for b in s.button):
            s.button(key="lesson_prepost_start_after").click().run()
        fill(s, "after", after, post)
        assert stop_title(s).startswith("The end"), (name, stop_title(s))
        shown = indexed(s.table[0].value)  # the student's own gain per concept
        for c in ch.CONCEPTS:
            row = shown.loc[c.name]
            assert row["before"] == f"{share(pre, c.slug):.0%}" and row["after"] == f"{share(post, c.slug):.0%}"
            assert row["gain"] == said_gain(share(pre, c.slug), share(post, c.slug)), (name, c.slug)
    stored = [a for a in store.summary(KEY, code) if a.exercise.startswith("check:")]
    assert len(stored) == len(ALL) * (2 * len(PLANS) + 1) and all(a.counted for a in stored)
    # the teacher's view, at the end of the lesson
    teacher.selectbox(key="lesson_jump").set_value(N + 1).run()
    assert not teacher.exception, [e.value for e in teacher.exception]
    assert {m.label: m.value for m in teacher.metric}["Students who took both halves"] == "3"
    by_concept, by_kind = (indexed(t.value) for t in teacher.table[:2])
    for by, table, names in (("concept", by_concept, [c.slug for c in ch.CONCEPTS]), ("kind", by_kind, ch.KINDS)):
        for n in names:
            pre = sum(share(p, n, by) for p, _ in PLANS.values()) / len(PLANS)
            post = sum(share(q, n, by) for _, q in PLANS.values()) / len(PLANS)
            row = table.loc[ch.CONCEPT[n].name if by == "concept" else n]
            assert (row["before"], row["after"]) == (f"{pre:.0%}", f"{post:.0%}"), (n, row)
            assert row["gain ⟨g⟩"] == ("—" if pre == 1 else f"{(post - pre) / (1 - pre):+.2f}"), (n, row)
    captions = " ".join(c.value for c in teacher.caption)
    assert f"Took only the check before (1), not in the gain: {nick['d']}." in captions
    missed = ch.CONCEPT["context"].name  # two of three wrong after: the most missed
    assert f"2 of 3 wrong: *{missed}*, transfer" in captions
    assert all(nick[n] in captions for n in PLANS)  # the spread's words name every student
    assert any(c.proto.spec and "a student" in c.proto.spec for c in teacher.get("plotly_chart"))


def test_the_csv_names_nicknames_only(store):
    from ui.class_check import answers_csv
    code = store.open_class(KEY).code
    sessions = ["a1b2c3d4e5f60718", "0f1e2d3c4b5a6978"]
    for s in sessions:
        store.join(code, s)
    store.add_exercise(KEY, code, ch.exercise_id("before", "length-transfer"))
    for n, s in enumerate(sessions):
        store.submit(code, ch.exercise_id("before", "length-transfer"), s, {"label": "x"}, bool(n))
        with pytest.raises(OutsideClass):  # not opened: the class does not count it
            store.submit(code, ch.exercise_id("after", "length-transfer"), s, {"label": "x"}, True)
    cc = ch.class_check(store.summary(KEY, code))
    text = answers_csv(cc, store.nicknames(KEY, code)).decode()
    assert text.splitlines()[0] == "nickname,half,concept,kind,right"
    assert len(text.splitlines()) == 3 and not any(s in text for s in sessions)
    assert set(store.nicknames(KEY, code).values()) == {line.split(",")[0] for line in text.splitlines()[1:]}


def test_a_check_practised_before_the_teacher_opened_it_is_offered_again_and_then_counted(store, sources):  # noqa: F811
    """A student in the class takes the check before at stop 1 before the teacher opened it: the
    offer says it is practice, the hand-in says it was not counted (nothing stored); once the
    teacher opens it, the sent link opens the form again, saying why, and that hand-in counts."""
    code = store.open_class(KEY).code
    before = items_of(sources, zlib.crc32(code.encode()), "before")
    s = open_lesson(text=DIGITS, **{"class": code})
    captions = " ".join(c.value for c in s.caption)
    assert "Practice, not counted yet: your teacher has not opened this check" in captions
    s.button(key="lesson_prepost_start_before").click().run()
    fill(s, "before", before, {"weights-recall"})
    assert any("Handed in as practice, not counted" in i.value for i in s.info)
    assert not [a for a in store.summary(KEY, code) if a.exercise.startswith("check:")]
    assert not any((b.key or "") == "lesson_prepost_start_before" for b in s.button)  # not offered until opened
    teacher = open_lesson(text=DIGITS, **{"class": code})
    sign_in(teacher)
    teacher.button(key="class_check_open_before").click().run()
    sent = store.follow(code)
    s.query_params.update(sent.params)  # the follower's screen opens the sent link
    s.run()
    assert any(b.label == "Hand in" for b in s.button)
    assert any("You took this check as practice before your teacher opened it" in i.value for i in s.info)
    fill(s, "before", before, ALL)
    stored = [a for a in store.summary(KEY, code) if a.exercise.startswith("check:before:")]
    assert len(stored) == len(ALL) and all(a.counted and a.correct for a in stored)
    assert not any("Handed in as practice" in i.value for i in s.info)
