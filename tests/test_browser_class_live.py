"""The teacher's page is live and calm, in real browsers (Debian Chromium driven by Playwright, a real
server; ``ui/class_live.py``, ``server/class_live.py``): a student joining while the roster is open
appears in it without a reload and can be removed, and a rerun of it leaves the keyboard on the
student it was on; a waiting student appears in the waiting list
without a reload and is let in; *Pause live updates* stops every live view (no change in the page
for 10 s while students answer), says so to a screen reader, and *resume* brings the counts up to
date; while nothing changes, nothing reruns. A student removed while on a 390 px phone reads it in
the page's main area, the sidebar closed. Each waits on what the page draws."""
from __future__ import annotations

import time

import pytest

from conftest import BROWSER_CLASS_KEY as KEY
from helpers.browser import APP_IDLE, open_a_class, PAGE_BUDGET, wait_for, wait_until
from server.answers import answer_record
from server.class_store import new_session_id

pytestmark = [pytest.mark.browser, pytest.mark.server]

LIVE = "window.attnLive && document.getElementById('attn-live')"  # the live views' listener is on the page
LOOKS = "window.attnLiveLooks || 0"  # rounds of live-view reruns the page's listener asked for


def text(page) -> str:
    return page.locator("body").inner_text()


def teacher_page(browser, url: str, width: int = 1400):
    page = browser.new_context(viewport={"width": width, "height": 1400}).new_page()
    page.goto(f"{url}/exercises?ex=which&seed=3", wait_until="domcontentloaded")
    code = open_a_class(page, KEY)
    wait_for(page, f"{LIVE} && document.body.innerText.includes('the answers, live') && {APP_IDLE}",
             "the teacher's live page", PAGE_BUDGET)
    return page, code


def nickname_of(student) -> str:
    return wait_for(student, "(document.body.innerText.match(/(?:as|wait as) \\*{0,2}([A-Z][a-z]+ [A-Z][a-z]+)/)"
                             " || [])[1]", "the student's nickname", PAGE_BUDGET).strip()


def test_a_student_joining_appears_in_the_open_roster_without_a_reload_and_is_removed(class_server):
    url, store, browser = class_server
    teacher, code = teacher_page(browser, url)
    teacher.get_by_role("button", name="Students").click()
    wait_for(teacher, "document.body.innerText.includes('Nobody has joined yet')", "the empty roster", PAGE_BUDGET)
    loaded = teacher.evaluate("performance.timeOrigin")
    # nothing changes: nothing reruns (the listener waits on the server, no timer)
    looks = teacher.evaluate(LOOKS)
    teacher.wait_for_timeout(4000)
    assert teacher.evaluate(LOOKS) == looks
    student = browser.new_context(viewport={"width": 1280, "height": 1000}).new_page()
    student.goto(f"{url}/exercises?class={code}", wait_until="domcontentloaded")
    wait_for(student, "document.body.innerText.includes('Following class') && " + APP_IDLE, "following", PAGE_BUDGET)
    name = nickname_of(student)
    # the roster, still open, shows the newcomer: no reload, no click of the teacher's
    wait_for(teacher, f"document.body.innerText.includes('Remove {name}') && "
                      "document.body.innerText.includes('1 on the roster')", "the newcomer in the roster", PAGE_BUDGET)
    # and the page's own live view, a fragment of the main area, beside the sidebar's
    wait_for(teacher, "document.querySelector('[data-testid=\"stMain\"]').innerText.includes('1 joined · 0 answered')",
             "the page's live view", PAGE_BUDGET)
    teacher.get_by_role("button", name=f"Remove {name}").click()
    wait_for(teacher, f"!document.body.innerText.includes('Remove {name}') && {APP_IDLE}", f"{name} removed", PAGE_BUDGET)
    assert [m.nickname for m in store.roster_of(KEY, code)] == []
    wait_for(student, "document.body.innerText.includes('removed you from class')", "the removed student told", PAGE_BUDGET)
    assert teacher.evaluate("performance.timeOrigin") == loaded  # never reloaded
    teacher.context.close()
    student.context.close()


