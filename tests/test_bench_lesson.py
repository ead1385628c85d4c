"""bench/classroom.py's lesson (bench/classroom_lesson.py): in a class each student follows the
teacher through three sends, opens each sent page at the address the app's follow fragment
sends a browser to, reloads, and answers the last sent exercise with an option it offers."""
from __future__ import annotations

import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
from classroom_lesson import make_lessons, mechanism_choice, MOVES, SAME_PAGE, SENDS, SENTENCES  # noqa: E402

from ui.class_follow import sent_link  # noqa: E402
from teaching.exercises import FAMILIES, MECHANISMS, which_exercise  # noqa: E402


def test_a_class_lesson_follows_three_sends_then_reloads_and_answers_again():
    lesson = make_lessons(3, 0, SENTENCES, faulty=0, class_code="ABCDEF")[1]
    kinds = [kind for kind, _ in lesson.steps()]
    assert kinds.count("follow") == len(SENDS) + len(MOVES) and len(SENDS) == 3
    assert kinds.count("reload") == 1 and kinds.count("answer") == 2
    follows = [i for i, k in enumerate(kinds) if k == "follow"]
    assert follows[len(SENDS) - 1] < kinds.index("reload") < follows[len(SENDS)]
    for (_, (_, _k, (path, query))), (page, params) in zip([s for s in lesson.steps() if s[0] == "follow"], SENDS):
        here = "http://127.0.0.1:8501/exercises?class=ABCDEF"
        assert "/" + path + "?" + query == sent_link(here, "exercises", page, {**params, "class": "ABCDEF", "sent": "1"})
    assert not any(kind == "follow" for kind, _ in make_lessons(1, 0, SENTENCES, faulty=0)[0].steps())


def test_the_teachers_moves_a_same_page_send_a_reveal_a_removal_and_its_undo_each_checked():
    """After the reload and the answer, the room is on the last sent exercise: the teacher sends that
    page with another number, reveals it, removes a student and puts them back; each followed and
    then checked (the widgets against the link, the reveal's words, the removal said or not)."""
    steps = make_lessons(3, 0, SENTENCES, faulty=0, class_code="ABCDEF")[1].steps()
    moves = steps[-2 * len(MOVES):]
    assert [kind for kind, _ in moves] == ["follow", "check"] * len(MOVES)
    assert SAME_PAGE[0] == SENDS[-1][0] and SAME_PAGE[1] != SENDS[-1][1]  # the page the room is on, another number
    assert [m[0] for m in MOVES] == ["send", "reveal", "remove", "readmit"]
    assert [action[1] for kind, action in moves if kind == "check"] == ["widgets", "text", "removed", "removed"]


def test_the_lesson_picks_an_option_the_exercise_offers():
    for seed in range(6):
        ex = which_exercise(seed, list(MECHANISMS), ["a b c"])
        offered = FAMILIES.values() if ex.question == "family" else MECHANISMS.values()
        assert mechanism_choice(seed) in offered


def test_the_check_bench_plays_set_answers_and_knows_the_gains_they_make():
    """bench/classroom_check.py: a session's plan is seeded (the same session, the same answers),
    a wrong answer is judged wrong by the item itself, and the gains the bench expects from the
    plans are what the teacher's view computes from the answers stored as the page stores them."""
    import numpy as np
    from classroom_check import answer_of, gains_of_plan, plan
    from server.class_store import StoredAnswer
    from teaching import check as ch
    from teaching.lesson_questions import Question
    items = {h: tuple(ch.recall_item(c, np.random.default_rng(n), n) for c, k in ch.SLOTS if k == "recall")
             for n, h in enumerate(ch.HALVES)}
    items["before"] += (ch.Item("weights", "transfer", Question("α? (±0.01)", (0.25,), ("", ""), "", tolerance=0.01,
                                                                  digits=2)),)
    assert plan(0, 3, items) == plan(0, 3, items) != plan(0, 4, items)
    for its in items.values():
        for item in its:
            assert item.question.check(answer_of(item, True)) and not item.question.check(answer_of(item, False))
    plans = [plan(0, n, items) for n in range(5)]
    stored = [StoredAnswer(ch.exercise_id(h, slug), f"{n:016x}", 1, {}, ok, 0.0)
              for n, p in enumerate(plans) for h in ch.HALVES for slug, ok in p[h].items()]
    assert gains_of_plan(plans) == ch.class_gains(ch.class_check(stored))
