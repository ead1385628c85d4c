"""No check is lost (``ui/lesson_check.py``), in Chromium on a real server:

- a student alone takes the check before, walks to the closing card and reloads it: the card
  still knows the check before (it offers the check after, and does not say the check before was
  not taken); after the check after, a reload still shows their gain;
- a student in a class takes the check before at stop 1 before the teacher opened it: the offer
  and the hand-in say it is practice, not counted; the teacher opens it, the student's screen
  follows to the check, says it was practice and asks it again, and that hand-in is counted.

Each wait is on the page's own text (or the store's rows), never on time."""
from __future__ import annotations

import re
import time

from playwright.sync_api import TimeoutError as PlaywrightTimeout

from conftest import BROWSER_CLASS_KEY as KEY
from helpers.browser import APP_IDLE, PAGE_BUDGET, wait_for, wait_until
from teaching import check as ch

END = 12  # the closing card: after the lesson's 11 stops
TEXT = "document.body.innerText"


def hand_in_blank(page, half: str) -> None:
    """Open ``half``'s form if it is offered, and hand it in blank (every item counts as not known).
    A click that lands while a run (the class's follow, a link's first run) is still drawing the
    page can be drawn over: so *Take the check* is pressed until the form shows, within the budget."""
    start = page.get_by_role("button", name=f"Take the check {half} the lesson")
    form = page.get_by_role("button", name="Hand in")
    deadline = time.time() + PAGE_BUDGET
    while not form.is_visible():
        if time.time() > deadline:
            raise TimeoutError(f"timed out after {PAGE_BUDGET} s waiting for the check {half}'s form")
        if start.is_visible():
            start.click()
        try:
            form.wait_for(state="visible", timeout=10_000)
        except PlaywrightTimeout:
            pass
    wait_for(page, f"{TEXT}.includes('Answer what you can') && " + APP_IDLE, f"the check {half}'s form")
    form.click()
    wait_for(page, f"!{TEXT}.includes('Answer what you can') && " + APP_IDLE, f"the check {half} handed in")


def test_a_solo_check_survives_a_reload_of_the_closing_card(class_server):
    url, _, browser = class_server
    page = browser.new_context(viewport={"width": 1280, "height": 1000}).new_page()
    page.goto(f"{url}/lesson?stop=1", wait_until="domcontentloaded")
    wait_for(page, f"{TEXT}.includes('Stop 1 of 11') && " + APP_IDLE, "the lesson")
    hand_in_blank(page, "before")
    wait_for(page, "document.cookie.includes('attn_lesson_check=')", "the check kept in the browser's cookie")
    page.goto(f"{url}/lesson?stop={END}", wait_until="domcontentloaded")
    after_offered = f"{TEXT}.includes('The end: what you learned') && {TEXT}.includes('Take the check after the lesson')"
    wait_for(page, after_offered + " && " + APP_IDLE, "the closing card offering the check after")
    page.reload(wait_until="domcontentloaded")
    wait_for(page, after_offered + " && " + APP_IDLE, "the closing card, reloaded")
    assert "check before the lesson was not taken" not in page.inner_text("body")
    hand_in_blank(page, "after")
    gain = f"{TEXT}.includes('Your check') && {TEXT}.includes('Right in the check after the lesson')"
    wait_for(page, gain + " && " + APP_IDLE, "the student's gain")
    wait_for(page, "/attn_lesson_check=\\d+\\.0+\\.0+/.test(document.cookie)", "both halves in the cookie")
    page.reload(wait_until="domcontentloaded")
    wait_for(page, gain + " && " + APP_IDLE, "the gain, reloaded")
    body = page.inner_text("body")
    assert re.search(r"\b0 of [5-8]\b", body) and "Take the check after the lesson" not in body
    page.context.close()


def test_a_check_practised_before_the_teacher_opened_it_is_asked_again_and_counted(class_server):
    url, store, browser = class_server
    code = store.open_class(KEY).code
    page = browser.new_context(viewport={"width": 1280, "height": 1000}).new_page()
    page.goto(f"{url}/lesson?stop=1&class={code}", wait_until="domcontentloaded")
    wait_for(page, f"{TEXT}.includes('Practice, not counted yet: your teacher has not opened this check') && "
             + APP_IDLE, "the offer saying the check is practice")
    hand_in_blank(page, "before")
    wait_for(page, f"{TEXT}.includes('Handed in as practice, not counted') && " + APP_IDLE, "told it was practice")
    wait_for(page, "document.cookie.includes('attn_lesson_check=')", "the practice kept in the browser's cookie")
    assert not [a for a in store.summary(KEY, code) if a.exercise.startswith("check:")]
    for concept, kind in ch.SLOTS:  # the teacher opens the check before, as Open the check before does
        store.add_exercise(KEY, code, ch.exercise_id("before", f"{concept}-{kind}"))
    store.send(KEY, code, "lesson", {"check": "before", "stop": 1})
    wait_for(page, f"{TEXT}.includes('You took this check as practice before your teacher opened it') && "
             f"{TEXT}.includes('Answer what you can') && " + APP_IDLE, "the check asked again, and why")
    page.get_by_role("button", name="Hand in").click()
    def stored():
        answers = [a for a in store.summary(KEY, code) if a.exercise.startswith("check:before:")]
        return answers if len(answers) >= len(ch.SLOTS) else None
    counted = wait_until(stored, PAGE_BUDGET, "the check before counted in the class")
    wait_for(page, f"{TEXT}.includes('In the class: counted') && " + APP_IDLE, "told it was counted")
    assert len({a.exercise for a in counted}) == len(ch.SLOTS) and all(a.counted for a in counted)
    assert len({a.session for a in counted}) == 1
    page.context.close()