def test_a_live_rerun_of_the_roster_leaves_the_keyboard_on_the_student_it_was_on(class_server):
    """A student joining reruns the open roster; a teacher whose keyboard is on one student's
    *Remove* keeps it there, never on another student's, so Enter removes the student it named."""
    url, store, browser = class_server
    teacher, code = teacher_page(browser, url)
    first, second = (store.join(code, new_session_id()).nickname for _ in range(2))
    clicked = teacher.evaluate("performance.now()")
    teacher.get_by_role("button", name="Students").click()
    wait_for(teacher, f"document.body.innerText.includes('Remove {second}') && {APP_IDLE}", "the roster", PAGE_BUDGET)
    # the popover puts the keyboard on its first button as it opens, or not at all past its script's
    # 5 s (ui/focus.py: a rerun that replaced the button clicked): then the teacher moves on
    wait_for(teacher, "document.activeElement?.closest('[data-testid=\"stPopoverBody\"]') || "
                      f"performance.now() - {clicked} > 5500", "the popover's own move of the focus", PAGE_BUDGET)
    teacher.get_by_role("button", name=f"Remove {second}").focus()
    on = "(n => document.activeElement?.tagName === 'BUTTON' && document.activeElement.innerText.endsWith('Remove ' + n))"
    assert teacher.evaluate(on, second)
    looks = teacher.evaluate(LOOKS)
    third = store.join(code, new_session_id()).nickname
    wait_for(teacher, f"document.body.innerText.includes('Remove {third}') && {APP_IDLE}", "the joiner listed", PAGE_BUDGET)
    assert teacher.evaluate(LOOKS) > looks  # the roster reran
    assert teacher.evaluate(on, second), teacher.evaluate("document.activeElement?.innerText")
    teacher.keyboard.press("Enter")
    wait_for(teacher, f"!document.body.innerText.includes('Remove {second}') && {APP_IDLE}", f"{second} removed",
             PAGE_BUDGET)
    assert sorted(m.nickname for m in store.roster_of(KEY, code)) == sorted([first, third])
    teacher.context.close()


def test_a_waiting_student_appears_in_the_waiting_list_without_a_reload_and_is_let_in(class_server):
    url, store, browser = class_server
    teacher, code = teacher_page(browser, url)
    store.set_admission(KEY, code, approve=True)
    loaded = teacher.evaluate("performance.timeOrigin")
    teacher.get_by_role("button", name="Joining").click()  # open while the student asks: it stays open
    wait_for(teacher, "document.body.innerText.includes('nobody waits')", "nobody waiting yet", PAGE_BUDGET)
    student = browser.new_context(viewport={"width": 1280, "height": 1000}).new_page()
    student.goto(f"{url}/exercises?class={code}", wait_until="domcontentloaded")
    name = wait_for(student, "(document.body.innerText.match(/you wait as ([A-Z][a-z]+ [A-Z][a-z]+)/) || [])[1]",
                    "the student waiting", PAGE_BUDGET)
    wait_for(teacher, f"document.body.innerText.includes('1 waiting to join') && "
                      f"document.body.innerText.includes('Let {name} in')", "one waiting, on the teacher's page", PAGE_BUDGET)
    assert teacher.evaluate("performance.timeOrigin") == loaded
    teacher.get_by_role("button", name=f"Let {name} in").click()
    wait_for(student, "document.body.innerText.includes('Following class') && " + APP_IDLE, "the student let in",
             PAGE_BUDGET)
    wait_for(teacher, "/1 joined · /.test(document.body.innerText)", "the roster with the student", PAGE_BUDGET)
    teacher.context.close()
    student.context.close()


def counts(page) -> str:
    """The sidebar's joined / answered / counted line, as drawn."""
    return page.evaluate("(document.querySelector('[data-testid=\"stSidebar\"]').innerText"
                         ".match(/\\d+ joined · \\d+ answered · \\d+ answers counted/) || [''])[0]")


WATCH_CHANGES = """() => { window.attnChanges = [];
  const seen = m => window.attnChanges.push((m.target.className || m.target.nodeName || '') + '');
  const o = new MutationObserver(ms => ms.forEach(seen));
  for (const where of document.querySelectorAll('[data-testid="stSidebar"], [data-testid="stMain"]'))
    o.observe(where, {childList: true, subtree: true, characterData: true, attributes: true});
  window.attnStopWatching = () => o.disconnect(); }"""


