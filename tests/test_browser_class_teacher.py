"""A class as a teacher runs it, in real browsers (Debian Chromium driven by Playwright, a real
server; a send to the page the students are on: tests/test_browser_class_send.py): removing students from
the roster (the last row, the first row, undo) with the removed student told at once; signing in
and opening a class on a Lesson stop; the teacher's projected Exercises page before and after
*Reveal*, and what a student who never answered is told. Each waits on what the page draws."""
from __future__ import annotations

import pytest

from urllib.parse import quote

from conftest import BROWSER_CLASS_KEY as KEY
from helpers.browser import APP_IDLE, open_a_class, OUTPUT, PAGE_BUDGET, wait_for
from server.class_store import new_session_id

pytestmark = [pytest.mark.browser, pytest.mark.server]

CRASH = "document.body.innerText.match(/This app has encountered an error|IndexError|Traceback/)"


def text(page) -> str:
    return page.locator("body").inner_text()


def follower(browser, url: str, code: str, width: int = 1280):
    """A student's tab opened from the class link, once it follows."""
    page = browser.new_context(viewport={"width": width, "height": 1200}).new_page()
    page.goto(f"{url}/exercises?class={code}", wait_until="domcontentloaded")
    wait_for(page, "document.body.innerText.includes('Following class') && " + APP_IDLE, "following", PAGE_BUDGET)
    return page


def test_signing_in_and_opening_a_class_on_a_lesson_stop_keeps_the_sentence(class_server):
    """First in the module: the server is fresh, so the page's first run waits for the models while
    the teacher's clicks come (a click during a page's first run lost the sentence box's value)."""
    url, _, browser = class_server
    sentence = "The European Parliament adopted the new economic policy."
    page = browser.new_context(viewport={"width": 1400, "height": 1400}).new_page()
    page.goto(f"{url}/lesson?stop=4&text={quote(sentence)}", wait_until="domcontentloaded")
    open_a_class(page, KEY)  # at once: the page's first run may still be drawing
    wait_for(page, APP_IDLE + " && /Stop 4 of|The text is empty/.test(document.body.innerText)", "the stop drawn",
             PAGE_BUDGET)
    page.wait_for_timeout(1000)
    wait_for(page, APP_IDLE, "the app idle", PAGE_BUDGET)
    assert "The text is empty" not in text(page), text(page)[:1500]
    assert page.evaluate("document.querySelector('textarea[aria-label=\"English sentence\"]').value") == sentence
    page.context.close()


def roster_names(page) -> list[str]:
    """The nicknames of the Students list, as its rows show them."""
    return page.evaluate("[...document.querySelectorAll('[class*=\"st-key-class_roster_row_\"] strong')]"
                         ".map(e => e.innerText.trim())")


def remove(page, name: str) -> None:
    page.get_by_role("button", name=f"Remove {name}").click()
    wait_for(page, f"!document.body.innerText.includes('Remove {name}') && " + APP_IDLE, f"{name} removed", PAGE_BUDGET)


def test_removing_the_last_and_the_first_student_is_safe_and_undone(class_server):
    url, store, browser = class_server
    teacher = browser.new_context(viewport={"width": 1400, "height": 1400}).new_page()
    teacher.goto(f"{url}/exercises?ex=which&seed=3", wait_until="domcontentloaded")
    code = open_a_class(teacher, KEY)
    first = store.join(code, new_session_id(), "10.0.0.1").nickname
    second = store.join(code, new_session_id(), "10.0.0.2").nickname
    student = follower(browser, url, code)
    last = wait_for(student, "(document.body.innerText.match(/Following class [A-Z2-9]{6} as ([^:]+):/) || [])[1]",
                    "the student's nickname", PAGE_BUDGET).strip()
    teacher.get_by_role("button", name="Send this page to the class").click()  # a rerun: the roster read again
    wait_for(teacher, f"/3 joined · /.test(document.body.innerText) && {APP_IDLE}", "three students", PAGE_BUDGET)
    teacher.get_by_role("button", name="Students").click()
    wait_for(teacher, f"document.body.innerText.includes('Remove {last}')", "the roster's rows", PAGE_BUDGET)
    assert roster_names(teacher) == [first, second, last]
    remove(teacher, last)  # the last row
    assert not teacher.evaluate(CRASH), text(teacher)[-800:]
    assert [m.nickname for m in store.roster_of(KEY, code)] == [first, second]
    # the removed student is told at once, and follows no more
    wait_for(student, "document.body.innerText.includes('removed you from class')", "the removed student told", 60)
    store.send(KEY, code, "exercises", {"ex": "step", "seed": "4"})
    student.wait_for_timeout(4000)
    assert "ex=step" not in student.url
    remove(teacher, first)  # the first row: nobody else goes with it
    assert not teacher.evaluate(CRASH), text(teacher)[-800:]
    assert [m.nickname for m in store.roster_of(KEY, code)] == [second]
    assert f"Remove {second}" in text(teacher) and "selected" not in text(teacher)
    teacher.get_by_role("button", name=f"Undo: put {first} back").click()
    wait_for(teacher, f"document.body.innerText.includes('Remove {first}') && {APP_IDLE}", "undone", PAGE_BUDGET)
    assert sorted(m.nickname for m in store.roster_of(KEY, code)) == sorted([first, second])
    teacher.context.close()
    student.context.close()


def test_the_projector_shows_no_solution_before_reveal_and_a_non_answerer_is_told(class_server):
    url, _, browser = class_server
    teacher = browser.new_context(viewport={"width": 1920, "height": 1400}).new_page()
    teacher.goto(f"{url}/exercises?ex=align&seed=0", wait_until="domcontentloaded")
    code = open_a_class(teacher, KEY)
    wait_for(teacher, "document.body.innerText.includes('the answers, live') && " + APP_IDLE, "the live view",
             PAGE_BUDGET)
    student = follower(browser, url, code)
    teacher.wait_for_timeout(2500)  # the live summary's next refresh
    shown = text(teacher)
    for spoiler in ("Your AER against the gold", "Where the attention differs", "Your links over"):
        assert spoiler not in shown, spoiler
    assert not teacher.evaluate("[...document.querySelectorAll('.js-plotly-plot')].some(p => p.data && "
                                "p.data.some(t => t.type === 'heatmap'))")  # no gold, no model α
    teacher.get_by_role("button", name="Reveal the answer to the class").click()
    wait_for(teacher, "document.body.innerText.includes('Revealed to the class') && " + APP_IDLE, "revealed",
             PAGE_BUDGET)
    wait_for(student, "document.body.innerText.includes('teacher revealed') && " + APP_IDLE, "the reveal", 60)
    said = wait_for(student, "document.body.innerText.match(/you did not answer/i) && document.body.innerText",
                    "you did not answer", 60)
    assert "Your AER against the gold" not in said
    assert "Your AER against the gold" not in text(teacher)
    teacher.screenshot(path=OUTPUT / "projector-revealed-1920.png", full_page=True)
    teacher.context.close()
    student.context.close()
