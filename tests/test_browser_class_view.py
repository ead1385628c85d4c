"""The teacher's view of what the class thought (``ui/class_view.py``, ``viz.teaching_figures``'s class
figures), in real browsers: three students answer *Compute one step by hand* and *Predict the
alignment* through the page, each in a browser of their own; the teacher, signed in, sees the
numbers each gave per quantity against the right value, the exercises named in words, a tie
for the most given answer named as one, right and wrong apart, and the class's links counted
beside the model's and the gold. Screenshots under ``test-output/browser/``."""
from __future__ import annotations

import pytest

import json
import re

from conftest import BROWSER_CLASS_KEY as KEY
from helpers.browser import APP_IDLE, open_a_class, OUTPUT, PAGE_BUDGET, wait_for
from teaching.exercises import step_exercise

pytestmark = [pytest.mark.browser, pytest.mark.server]

# each student's numbers for step:0 (dot, 2 keys, 3 dimensions: e_1 e_2, α_1 α_2, c_1 c_2 c_3)
RIGHT = step_exercise(0).solution()
E, A, C = RIGHT.energies.ravel(), RIGHT.weights.ravel(), RIGHT.context.ravel()
STUDENTS = [
    {"e": E, "α": A, "c": C},                                   # all right
    {"e": E + 0.5, "α": A, "c": C},                             # e wrong (its own α and c then judged from it)
    {"e": E, "α": A[::-1], "c": C + 1.0},                       # α and c wrong
]


def student(browser, url: str, code: str, n: int) -> None:
    """One student, in a browser of their own: the step exercise, then the alignment one."""
    page = browser.new_context(viewport={"width": 1280, "height": 1400}).new_page()
    page.goto(f"{url}/exercises?ex=step&seed=0&class={code}", wait_until="domcontentloaded")
    wait_for(page, APP_IDLE + " && document.querySelector('input[aria-label=\"e1\"]')", "the step exercise", 90)
    for part, values in STUDENTS[n].items():
        for j, v in enumerate(values):
            box = page.get_by_label(f"{part}{j + 1}", exact=True)
            box.fill(f"{v:.2f}")
            box.press("Enter")
            wait_for(page, APP_IDLE, "the number taken", 60)
    page.get_by_role("button", name="Check my answer").click()
    wait_for(page, "document.body.innerText.includes('Counted in class')", "the step answer counted", 60)
    page.goto(f"{url}/exercises?ex=align&seed=0&class={code}", wait_until="domcontentloaded")
    # the grid's rows draw one by one: wait for more than the level picker and one row
    rows = wait_for(page, APP_IDLE + " && (n => n > 2 && n)(document.querySelectorAll('[data-testid=\"stButtonGroup\"]').length)",
                    "the alignment grid", PAGE_BUDGET)
    assert rows > 2
    # Where is the train station ? -> Où est la gare ? : student n links "Où" to English word n
    link_first_word(page, n)
    page.get_by_role("button", name="Check my answer").click()
    wait_for(page, "document.body.innerText.includes('Counted in class')", "the alignment counted", 60)
    page.context.close()


def link_first_word(page, n: int) -> None:
    """Mark the grid's first row (the first French word) at English word ``n``, until the button
    shows pressed: a click that lands while a run redraws the grid can be lost."""
    pressed = ("(b => b && (b.getAttribute('aria-pressed') === 'true' || b.getAttribute('aria-checked') === 'true' || "
               "(b.getAttribute('kind') || '').includes('Active')))(document.querySelectorAll("
               f"'[data-testid=\"stButtonGroup\"]')[1].querySelectorAll('button')[{n}])")
    for _ in range(3):
        wait_for(page, APP_IDLE, "the grid drawn", PAGE_BUDGET)
        if page.evaluate(pressed):
            break
        page.locator('[data-testid="stButtonGroup"]').nth(1).locator("button").nth(n).click()
        try:
            wait_for(page, APP_IDLE + " && " + pressed, "the link taken", 30)
            break
        except TimeoutError:
            continue
    assert page.evaluate(pressed), f"the link of the first word to word {n} is not marked"


def teacher_page(browser, url: str):
    """The teacher signs in and opens a class (as tests/test_browser_class.py does); returns the page and the code."""
    page = browser.new_context(viewport={"width": 1920, "height": 1080}).new_page()  # a projector
    page.goto(f"{url}/exercises?ex=step&seed=0", wait_until="domcontentloaded")
    wait_for(page, APP_IDLE + " && document.body.innerText.includes('Predict first')", "the exercise page", PAGE_BUDGET)
    code = open_a_class(page, KEY)
    return page, code


