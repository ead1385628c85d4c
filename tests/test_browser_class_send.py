"""A send to the page the students are on, in a real browser (Debian Chromium driven by Playwright,
a real server of its own, fresh: the student's page is the server's first, as in a class whose
students open the link while the server still loads): the sent exercise's selector and number
box show what the page draws, and the student's first click keeps the sent exercise."""
from __future__ import annotations

import pytest

from conftest import BROWSER_CLASS_KEY as KEY
from helpers.browser import APP_IDLE, PAGE_BUDGET, wait_for
from test_browser_class_teacher import follower, text

pytestmark = [pytest.mark.browser, pytest.mark.server]

FAMILY = "Luong global (dot, general or concat)"  # which:3 asks the family (tests/test_browser_class.py)
# the pressed option of the exercise selector, and the number box's value
KIND_SHOWN = ("(b => b && b.innerText.trim())(document.querySelector("
              "'.st-key-ex_kind button[aria-pressed=\"true\"], .st-key-ex_kind button[aria-checked=\"true\"], "
              ".st-key-ex_kind button[kind$=\"Active\"]'))")
SEED_SHOWN = "document.querySelector('.st-key-ex_seed input').value"


def test_a_send_to_the_page_the_students_are_on_survives_their_first_click(class_server):
    url, store, browser = class_server
    code = store.open_class(KEY).code
    page = follower(browser, url, code)  # on Exercises: Predict the alignment, no. 0
    wait_for(page, "location.search.includes('ex=align')", "the class link's exercise in the address", 60)
    store.send(KEY, code, "exercises", {"ex": "which", "seed": "3"})
    wait_for(page, f"location.search.includes('ex=which') && document.body.innerText.includes({FAMILY!r}) && "
                   + APP_IDLE, "the sent exercise drawn", PAGE_BUDGET)
    # the page's widgets say what the page draws: the selector and the number box
    assert wait_for(page, f"({KIND_SHOWN}) === 'Which mechanism drew this?'", "the selector set", 30)
    assert page.evaluate(SEED_SHOWN) == "3"
    page.get_by_text(FAMILY, exact=True).click()  # the student's first click: an answer
    wait_for(page, "document.querySelector('[data-testid=\"stRadio\"] input:checked') && " + APP_IDLE,
             "the choice taken", PAGE_BUDGET)
    page.wait_for_timeout(1500)  # a throw-back would be a rerun after the click: give it time to come
    wait_for(page, APP_IDLE, "the app idle", PAGE_BUDGET)
    assert "ex=which" in page.url and "seed=3" in page.url, page.url
    assert FAMILY in text(page) and page.evaluate(KIND_SHOWN) == "Which mechanism drew this?"
    assert page.evaluate(SEED_SHOWN) == "3"
    page.context.close()
