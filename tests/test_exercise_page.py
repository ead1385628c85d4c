"""AppTest of the Exercises page (app_pages/exercises.py) and of a class around it
(ui/class_session.py): each kind checked and revealed, answers counted in a class on a
real SQLite store, the teacher's live summary, a student who cannot act as the teacher
whatever the link says, following the teacher, and a store that is down."""
from __future__ import annotations

import logging
from contextlib import contextmanager

import pytest
from streamlit.testing.v1 import AppTest

from helpers.apptest import new_app

from ui.examples import EXAMPLES
from conftest import ROOT, TEACHER_KEY
from teaching.exercises import alignment_exercise, MECHANISMS, score_alignment, step_exercise, which_exercise
from model.align import read_gold
from model.zoo import DISPLAY_NAMES
from server.settings import gold

APP = str(ROOT / "navigation.py")
KEY = TEACHER_KEY



def open_exercise(**query) -> AppTest:
    at = new_app(APP, 60)
    at.query_params.update(query)
    at.run()
    at.switch_page("app_pages/exercises.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def sign_in(at: AppTest, key: str = KEY) -> None:
    """The teacher signs in: the Class panel opened (a click on its title), the key typed, *Sign in*."""
    at.session_state["class_panel"] = True
    at.run()
    at.text_input(key="class_key_box").set_value(key)
    at.button(key="class_sign_in").click().run()


def metric(at: AppTest, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def texts(at: AppTest) -> str:
    return " ".join(str(e.value) for kind in ("markdown", "success", "error", "warning", "info", "caption")
                    for e in getattr(at, kind))


def check(at: AppTest, ex_id: str) -> AppTest:
    at.button(key=f"ex_check_{ex_id}").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def mark(at: AppTest, seed: int, links: set) -> None:
    pair = alignment_exercise(seed, read_gold(gold()))
    for k in range(len(pair.french)):
        at.button_group(key=f"ex_align_{seed}_{k}").set_value(sorted(i for i, kk in links if kk == k))


def test_predict_the_alignment_reveals_the_aer_against_gold(tiny_zoo):
    seed = 0  # level 1: Where is the train station ? -> Où est la gare ?
    pair = alignment_exercise(seed, read_gold(gold()))
    at = open_exercise(ex="align", seed=str(seed))
    assert not [m for m in at.metric if m.label == "Your AER against the gold"]  # nothing shown before the check
    mark(at, seed, set(pair.sure))
    check(at, f"align:{seed}")
    assert metric(at, "Your AER against the gold") == "0.000" and metric(at, "Recall") == "1.000"
    assert at.get_by_key("ex_align_fig") is not None
    wrong = {(0, 0), (1, 1), (3, 2)}  # the train station's "la" linked to "train"
    mark(at, seed, wrong)
    at.run()
    expected = score_alignment(wrong, pair, set())
    assert metric(at, "Your AER against the gold") == f"{expected.aer:.3f}" != "0.000"
    assert "Where the attention differs from you" in texts(at)


def test_compute_one_step_accepts_the_right_numbers_and_rejects_a_wrong_alpha(tiny_zoo):
    seed = 2  # the additive score
    ex = step_exercise(seed)
    truth = ex.solution()
    at = open_exercise(ex="step", seed=str(seed))
    for part, values in (("e", truth.energies), ("α", truth.weights), ("c", truth.context)):
        for j, v in enumerate(values.ravel()):
            at.number_input(key=f"ex_{seed}_{part}{j}").set_value(round(float(v), 2))
    check(at, f"step:{seed}")
    assert at.success and "All right" in at.success[0].value and not at.error
    at.number_input(key=f"ex_{seed}_α1").set_value(round(float(truth.weights.ravel()[1]) + 0.1, 2))
    check(at, f"step:{seed}")
    assert at.error and "α_2" in at.error[0].value and "e_" not in at.error[0].value
    assert "The worked answer" in [e.label for e in at.expander]


def which_answers(seed: int):
    """(the model that drew exercise ``seed``, the right option, a wrong option): the tiny zoo
    loads every model of MECHANISMS."""
    from teaching.exercises import FAMILIES
    ex = which_exercise(seed, list(MECHANISMS), list(EXAMPLES))
    options = list(FAMILIES) if ex.question == "family" else list(MECHANISMS)
    return ex.model, ex.answer, next(o for o in options if o != ex.answer)


@pytest.mark.parametrize("seed", [3, 5])  # level 1 (the family), level 3 (the exact score)
def test_which_mechanism_reveals_the_model_beside_every_other(tiny_zoo, seed):
    model, answer, wrong = which_answers(seed)
    at = open_exercise(ex="which", seed=str(seed))
    at.radio(key=f"ex_which_{seed}").set_value(wrong)
    check(at, f"which:{seed}")
    assert f"No: it is {DISPLAY_NAMES[model]}" in texts(at)
    at.radio(key=f"ex_which_{seed}").set_value(answer).run()
    assert f"Right: it is {DISPLAY_NAMES[model]}" in texts(at)
    # the other models come on request: closed, the expander draws none of them (a reveal reruns
    # every tab that has not answered at once); opened, every model with its cues
    every = f"ex_which_every_{seed}"
    assert "The same sentence under every model" in [e.label for e in at.expander]
    assert not at.dataframe and len(at.get("plotly_chart")) == 1  # the question's heatmap alone
    at.session_state[every] = True
    at.run()
    cues = at.dataframe[0].value
    assert list(cues["sharpness"]) and len(cues) == len(MECHANISMS)
    assert len(at.get("plotly_chart")) == 1 + len(MECHANISMS)
    assert all(at.get_by_key(f"ex_which_all_{m}") is not None for m in MECHANISMS)


def answer_which(code: str, seed: int, right: bool) -> None:
    at = open_exercise(ex="which", seed=str(seed), **{"class": code})
    _, answer, wrong = which_answers(seed)
    at.radio(key=f"ex_which_{seed}").set_value(answer if right else wrong)
    check(at, f"which:{seed}")
    assert "Counted in class" in texts(at)


@contextmanager
def arrow_fallbacks():
    """The messages Streamlit logs when a table's first conversion to Arrow fails (a column of
    mixed types), which it then converts again on every rerun."""
    log, said = logging.getLogger("streamlit.dataframe_util"), []
    handler = logging.Handler(logging.DEBUG)
    handler.emit = lambda record: said.append(record.getMessage())
    level = log.level
    log.addHandler(handler)
    log.setLevel(logging.DEBUG)
    try:
        yield said
    finally:
        log.removeHandler(handler)
        log.setLevel(level)


def class_table(at) -> dict[str, str]:
    """The teacher's table of the class's exercises: exercise -> its "right at first"."""
    table = next(d for d in at.dataframe if "right at first" in d.value.columns).value
    return dict(zip(table["exercise"], table["right at first"]))


def test_the_teachers_summary_counts_the_class(store):
    code = store.open_class(KEY).code
    for right in (True, False, False):
        answer_which(code, 5, right)
    answer_which(code, 6, True)  # another exercise of the class: its count beside this one's "—"
    assert len(store.summary(KEY, code)) == 4
    at = open_exercise(ex="which", seed="5", **{"class": code})
    with arrow_fallbacks() as said:
        sign_in(at)
    assert not at.exception
    # one type a column (no second conversion on every rerun), and this exercise's hidden before Reveal
    assert sorted(class_table(at).values()) == ["1", "—"] and not said
    # a projector's page before Reveal: who answered, nothing of which answer is right
    assert metric(at, "Students who answered") == "3" and "Right" not in [m.label for m in at.metric]
    assert f"Class {code}: the answers, live" in [h.value for h in at.subheader]
    assert "Most common mistake" not in texts(at) and "it is " not in texts(at)
    with arrow_fallbacks() as said:
        at.button(key="ex_reveal").click().run()
    assert store.follow(code).revealed == "which:5"
    assert sorted(class_table(at).values()) == ["1", "1"] and not said
    assert metric(at, "Right").startswith("1 ") and "Most common mistake" in texts(at)
    assert "You did not answer" not in texts(at)  # the teacher's page says the class sees the solution


def test_a_student_cannot_act_as_the_teacher_whatever_the_link(store):
    code = store.open_class(KEY).code
    at = open_exercise(ex="which", seed="5", **{"class": code, "key": KEY, "teacher": "1", "class_teacher_key": KEY,
                                                "class_session": "0" * 16})
    at.session_state["class_panel"] = True  # what a click on the Class panel's title sets
    at.run()
    everything = texts(at) + " ".join(h.value for h in at.subheader)
    assert "the answers, live" not in everything and "Students who answered" not in everything
    buttons = {b.key for b in at.button}
    assert not buttons & {"ex_reveal", "class_open", "class_close", "class_send"}
    at.text_input(key="class_key_box").set_value("guess")
    at.button(key="class_sign_in").click().run()
    assert "That is not the teacher key." in texts(at)
    assert not {b.key for b in at.button} & {"ex_reveal", "class_open", "class_send"}
    assert store.follow(code).version == 0


def test_the_class_panel_draws_its_boxes_only_when_opened():
    """Outside a class the sidebar's Class panel is closed and draws nothing inside (every
    rerun of every page would send its boxes); opening it shows the code box and the
    teacher's sign-in."""
    at = open_exercise(ex="step", seed="4")
    keys = {w.key for w in at.text_input}
    assert not keys & {"class_code_box", "class_key_box"}
    at.session_state["class_panel"] = True  # what a click on the panel's title sets
    at.run()
    assert {"class_code_box", "class_key_box"} <= {w.key for w in at.text_input}
    assert "class_sign_in" in {b.key for b in at.button}


def test_the_teacher_opens_a_class_and_a_follower_gets_the_page(store):
    from server.follow import follow_board
    at = open_exercise(ex="step", seed="4")
    at.session_state["class_panel"] = True
    at.run()
    sign_in(at)
    at.button(key="class_open").click().run()
    assert not at.exception
    code = at.session_state["class_code"]
    assert store.class_info(code).open
    at.button(key="class_send").click().run()
    sent = store.follow(code)
    assert sent.page == "exercises" and (sent.params["ex"], sent.params["seed"]) == ("step", "4")
    student = new_app(APP, 60)
    student.query_params.update({"class": code})
    student.run()  # the class link: the follow fragment reads the teacher's state and opens the page in the session
    assert not student.exception, [e.value for e in student.exception]
    assert student.query_params["ex"] == "step" and student.query_params["class"] == code
    assert student.session_state["ex_kind"] == "step" and student.session_state["ex_seed"] == 4
    student.run()
    assert student.session_state["ex_kind"] == "step"  # the teacher's page already: no second opening
    store.reveal(KEY, code, "step:4")
    follow_board().changed(code)  # another process's change, seen at the board's next read: now, here
    student.run()
    assert "The teacher revealed the answer." in texts(student) and "The worked answer" in [e.label for e in student.expander]
    assert "You did not answer this exercise" in texts(student)  # no score for an answer never given
    student.session_state["ex_step_guess"] = "typed before the send"  # a page's value the send must not carry
    store.send(KEY, code, "step-through", {"text": "1 2 3 4 5", "model": "rnnsearch", "step": "3"})
    follow_board().changed(code)
    student.run()
    assert not student.exception, [e.value for e in student.exception]
    assert student.session_state["step_i"] == 3 and student.session_state["step_text"] == "1 2 3 4 5"
    assert "ex_step_guess" not in student.session_state


def test_a_store_that_is_down_leaves_the_exercise_working(monkeypatch, tiny_zoo):
    monkeypatch.setenv("ATTN_EXPLORER_CLASS_DB", "postgresql://postgres@127.0.0.1:9/nowhere")
    seed = 0
    at = open_exercise(ex="step", seed=str(seed), **{"class": "ABCDEF"})
    for part in ("e", "α"):
        for j in range(step_exercise(seed).words):
            at.number_input(key=f"ex_{seed}_{part}{j}").set_value(0.0)
    check(at, f"step:{seed}")
    assert at.error and "Not yet" in at.error[0].value  # the exercise still answers
    assert any("The class is unavailable" in i.value for i in at.info)


def test_the_teachers_alignment_summary_draws_the_class_beside_the_model(store):
    """Three students' links (through the page) become the class heatmap: the share of students
    per link, beside the model's α and the gold."""
    import json
    code = store.open_class(KEY).code
    seed = 0  # level 1: Where is the train station ? -> Où est la gare ?
    pair = alignment_exercise(seed, read_gold(gold()))
    for links in (set(pair.sure), set(pair.sure), {(0, 0)}):
        at = open_exercise(ex="align", seed=str(seed), **{"class": code})
        mark(at, seed, links)
        check(at, f"align:{seed}")
        assert "Counted in class" in texts(at)
    teacher = open_exercise(ex="align", seed=str(seed), **{"class": code})
    sign_in(teacher)
    from helpers.apptest import array
    before = json.loads(teacher.get_by_key("ex_class_marks").proto.spec)["data"]
    assert [t["type"] for t in before] == ["heatmap"]  # before Reveal: the class's links, no model, no gold
    assert "Your AER against the gold" not in [m.label for m in teacher.metric]
    teacher.button(key="ex_reveal").click().run()
    assert metric(teacher, "Students who answered") == "3" and metric(teacher, "Right").startswith("2 ")
    counts = array(json.loads(teacher.get_by_key("ex_class_marks").proto.spec)["data"][0]["z"])
    assert counts[0, 0] == 3 and counts[3, 4] == 2 and counts[1, 0] == 0  # students who linked each pair
    panels = json.loads(teacher.get_by_key("ex_class_marks").proto.spec)["data"]
    assert [t["type"] for t in panels if t["type"] == "heatmap"] == ["heatmap"] * 3  # the class, the model, the gold
    assert "Most common mistake" in texts(teacher)


def class_figures(store, code: str, exercise: str):
    from server.answers import class_summary
    return class_summary(store.summary(KEY, code)).get(exercise)


def test_an_empty_check_reveals_nothing_and_stores_nothing(store):
    code = store.open_class(KEY).code
    seed = 3
    at = open_exercise(ex="which", seed=str(seed), **{"class": code})
    check(at, f"which:{seed}")
    assert "Pick an answer first." in texts(at)
    assert "it is " not in texts(at) and "Counted in class" not in texts(at)
    at = open_exercise(ex="step", seed="4", **{"class": code})
    check(at, "step:4")
    assert "Enter your numbers first" in texts(at) and "The worked answer" not in [e.label for e in at.expander]
    at = open_exercise(ex="align", seed="1", **{"class": code})
    check(at, "align:1")
    assert "Mark at least one link first" in texts(at)
    assert not [m for m in at.metric if m.label == "Your AER against the gold"]
    assert store.summary(KEY, code) == []


def test_a_wrong_answer_then_the_revealed_one_counts_wrong(store):
    code = store.open_class(KEY).code
    seed = 3
    at = open_exercise(ex="which", seed=str(seed), **{"class": code})
    model, answer, wrong = which_answers(seed)
    at.radio(key=f"ex_which_{seed}").set_value(wrong)
    check(at, f"which:{seed}")
    assert f"No: it is {DISPLAY_NAMES[model]}" in texts(at)
    at.radio(key=f"ex_which_{seed}").set_value(answer)
    check(at, f"which:{seed}")  # the copied answer: kept as a retry
    assert "Kept as a retry" in texts(at)
    s = class_figures(store, code, f"which:{seed}")
    assert (s.students, s.correct, s.retries, s.fixed) == (1, 0, 1, 1)
    teacher = open_exercise(ex="which", seed=str(seed), **{"class": code})
    sign_in(teacher)
    teacher.button(key="ex_reveal").click().run()
    assert metric(teacher, "Right").startswith("0 ") and metric(teacher, "Retries (not counted)") == "1"


def test_show_me_the_solution_before_answering_counts_as_gave_up(store):
    code = store.open_class(KEY).code
    at = open_exercise(ex="step", seed="4", **{"class": code})
    at.button(key="ex_give_up_step:4").click().run()
    assert "The worked answer" in [e.label for e in at.expander] and "Counted in class" in texts(at)
    s = class_figures(store, code, "step:4")
    assert (s.students, s.correct, s.gave_up) == (1, 0, 1)


def test_compute_one_step_gives_partial_credit_hints_and_every_intermediate(tiny_zoo):
    from teaching.worked_example import softmax
    import numpy as np
    seed = 2  # level 3: additive, 4 keys
    ex = step_exercise(seed)
    at = open_exercise(ex="step", seed=str(seed))
    assert "You need a calculator" in texts(at) and "Level 3 of 3" in texts(at)
    at.button(key=f"ex_hint_step:{seed}").click().run()
    at.button(key=f"ex_hint_step:{seed}").click().run()
    assert "Hint 1:" in texts(at) and "Hint 2:" in texts(at)
    assert "The worked answer" not in [e.label for e in at.expander]  # hints are not the solution
    e = np.round(ex.solution().energies.ravel(), 2)
    e[1] += 0.4  # a wrong e_2, then α and c computed from it
    alpha = softmax(e.reshape(-1, 1)).ravel()
    for part, values in (("e", e), ("α", alpha), ("c", alpha @ ex.inputs.annotations)):
        for j, v in enumerate(values):
            at.number_input(key=f"ex_{seed}_{part}{j}").set_value(round(float(v), 2))
    check(at, f"step:{seed}")
    assert "e_2 is off" in at.error[0].value and "α_" not in at.error[0].value and "c_" not in at.error[0].value
    assert "Right from your own numbers: α, c" in at.error[0].value
    latex = " ".join(x.value for x in at.latex)
    assert r"\exp(e_j)" in latex and r"U_a h_j" in latex and r"\alpha_j h_j" in latex


def test_next_exercise_climbs_the_levels_and_the_progress_line_counts_first_answers(tiny_zoo):
    at = open_exercise(ex="which", seed="3")
    _, answer, _ = which_answers(3)
    at.radio(key="ex_which_3").set_value(answer)
    check(at, "which:3")
    assert "1 of 1" in texts(at)
    at.button(key="ex_next").click().run()
    assert at.session_state["ex_seed"] == 4 and at.query_params["seed"] in ("4", ["4"])


def test_a_tab_the_class_refused_says_so_beside_every_check(store, tiny_zoo):
    """No answer is dropped silently: a tab whose class has its seats taken reads why at *Check*."""
    from server.class_store import new_session_id
    code = store.open_class(KEY).code
    store.set_admission(KEY, code, seats=1)
    store.join(code, new_session_id(), "10.0.0.1")  # the one seat
    at = open_exercise(ex="which", seed="0", **{"class": code})
    at.radio(key="ex_which_0").set_value(which_answers(0)[1])
    at = check(at, "which:0")
    assert f"Not counted in class {code}: class {code} has its 1 seats taken" in texts(at)
    assert store.class_counts(KEY, code).joined == 1 and store.summary(KEY, code) == []
