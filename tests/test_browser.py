"""One real-browser test: headless Chromium loads the running app, a sentence is typed into
the box, and the test waits for the alignment heatmap and saves a screenshot under
``test-output/browser/``.

Chromium is Debian's ``chromium`` package (``bash scripts/setup_browser.sh`` installs it;
the test runs that script itself when the browser is missing), driven by Playwright
(``playwright.sync_api``, pinned in requirements-dev.txt). Playwright launches
``/usr/bin/chromium`` through ``executable_path``; no Playwright browser is downloaded
(``playwright install`` is never needed).

The same driver makes the README's screenshot from the shipped checkpoints:

    python tests/test_browser.py --checkpoints checkpoints --out docs/screenshot.png --expect policy.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from playwright.sync_api import Page, expect
from helpers.browser import APP_IDLE, find_chromium, headless_chromium, HEATMAP_TICKS, OUTPUT, streamlit_app, wait_for

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script (see the top), not only under pytest
    sys.path.insert(0, str(ROOT))
SENTENCE_BOX = 'textarea[aria-label="English sentence"]'


def type_sentence_and_capture(page: Page, url: str, sentence: str, expect_token: str | None, screenshot: Path,
                              timeout: float = 90) -> list[str]:
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
    wait_for(page, APP_IDLE, "the app to finish running", 30)
    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.wait_for_timeout(1000)  # let Plotly finish drawing
    screenshot.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=screenshot)
    return ticks


# -- the test -------------------------------------------------------------------------------------
def test_browser_types_a_sentence_and_sees_the_heatmap(tiny_zoo):
    import pytest
    chromium = find_chromium()
    if not chromium:
        pytest.skip("Chromium not found and scripts/setup_browser.sh could not install it (needs root and apt)")
    OUTPUT.mkdir(parents=True, exist_ok=True)
    sentence = "3 1 4 1 5 9 2 6"
    with streamlit_app(tiny_zoo, OUTPUT / "streamlit.log") as url, headless_chromium(chromium) as page:
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
