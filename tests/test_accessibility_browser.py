"""WCAG 2.2 AA in a real browser (docs/accessibility.md): Debian's Chromium, driven by Playwright,
on one server of the tiny checkpoints with a class store of its own.

- axe-core (``axe-playwright-python``, which bundles it) with the WCAG 2.0 / 2.1 A and AA and 2.2 AA tags,
  on every page at 1400 px and at 390 px, on every lesson stop, on a student's page in a class and
  on the teacher's view of that class with the student's answer in: no violation, apart from the
  rule / selector pairs of :data:`EXCEPTIONS`, each with its upstream report in docs/accessibility.md;
- the accessible tree (Playwright's ARIA snapshot) of each page names every Plotly figure by what
  it shows, and holds its text alternative (a table for a heatmap or bars);
- reflow: at 390 px and at 320 px no page scrolls sideways (a wide figure scrolls inside its own box);
- the keyboard alone (no mouse event) through the lesson's first three stops, two exercises and a
  teacher's sign-in.

Violations are written to ``test-output/accessibility/`` as JSON, one file per page and width.
"""
from __future__ import annotations

import json
import re

import pytest

from conftest import BROWSER_CLASS_KEY as KEY, ROOT
from helpers.browser import APP_IDLE, open_a_class, PAGE_BUDGET, wait_for

pytestmark = [pytest.mark.browser, pytest.mark.server]

OUT = ROOT / "test-output" / "accessibility"
PAGES = ["", "compare", "bleu-vs-length", "models", "attribution", "lesson", "step-through", "worked-example",
         "beam-tree", "what-if", "forced-alignment", "emerge", "luong-to-transformer", "exercises", "classroom"]
STOPS = 11  # the lesson's stops (ui/lesson_stops.STOPS; tests/test_lesson.py pins the count)
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]  # 2.2 AA: axe's target-size (2.5.8) among them
# (axe rule, the element it is found on or inside): Streamlit's own markup, reported upstream
# (docs/accessibility.md, "Known exceptions"); nothing else is excused
EXCEPTIONS = {("list", '[data-testid="stSidebarNavItems"]'), ("listitem", '[data-testid="stSidebarNavItems"]')}
# drawn: the app idle, nothing stale, every chart drawn, the page's script for scroll regions in
DRAWN = APP_IDLE + """ && !document.querySelector('[data-stale="true"], [data-testid="stSkeleton"]')
  && [...document.querySelectorAll('[data-testid="stPlotlyChart"]')].every(c => c.querySelector('.main-svg'))
  && window.__aeScrollFocus && document.querySelector('[data-testid="stMainBlockContainer"] :is(h1, h2, h3)')"""


@pytest.fixture(scope="module")
def axe():
    pytest.importorskip("axe_playwright_python", reason="pip install -r requirements-dev.txt")
    from axe_playwright_python.sync_playwright import Axe
    return Axe()


def settle(page, what: str) -> None:
    wait_for(page, DRAWN, what, PAGE_BUDGET)
    page.wait_for_timeout(400)  # the scroll-region script runs on the next animation frame
    wait_for(page, DRAWN, what, PAGE_BUDGET)


def violations(axe, page, name: str) -> list[dict]:
    """axe's violations on the page, less :data:`EXCEPTIONS`; written to test-output/accessibility/."""
    found = axe.run(page, options={"runOnly": {"type": "tag", "values": TAGS}, "resultTypes": ["violations"]})
    left = []
    for rule in found.response["violations"]:
        nodes = [n for n in rule["nodes"] if not any(
            rule["id"] == r and page.evaluate("([t, s]) => !!document.querySelector(t)?.closest(s)", [n["target"][0], s])
            for r, s in EXCEPTIONS)]
        if nodes:
            left.append({"id": rule["id"], "impact": rule["impact"], "help": rule["help"],
                         "nodes": [{"target": n["target"], "html": n["html"][:300], "summary": n.get("failureSummary")}
                                   for n in nodes]})
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{re.sub(r'[^a-z0-9]+', '-', name.lower()).strip('-')}.json").write_text(json.dumps(left, indent=1))
    return left


