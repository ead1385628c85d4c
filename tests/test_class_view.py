"""The teacher's view in words (``ui/class_view.py``) and its figures (``viz.teaching_figures``'s
``answer_counts``, ``given_numbers``, ``class_alignment``), on plain answers as the class store
keeps them (oldest first; exercise, session, answer, correct)."""
from __future__ import annotations

from collections import Counter

import numpy as np

from server.answers import answer_record, class_summary
from helpers import as_stored
from ui.class_view import (exercise_name, first_answers, given_numbers, labels_by_verdict, link_counts, most_given,
                           numbers_table)
from viz.teaching_figures import answer_counts, class_alignment, given_numbers as given_numbers_figure, RIGHT, WRONG


def stored(*answers):
    return as_stored([(s, e, a, c) for e, s, a, c in answers])


def test_names_in_words():
    assert exercise_name("step:0") == "Compute one step by hand, no. 0"
    assert exercise_name("align:12") == "Predict the alignment, no. 12"
    assert exercise_name("lesson:01-heatmap") == "Lesson, stop 1: The translation and its heatmap"
    assert exercise_name("lesson:07-luong") == "Lesson, stop 7: Luong's scores on the same sentence"
    assert exercise_name("odd") == "odd"


def test_a_tie_is_named_as_one():
    assert most_given(Counter({"a": 2, "b": 1})) == "the most given answer, a, by 2"
    assert most_given(Counter({"a": 2, "b": 2, "c": 1})) == "a tie for the most given answer, a and b, by 2 each"
    assert most_given(Counter()) == "no answer yet"


def test_first_answers_and_the_numbers_given():
    right = {"e": [1.0, 2.0], "α": [0.27, 0.73], "c": [0.5]}
    answers = stored(("step:0", "s1", answer_record("right", True, [], numbers=right), True),
                     ("step:0", "s2", answer_record("wrong: e", False, ["e wrong"],
                                                    numbers={"e": [1.5, None], "α": [0.27, 0.73], "c": [0.5]}), False),
                     ("step:0", "s2", answer_record("right", True, [], numbers=right), True),  # a retry: not counted
                     ("align:0", "s1", answer_record("AER 0.0", True, [], {(0, 0)}), True))
    firsts = first_answers(answers, "step:0")
    assert [a.session for a in firsts] == ["s1", "s2"]
    assert labels_by_verdict(firsts) == ({"right"}, {"wrong: e"})
    given = given_numbers(firsts, {"e": 2, "α": 2, "c": 1})
    assert given == {"e_1": [1.0, 1.5], "e_2": [2.0], "α_1": [0.27, 0.27], "α_2": [0.73, 0.73], "c_1": [0.5, 0.5]}
    truth = {"e_1": 1.0, "e_2": 2.0, "α_1": 0.268, "α_2": 0.732, "c_1": 0.5}
    table = {row["quantity"]: row for row in numbers_table(given, truth, 0.02)}
    assert table["e_1"]["within ±0.02"] == 1 and table["e_1"]["wrong numbers given"] == "1.50"
    fig = given_numbers_figure(given, truth, 0.02).to_dict()
    assert fig["data"][0]["marker"]["color"].count(WRONG) == 1 and len(fig["data"][0]["y"]) == 9
    summary = class_summary(answers)["align:0"]
    assert link_counts(summary.marks, 2, 2).tolist() == [[1, 0], [0, 0]]


def test_right_and_wrong_coloured_apart():
    bars = answer_counts({"right": 2, "wrong: e": 1, "gave up": 1}, {"right"}).to_dict()["data"][0]
    colour = dict(zip(bars["y"], bars["marker"]["color"]))
    assert colour["right"] == RIGHT and colour["wrong: e"] == WRONG and colour["gave up"] not in (RIGHT, WRONG)


def test_the_class_alignment_beside_the_model_and_the_gold():
    links = np.array([[2, 0], [1, 1]])
    fig = class_alignment(links, 2, np.eye(2), {(0, 0), (1, 1)}, np.eye(2), ["a", "b"], ["x", "y"])
    heatmaps = [t for t in fig.data if t.type == "heatmap"]
    assert len(heatmaps) == 3 and [list(r) for r in heatmaps[0].text] == [["2", "0"], ["1", "1"]]
    assert np.allclose(heatmaps[0].z, [[2, 0], [1, 1]]) and fig.layout.coloraxis.cmax == 2  # a count of students
    # each panel its own legend: a count, α, the gold's categories, each colour bar under its panel
    axes = [fig.layout[h.coloraxis] for h in heatmaps]
    assert len({h.coloraxis for h in heatmaps}) == 3
    assert [a.colorbar.title.text for a in axes] == ["students who linked", "α", "gold link"]
    assert list(axes[2].colorbar.ticktext) == ["none", "possible", "sure"]
    for h, a in zip(heatmaps, axes):
        left, right = fig.layout[h.xaxis.replace("x", "xaxis")].domain
        assert left <= a.colorbar.x <= right


def test_the_class_alignment_before_reveal_shows_the_class_only():
    fig = class_alignment(np.array([[2, 0], [1, 1]]), 2, None, set(), None, ["a", "b"], ["x", "y"])
    assert [t.type for t in fig.data] == ["heatmap"]
    assert not any("gold" in str(a.text) or "model" in str(a.text) for a in fig.layout.annotations)


def test_the_class_figures_are_valid_plotly():
    """Built with Plotly's full validation (viz/ builds them unvalidated): a typo fails here."""
    import plotly.graph_objects as go
    go.Figure(answer_counts({"right": 2, "wrong": 1}, {"right"}).to_dict())
    go.Figure(given_numbers_figure({"e_1": [1.0, 1.5]}, {"e_1": 1.0}, 0.02).to_dict())
    go.Figure(class_alignment(np.eye(2, dtype=int), 1, np.eye(2), {(0, 0)}, np.eye(2), ["a", "b"], ["x", "y"]).to_dict())
