"""The stored-answer format: what an exercise's answer is stored as in the class store
(``server/class_store/`` keeps it as JSON, bounded in size), and how the stored answers
are counted for the teacher: each student's first committed answer, the retries apart."""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

GAVE_UP = "gave up"  # the label of a *Show me the solution* pressed before any answer


@dataclass
class ExerciseSummary:
    """One exercise's answers, as a clicker counts them: each student's **first** committed
    answer (Peer Instruction's vote), then the retries as a separate figure. answers: every
    answer stored; students: distinct student ids; correct: students whose first answer is
    right; gave_up: students who asked for the solution before answering; retries: answers
    after a student's first; fixed: students wrong at first and right on a retry; choices,
    mistakes: the first answers' labels and mistakes counted; marks: for ``align``, how many
    students' first answers marked each (English i, French k) link."""
    exercise: str
    answers: int = 0
    students: int = 0
    correct: int = 0
    gave_up: int = 0
    retries: int = 0
    fixed: int = 0
    choices: Counter = field(default_factory=Counter)
    mistakes: Counter = field(default_factory=Counter)
    marks: Counter = field(default_factory=Counter)

    @property
    def most_common_mistake(self) -> tuple[str, int] | None:
        return self.mistakes.most_common(1)[0] if self.mistakes else None


MAX_NUMBERS = 16  # numbers kept per part of a hand computation (its keys and hidden size are smaller)


def answer_record(label: str, correct: bool | None, mistakes: list[str], marks: set | None = None,
                  numbers: dict | None = None) -> dict:
    """What a student's answer is stored as: a label (their choice, or their result), the
    mistakes found, their links for an alignment, and for a hand computation the numbers they
    gave (part -> list, each to four decimals, a blank as None; at most a few short parts), which
    the teacher's view shows."""
    record = {"label": label[:80], "mistakes": [m[:80] for m in mistakes[:40]], "correct": correct}
    if marks is not None:
        record["marks"] = sorted([int(i), int(k)] for i, k in marks)
    if numbers is not None:
        record["numbers"] = {str(part)[:8]: [None if v is None or not math.isfinite(float(v)) else round(float(v), 4)
                                             for v in list(values)[:MAX_NUMBERS]]
                             for part, values in list(numbers.items())[:4]}
    return record


def gave_up_record() -> dict:
    """The answer stored when a student opens the solution before committing one: wrong, first."""
    return answer_record(GAVE_UP, False, [GAVE_UP])


def choice_label(answer: dict) -> str:
    """What a first answer is grouped by: its label, and for an alignment also its links (French
    word k → English word i, 1-based), so that two different alignments with the same score are
    two answers, not one."""
    label = str(answer.get("label", "?"))
    marks = answer.get("marks")
    if marks and label != GAVE_UP:
        return f"{label}: " + ", ".join(f"{k + 1}→{i + 1}" for i, k in sorted(marks, key=lambda m: (m[1], m[0])))
    return label


def class_summary(stored: list) -> dict[str, ExerciseSummary]:
    """Per exercise, from the store's answers (``StoredAnswer``s, oldest first): the counted one
    (``StoredAnswer.counted``, a student's first) is the student's, the others are retries."""
    summaries: dict[str, ExerciseSummary] = {}
    first: dict[tuple[str, str], object] = {}
    later_right: set[tuple[str, str]] = set()
    for a in stored:
        s = summaries.setdefault(a.exercise, ExerciseSummary(a.exercise))
        s.answers += 1
        if a.counted:
            first[(a.exercise, a.session)] = a
        else:
            s.retries += 1
            if a.correct:
                later_right.add((a.exercise, a.session))
    for (exercise, session), a in first.items():
        s = summaries[exercise]
        s.students += 1
        s.correct += bool(a.correct)
        answer = a.answer if isinstance(a.answer, dict) else {}
        s.gave_up += answer.get("label") == GAVE_UP
        s.fixed += not a.correct and (exercise, session) in later_right
        s.choices[choice_label(answer)] += 1
        s.mistakes.update(str(m) for m in answer.get("mistakes", []))
        s.marks.update((int(i), int(k)) for i, k in answer.get("marks", []))
    return summaries