def test_pause_stops_every_live_view_while_students_answer_and_resume_catches_up(class_server):
    url, store, browser = class_server
    teacher, code = teacher_page(browser, url)
    ids = [new_session_id() for _ in range(3)]
    for n, sid in enumerate(ids):
        store.join(code, sid, f"10.0.1.{n}")
    wait_for(teacher, "/3 joined · 0 answered/.test(document.body.innerText)", "three joined, live", PAGE_BUDGET)
    switch = teacher.get_by_role("switch", name="Pause live updates")
    teacher.get_by_text("Pause live updates", exact=True).click()  # its label, as a person clicks it
    wait_for(teacher, f"document.getElementById('attn-live').dataset.paused === '1' && {APP_IDLE}", "paused",
             PAGE_BUDGET)
    said = wait_for(teacher, "(document.querySelector('[role=status]#attn-live-said') || {}).textContent",
                    "the pause said to a screen reader", 10)
    assert said.startswith("Live updates paused")
    assert switch.is_checked()
    teacher.wait_for_timeout(1500)  # the pause's own rerun drawn to its end
    wait_for(teacher, APP_IDLE, "the page idle", PAGE_BUDGET)
    before = counts(teacher)
    assert before.startswith("3 joined · 0 answered"), before
    teacher.evaluate(WATCH_CHANGES)
    looks = teacher.evaluate(LOOKS)
    started = time.time()
    for n, sid in enumerate(ids):  # the students answer during the 10 s watched
        store.submit(code, "which:3", sid, answer_record("Bahdanau (additive)", n != 1, []), n != 1)
        teacher.wait_for_timeout(2500)
    teacher.wait_for_timeout(max(0, 10_000 - 1000 * (time.time() - started)))
    changes = teacher.evaluate("window.attnStopWatching(), window.attnChanges")
    assert changes == [], changes[:20]
    assert teacher.evaluate(LOOKS) == looks and counts(teacher) == before
    # kept across reruns: another page, then back, still paused
    teacher.get_by_role("link", name="Lesson").first.click()
    wait_for(teacher, f"location.pathname.endsWith('/lesson') && {APP_IDLE} && {LIVE}", "the lesson page",
             PAGE_BUDGET)
    wait_for(teacher, "document.getElementById('attn-live').dataset.paused === '1'", "still paused", 30)
    assert teacher.get_by_role("switch", name="Pause live updates").is_checked()
    teacher.get_by_text("Pause live updates", exact=True).click()
    wait_for(teacher, "document.getElementById('attn-live').dataset.paused === '0'", "resumed", PAGE_BUDGET)
    wait_for(teacher, "(document.getElementById('attn-live-said') || {}).textContent === 'Live updates resumed.'",
             "the resume said", 10)
    wait_for(teacher, "/3 joined · 3 answered · 3 answers counted/.test(document.body.innerText)",
             "the counts caught up", PAGE_BUDGET)
    # live again: a fourth student shows by itself
    store.join(code, new_session_id(), "10.0.1.9")
    wait_for(teacher, "/4 joined · 3 answered/.test(document.body.innerText)", "live again", PAGE_BUDGET)
    teacher.context.close()


# the sidebar out of sight: off the screen's left edge, or no width
SIDEBAR_CLOSED = ("(r => r.right <= 1 || r.width < 2)(document.querySelector('[data-testid=\"stSidebar\"]')"
                  ".getBoundingClientRect())")


def test_a_removed_student_on_a_phone_reads_the_notice_without_opening_the_sidebar(class_server):
    url, store, browser = class_server
    teacher, code = teacher_page(browser, url)
    phone = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True).new_page()
    phone.goto(f"{url}/exercises?class={code}", wait_until="domcontentloaded")
    wait_for(phone, f"{APP_IDLE} && document.body.innerText.includes('Exercises')", "the phone's page", PAGE_BUDGET)
    name = wait_until(lambda: [m.nickname for m in store.roster_of(KEY, code)], PAGE_BUDGET, "the phone joined")[0]
    assert phone.evaluate(SIDEBAR_CLOSED)
    store.remove(KEY, code, name)
    notice = ("[...document.querySelectorAll('[data-testid=\"stMain\"] [data-testid=\"stAlert\"]')]"
              ".find(a => a.innerText.includes('removed you from class'))")
    wait_for(phone, notice, "the notice in the page's main area", PAGE_BUDGET)
    box = phone.evaluate(f"(a => {{ const r = a.getBoundingClientRect(); return [r.left, r.right, r.width]; }})({notice})")
    assert box[0] >= 0 and box[1] <= 390 and box[2] > 200, box  # on the screen, whole, as wide as the page
    assert phone.evaluate(SIDEBAR_CLOSED)  # read without opening the sidebar
    teacher.context.close()
    phone.context.close()
