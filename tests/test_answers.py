"""The stored-answer format and the teacher's count (server/answers.py): each student's first
committed answer counted, retries and gave-ups apart."""
from __future__ import annotations

from helpers import as_stored
from server.answers import answer_record, class_summary


def test_class_summary_counts_first_answers():
    def answer(session, exercise, label, correct, mistakes=(), marks=None):
        return session, exercise, answer_record(label, correct, list(mistakes), marks), correct
    stored = as_stored([answer("a1", "which:1", "dot (Luong)", False, ["dot (Luong)"]),
              answer("a1", "which:1", "general (Luong)", True),  # a retry: the first answer counts
              answer("b2", "which:1", "dot (Luong)", False, ["dot (Luong)"]),
              answer("c3", "which:1", "concat (Luong)", False, ["concat (Luong)"]),
              answer("a1", "align:1", "AER 0.20", False, ["missed Où–Where"], {(0, 0), (1, 1)}),
              answer("b2", "align:1", "AER 0.00", True, [], {(0, 0)})])
    summary = class_summary(stored)
    which = summary["which:1"]
    assert (which.answers, which.students, which.correct, which.retries, which.fixed) == (4, 3, 0, 1, 1)
    assert which.choices == {"dot (Luong)": 2, "concat (Luong)": 1}
    align = summary["align:1"]
    assert align.marks == {(0, 0): 2, (1, 1): 1} and align.most_common_mistake == ("missed Où–Where", 1)


def test_a_solution_opened_before_any_answer_counts_as_gave_up():
    from server.answers import gave_up_record
    stored = as_stored([("a1", "step:4", gave_up_record(), False),
                        ("a1", "step:4", answer_record("right", True, []), True),
                        ("b2", "step:4", answer_record("right", True, []), True)])
    s = class_summary(stored)["step:4"]
    assert (s.students, s.correct, s.gave_up, s.retries) == (2, 1, 1, 1)


def test_the_counted_answer_is_the_stored_first_attempt_whatever_the_order():
    """"First answer" is the store's attempt 1 (``StoredAnswer.counted``), the one rule the class
    counts, the summary and the class view share; not whichever row comes first."""
    retry, first = as_stored([("a1", "which:2", answer_record("dot (Luong)", False, []), False),
                              ("a1", "which:2", answer_record("general (Luong)", True, []), True)])[::-1]
    assert first.counted and not retry.counted
    s = class_summary([retry, first])["which:2"]
    assert (s.students, s.correct, s.retries, s.fixed) == (1, 0, 1, 1)
