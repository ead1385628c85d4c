"""The guided lesson (``app_pages/lesson.py``, its stops in ``ui/lesson_stops.py``):
AppTest walks every stop answering wrong and then right, the numbers a stop states follow the
sentence and are the model's own, the link opens its stop, a class counts a stop's first
answer, the teacher's send brings followers to the stop; headless Chromium walks the whole
lesson at 1400 and 390 px (screenshots under test-output/lesson/).

The tiny checkpoints reverse digit strings, so the lesson walks "1 2 3 4 5"; the numeric
answers are computed here again from the same checkpoints, not read from the page.
"""
from __future__ import annotations

import ast
import re

import numpy as np
import pandas as pd
import pytest

from conftest import ROOT, TEACHER_KEY
from model.checkpoint import load_checkpoint
from model.search import greedy, prepare_source
from helpers.lesson import answer, answer_widget, N, next_stop, open_lesson, param, stop_text, stop_title, walk_lesson
from helpers.browser import PAGE_BUDGET

APP = str(ROOT / "navigation.py")
DIGITS = "1 2 3 4 5"
OTHER = "3 1 4 1 5 9 2 6 5 3"
KEY = TEACHER_KEY
WRONG_NUMBER = 12345.0


# -- helpers ---------------------------------------------------------------------------------------


def numbers(text: str) -> list[float]:
    return [float(x) for x in re.findall(r"-?\d+\.\d+", text)]


@pytest.fixture(scope="module")
def expected(tiny_zoo) -> dict[int, float]:
    """The numeric stops' right answers (stop -> number) from the tiny checkpoints themselves."""
    from ui.examples import EXAMPLES
    from server.settings import results
    model, vocab = load_checkpoint(tiny_zoo / "rnnsearch")[:2]
    rec = greedy(model, vocab, prepare_source(vocab, DIGITS))
    e, a = rec.energies[0], rec.weights[0]
    local, local_vocab = load_checkpoint(tiny_zoo / "luong-local")[:2]
    D = local.cfg.local_window
    text = DIGITS if len(rec.source_tokens) > 2 * D + 1 else max(EXAMPLES, key=len)
    windowed = greedy(local, local_vocab, prepare_source(local_vocab, text)).energies[0]
    bleu = pd.read_csv(results() / "bleu_by_length.csv")
    first = bleu[(bleu["set"] == "test") & (bleu["min_words"] == 1)].set_index("model")["bleu"]
    return {2: len(rec.source_tokens), 3: float(e.max() - e.min()), 4: float(a.max()),
            8: int(np.isfinite(windowed).sum()), 9: float(first["rnnsearch"] - first["rnnenc"])}


# -- AppTest ---------------------------------------------------------------------------------------
def test_every_stop_answered_wrong_then_right(tiny_zoo, expected):
    at = open_lesson(text=DIGITS)
    titles = []
    for k in range(1, N + 1):
        assert stop_title(at).startswith(f"{k}. ") and f"Stop {k} of {N}" in at.get("progress")[0].proto.text
        titles.append(stop_title(at))
        assert len(stop_text(at).split()) <= 80, (k, stop_text(at))
        widget = answer_widget(at)
        predicting = k == N and "shown once you have answered" in at.get("plotly_chart")[0].proto.spec  # blank till then
        if widget.type == "number_input":
            assert answer(at, WRONG_NUMBER) == "wrong"
            assert answer(at, round(expected[k], 2) if k in (3, 4, 9) else expected[k]) == "right", k
        else:
            results = {}
            for n, option in enumerate(widget.options):  # the one right choice (or the few) among wrong ones
                results[option] = answer(at, option)
                assert not (predicting and n == 0) or "shown once" not in at.get("plotly_chart")[0].proto.spec, \
                    "checked: the heatmap shows at once"
            assert "wrong" in results.values() and "right" in results.values(), (k, results)
        assert at.get("page_link"), k  # explore this on its own page
        assert k != N or predicting
        if k < N:
            next_stop(at)
    assert len(set(titles)) == N and param(at, "done") == ",".join(map(str, range(1, N + 1)))


