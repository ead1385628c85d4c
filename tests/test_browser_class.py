"""A class in real browsers (Debian Chromium driven by Playwright, as tests/test_browser.py):
the teacher stays the teacher across a reload; the teacher's cookie of one class does nothing
in another, nor once its class is named differently; a student keeps one anonymous id through a
reload and three pages the teacher sends."""
from __future__ import annotations

import pytest

import re

from conftest import BROWSER_CLASS_KEY as KEY
from helpers.browser import APP_IDLE, open_a_class, OUTPUT, PAGE_BUDGET, wait_for

pytestmark = [pytest.mark.browser, pytest.mark.server]


def is_teacher(page, code: str, timeout: float = 20) -> bool:
    """Whether the page comes to show the teacher's panel for class ``code`` within ``timeout``."""
    wait_for(page, APP_IDLE + " && document.body.innerText.includes('Predict first')", "the exercise page", PAGE_BUDGET)
    try:
        wait_for(page, "document.body.innerText.includes(arg) && document.body.innerText.includes('Close the class')",
                 "the teacher's panel", timeout, arg=f"Class {code} is open.")
        return True
    except TimeoutError:
        return False


def test_the_teacher_survives_a_reload_and_the_cookie_binds_one_class(class_server):
    url, store, browser = class_server
    teacher = browser.new_context(viewport={"width": 1280, "height": 1200})
    page = teacher.new_page()
    page.goto(f"{url}/exercises?ex=which&seed=3", wait_until="domcontentloaded")
    code = open_a_class(page, KEY)
    assert "key=" not in page.url and KEY not in page.url
    for _ in range(40):
        jar = {c["name"]: c for c in teacher.cookies()}
        if "attn_teacher" in jar:
            break
        page.wait_for_timeout(250)
    made = jar["attn_teacher"]
    assert made["httpOnly"] and made["sameSite"] == "Strict" and KEY not in made["value"]
    page.reload(wait_until="domcontentloaded")
    assert is_teacher(page, code), "a reload lost the teacher"
    other = store.open_class(KEY).code
    stranger = browser.new_context(viewport={"width": 1280, "height": 1200})
    stranger.add_cookies([{"name": "attn_teacher", "value": made["value"], "url": url},
                          {"name": "attn_student", "value": "0" * 24 + "." + "0" * 32, "url": url}])
    spy = stranger.new_page()
    spy.goto(f"{url}/exercises?ex=which&seed=3&class={other}", wait_until="domcontentloaded")
    assert not is_teacher(spy, other, timeout=5) and "the answers, live" not in spy.locator("body").inner_text()
    forged = other + made["value"][len(code):]  # the same signature on another class's code
    stranger.add_cookies([{"name": "attn_teacher", "value": forged, "url": url}])
    spy.goto(f"{url}/exercises?ex=which&seed=3&class={other}", wait_until="domcontentloaded")
    assert not is_teacher(spy, other, timeout=5)
    page.get_by_role("button", name="Sign out").click()
    for _ in range(40):
        if "attn_teacher" not in {c["name"] for c in teacher.cookies()}:
            break
        page.wait_for_timeout(250)
    page.reload(wait_until="domcontentloaded")
    wait_for(page, APP_IDLE, "the app to finish running", PAGE_BUDGET)
    page.wait_for_timeout(500)
    assert "Close the class" not in page.locator("body").inner_text()


def test_a_student_is_one_id_through_three_sends_and_a_reload(class_server):
    url, store, browser = class_server
    code = store.open_class(KEY).code
    context = browser.new_context(viewport={"width": 1280, "height": 1200})
    page = context.new_page()
    page.goto(f"{url}/exercises?class={code}", wait_until="domcontentloaded")
    wait_for(page, "document.body.innerText.includes('Following class')", "following the class", PAGE_BUDGET)
    sends = [("exercises", {"ex": "step", "seed": "4"}), ("worked-example", {}), ("exercises", {"ex": "which",
                                                                                                 "seed": "3"})]
    for n, (where, params) in enumerate(sends):
        store.send(KEY, code, where, params)
        wait_for(page, f"location.pathname.endsWith('/{where}') && location.search.includes('sent=1') && "
                       f"document.body.innerText.includes('Following class') && {APP_IDLE}", f"send {n + 1}")
        page.wait_for_timeout(1500)
    answer(page)
    page.reload(wait_until="domcontentloaded")
    answer(page)
    stored = store.summary(KEY, code)
    assert [a.attempt for a in stored] == [1, 2] and len({a.session for a in stored}) == 1


def answer(page) -> None:
    """Pick the Luong global family and check it."""
    family = "Luong global (dot, general or concat)"  # which:3 asks the family
    wait_for(page, APP_IDLE + " && document.body.innerText.includes(arg)", "the exercise's options", PAGE_BUDGET, arg=family)
    page.get_by_text(family, exact=True).click()
    wait_for(page, "document.querySelector('[data-testid=\"stRadio\"] input:checked')", "the choice", PAGE_BUDGET)
    wait_for(page, APP_IDLE, "the app to finish running", PAGE_BUDGET)
    page.wait_for_timeout(500)
    page.get_by_role("button", name="Check my answer").click()
    try:
        wait_for(page, "document.body.innerText.match(/Counted in class|Kept as a retry/)", "the answer counted", PAGE_BUDGET)
    except TimeoutError as e:
        raise TimeoutError(f"{e}: {page.locator('body').inner_text()[-1500:]}") from None


# each row's label ("3. européen") with its position, in the page's order
ROW_LABELS = """[...document.querySelectorAll('[data-testid="stWidgetLabel"]')]
  .map(e => [e.innerText.trim(), e.getBoundingClientRect().top, e.getBoundingClientRect().left])
  .filter(([t]) => /^[0-9]+\\. /.test(t))"""


def test_the_alignment_grid_reads_in_order_on_a_phone(class_server):
    """At 390 px wide every French word's row comes in order, top to bottom, each under the one
    before; a click on a cell marks a link, and the check scores it."""
    from teaching.exercises import CURATED
    url, _, browser = class_server
    pair = CURATED[0]  # The European Parliament adopted … / Le Parlement européen a adopté …
    phone = browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True)
    page = phone.new_page()
    page.goto(f"{url}/exercises?ex=align&seed=2", wait_until="domcontentloaded")  # level 3: CURATED[0]
    rows = wait_for(page, f"(r => r.length === {len(pair.french)} && r)({ROW_LABELS})", "the grid's rows", PAGE_BUDGET)
    assert [t for t, _, _ in rows] == [f"{k + 1}. {w}" for k, w in enumerate(pair.french)]
    tops = [top for _, top, _ in rows]
    assert all(b > a for a, b in zip(tops, tops[1:])), tops
    assert max(left for _, _, left in rows) - min(left for _, _, left in rows) < 5  # one column, not three
    assert page.evaluate("document.documentElement.scrollWidth") <= 390 + 1  # nothing wider than the phone
    second = page.locator('[data-testid="stButtonGroup"]').nth(2)  # 0: the kind of exercise; 1, 2: the rows
    second.get_by_text("Parliament", exact=True).click()  # Parlement → Parliament, a sure gold link
    wait_for(page, APP_IDLE, "the app to finish running", PAGE_BUDGET)
    page.get_by_role("button", name="Check my answer").click()
    text = wait_for(page, "document.body.innerText.includes('Your AER against the gold') && document.body.innerText",
                    "the score", PAGE_BUDGET)
    assert re.search(r"Precision\s*(help)?\s*1\.000", text), text[-800:]
    page.screenshot(path=OUTPUT / "align-390.png", full_page=True)
