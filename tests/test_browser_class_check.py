"""The teacher's gain view of the class's check (``ui/class_check.py``) in Chromium at 1400 px: the
teacher signs in on the Lesson page, opens a class and, at the top of the page, the check before;
three students (and a fourth who takes the check before only) answer through the class store, the
same store and exercise ids the page's Hand in writes; the teacher opens the check after, they
answer again, and the page shows, without a click (the gain view and the hand-ins refresh by
themselves), the halves open (their buttons disabled), the hand-ins, per concept and kind the
class's mean before and after and ⟨g⟩ computed here from the set answers, the students apart, the
spread with its text alternative, the most missed item and the item analysis.
Screenshot: test-output/browser/class-check-gain-1400.png; docs/lesson.md shows a copy, renewed by hand:
    python -m pytest tests/test_browser_class_check.py && cp test-output/browser/class-check-gain-1400.png docs/"""
from __future__ import annotations

import re
import time

from conftest import BROWSER_CLASS_KEY as KEY
from helpers.browser import APP_IDLE, describe_page, open_a_class, OUTPUT, PAGE_BUDGET, wait_for
from teaching import check as ch
from test_accessibility_browser import axe, violations  # noqa: F401  (the fixture)

ALL = [f"{c}-{k}" for c, k in ch.SLOTS]
PLANS = {  # right items before, after (None: that half not taken)
    "a1b2c3d4e5f60001": (set(), set(ALL)),
    "a1b2c3d4e5f60002": ({"alignment-recall", "weights-recall"}, set(ALL) - {"length-transfer"}),
    "a1b2c3d4e5f60003": (set(ALL) - {"context-transfer"}, set(ALL) - {"context-transfer", "length-transfer"}),
    "a1b2c3d4e5f60004": (set(), None),
}
SHOT = OUTPUT / "class-check-gain-1400.png"  # a run never rewrites the tracked copy in docs/


def share(right: set[str], concept: str) -> float:
    slots = [s for s in ALL if s.startswith(concept + "-")]
    return sum(s in right for s in slots) / len(slots)


def answer(store, code: str, half: str) -> None:
    for session, plan in PLANS.items():
        right = plan[ch.HALVES.index(half)]
        if right is None:
            continue
        store.join(code, session)
        for slug in ALL:
            store.submit(code, ch.exercise_id(half, slug), session, {"label": "given", "mistakes": []}, slug in right)


def open_half(page, half: str) -> None:
    """*Open the check …* pressed, then waited for until the page says that half is open (its button
    disabled). Pressed again only when the page is idle, the half still closed and its button still
    enabled 20 s on: a press made while the teacher's live views redraw the hand-ins can be lost,
    as a press landing during a redraw can be (tests/test_browser_class_view.py), and the half then
    stays closed; a teacher would press again, and a second press only re-sends the screens. A
    half that never opens fails with what the page shows."""
    button = page.locator(".st-key-class_check_controls").get_by_role("button", name=f"Open the check {half}")
    opened = (f"(t => / the check {half}[ ;]/.test(t) && t.includes('Open now:'))"
              "(document.querySelector('.st-key-class_check_controls')?.innerText || '') && " + APP_IDLE)
    deadline = time.monotonic() + PAGE_BUDGET
    button.click()
    while True:
        try:
            wait_for(page, opened, f"the check {half} opened", min(20, max(1, deadline - time.monotonic())))
            break
        except TimeoutError as e:
            if time.monotonic() >= deadline:
                raise TimeoutError(f"{e}\n{describe_page(page)}") from None
            if page.evaluate(APP_IDLE) and button.is_enabled():
                button.click()
    assert button.is_disabled()


