"""Charts on a phone (``ui/figures.chart``, ``viz/narrow.py``): Debian's Chromium at 390 × 844,
driven by Playwright, on the shipped checkpoints (real sentences, real token lengths).

On lesson stops 1 (the heatmap), 7 (Luong's scores, their weights written on the bars) and 8
(local-p, a 37-piece sentence) and on *Attention or attribution?* (four panels side by side,
each titled), no two tick labels' boxes overlap, no bar number runs into another, and no panel
title touches a label; the page itself stays 390 px wide (a wide figure scrolls inside its
own box, and a line under every figure the screen cuts says that it scrolls). At stop 11 the
question keeps its place when the check shows the heatmap. The
sidebar's icons are Material Symbols glyphs (no emoji font needed). Screenshots go to
``test-output/phone/``.
"""
from __future__ import annotations

from urllib.parse import quote

import pytest

from conftest import ROOT
from helpers.browser import APP_IDLE, find_chromium, headless_chromium, streamlit_app, wait_for

pytestmark = [pytest.mark.browser, pytest.mark.server]

OUT = ROOT / "test-output" / "phone"
SENTENCE = "The European Parliament adopted the new economic policy."
# every chart drawn, the app idle, nothing stale
DRAWN = """(() => {
  const charts = [...document.querySelectorAll('[data-testid="stPlotlyChart"]')];
  return charts.length >= arg && charts.every(c => c.querySelector('.main-svg'))
    && !document.querySelector('[data-testid="stStatusWidget"] button')
    && !document.querySelector('[data-stale="true"], [data-testid="stSkeleton"]');
})()"""
STILL = """(() => {
  const now = JSON.stringify([...document.querySelectorAll('.js-plotly-plot text')]
    .map(e => { const r = e.getBoundingClientRect(); return [Math.round(r.left), Math.round(r.top), e.textContent]; }));
  const same = window.__phoneLabels === now;
  window.__phoneLabels = now;
  return same;
})()"""
# per chart: pairs of overlapping label boxes (tick labels, bar numbers, panel titles against labels)
OVERLAPS = """(() => {
  const box = e => e.getBoundingClientRect();
  const shown = e => { const r = box(e); return e.textContent.trim() && r.width > 0 && r.height > 0; };
  const hit = (a, b) => Math.min(a.right, b.right) - Math.max(a.left, b.left) > 1
                     && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 1;
  const found = [];
  let labels = 0;
  for (const plot of document.querySelectorAll('.js-plotly-plot')) {
    const ticks = [...plot.querySelectorAll('.xaxislayer-above text, .yaxislayer-above text')].filter(shown);
    const numbers = [...plot.querySelectorAll('text.bartext')].filter(shown);
    const titles = [...plot.querySelectorAll('.infolayer .annotation text')].filter(shown);
    labels += ticks.length + numbers.length;
    const pairs = (xs, ys, same) => { for (let i = 0; i < xs.length; i++)
      for (let j = same ? i + 1 : 0; j < ys.length; j++)
        if (hit(box(xs[i]), box(ys[j]))) found.push([xs[i].textContent, ys[j].textContent]); };
    pairs(ticks, ticks, true); pairs(numbers, numbers, true); pairs(titles, ticks, false); pairs(titles, titles, true);
  }
  const bars = [...document.querySelectorAll('.js-plotly-plot .modebar-container')];
  // a figure cut by the screen (its box scrolls) and the lines that say so, as the person sees them
  const cut = [...document.querySelectorAll('[class*="st-key-fitw"]')].filter(b => b.scrollWidth > b.clientWidth + 1);
  const hints = [...document.querySelectorAll('.fig-scroll-hint')].filter(h => h.checkVisibility());
  return {labels, overlaps: found.slice(0, 10), count: found.length, cut: cut.length, hints: hints.length,
          hint: hints.length ? hints[0].innerText : '',
          toolbars: bars.filter(b => getComputedStyle(b).display !== 'none').length,
          width: document.documentElement.scrollWidth, viewport: window.innerWidth};
})()"""


def measured(page, name: str, charts: int = 1) -> dict:
    wait_for(page, DRAWN, f"{name}: its charts", 120, arg=charts)
    # Plotly's last relayout after the first draw: the labels' boxes the same on two polls in a row
    wait_for(page, STILL, f"{name}: its labels to settle", 60)
    found = page.evaluate(OVERLAPS)
    page.screenshot(path=OUT / f"{name}.png", full_page=True)
    charts = page.locator('[data-testid="stPlotlyChart"]')
    for n in range(charts.count()):  # each chart whole (the page's main area scrolls, not the document)
        charts.nth(n).screenshot(path=OUT / f"{name}-chart-{n + 1}.png")
    assert found["labels"] > 10, (name, found)
    assert found["count"] == 0, (name, found)
    assert found["width"] <= found["viewport"], (name, found)  # the page does not scroll sideways
    assert found["toolbars"] == 0, (name, found)  # no Plotly toolbar over a figure on a phone
    assert found["hints"] >= found["cut"], (name, found)  # a figure cut by the screen says it scrolls
    return found