def test_hints_then_show_me_and_the_action_noticed(tiny_zoo):
    at = open_lesson(text=DIGITS, stop="3")
    hint = next(b for b in at.button if b.key.startswith("lesson_hint_button_"))
    assert hint.label == "Hint 1"
    for label in ("Hint 2", "Show me"):
        at.button(key=hint.key).click().run()
        assert at.button(key=hint.key).label == label
    at.button(key=hint.key).click().run()
    assert at.button(key=hint.key).disabled and any("The answer:" in i.value for i in at.info)
    assert sum("Hint" in c.value for c in at.caption) == 2 and "3" in param(at, "done").split(",")
    assert not at.success  # nothing noticed before the student acts
    at.slider(key="lesson_i_slider_score").set_value(2).run()
    assert any(s.value.startswith("Step 2 writes") for s in at.success) and stop_text(at).startswith("At step 2")
    assert param(at, "step") == "2"


def test_numbers_change_with_the_sentence(tiny_zoo):
    said = {}
    for text in (DIGITS, OTHER):
        at = open_lesson(text=text, stop="4")
        said[text] = numbers(stop_text(at))
        assert said[text]
    assert said[DIGITS] != said[OTHER]
    at = open_lesson(text=DIGITS, stop="1")
    at.text_area(key="lesson_text").set_value(OTHER).run()
    assert f"({len(OTHER.split()) + 1}, with" in stop_text(at)  # the columns: pieces + </s>
    long = " ".join(OTHER.split() * 6)  # a long sentence's translation is quoted cut, so the text stays short
    for stop in ("1", "6", "11"):
        assert len(stop_text(open_lesson(text=long, stop=stop)).split()) <= 80


def test_the_link_opens_its_stop_and_keeps_the_state(tiny_zoo):
    at = open_lesson(stop="5", text=DIGITS, step="2", done="1,2,9")
    assert stop_title(at).startswith("5. ") and stop_text(at).startswith("The context is the weighted sum $c_{2}")
    assert "3 done" in at.get("progress")[0].proto.text
    at.button(key="lesson_back").click().run()
    assert stop_title(at).startswith("4. ") and param(at, "stop") == "4"
    assert open_lesson(stop="99").subheader[0].value.startswith(f"{N}. ")  # out of range: the last stop
    blank = open_lesson(stop="x", text=DIGITS)
    assert stop_title(blank).startswith("1. ")
    blank.text_area(key="lesson_text").set_value("   ").run()
    assert not blank.exception and any("empty" in i.value for i in blank.info)  # bad input: a message


def test_a_zoo_without_the_other_models_still_walks_every_stop(tiny_zoo, tmp_path, monkeypatch):
    """Only RNNsearch loaded: the stops that need Luong's models say so, and the rest still ask."""
    partial = tmp_path / "checkpoints"
    partial.mkdir()
    (partial / "rnnsearch").symlink_to(tiny_zoo / "rnnsearch")
    monkeypatch.setenv("ATTN_EXPLORER_CHECKPOINTS", str(partial))
    at = open_lesson(text="<b>1 2</b> 3 *4*")  # markup shows as typed and is translated as text
    assert "<b>1 2</b>" not in stop_text(at)
    asked = []
    for k in range(1, N + 1):
        assert not at.exception and stop_title(at).startswith(f"{k}. ")
        asked.append(any((w.key or "").startswith("lesson_answer_") for kind in ("radio", "selectbox", "number_input")
                         for w in getattr(at, kind)))
        if k < N:
            next_stop(at)
    assert [k + 1 for k, a in enumerate(asked) if not a] == [7, 8, 10]
    monkeypatch.setenv("ATTN_EXPLORER_CHECKPOINTS", str(tmp_path / "nowhere"))
    assert any("RNNsearch is not loaded" in e.value for e in open_lesson().error)


