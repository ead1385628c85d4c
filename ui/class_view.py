"""The teacher's view of what a class answered, in words: exercise and stop names as a teacher
says them, the most given answer with ties named as ties, each student's first answer and
the numbers given in a hand computation. Plain Python over the class's stored answers
(``ui.class_session.class_answers``: oldest first, each with exercise, session, answer,
correct); the figures are ``viz.teaching_figures``'s."""
from __future__ import annotations

import re
from collections import Counter

import numpy as np

from server.answers import choice_label
from teaching.exercises import KINDS

LESSON_ID = re.compile(r"lesson:(\d+)-([a-z0-9-]+)")


def exercise_name(exercise: str) -> str:
    """``step:0`` → "Compute one step by hand, no. 0"; ``lesson:01-heatmap`` → "Lesson, stop 1: The
    translation and its heatmap"; anything else as it is."""
    found = LESSON_ID.fullmatch(exercise)
    if found:
        from ui.lesson_stops import STOPS
        k, slug = int(found.group(1)), found.group(2)
        titles = {s.slug: s.title for s in STOPS}
        return f"Lesson, stop {k}: {titles.get(slug, slug.replace('-', ' '))}"
    kind, _, rest = exercise.partition(":")
    if kind in KINDS and rest:
        seed, _, model = rest.partition(":")
        return f"{KINDS[kind]}, no. {seed}" + (f" ({model})" if model else "")
    return exercise


def most_given(choices: Counter) -> str:
    """The most given answer in words, a tie named as one: "the most given answer, X, by 3" or
    "a tie for the most given answer, X and Y, by 2 each"."""
    if not choices:
        return "no answer yet"
    top = choices.most_common()
    n = top[0][1]
    tied = [label for label, m in top if m == n]
    if len(tied) == 1:
        return f"the most given answer, {tied[0]}, by {n}"
    names = ", ".join(tied[:-1]) + f" and {tied[-1]}"
    return f"a tie for the most given answer, {names}, by {n} each"


def first_answers(stored: list, exercise: str) -> list:
    """Each student's counted answer to ``exercise`` (``StoredAnswer.counted``: their first), oldest first."""
    return [a for a in stored if a.exercise == exercise and a.counted]


def labels_by_verdict(firsts: list) -> tuple[set[str], set[str]]:
    """The labels of the first answers that were right, and of those that were wrong."""
    right, wrong = set(), set()
    for a in firsts:
        (right if a.correct else wrong).add(choice_label(a.answer if isinstance(a.answer, dict) else {}))
    return right, wrong


def given_numbers(firsts: list, parts: dict[str, int]) -> dict[str, list[float]]:
    """The numbers the first answers gave, per quantity: ``parts`` names each part and its size
    (``{"e": 3, "α": 3, "c": 2}``) → ``{"e_1": [...], …, "c_2": [...]}``; a blank is left out."""
    out = {f"{p}_{j + 1}": [] for p, n in parts.items() for j in range(n)}
    for a in firsts:
        numbers = (a.answer if isinstance(a.answer, dict) else {}).get("numbers") or {}
        for p, n in parts.items():
            for j, v in enumerate((numbers.get(p) or [])[:n]):
                if isinstance(v, (int, float)) and np.isfinite(v):
                    out[f"{p}_{j + 1}"].append(float(v))
    return out


def numbers_table(given: dict[str, list[float]], right: dict[str, float], tolerance: float) -> list[dict]:
    """One row per quantity: the right value, how many gave a number, how many within the
    tolerance, and the wrong numbers most given (as typed, two decimals)."""
    rows = []
    for name, values in given.items():
        ok = [v for v in values if abs(v - right[name]) <= tolerance + 1e-9]
        wrong = Counter(f"{v:.2f}" for v in values if abs(v - right[name]) > tolerance + 1e-9)
        rows.append({"quantity": name, "right value": round(right[name], 3), "answered": len(values),
                     f"within ±{tolerance:g}": len(ok),
                     "wrong numbers given": ", ".join(f"{v} (×{n})" if n > 1 else v for v, n in wrong.most_common(4))})
    return rows


def link_counts(marks: Counter, english: int, french: int) -> np.ndarray:
    """How many students' first answers linked French word k (rows) to English word i (columns),
    from the summary's ``marks`` ((i, k) -> students)."""
    m = np.zeros((french, english), dtype=int)
    for (i, k), n in marks.items():
        if 0 <= i < english and 0 <= k < french:
            m[k, i] = n
    return m


__all__ = ["exercise_name", "most_given", "first_answers", "labels_by_verdict", "given_numbers", "numbers_table",
           "link_counts"]
