"""Following the teacher in real browsers (Debian Chromium driven by Playwright, as
tests/test_browser.py): a teacher signed in in one browser sends three pages; three students
following the class each show every page, settled, within the budget, without a page load (the
page opens inside the browser session: the front end is not loaded again), each opened by the
page's follow listener with one rerun of the sent page; the teacher's *Reveal* of the sent
exercise reaches every student within the same budget. Send → settled per page kind (the worked
example's included) and reveal → drawn are written to test-output/browser/follow-settle.json."""
from __future__ import annotations

import pytest

import json
import os
import time

from conftest import BROWSER_CLASS_KEY as KEY
from helpers.browser import APP_IDLE, open_a_class, OUTPUT, PAGE_BUDGET, wait_for

pytestmark = [pytest.mark.browser, pytest.mark.server]

SENDS = [("exercises", "ex=step&seed=4"), ("worked-example", ""), ("exercises", "ex=which&seed=3")]
SETTLE_S = 2.0  # the target, from the teacher's click to every student's page drawn (a quiet host)
# The test asserts a ceiling, not the target: a timed assertion fails on a busy host of this kind.
# The measured times are written to test-output/ and printed; a send past 5 x the target (the
# load taken into account) is broken, not slow. A full page load is caught by the timeOrigin check.
CEILING = 5
# The sent page's own content, drawn, as a student sees it (not the absence of a running
# indicator, which a follower's rerun may never show): the exercise selector and number box
# as the link sets them and the exercise's own inputs; the worked example's sentence and seed.
KIND_SHOWN = ("(b => b && b.innerText.trim())(document.querySelector('.st-key-ex_kind "
              "button[aria-checked=\"true\"], .st-key-ex_kind button[aria-pressed=\"true\"], "
              ".st-key-ex_kind button[kind$=\"Active\"]'))")
SEED_BOX = "(k => (document.querySelector('.st-key-' + k + ' input') || {}).value)"
CONTENT = [
    f"{KIND_SHOWN} === 'Compute one step by hand' && {SEED_BOX}('ex_seed') === '4' && "
    "!!document.querySelector('input[aria-label=\"e1\"]') && document.body.innerText.includes('Level 2 of 3')",
    f"{SEED_BOX}('we_seed') === '0' && document.body.innerText.includes('Turn off the lights') && "
    "!!document.querySelector('[data-testid=\"stDataFrame\"], [data-testid=\"stDataFrameResizable\"], "
    "[data-testid=\"stExpander\"]')",
    f"{KIND_SHOWN} === 'Which mechanism drew this?' && {SEED_BOX}('ex_seed') === '3' && "
    "document.body.innerText.includes('Luong global (dot, general or concat)') && "
    "[...document.querySelectorAll('.js-plotly-plot')].some(p => p.data && p.data.some(t => t.type === 'heatmap'))",
]
# settled: the sent page's address and title, the follow panel, and the sent page's content drawn
SETTLED = ("location.pathname.endsWith('/' + arg[0]) && location.search.includes(arg[1]) && "
           "document.querySelector('h1').innerText.startsWith(arg[2]) && "
           "document.body.innerText.includes('Following class') && eval(arg[4])")
# in each student's page: the first moment (Date.now()) the page shows send n settled, kept in the page
WATCH = f"""arg => {{ window.attnSettled = window.attnSettled || {{}};
  const n = arg[3]; const check = () => {{ try {{ return {SETTLED}; }} catch (e) {{ return false; }} }};
  const timer = setInterval(() => {{ if (check()) {{ window.attnSettled[n] = Date.now(); clearInterval(timer); }} }}, 25);
}}"""


def sign_in_and_open_class(page, url: str) -> str:
    page.goto(f"{url}/exercises?ex=which&seed=3", wait_until="domcontentloaded")
    return open_a_class(page, KEY)


def test_three_students_follow_three_sends_each_settled_within_the_budget(class_server):
    url, store, browser = class_server
    teacher = browser.new_context(viewport={"width": 1280, "height": 1200}).new_page()
    code = sign_in_and_open_class(teacher, url)
    students = [browser.new_context(viewport={"width": 1280, "height": 1000}).new_page() for _ in range(3)]
    for student in students:
        student.goto(f"{url}/exercises?class={code}", wait_until="domcontentloaded")
    for student in students:
        wait_for(student, "document.body.innerText.includes('Following class') && " + APP_IDLE, "following", PAGE_BUDGET)
    loads = [student.evaluate("performance.timeOrigin")
             for student in students]
    settled, revealed = [], []
    for n, (where, query) in enumerate(SENDS):
        title = "Worked example" if where == "worked-example" else "Exercises"
        teacher.goto(f"{url}/{where}?{query + '&' if query else ''}class={code}", wait_until="domcontentloaded")
        send = teacher.get_by_role("button", name="Send this page to the class")
        send.wait_for(timeout=PAGE_BUDGET * 1000)
        wait_for(teacher, APP_IDLE, "the teacher's page drawn", PAGE_BUDGET)
        for student in students:
            student.evaluate(WATCH, [where, query, title, n, CONTENT[n]])
        sent_at = teacher.evaluate("Date.now()")
        send.click()
        times = []
        for student in students:
            done = wait_for(student, "window.attnSettled && window.attnSettled[arg]", f"send {n + 1} settled", PAGE_BUDGET, arg=n)
            times.append(round((done - sent_at) / 1000, 2))
        settled.append(times)
        if n == 0:  # the exercise sent, nobody answered: Reveal, until every student's page says so
            revealed = reveal_to(teacher, students)
    # the sent pages opened inside each browser session: no student's page was loaded again, and
    # each send was opened by the page's listener itself (one rerun), not through Look again
    assert [s.evaluate("performance.timeOrigin") for s in students] == loads
    assert [s.evaluate("window.attnSentOpened") for s in students] == [len(SENDS)] * len(students)
    budget = CEILING * SETTLE_S * max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))  # a busy host: in proportion
    by_kind = {f"{where}?{query}": times for (where, query), times in zip(SENDS, settled)}
    (OUTPUT / "follow-settle.json").write_text(json.dumps(
        {"settled_s": settled, "by_kind_s": by_kind, "revealed_s": revealed, "budget_s": round(budget, 2),
         "load_average": os.getloadavg(), "when": time.strftime("%Y-%m-%dT%H:%M:%S")}) + "\n")
    print(f"send → every student settled, s: {by_kind}; reveal → every student drawn, s: {revealed} "
          f"(budget {budget:.1f} s)")
    assert max(max(t) for t in [*settled, revealed]) <= budget, (settled, revealed)


REVEALED = "document.body.innerText.includes('The teacher revealed the answer.')"


def reveal_to(teacher, students) -> list[float]:
    """The teacher's *Reveal* on the sent exercise: seconds from the click until each student's page
    shows the answer revealed (timed in each page, as the sends are)."""
    for student in students:
        student.evaluate(f"""() => {{ const timer = setInterval(() => {{
          if ({REVEALED}) {{ window.attnRevealed = Date.now(); clearInterval(timer); }} }}, 25); }}""")
    reveal = teacher.get_by_role("button", name="Reveal the answer to the class")
    reveal.wait_for(timeout=PAGE_BUDGET * 1000)
    wait_for(teacher, APP_IDLE, "the teacher's page drawn", PAGE_BUDGET)
    clicked = teacher.evaluate("Date.now()")
    reveal.click()
    return [round((wait_for(s, "window.attnRevealed", "the reveal drawn", PAGE_BUDGET) - clicked) / 1000, 2)
            for s in students]
