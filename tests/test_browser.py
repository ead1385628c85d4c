"""The real browser: headless Chromium loads the running app, a sentence is typed into the box,
and the test waits for the alignment heatmap and saves a screenshot under
``test-output/browser/``; and every teaching page is visited and clicked through.

Chromium is Debian's headless build, the ``chromium-headless-shell`` package (``bash
scripts/setup_browser.sh`` installs it; the test runs that script itself when the browser is
missing), driven by Playwright (``playwright.sync_api``, pinned in requirements-dev.txt).
Playwright launches ``/usr/bin/chromium-headless-shell`` through ``executable_path``; no
Playwright browser is downloaded (``playwright install`` is never needed).

The same driver makes the README's screenshot from the shipped checkpoints:

    python tests/test_browser.py --checkpoints checkpoints --out docs/screenshot.png --expect policy.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script (see the top), not only under pytest
    sys.path.insert(0, str(ROOT))
from helpers.browser import (APP_IDLE, find_chromium, headless_chromium, HEATMAP_TICKS, OUTPUT,  # noqa: E402
                             PAGE_BUDGET, streamlit_app, wait_for)

pytestmark = [pytest.mark.browser, pytest.mark.server]

SENTENCE_BOX = 'textarea[aria-label="English sentence"]'


def type_sentence_and_capture(page: Page, url: str, sentence: str, expect_token: str | None, screenshot: Path,
                              timeout: float = PAGE_BUDGET) -> list[str]:
    """Open Translate, replace the sentence, press Ctrl+Enter, wait for a heatmap whose source
    tokens include ``expect_token`` (or, if None, differ from the first heatmap's), then save
    a PNG. Returns the heatmap's source labels."""
    page.goto(url, wait_until="domcontentloaded", timeout=timeout * 1000)
    box = page.locator(SENTENCE_BOX)
    box.wait_for(timeout=timeout * 1000)
    first = wait_for(page, HEATMAP_TICKS, "the first heatmap", timeout)
    box.fill(sentence)  # focuses the box, selects its text and types over it
    box.press("Control+Enter")  # Ctrl+Enter commits a Streamlit text area
    if expect_token:
        ticks = wait_for(page, f"(t => t && t.includes(arg) && t)({HEATMAP_TICKS})",
                         f"a heatmap with the token {expect_token!r}", timeout, arg=expect_token)
    else:
        ticks = wait_for(page, f"(t => t && JSON.stringify(t) !== JSON.stringify(arg) && t)({HEATMAP_TICKS})",
                         "a heatmap of the new sentence", timeout, arg=first)
    wait_for(page, APP_IDLE, "the app to finish running", PAGE_BUDGET)
    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.wait_for_timeout(1000)  # let Plotly finish drawing
    screenshot.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=screenshot)
    return ticks