def open_stop(page, url: str, stop: int) -> None:
    page.goto(f"{url}/lesson?stop={stop}&text={quote(SENTENCE)}", wait_until="domcontentloaded", timeout=120_000)
    wait_for(page, "[...document.querySelectorAll('h3')].some(h => h.innerText.trim().startsWith(arg))",
             f"stop {stop}", 120, arg=f"{stop}. ")


@pytest.fixture(scope="module")
def shipped_server():
    chromium = find_chromium()
    if not chromium:
        pytest.skip("Chromium not found and scripts/setup_browser.sh could not install it (needs root and apt)")
    if not (ROOT / "checkpoints" / "rnnsearch").is_dir():
        pytest.skip("the shipped checkpoints are missing")
    OUT.mkdir(parents=True, exist_ok=True)
    with streamlit_app(ROOT / "checkpoints", OUT / "streamlit.log") as url:
        yield url, chromium


def test_no_label_overlaps_at_390_px(shipped_server):
    url, chromium = shipped_server
    with headless_chromium(chromium, 390, 844) as page:
        for stop in (1, 7, 8):
            open_stop(page, url, stop)
            found = measured(page, f"lesson-stop-{stop}")
            if stop == 8:  # local-p's 37 pieces: wider than a phone, and the page says so under it
                assert found["cut"] >= 1 and "sideways" in found["hint"], found
        page.goto(f"{url}/attribution?text={quote(SENTENCE)}", wait_until="domcontentloaded", timeout=120_000)
        wait_for(page, APP_IDLE + " && document.body.innerText.includes('Attention beside attribution')",
                 "the attribution page", 180)
        page.get_by_text("integrated gradients", exact=True).first.click()  # the fourth panel
        wait_for(page, "[...document.querySelectorAll('.js-plotly-plot')].some(p => p.data && p.data.length >= 4 "
                       "&& p.data.every(t => t.type === 'heatmap'))", "four panels", 180)
        found = measured(page, "attribution", charts=3)
        assert found["labels"] > 40


def test_stop_11_keeps_the_question_in_place_when_checked(shipped_server):
    url, chromium = shipped_server
    with headless_chromium(chromium, 390, 844) as page:
        open_stop(page, url, 11)
        wait_for(page, DRAWN, "stop 11's chart", 120, arg=1)
        # the question's place in the page (Streamlit's main area is what scrolls)
        top = ("(e => e.getBoundingClientRect().top + document.querySelector('[data-testid=\"stMain\"]').scrollTop)"
               "(document.querySelector('.st-key-lesson_question'))")
        before = page.evaluate(top)
        page.screenshot(path=OUT / "lesson-stop-11.png", full_page=True)
        question = page.locator(".st-key-lesson_question")
        if question.locator('[role="radiogroup"]').count():
            question.locator('[role="radiogroup"] label').first.click()
        else:  # many choices: a menu
            question.locator('[data-testid="stSelectbox"] input').click()
            page.keyboard.press("ArrowDown")
            page.keyboard.press("Enter")
        wait_for(page, APP_IDLE, "the choice", 60)
        page.locator('[class*="st-key-lesson_check_"] button').click()
        wait_for(page, "document.body.innerText.match(/Right: your answer|Not quite: your answer/)", "the verdict", 60)
        wait_for(page, DRAWN + " && !JSON.stringify(document.querySelector('.js-plotly-plot').layout.title)"
                               ".includes('shown once')", "the heatmap shown", 60, arg=1)
        page.screenshot(path=OUT / "lesson-stop-11-checked.png", full_page=True)
        after = page.evaluate(top)
        assert abs(after - before) <= 2, (before, after)


def test_the_sidebar_icons_need_no_emoji_font(shipped_server):
    url, chromium = shipped_server
    with headless_chromium(chromium, 1280, 900) as page:
        page.goto(f"{url}/lesson", wait_until="domcontentloaded", timeout=120_000)
        wait_for(page, APP_IDLE, "the page", 120)
        icons = wait_for(page, """(() => {
          const icons = [...document.querySelectorAll('[data-testid="stSidebarNav"] [data-testid="stIconMaterial"]')]
            .map(i => [i.textContent, i.getBoundingClientRect().width]).filter(([, w]) => w > 0);
          return icons.length >= 8 && document.fonts.check('24px "Material Symbols Rounded"') && icons;
        })()""", "the sidebar's icons", 120)
        page.screenshot(path=OUT / "sidebar-1280.png")
        # a glyph is one icon wide; without its font the ligature's name would show as a word
        assert all(width <= 32 for _, width in icons), icons
