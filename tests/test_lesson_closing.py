"""The Lesson page's card after the last stop (``app_pages/lesson.py``: ``closing_card``) and a
verdict that belongs to one question only: AppTest on the suite's tiny checkpoints."""
from __future__ import annotations

from helpers.apptest import DIGITS
from helpers.lesson import answer, answer_widget, N, open_lesson, stop_title, verdict


def test_the_closing_card_scores_each_stops_first_answer(tiny_zoo):
    at = open_lesson(text=DIGITS, stop=str(N - 1))
    assert answer(at, answer_widget(at).options[-1]) in ("right", "wrong")
    first = verdict(at)
    at.button(key="lesson_next").click().run()
    options = answer_widget(at).options
    results = [answer(at, option) for option in options]  # the first is the one scored
    at.button(key="lesson_next_bottom").click().run()
    assert not at.exception and stop_title(at).startswith("The end")
    right = (first == "right") + (results[0] == "right")
    metric = {m.label: m.value for m in at.metric}["Right at the first answer"]
    assert metric == f"{right} of 2"
    assert {link.proto.page for link in at.get("page_link")} >= {"exercises", "compare", "attribution"}
    assert at.query_params["stop"] in (str(N + 1), [str(N + 1)])


def test_switching_the_test_set_clears_the_old_verdict(tiny_zoo):
    at = open_lesson(text=DIGITS, stop="9")
    assert answer(at, 12345.0) == "wrong"
    at.get("button_group")[0].set_value("stress").run()
    assert verdict(at) is None and answer_widget(at).value is None