def described_figures(page) -> list[tuple[str, str]]:
    """Each Plotly figure on screen (one in a closed tab is not in the tree): its accessible name
    and the accessible text of its text alternative, from Playwright's ARIA snapshots."""
    found = []
    charts = page.locator('[data-testid="stPlotlyChart"]')
    for k in range(charts.count()):
        tree = charts.nth(k).aria_snapshot()
        if not tree:  # hidden (a tab not chosen): so is its alternative
            continue
        name = re.search(r'figure "(.*)"', tree.splitlines()[0])  # - 'figure "…"':
        found.append((name.group(1) if name else "", page.locator(".fig-alt").nth(k).aria_snapshot()))
    return found


def check_figures(page, name: str) -> int:
    assert page.locator(".fig-alt").count() == page.locator('[data-testid="stPlotlyChart"]').count(), name
    figures = described_figures(page)
    for alt, tree in figures:
        assert re.search(r"\b(heatmap|bar chart|line chart|chart)\b", alt), (name, alt)
        assert alt[:25] in tree, (name, alt, tree[:300])  # the alternative repeats the summary
        if "heatmap" in alt and "blank" not in alt or "bar chart" in alt:
            assert re.search(r"- '?table\b", tree) and "columnheader" in tree, (name, tree[:500])
    return len(figures)


ALL_PATHS = PAGES + [f"lesson?stop={k}" for k in range(1, STOPS + 1)]
SHARES = 4  # the pages in this many tests, each its own xdist group: they run side by side
SIDEBAR_OPEN = "document.querySelector('[data-testid=\"stSidebar\"]')?.getAttribute('aria-expanded') === 'true'"


def close_the_sidebar(page, name: str) -> None:
    """What a phone's first draw shows: the sidebar closed. Streamlit closes it at load on a
    narrow screen, not when a wide one narrows, so the test closes it as a person would, by its
    button, and gives the focus back to the page."""
    if page.evaluate(SIDEBAR_OPEN):
        page.locator('[data-testid="stSidebarCollapseButton"] button').click()
        wait_for(page, f"!({SIDEBAR_OPEN})", f"{name}: the sidebar closed", 30)
    page.evaluate("document.activeElement && document.activeElement.blur()")


@pytest.mark.parametrize("share", [pytest.param(k, marks=pytest.mark.xdist_group(f"axe-{k}")) for k in range(SHARES)])
def test_every_page_passes_axe_at_both_widths_and_describes_its_figures(class_server, axe, share):
    """Every page and lesson stop, a quarter of them in each test: loaded once at 1400 px, scanned
    and its figures described, then narrowed to a phone's 390 px (the layout follows the width
    through CSS and Streamlit's own resize listener, as a phone's first draw does), scanned again
    and checked for reflow. One load per page is half the browser's work of a load per width."""
    url, _, browser = class_server
    failures, described = {}, 0
    page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    for path in ALL_PATHS[share::SHARES]:
        page.set_viewport_size({"width": 1400, "height": 1000})
        page.goto(f"{url}/{path}", wait_until="domcontentloaded")
        name = f"{path or 'translate'} at 1400px"
        settle(page, name)
        if left := violations(axe, page, name):
            failures[name] = left
        described += check_figures(page, name)
        name = f"{path or 'translate'} at 390px"
        page.set_viewport_size({"width": 390, "height": 1000})
        close_the_sidebar(page, name)
        settle(page, name)
        if left := violations(axe, page, name):
            failures[name] = left
        # reflow (WCAG 1.4.10): at a phone's 390 px and at 320 px (1280 px at 400 % zoom) the page
        # itself never scrolls sideways (a wide figure or equation scrolls inside its own box)
        for narrow in (390, 320):
            page.set_viewport_size({"width": narrow, "height": 1000})
            wait_for(page, "window.innerWidth === arg && document.documentElement.scrollWidth <= arg",
                     f"{path or 'translate'} to fit {narrow} px", 10, arg=narrow)
    assert page.evaluate("document.documentElement.lang") == "en"  # WCAG 3.1.1
    page.context.close()
    assert not failures, json.dumps({k: [(v["id"], len(v["nodes"]), v["nodes"][0]) for v in vs]
                                     for k, vs in failures.items()}, indent=1)[:6000]
    assert described >= 15 // SHARES  # the pages' charts were there to be described (15 or more over all)


