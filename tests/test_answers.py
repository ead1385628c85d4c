"""The stored-answer format and the teacher's count (server/answers.py): each student's first
committed answer counted, retries and gave-ups apart."""
from __future__ import annotations

from types import SimpleNamespace

from teaching.exercises import marks_matrix
from server.answers import answer_record, class_summary


def test_class_summary_counts_first_answers():
    def answer(session, exercise, label, correct, mistakes=(), marks=None):
        return SimpleNamespace(session=session, exercise=exercise, correct=correct,
                               answer=answer_record(label, correct, list(mistakes), marks))
    stored = [answer("a1", "which:1", "dot (Luong)", False, ["dot (Luong)"]),
              answer("a1", "which:1", "general (Luong)", True),  # a retry: the first answer counts
              answer("b2", "which:1", "dot (Luong)", False, ["dot (Luong)"]),
              answer("c3", "which:1", "concat (Luong)", False, ["concat (Luong)"]),
              answer("a1", "align:1", "AER 0.20", False, ["missed Où–Where"], {(0, 0), (1, 1)}),
              answer("b2", "align:1", "AER 0.00", True, [], {(0, 0)})]
    summary = class_summary(stored)
    which = summary["which:1"]
    assert (which.answers, which.students, which.correct, which.retries, which.fixed) == (4, 3, 0, 1, 1)
    assert which.choices == {"dot (Luong)": 2, "concat (Luong)": 1}
    align = summary["align:1"]
    assert align.marks == {(0, 0): 2, (1, 1): 1} and align.most_common_mistake == ("missed Où–Where", 1)
    m = marks_matrix(align.marks, align.students, english=3, french=2)
    assert m.shape == (2, 3) and m[0, 0] == 1.0 and m[1, 1] == 0.5


def test_a_solution_opened_before_any_answer_counts_as_gave_up():
    from server.answers import gave_up_record
    stored = [SimpleNamespace(session="a1", exercise="step:4", correct=False, answer=gave_up_record()),
              SimpleNamespace(session="a1", exercise="step:4", correct=True, answer=answer_record("right", True, [])),
              SimpleNamespace(session="b2", exercise="step:4", correct=True, answer=answer_record("right", True, []))]
    s = class_summary(stored)["step:4"]
    assert (s.students, s.correct, s.gave_up, s.retries) == (2, 1, 1, 1)
