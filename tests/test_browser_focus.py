"""Focus a keyboard user can see and follow (WCAG 2.2 AA; ``ui/focus.py``), in real browsers (Debian
Chromium driven by Playwright, a real server):

- every control the Tab key reaches, on a student's Exercises page and on the teacher's with a
  class open, draws a focus indicator at least 2 px wide whose contrast against what lies next to
  it, computed from the drawn page's styles by WCAG's formula, is at least 3:1 (1.4.11), and is not
  hidden under the page's pinned header (2.4.11); the same in a browser that prefers a dark scheme;
- *I am the teacher* opened from the keyboard puts the focus in its key box, Escape closes it and
  the focus is back on the button; the key box takes a paste and a password manager's fill (3.3.8).
"""
from __future__ import annotations

import json
import time

import pytest

from conftest import BROWSER_CLASS_KEY as KEY
from helpers.browser import APP_IDLE, open_a_class, PAGE_BUDGET, wait_for

pytestmark = [pytest.mark.browser, pytest.mark.server]

# the focused control's indicator: [what, ring width, contrast against its outside, obscured?]
INDICATOR = """(() => {
  const e = document.activeElement;
  if (!e || e === document.body) return null;
  const rgb = s => (s.match(/[\\d.]+/g) || []).map(Number);
  const lin = c => { c /= 255; return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
  const lum = ([r, g, b]) => 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
  const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
  const over = (top, under) => { const a = top.length > 3 ? top[3] : 1;  // a colour with alpha, drawn over another
    return [0, 1, 2].map(i => a * top[i] + (1 - a) * under[i]); };
  const behind = el => { for (let x = el; x; x = x.parentElement) { const c = rgb(getComputedStyle(x).backgroundColor);
    if (c.length === 3 || c[3] > 0.99) return c.slice(0, 3); } return [255, 255, 255]; };
  // a checkbox's, radio's or switch's own input is clipped out of sight: its label shows the focus
  const hidden = e.matches('input[type=radio], input[type=checkbox]') || e.getBoundingClientRect().width < 4;
  const start = hidden ? (e.closest('label') || e) : e;
  const hosts = []; for (let x = start; x && hosts.length < 4; x = x.parentElement) hosts.push(x);
  const host = hosts.find(x => { const s = getComputedStyle(x); return s.outlineStyle !== 'none'
    && parseFloat(s.outlineWidth) >= 1; }) || hosts.find(x => getComputedStyle(x).boxShadow !== 'none');
  const what = (e.getAttribute('aria-label') || e.innerText || e.tagName).trim().slice(0, 40);
  if (!host) return [what, 0, 0, false];
  const s = getComputedStyle(host), page = behind(host.parentElement);
  const shadow = s.boxShadow !== 'none' ? rgb(s.boxShadow) : null;  // "rgb(…) 0px 0px 0px 6px": colour first
  let ring, width, outside;
  if (s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) >= 1) {
    ring = over(rgb(s.outlineColor), page); width = parseFloat(s.outlineWidth);
    const band = shadow && parseFloat(s.boxShadow.split(' ').slice(-1)[0]) > width + parseFloat(s.outlineOffset)
      ? over(shadow.slice(0, 4), page) : null;
    outside = band || page;
  } else {
    ring = over(shadow.slice(0, 4), page); width = parseFloat(s.boxShadow.split(' ').slice(-1)[0]); outside = page;
  }
  const r = host.getBoundingClientRect();
  const points = [[0.5, 0.5], [0.1, 0.1], [0.9, 0.1], [0.1, 0.9], [0.9, 0.9]];
  const seen = points.some(([fx, fy]) => { const hit = document.elementFromPoint(r.left + fx * r.width, r.top + fy * r.height);
    return hit && (host.contains(hit) || hit.contains(host)); });
  return [what, width, Math.round(100 * ratio(ring, outside)) / 100, !seen];
})()"""


def walk(page, presses: int = 150) -> list:
    """Tab through the page from its top: each focused control's indicator, once each. All the
    presses are made, not one round: just after a class opens, the teacher's popover can hold
    the focus for a few presses before the page lets it go. One round trip a press: the
    indicator and the control's markup read together."""
    page.evaluate("document.activeElement && document.activeElement.blur()")
    found, seen = [], set()
    for _ in range(presses):
        page.keyboard.press("Tab")
        got, key = page.evaluate(f"(i => [i, i && document.activeElement.outerHTML.slice(0, 200)])({INDICATOR})")
        if not got or key in seen:
            continue
        seen.add(key)
        found.append(got)
    return found