def test_a_class_passes_axe_for_the_student_and_the_teacher(class_server, axe):
    url, _, browser = class_server
    teacher = browser.new_context(viewport={"width": 1400, "height": 1200}).new_page()
    teacher.goto(f"{url}/exercises?ex=align&seed=0", wait_until="domcontentloaded")
    wait_for(teacher, APP_IDLE + " && document.body.innerText.includes('Predict first')", "the exercise page",
             PAGE_BUDGET)
    code = open_a_class(teacher, KEY)
    failures = {}
    # one student, as the page scan: loaded at 1400 px, narrowed to a phone's 390 px to answer,
    # widened again for the verdict at 1400 px (one context, one load)
    student = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    student.goto(f"{url}/exercises?ex=align&seed=0&class={code}", wait_until="domcontentloaded")
    wait_for(student, APP_IDLE + " && document.querySelectorAll('[data-testid=\"stButtonGroup\"]').length > 2",
             "the alignment grid", PAGE_BUDGET)
    for width in (1400, 390):
        student.set_viewport_size({"width": width, "height": 1000})
        if width == 390:
            close_the_sidebar(student, "the student's page at 390px")
        settle(student, "the student's page")
        if left := violations(axe, student, f"student in a class at {width}px"):
            failures[f"student {width}"] = left
    student.locator('[data-testid="stButtonGroup"]').nth(1).locator("button").first.click()
    wait_for(student, APP_IDLE, "the link taken", 60)
    student.get_by_role("button", name="Check my answer").click()
    wait_for(student, "document.body.innerText.includes('Counted in class')", "the answer counted", 60)
    for width in (390, 1400):
        student.set_viewport_size({"width": width, "height": 1000})
        settle(student, "the student's verdict")
        if left := violations(axe, student, f"student answered at {width}px"):
            failures[f"student answered {width}"] = left
    student.context.close()
    # the projected view: the class's links alone before Reveal, beside the model's and the gold after
    for moment, heatmaps in (("before Reveal", 1), ("after Reveal", 3)):
        if heatmaps == 3:
            teacher.set_viewport_size({"width": 1400, "height": 1200})
            teacher.get_by_role("button", name="Reveal the answer to the class").click()
        wait_for(teacher, "[...document.querySelectorAll('.js-plotly-plot')].some(p => p.data && "
                          "p.data.filter(t => t.type === 'heatmap').length === arg)", f"the class's alignment {moment}",
                 90, arg=heatmaps)
        for width in (1400, 390):
            teacher.set_viewport_size({"width": width, "height": 1200})
            settle(teacher, f"the teacher's view {moment}")
            if left := violations(axe, teacher, f"teacher's class view {moment} at {width}px"):
                failures[f"teacher {moment} {width}"] = left
        teacher.set_viewport_size({"width": 1400, "height": 1200})
        settle(teacher, f"the teacher's view {moment}")
        check_figures(teacher, f"the teacher's class view {moment}")
    assert not failures, json.dumps({k: [(v["id"], len(v["nodes"]), v["nodes"][0]) for v in vs]
                                     for k, vs in failures.items()}, indent=1)[:6000]


# -- the keyboard alone: Tab, Shift+Tab, Enter, Space, arrows and typing; no mouse event --------------
FOCUSED = "(() => { const e = document.activeElement; return e && e !== document.body && (%s); })()"