def reveal(page) -> None:
    page.get_by_role("button", name="Reveal the answer to the class").click()
    wait_for(page, "document.body.innerText.includes('Revealed to the class') && " + APP_IDLE, "revealed", 90)


def figure(page, key: str) -> str:
    """A chart's data and layout as JSON, from the page (Plotly keeps them on its element)."""
    return wait_for(page, f"(p => p && p.data && JSON.stringify({{data: p.data, layout: p.layout}}))"
                          f"(document.querySelector('.st-key-{key} .js-plotly-plot'))", f"the chart {key}", 60)


def test_the_teacher_sees_what_three_students_thought(class_server):
    url, store, browser = class_server
    page, code = teacher_page(browser, url)
    for n in range(3):
        student(browser, url, code, n)
    # before Reveal the projected page names no right answer: the verdicts come with Reveal
    wait_for(page, "document.body.innerText.includes('Students who answered') && " + APP_IDLE, "the answers", 90)
    assert "most given answer" not in page.locator("body").inner_text()
    reveal(page)
    text = wait_for(page, "(t => /tie for the most given answer, [^\\n]*, [^\\n]* and [^\\n]*, by 1 each/.test(t) && t)"
                          "(document.body.innerText)", "three answers", 90)
    tie = re.search(r"A tie for the most given answer, (.*), by 1 each", text)  # three labels, one each
    assert tie and {"right", "wrong: e", "wrong: α c"} == set(re.split(r", | and ", tie.group(1))), \
        text[text.find("tie for") - 100:text.find("tie for") + 200]
    assert "Compute one step by hand, no. 0" in text and "step:0" not in text  # the exercise named in words
    numbers = json.loads(figure(page, "ex_class_numbers"))
    dots, truth = numbers["data"]
    assert len(truth["x"]) == 2 + 2 + 3 and len(dots["y"]) == 3 * 7  # every student's every number
    right, wrong = "#009E73", "#D55E00"
    # within ±0.02 of the right value: all 7 of the first, 5 of the second (its e), 2 of the third (its e)
    assert dots["marker"]["color"].count(right) == 7 + 5 + 2 and dots["marker"]["color"].count(wrong) == 2 + 5
    counts = json.loads(figure(page, "ex_class_counts"))["data"][0]
    assert right in counts["marker"]["color"] and wrong in counts["marker"]["color"]
    page.locator(".st-key-ex_class_numbers").screenshot(path=OUTPUT / "teacher-step-numbers.png")
    page.locator(".st-key-ex_class_counts").screenshot(path=OUTPUT / "teacher-step-answers.png")
    page.get_by_text("Predict the alignment", exact=True).first.click()
    wait_for(page, "document.body.innerText.includes('Predict the alignment, no. 0') && " + APP_IDLE, "align:0", 90)
    wait_for(page, "document.querySelector('.st-key-ex_class_marks .js-plotly-plot')", "the class's links", 90)
    shown = page.locator("body").inner_text()
    assert "Your AER against the gold" not in shown and "Where the attention differs" not in shown
    assert page.evaluate("[...document.querySelectorAll('.js-plotly-plot')].every(p => !p.data || "
                         "p.data.filter(t => t.type === 'heatmap').length < 3)")  # no model, no gold before Reveal
    page.screenshot(path=OUTPUT / "projector-before-reveal-1920.png", full_page=True)
    reveal(page)
    marks = json.loads(wait_for(page, """(() => { const p = [...document.querySelectorAll('.js-plotly-plot')]
        .find(p => p.data && p.data.filter(t => t.type === 'heatmap').length === 3);
        return p && JSON.stringify(p.data); })()""", "the class's alignment", 90))
    class_panel = marks[0]
    assert class_panel["text"][0][:3] == ["1", "1", "1"]  # Où: one student on each of the first three words
    assert [t["type"] for t in marks].count("heatmap") == 3  # the class, the model, the gold
    page.locator('[class*="st-key-ex_class_marks"], [class*="_ex_class_marks"]').last.screenshot(
        path=OUTPUT / "teacher-align.png")
    page.screenshot(path=OUTPUT / "projector-1920.png", full_page=True)