def weak(indicators: list) -> list:
    return [i for i in indicators if i[1] < 2 or i[2] < 3 or i[3]]


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_focus_indicator_has_3_to_1_and_is_not_hidden(class_server, scheme):
    url, _, browser = class_server
    teacher = browser.new_context(viewport={"width": 1400, "height": 1000}, color_scheme=scheme).new_page()
    teacher.goto(f"{url}/exercises?ex=which&seed=3", wait_until="domcontentloaded")
    code = open_a_class(teacher, KEY)
    wait_for(teacher, f"document.body.innerText.includes('the answers, live') && {APP_IDLE}", "the teacher's page",
             PAGE_BUDGET)
    student = browser.new_context(viewport={"width": 1400, "height": 1000}, color_scheme=scheme).new_page()
    student.goto(f"{url}/exercises?ex=align&seed=0&class={code}", wait_until="domcontentloaded")
    wait_for(student, APP_IDLE + " && document.body.innerText.includes('Following class')", "the student's page",
             PAGE_BUDGET)
    for who, page in (("teacher", teacher), ("student", student)):
        indicators = walk(page)
        assert len(indicators) > 25, (who, indicators)  # the walk went through the page
        assert not weak(indicators), json.dumps({who: weak(indicators)})[:3000]
        page.context.close()


def test_the_teacher_popover_takes_the_focus_and_gives_it_back(class_server):
    url, _, browser = class_server
    page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    page.goto(f"{url}/exercises?ex=which&seed=1", wait_until="domcontentloaded")
    wait_for(page, APP_IDLE + " && document.body.innerText.includes('Exercises')", "the page", PAGE_BUDGET)
    opener = page.get_by_role("button", name="I am the teacher")
    if not opener.is_visible():
        page.get_by_text("Class", exact=True).first.click()  # the panel opens with a rerun of the page
    box = page.locator('input[aria-label="Teacher key"]')
    in_box = "document.activeElement.getAttribute('aria-label') === 'Teacher key'"
    deadline = time.time() + PAGE_BUDGET
    # Enter on the button opens the popover with the focus in its key box; a run still drawing the
    # panel may draw the popover again (closed, or open without the focus): then close it and press again
    while not (box.is_visible() and page.evaluate(in_box)):
        assert time.time() < deadline, "the popover never opened with the focus in its key box"
        if box.is_visible():
            page.keyboard.press("Escape")
        wait_for(page, APP_IDLE, "the page idle", PAGE_BUDGET)
        opener.focus()
        page.keyboard.press("Enter")
        try:
            wait_for(page, in_box, "the focus in the key box", 10)
        except TimeoutError:
            pass
    assert box.get_attribute("autocomplete") == "current-password"  # a password manager fills it (3.3.8)
    pasted = page.evaluate("""(() => { const d = new DataTransfer(); d.setData('text/plain', 'x');
      return document.activeElement.dispatchEvent(new ClipboardEvent('paste', {clipboardData: d, bubbles: true,
        cancelable: true})); })()""")
    assert pasted  # nothing cancels a paste
    page.keyboard.press("Escape")
    wait_for(page, "!document.querySelector('[data-testid=\"stPopoverBody\"]') && "
                   "document.activeElement.innerText.includes('I am the teacher')", "the focus back on its button", 30)
    page.keyboard.press("Enter")  # and again, the key typed and signed in by keys alone
    wait_for(page, "document.activeElement.getAttribute('aria-label') === 'Teacher key'", "the focus in again", 30)
    page.keyboard.type(KEY)
    page.keyboard.press("Enter")
    for _ in range(5):  # the box's show-password button, then Sign in: still inside the popover
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.innerText.trim()").endswith("Sign in"):
            break
    assert page.evaluate("!!document.activeElement.closest('[data-testid=\"stPopoverBody\"]')")
    page.keyboard.press("Enter")
    wait_for(page, "document.body.innerText.includes('Open a class')", "signed in by keys alone", PAGE_BUDGET)
    page.context.close()


def test_no_tooltip_covers_the_projected_class_link_after_a_send(class_server):
    url, _, browser = class_server
    page = browser.new_context(viewport={"width": 1920, "height": 1080}).new_page()
    page.goto(f"{url}/exercises?ex=which&seed=3", wait_until="domcontentloaded")
    open_a_class(page, KEY)
    send = page.get_by_role("button", name="Send this page to the class")
    send.click()  # the pointer stays on the button, the focus too, as a teacher's click leaves them
    wait_for(page, f"document.body.innerText.includes('Sent: every student following') && {APP_IDLE}", "sent",
             PAGE_BUDGET)
    send.hover()
    page.wait_for_timeout(1500)  # a tooltip shows after a hover's delay: give it that time, then look
    covered = page.evaluate("""(() => {
      const link = [...document.querySelectorAll('[data-testid="stCode"]')].find(c => c.innerText.includes('?class='));
      const r = link.getBoundingClientRect();
      return [...document.querySelectorAll('[role=tooltip], [data-testid="stTooltipContent"]')]
        .filter(t => t.checkVisibility()).map(t => t.getBoundingClientRect())
        .filter(t => t.left < r.right && t.right > r.left && t.top < r.bottom && t.bottom > r.top).length; })()""")
    assert covered == 0
    page.context.close()