def tab_to(page, matches: str, what: str, limit: int = 250) -> None:
    """Press Tab until the focused element matches ``matches`` (a JavaScript expression of ``e``),
    then check that the focus is visible (an outline or a ring on it or on the box around it)."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate(FOCUSED % matches):
            break
    else:
        raise AssertionError(f"Tab never reached {what} in {limit} presses; the buttons: " + page.evaluate(
            "JSON.stringify([...document.querySelectorAll('button')].map(b => [b.innerText, b.disabled]))"
            " + (document.querySelector('.st-key-lesson_question') || document.body).innerText.slice(0, 1500)"))
    shown = page.evaluate("""(() => { const e = document.activeElement;
      const seen = el => { const s = getComputedStyle(el);
        return (s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) > 0) || s.boxShadow !== 'none'; };
      const around = []; for (let x = e; x && around.length < 4; x = x.parentElement) around.push(x);
      return e.matches(':focus-visible') && around.some(seen); })()""")
    assert shown, f"{what}: the focus is not visible"


def button(name: str) -> str:
    return f"e.tagName === 'BUTTON' && e.innerText.includes({json.dumps(name)})"  # its icon's name may follow


def answer_stop(page, k: int) -> None:
    """One lesson stop by keyboard: answer its question (the first choice, or a number), *Check*,
    and where the answer is wrong, the hints and *Show me* until the stop counts as done."""
    question = "e.closest('.st-key-lesson_question')"
    kind = page.evaluate("""(() => { const q = document.querySelector('.st-key-lesson_question');
      return q.querySelector('input[type=radio]') ? 'radio' : q.querySelector('[role=combobox], input[aria-autocomplete]')
        ? 'menu' : 'number'; })()""")
    if kind == "radio":
        tab_to(page, f"{question} && e.type === 'radio'", f"stop {k}'s choices")
        page.keyboard.press("Space")
    elif kind == "menu":
        tab_to(page, f"{question} && e.tagName === 'INPUT'", f"stop {k}'s menu")
        page.keyboard.press("ArrowDown")
        page.keyboard.press("Enter")
    else:
        tab_to(page, f"{question} && e.tagName === 'INPUT'", f"stop {k}'s number box")
        page.keyboard.type("1")
        page.keyboard.press("Enter")
    wait_for(page, APP_IDLE, "the answer taken", 60)
    tab_to(page, f"{question} && {button('Check')}", f"stop {k}'s Check")
    page.keyboard.press("Enter")
    verdict = wait_for(page, "(document.body.innerText.match(/(Right|Not quite): your answer/) || [])[1]",
                       f"stop {k}'s verdict", 60)
    hint = f"{question} && e.tagName === 'BUTTON' && !e.disabled && /Hint|Show me/.test(e.innerText)"
    enabled_hint = ("([...document.querySelectorAll('.st-key-lesson_question button')]"
                    ".find(b => !b.disabled && /Hint|Show me/.test(b.innerText)) || {}).innerText")
    for _ in range(4 if verdict == "Not quite" else 0):  # Hint 1, Hint 2, Show me: then the stop is done
        label = page.evaluate(enabled_hint)
        if not label:
            break
        if not page.evaluate(FOCUSED % hint):  # the focus stays on the hint button, which reruns in place
            tab_to(page, hint, f"stop {k}'s hint")
        page.keyboard.press("Enter")
        wait_for(page, APP_IDLE + f" && ({enabled_hint}) !== arg", f"stop {k}: {label.split()[-1]} taken", 60,
                 arg=label)
    wait_for(page, f"(new URLSearchParams(location.search).get('done') || '').split(',').includes('{k}')",
             f"stop {k} counted done (the lesson keeps it in the address)", 60)


def test_the_lesson_and_the_exercises_by_keyboard_alone(class_server):
    url, _, browser = class_server
    page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    page.on("console", lambda m: None)
    page.goto(f"{url}/lesson?stop=1", wait_until="domcontentloaded")
    settle(page, "the lesson")
    for k in (1, 2, 3):
        answer_stop(page, k)
        tab_to(page, button("Next"), "Next")
        page.keyboard.press("Enter")
        wait_for(page, f"document.body.innerText.includes('Stop {k + 1} of')", f"stop {k + 1}", PAGE_BUDGET)
        settle(page, f"stop {k + 1}")

    # predict the alignment: a link marked cell by cell from the keyboard, then checked
    page.goto(f"{url}/exercises?ex=align&seed=0", wait_until="domcontentloaded")
    wait_for(page, APP_IDLE + " && document.querySelectorAll('[data-testid=\"stButtonGroup\"]').length > 2",
             "the alignment grid", PAGE_BUDGET)
    settle(page, "the alignment exercise")
    first_row = "e.closest('[data-testid=\"stButtonGroup\"]') === document.querySelectorAll('[data-testid=\"stButtonGroup\"]')[1]"
    tab_to(page, f"{first_row} && e.tagName === 'BUTTON'", "the grid's first row")
    page.keyboard.press("Space")
    wait_for(page, APP_IDLE + " && document.querySelectorAll('[data-testid=\"stButtonGroup\"]')[1]"
                              ".querySelector('button[aria-pressed=\"true\"], button[aria-checked=\"true\"], "
                              "button[data-selected=\"true\"], button[kind*=\"Active\"]')", "the link marked", 60)
    tab_to(page, button("Check my answer"), "Check my answer")
    page.keyboard.press("Enter")
    wait_for(page, "document.body.innerText.includes('Your AER against the gold')", "the alignment checked", 90)

    # one step by hand: every number typed, then checked
    from teaching.exercises import step_exercise
    right = step_exercise(0).solution()
    page.goto(f"{url}/exercises?ex=step&seed=0", wait_until="domcontentloaded")
    wait_for(page, APP_IDLE + " && document.querySelector('input[aria-label=\"e1\"]')", "the step exercise", 90)
    settle(page, "the step exercise")
    for part, values in (("e", right.energies.ravel()), ("α", right.weights.ravel()), ("c", right.context.ravel())):
        for j, v in enumerate(values):
            tab_to(page, f"e.getAttribute('aria-label') === {json.dumps(f'{part}{j + 1}')}", f"{part}{j + 1}")
            page.keyboard.type(f"{v:.2f}")
            page.keyboard.press("Enter")
            wait_for(page, APP_IDLE, "the number taken", 60)
    tab_to(page, button("Check my answer"), "Check my answer")
    page.keyboard.press("Enter")
    wait_for(page, "document.body.innerText.includes('All right: every number is within the tolerance')",
             "the step checked right", 90)

    # the teacher: sign in and open a class
    page.goto(f"{url}/exercises?ex=which&seed=1", wait_until="domcontentloaded")
    settle(page, "the exercises page")
    tab_to(page, "e.tagName === 'SUMMARY' && e.innerText.includes('Class')", "the Class panel")
    if not page.evaluate("document.activeElement.closest('details').open"):
        page.keyboard.press("Enter")
    tab_to(page, button("I am the teacher"), "I am the teacher")
    page.keyboard.press("Enter")  # the popover takes the focus at its key box (ui/focus.py)
    wait_for(page, "document.activeElement.getAttribute('aria-label') === 'Teacher key'", "the focus in the key box", 30)
    page.keyboard.type(KEY)
    page.keyboard.press("Enter")
    tab_to(page, button("Sign in"), "Sign in")
    page.keyboard.press("Enter")
    tab_to(page, button("Open a class"), "Open a class", limit=400)
    page.keyboard.press("Enter")
    wait_for(page, "document.body.innerText.match(/Class [A-Z2-9]{6} is open/)", "an open class", 90)
    page.context.close()