# -- the test -------------------------------------------------------------------------------------
def test_browser_types_a_sentence_and_sees_the_heatmap(class_server_process):
    url, _, chromium = class_server_process  # the process's server on the tiny zoo (tests/conftest.py)
    OUTPUT.mkdir(parents=True, exist_ok=True)
    sentence = "3 1 4 1 5 9 2 6"
    with headless_chromium(chromium) as page:
        ticks = type_sentence_and_capture(page, url + "/", sentence, "▁9", OUTPUT / "translate.png")
        assert ticks == ["▁3", "▁1", "▁4", "▁1", "▁5", "▁9", "▁2", "▁6", "&lt;/s&gt;"]
        expect(page).to_have_url(re.compile(r"text=3(\+|%20)1(\+|%20)4"))  # the sentence is in the address
    png = (OUTPUT / "translate.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="Screenshot of the Translate page with a typed sentence.")
    p.add_argument("--checkpoints", default=str(ROOT / "checkpoints"))
    # not the landing sentence: the shot waits for the heatmap to change from the landing one
    p.add_argument("--sentence", default="The agreement on the European Economic Area was signed in August 1992.",
                   help="default: the paper's Figure 3a sentence")
    p.add_argument("--expect", default="August", help="a source label the heatmap must show before the shot "
                                                      "(empty: any heatmap other than the first)")
    p.add_argument("--query", default="view=words", help="URL parameters for the page, e.g. view=words&beam=5")
    p.add_argument("--out", default=str(ROOT / "docs" / "screenshot.png"))
    p.add_argument("--width", type=int, default=1440)
    p.add_argument("--height", type=int, default=1900)
    args = p.parse_args(argv)
    chromium = find_chromium()
    if not chromium:
        print("error: chromium not found; run scripts/setup_browser.sh", file=sys.stderr)
        return 1
    with streamlit_app(Path(args.checkpoints), OUTPUT / "streamlit.log") as url, \
            headless_chromium(chromium, args.width, args.height) as page:
        ticks = type_sentence_and_capture(page, f"{url}/?{args.query}", args.sentence, args.expect or None,
                                         Path(args.out))
    print(f"saved {args.out}; heatmap source tokens: {ticks}")
    return 0


if __name__ == "__main__":
    sys.exit(main())


NO_ERROR = "document.querySelectorAll('[data-testid=\"stException\"]').length === 0"
PLOTS = "[...document.querySelectorAll('.js-plotly-plot')].filter(p => p.data && p.querySelector('.main-svg'))"


FRAMED_ROW = f"""(() => {{ const p = {PLOTS}.find(p => (p.layout.shapes || []).some(s => s.name === 'highlighted row'));
  return p ? p.layout.shapes.find(s => s.name === 'highlighted row').y0 : null; }})()"""


TRACE = PLOTS + ".some(p => p.data.some(t => t.name === '{}'))"


def click(page, label: str) -> None:
    """Click the visible button whose text ends with ``label`` (an icon's name may come first;
    Streamlit keeps a hidden copy of a button that has a tooltip). Playwright waits (up to 30 s)
    until it is drawn, enabled and not covered: a page is drawn progressively, so a figure can be
    on screen before the buttons above it have their labels."""
    import re
    button = page.locator("button").filter(has_text=re.compile(re.escape(label) + r"\s*$"), visible=True)
    button.click(timeout=PAGE_BUDGET * 1000)


def test_browser_visits_every_teaching_page(class_server_process):
    """Headless Chromium (Playwright) opens each teaching page on the tiny zoo and sees it drawn;
    on Step through, ▶ moves the framed row of the drawn heatmap; on Watch attention emerge,
    training runs and the animation appears. Screenshots go to test-output/browser/."""
    from playwright.sync_api import expect
    from helpers.browser import OUTPUT, headless_chromium, wait_for
    url, _, chromium = class_server_process  # the process's server on the tiny zoo (tests/conftest.py)
    digits = "text=1+2+3+4+5+6&model=rnnsearch"
    pages = {  # path -> what shows the page is drawn
        f"step-through?{digits}": f"{FRAMED_ROW} === -0.5",
        "worked-example": "document.querySelectorAll('.katex').length > 10",
        f"beam-tree?{digits}&beam=3": TRACE.format("chosen path"),
        f"what-if?{digits}": PLOTS + ".some(p => (p.layout.shapes || []).some(s => s.name === 'forced prefix'))",
        "forced-alignment?text=1+2+3&fr=3+2+1&model=rnnsearch": TRACE.format("link"),
        "emerge?steps=20": "[...document.querySelectorAll('button')].some(b => b.innerText.includes('Train both'))",
        "exercises?ex=step&seed=2": "document.querySelectorAll('.katex').length >= 2",
        "luong-to-transformer?text=1+2+3+4+5+6": PLOTS + ".some(p => (p.layout.shapes || []).some(s => s.name === "
                                                 "'marked head'))",
    }
    OUTPUT.mkdir(parents=True, exist_ok=True)
    with headless_chromium(chromium) as page:
        for path, drawn in pages.items():
            page.goto(f"{url}/{path}", wait_until="domcontentloaded", timeout=PAGE_BUDGET * 1000)
            wait_for(page, f"({drawn}) && {NO_ERROR}", f"the page {path}", PAGE_BUDGET)
            if path.startswith("step-through"):
                click(page, "▶")
                wait_for(page, f"{FRAMED_ROW} === 0.5", "the framed row to move down", PAGE_BUDGET)
            if path.startswith("emerge"):
                click(page, "Train both models")
                wait_for(page, PLOTS + ".some(p => (p.layout.updatemenus || []).length)", "the training animation", PAGE_BUDGET)
            expect(page.locator('[data-testid="stException"]'), f"an exception on {path}").to_have_count(0)
            page.screenshot(path=OUTPUT / f"teaching-{path.split('?')[0]}.png")