def test_a_class_counts_each_stops_first_answer_and_followers_get_the_stop(store):
    code = store.open_class(KEY).code
    student = open_lesson(stop="2", text=DIGITS, **{"class": code})
    assert answer(student, WRONG_NUMBER) == "wrong"
    right = len(DIGITS.split()) + 1
    assert answer(student, right) == "right"  # checked, but the first committed answer is the one counted
    stored = [a for a in store.summary(KEY, code) if a.exercise.startswith("lesson:")]
    assert [(a.exercise, a.correct) for a in stored] == [("lesson:02-encoder", False)]
    teacher = open_lesson(stop="2", text=DIGITS, **{"class": code})
    teacher.session_state["class_panel"] = True
    teacher.run()
    teacher.text_input(key="class_key_box").set_value(KEY)
    teacher.button(key="class_sign_in").click().run()
    metrics = {m.label: m.value for m in teacher.metric}  # the room at this stop: one student, not right
    assert metrics["Students who answered"] == "1" and metrics["Right"].startswith("0 ")
    for _ in range(3):
        teacher.button(key="lesson_next").click().run()
    assert stop_title(teacher).startswith("5. ") and not teacher.exception
    teacher.slider(key="lesson_i_slider_context").set_value(2).run()
    teacher.button(key="class_send").click().run()
    sent = store.follow(code)
    assert sent.page == "lesson" and (sent.params["stop"], sent.params["step"]) == ("5", "2")
    assert "done" not in sent.params  # the teacher's own progress is not sent
    follower = open_lesson(**sent.params, **{"class": code, "sent": "1"})
    assert stop_title(follower).startswith("5. ") and "$c_{2}" in stop_text(follower)


def test_every_lesson_function_is_short():
    for path in ("app_pages/lesson.py", "ui/lesson_stops.py"):
        tree = ast.parse((ROOT / path).read_text())
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                assert node.end_lineno - node.lineno + 1 <= 80, f"{path}: {node.name} is over 80 lines"


# -- the real browser ------------------------------------------------------------------------------


def progress_survives_a_new_session(page, url: str) -> None:
    """Stop 2 answered right, then a link without ``done`` (as the teacher's send opens, a new
    session): the browser's cookie brings the stop done back."""
    from helpers.browser import wait_for
    page.goto(f"{url}/lesson?stop=2&text=1+2+3+4+5", wait_until="domcontentloaded", timeout=PAGE_BUDGET * 1000)
    box = page.locator('[class*="st-key-lesson_answer_encoder"] input')
    box.fill(str(len(DIGITS.split()) + 1))
    box.press("Enter")
    page.locator(".st-key-lesson_check_encoder button").click()
    wait_for(page, "document.body.innerText.includes('Right: your answer')", "the answer checked", PAGE_BUDGET)
    wait_for(page, "document.cookie.includes('attn_lesson_done=2')", "the progress cookie", PAGE_BUDGET)
    page.goto(f"{url}/lesson?stop=3&text=1+2+3+4+5", wait_until="domcontentloaded", timeout=PAGE_BUDGET * 1000)
    wait_for(page, "document.body.innerText.includes('Stop 3 of 11 · 1 done')", "the progress kept", PAGE_BUDGET)


@pytest.mark.browser
@pytest.mark.server
def test_browser_walks_the_lesson_at_1400_and_390_px(class_server_process):
    from helpers.browser import headless_chromium
    url, _, chromium = class_server_process  # the process's server on the tiny zoo (tests/conftest.py)
    out = ROOT / "test-output" / "lesson"
    for width in (1400, 390):
        with headless_chromium(chromium, width, 900) as page:
            walked = walk_lesson(page, url, DIGITS, out / f"{width}px")
            if width == 1400:
                progress_survives_a_new_session(page, url)
        assert [w["stop"] for w in walked] == list(range(1, N + 1))
        for w in walked:
            assert w["exceptions"] == 0, w
            assert w["document"] <= w["viewport"] and w["main"] <= w["main_visible"], (width, w)
    assert len(list((out / "390px").glob("stop-*.png"))) == N
