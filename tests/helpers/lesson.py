"""The guided lesson driven by the tests (tests/test_lesson.py, tests/test_lesson_closing.py) and
bench/lesson_speed.py: through AppTest (open a stop, read it, answer it, go on), and in a real
browser (what a settled stop and the page's layout are, read in the page)."""
from __future__ import annotations

from streamlit.testing.v1 import AppTest

from helpers.apptest import APP, new_app
from helpers.browser import PAGE_BUDGET

N = 11  # the lesson's stops
# The stop's heading drawn, the app idle, no element left from the stop before (stale), every chart of the
# page drawn, no widget still a placeholder
SETTLED = """(() => {
  const heading = [...document.querySelectorAll('h3')].some(h => h.innerText.trim().startsWith(arg));
  const charts = [...document.querySelectorAll('[data-testid="stPlotlyChart"]')];
  return heading && !document.querySelector('[data-testid="stStatusWidget"] button')
    && charts.every(c => c.querySelector('.main-svg'))
    && !document.querySelector('[data-stale="true"], [data-testid="stSkeleton"], [data-testid="stSkeletonElement"]');
})()"""
# page-level horizontal overflow: the document, or Streamlit's scrolling main area, wider than the window
LAYOUT = """(() => {
  const main = document.querySelector('[data-testid="stMain"]') || document.documentElement;
  return {document: document.documentElement.scrollWidth, main: main.scrollWidth, main_visible: main.clientWidth,
          viewport: window.innerWidth, exceptions: document.querySelectorAll('[data-testid="stException"]').length};
})()"""


def walk_lesson(page, url: str, text: str, shots=None, stops: int = N, timeout: float = PAGE_BUDGET) -> list[dict]:
    """Open the lesson on ``text`` and press Next (by keyboard: focus, Enter) through every stop.
    Per stop: seconds from the key press until the stop settled, and the page's layout."""
    import time
    from urllib.parse import quote
    from helpers.browser import wait_for
    page.goto(f"{url}/lesson?text={quote(text)}", wait_until="domcontentloaded", timeout=timeout * 1000)
    walked = []
    for k in range(1, stops + 1):
        start = time.perf_counter()
        if k > 1:
            button = page.locator(".st-key-lesson_next button")
            button.focus()
            page.keyboard.press("Enter")
        wait_for(page, SETTLED, f"stop {k} to settle", timeout, arg=f"{k}. ")
        settle = time.perf_counter() - start
        layout = page.evaluate(LAYOUT)
        if shots is not None:
            shots.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=shots / f"stop-{k:02d}.png", full_page=True)
        walked.append({"stop": k, "settle_s": round(settle, 3), **layout})
    return walked


def open_lesson(**query) -> AppTest:
    at = new_app(APP, 60)
    at.query_params.update(query)
    at.run()  # the default page first: AppTest can only switch pages after a run
    at.switch_page("app_pages/lesson.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def stop_title(at: AppTest) -> str:
    return at.subheader[0].value


def stop_text(at: AppTest) -> str:
    """The stop's text: the page's first markdown (title, caption and subheader are other elements)."""
    return at.markdown[0].value


def answer_widget(at: AppTest):
    return next(w for kind in ("radio", "selectbox", "number_input") for w in getattr(at, kind)
                if (w.key or "").startswith("lesson_answer_"))


def verdict(at: AppTest) -> str | None:
    """"right", "wrong" or None, from the stop's question box."""
    if any(s.value.startswith("Right") for s in at.success):
        return "right"
    if any(e.value.startswith("Not quite") for e in at.error):
        return "wrong"
    return None


def answer(at: AppTest, value) -> str:
    answer_widget(at).set_value(value)
    at.button(key=next(b.key for b in at.button if b.key.startswith("lesson_check_"))).click().run()
    assert not at.exception, [e.value for e in at.exception]
    return verdict(at)


def next_stop(at: AppTest) -> None:
    at.button(key="lesson_next").click().run()
    assert not at.exception, [e.value for e in at.exception]


def param(at: AppTest, name: str) -> str:
    value = at.query_params[name]
    return value[-1] if isinstance(value, list) else value