def test_the_teachers_gain_view_at_1400_px(class_server, axe):  # noqa: F811
    url, store, browser = class_server
    page = browser.new_context(viewport={"width": 1400, "height": 1100}).new_page()
    page.goto(f"{url}/lesson?stop=1", wait_until="domcontentloaded")
    wait_for(page, APP_IDLE + " && document.body.innerText.includes('Stop 1 of 11')", "the lesson", PAGE_BUDGET)
    code = open_a_class(page, KEY)
    wait_for(page, "document.body.innerText.includes('the check before and after') && " + APP_IDLE,
             "the teacher's check panel", PAGE_BUDGET)
    open_half(page, "before")
    answer(store, code, "before")
    open_half(page, "after")
    answer(store, code, "after")  # no click after this: the page reads the answers again by itself
    controls = page.locator(".st-key-class_check_controls")
    wait_for(page, "(t => t.includes('Open now: the check before and the check after') && "
                   "t.includes('The check: 4 handed in before · 3 after'))"
                   "(document.querySelector('.st-key-class_check_controls')?.innerText || '')",
             "the halves open and the hand-ins, live", PAGE_BUDGET)
    assert all(controls.get_by_role("button", name=f"Open the check {h}").is_disabled() for h in ch.HALVES)
    view = page.locator(".st-key-class_check_view")
    wait_for(page, "(t => t.includes('Students who took both halves') && t.includes('Most missed'))"
                   "(document.querySelector('.st-key-class_check_view')?.innerText || '') && " + APP_IDLE,
             "the gain view with every answer", PAGE_BUDGET)
    wait_for(page, "document.querySelectorAll('.st-key-class_check_view [data-testid=\"stTable\"]').length === 3 && "
             + APP_IDLE,
             "both gain tables and the item analysis drawn", PAGE_BUDGET)
    text = view.inner_text()
    assert re.search(r"Students who took both halves\s+3", text), text
    both = [p for p in PLANS.values() if p[1] is not None]
    # the tables as the page shows them: both drawn (a header and six concepts, a header and two kinds)
    rows = wait_for(page, """(rows => rows.filter(r => r.length === 4).length >= 10 && rows)(
        [...document.querySelectorAll('.st-key-class_check_view [data-testid="stTable"] tr')].map(
            tr => [...tr.querySelectorAll('th, td')].map(c => c.innerText.trim())))""", "the gain tables", PAGE_BUDGET)
    for concept in ch.CONCEPTS:
        pre = sum(share(p[0], concept.slug) for p in both) / len(both)
        post = sum(share(p[1], concept.slug) for p in both) / len(both)
        gain = "—" if pre == 1 else f"{(post - pre) / (1 - pre):+.2f}"
        row = next(r for r in rows if r and r[0] == concept.name)
        assert row[1:] == [f"{pre:.0%}", f"{post:.0%}", gain], (concept.slug, row)
    nicknames = store.nicknames(KEY, code)
    assert f"Took only the check before (1), not in the gain: {nicknames['a1b2c3d4e5f60004']}." in text
    assert "2 of 3 wrong" in text and "Why RNNenc falls behind on long sentences" in text  # most missed after
    assert "Item by item" in text and "too few to say" in text  # 4 and 3 students: fewer than MIN_STUDENTS
    assert all(nicknames[s] in text for s in list(PLANS)[:3])  # the spread in words names each student
    alt = page.locator(".st-key-class_check_spread [data-testid='stPlotlyChart']")
    assert alt.count() == 1 and view.get_by_role("button", name=re.compile("Download the check's answers")).count()
    page.set_viewport_size({"width": 1400, "height": 2400})  # the whole view painted at once, 1400 px wide
    page.evaluate("document.querySelector('.st-key-class_check_view').scrollIntoView({block: 'center'})")
    wait_for(page, APP_IDLE, "the page settled at its new height", PAGE_BUDGET)
    SHOT.parent.mkdir(parents=True, exist_ok=True)
    view.screenshot(path=str(SHOT))
    assert violations(axe, page, "class-check-gain-1400") == []  # WCAG 2.1 AA, as every page
    page.context.close()
    # a student's check on a phone (following the class, the check after its teacher sent): axe on the form too
    phone = browser.new_context(viewport={"width": 390, "height": 844}).new_page()
    phone.goto(f"{url}/lesson?check=before&stop=1&class={code}", wait_until="domcontentloaded")
    wait_for(phone, APP_IDLE + " && document.body.innerText.includes('Answer what you can')"
                    " && !!document.querySelector('[class*=\"st-key-lesson_prepost_hand_in_\"] button')",
             "a student's check form", PAGE_BUDGET)
    assert violations(axe, phone, "class-check-form-390") == []
    phone.context.close()
