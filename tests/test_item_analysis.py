"""Item analysis of a class's check (``teaching/item_analysis.py``, ``ui/class_check.py``): a class of
12 students with set answers to the check before; each item's difficulty and discrimination
computed here by hand (Pearson's correlation of the item with the rest of the check, from sums)
and compared with the module's (which uses the point-biserial formula); the teacher's gain view
and the item CSV show them, rounded as the page rounds; below MIN_STUDENTS, "too few to say"."""
from __future__ import annotations

import io
import math

import pandas as pd
import pytest

from conftest import TEACHER_KEY as KEY
from helpers.lesson import N, open_lesson
from teaching import check as ch
from teaching.item_analysis import item_analysis, MIN_STUDENTS
from test_class_check import sign_in
from test_lesson_check import DIGITS

SLUGS = [f"{c}-{k}" for c, k in ch.SLOTS]
# 12 students, strongest first: each row the items right (1) and wrong (0), in SLOTS order. The
# length item is right only for the weakest four (the strongest miss it: flagged); the
# transformer item is right for everyone (no spread: no discrimination).
ROWS = ["11111101", "11111101", "11111101", "11110101", "11101101", "11011001",
        "10101001", "01100011", "01000011", "00100011", "00000011", "00000011"]
PLAN = {f"{n + 1:016x}": {slug: bit == "1" for slug, bit in zip(SLUGS, row)} for n, row in enumerate(ROWS)}


def by_hand(slug: str, plan: dict) -> tuple[float, float | None]:
    """Difficulty and Pearson's r of the item with the rest score, from plain sums."""
    x = [int(answers[slug]) for answers in plan.values()]
    rest = [sum(int(ok) for other, ok in answers.items() if other != slug) for answers in plan.values()]
    n = len(x)
    mx, mr = sum(x) / n, sum(rest) / n
    cov = sum((a - mx) * (b - mr) for a, b in zip(x, rest)) / n
    vx, vr = sum((a - mx) ** 2 for a in x) / n, sum((b - mr) ** 2 for b in rest) / n
    return mx, (cov / math.sqrt(vx * vr) if vx and vr else None)


def test_difficulty_and_discrimination_match_a_hand_computation():
    stats = {it.slug: it for it in item_analysis({"before": PLAN, "after": {}})}
    assert set(stats) == set(SLUGS) and len(PLAN) >= MIN_STUDENTS
    for slug in SLUGS:
        p, r = by_hand(slug, PLAN)
        it = stats[slug]
        assert it.answered == len(PLAN) and it.difficulty == pytest.approx(p)
        assert (it.discrimination is None) == (r is None) and (r is None or it.discrimination == pytest.approx(r))
    assert stats["length-transfer"].discrimination < 0 and stats["length-transfer"].flagged
    assert stats["transformer-recall"].discrimination is None and not stats["transformer-recall"].flagged
    assert stats["alignment-recall"].discrimination > 0.5 and not stats["alignment-recall"].flagged
    few = item_analysis({"before": dict(list(PLAN.items())[:MIN_STUDENTS - 1])})
    assert not any(it.enough or it.flagged for it in few)


def test_the_teachers_view_and_the_csv_show_each_item(store):
    from ui.class_check import items_csv
    code = store.open_class(KEY).code
    for slug in SLUGS:
        store.add_exercise(KEY, code, ch.exercise_id("before", slug))
    for session, answers in PLAN.items():
        store.join(code, session)
        for slug, ok in answers.items():
            store.submit(code, ch.exercise_id("before", slug), session, {"label": "given", "mistakes": []}, ok)
    teacher = open_lesson(text=DIGITS, **{"class": code})
    sign_in(teacher)
    teacher.selectbox(key="lesson_jump").set_value(N + 1).run()
    assert not teacher.exception, [e.value for e in teacher.exception]
    table = next(t.value for t in teacher.table if "discrimination" in t.value.columns)
    assert len(table) == len(SLUGS)
    for slug in SLUGS:
        p, r = by_hand(slug, PLAN)
        concept, _, kind = slug.rpartition("-")
        row = table[table["item"] == f"{ch.CONCEPT[concept].name}, {kind}"].iloc[0]
        assert (row["students"], row["right"]) == (len(PLAN), f"{p:.0%}"), row
        assert row["discrimination"] == ("— (no spread)" if r is None else f"{r:+.2f}"), row
        assert row["flag"] == ("the strongest miss it" if r is not None and r < 0 else ""), row
    csv = pd.read_csv(io.BytesIO(items_csv(ch.class_check(store.summary(KEY, code)))))
    for slug in SLUGS:
        p, r = by_hand(slug, PLAN)
        row = csv[(csv["concept"] + "-" + csv["kind"]) == slug].iloc[0]
        assert row["students"] == len(PLAN) and row["difficulty"] == pytest.approx(round(p, 3))
        assert (pd.isna(row["discrimination"]) and r is None) or row["discrimination"] == pytest.approx(round(r, 3))
        assert row["flagged"] == int(r is not None and r < 0)
    assert any(b.label == "Download the item analysis (CSV)" for b in teacher.get("download_button"))


def test_most_missed_lists_ties_and_a_student_at_the_top_is_drawn_apart():
    from viz.check import change_dots
    after = {f"{n:016x}": {slug: n == 0 or slug not in SLUGS[:5] for slug in SLUGS} for n in range(3)}
    cc = ch.ClassCheck({"before": {s: dict(a) for s, a in after.items()}, "after": after})
    missed = ch.most_missed(cc, "after", top=3)
    assert [m[1] for m in missed] == [2] * 5 and {m[0] for m in missed} == set(SLUGS[:5])  # five tied, none cut
    fig = change_dots({"softmax": [0.0, 0.0, 2 / 3]}, {"softmax": ["a", "b", "c"]}, top={"softmax": [True, False, False]})
    traces = {t["name"]: t for t in fig["data"]} if isinstance(fig, dict) else {t.name: t for t in fig.data}
    top, student = traces["at the top before and after"], traces["a student"]
    assert list(top["y"]) == [0] and list(student["y"]) == [0, 67]  # whole points, as the page writes them
    assert "a, at the top before and after" in top["text"][0] and top["marker"]["symbol"] == "diamond-open"
