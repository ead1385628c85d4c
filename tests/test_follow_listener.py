"""The follower's listener script (``ui/follow_listener.js``) on its own, in Debian's Chromium:
a page of the app's shape (the hidden ``#attn-follow`` element with its ``data-`` settings, the
*Look again* button) at a made-up address, whose ``/_attn/follow`` answers are the test's own
(Playwright's routing). The served app runs the same script in tests/test_browser_follow.py; here
each branch is driven on purpose: a send opens the teacher's page as the Back button does (the
address set, one ``popstate``), a change that sends no new page clicks *Look again*, a removed
student's tab never opens a page, a change whose answer carries the page's own signature
(``data-page``: another student removed) reruns nothing and waits past the new version, an answer
to an address the page has since drawn anew is dropped for the page's own, and a server that
cannot be asked is looked at again by the button every ``data-safety-ms``."""
from __future__ import annotations

import json
import time

import pytest

from conftest import ROOT
from helpers.browser import find_chromium, headless_chromium, wait_for

pytestmark = pytest.mark.browser

SCRIPT = (ROOT / "ui" / "follow_listener.js").read_text(encoding="utf-8")
ORIGIN = "http://attn.test"
LOOK = "class_follow_look"


def page_html(version: int, stay: bool = False, safety_ms: int = 30_000, here: str = "", signature: str = "") -> str:
    """The sidebar's part of a follower's page, as ``ui.class_follow._listener`` draws it."""
    return f"""<!doctype html><html><body>
<div class="st-key-{LOOK}"><button onclick="window.looked = (window.looked || 0) + 1">Look again</button></div>
<div id="attn-follow" hidden data-url="/app/_attn/follow?class=ABC234&v={version}" data-version="{version}"
 data-here="{here}" data-base="/app" data-stay="{int(stay)}" data-look="{LOOK}" data-page="{signature}"
 data-safety-ms="{safety_ms}"></div>
<script>window.popstates = 0; addEventListener('popstate', () => window.popstates++);</script>
<script>{SCRIPT}</script></body></html>"""


def served(page, html: str, follow) -> list[str]:
    """Serve ``html`` at /app/exercises and answer /app/_attn/follow with ``follow(url)`` (a dict,
    or None for a failed request); returns the follow requests seen."""
    asked: list[str] = []

    def route(r):
        url = r.request.url
        if "/_attn/follow" in url:
            asked.append(url)
            answer = follow(url)
            if answer is None:
                r.abort()
            else:
                r.fulfill(status=200, content_type="application/json", body=json.dumps(answer))
        else:
            r.fulfill(status=200, content_type="text/html", body=html)
    page.route(f"{ORIGIN}/**", route)
    page.goto(f"{ORIGIN}/app/exercises?ex=step&seed=0", wait_until="domcontentloaded")
    return asked


@pytest.fixture(scope="module")
def chromium():
    found = find_chromium()
    assert found, "chromium is missing: scripts/setup_browser.sh installs it"
    return found


def test_a_send_opens_the_teachers_page_as_the_back_button_does(chromium):
    with headless_chromium(chromium, 800, 600) as page:
        asked = served(page, page_html(3), lambda url: {"version": 4, "open": True, "link": "step_through?s=Hi&t=2"})
        wait_for(page, "window.attnSentOpened === 1", "the sent page opened", 30)
        assert page.evaluate("location.pathname + location.search") == "/app/step_through?s=Hi&t=2"
        assert page.evaluate("[window.popstates, window.looked || 0]") == [1, 0]
        assert asked[0].endswith("/app/_attn/follow?class=ABC234&v=3")


def test_a_change_without_a_new_page_clicks_look_again(chromium):
    """A reveal (the same page): the listener clicks *Look again*, the address stays."""
    with headless_chromium(chromium, 800, 600) as page:
        served(page, page_html(3), lambda url: {"version": 4, "open": True, "link": "exercises?ex=step&seed=0"})
        wait_for(page, "window.looked === 1", "Look again clicked", 30)
        assert page.evaluate("[location.pathname + location.search, window.popstates, window.attnSentOpened || 0]") \
            == ["/app/exercises?ex=step&seed=0", 0, 0]


def test_a_change_that_leaves_the_page_as_it_is_reruns_nothing_and_waits_past_it(chromium):
    """Another student removed, then let back in: the answers carry this page's signature, so no
    *Look again*, and each next request waits past the version just answered; a reveal then
    (another signature) clicks it."""
    answers = iter([{"version": 4, "open": True, "link": "exercises?ex=step&seed=0", "page": "a1b2c3d4e5f6"},
                    {"version": 5, "open": True, "link": "exercises?ex=step&seed=0", "page": "a1b2c3d4e5f6"},
                    {"version": 6, "open": True, "link": "exercises?ex=step&seed=0", "page": "0f9e8d7c6b5a"}])
    with headless_chromium(chromium, 800, 600) as page:
        asked = served(page, page_html(3, signature="a1b2c3d4e5f6"), lambda url: next(answers, None))
        wait_for(page, "window.looked === 1", "Look again clicked at the reveal", 30)
        assert [a.rsplit("v=", 1)[1] for a in asked[:3]] == ["3", "4", "5"]
        assert page.evaluate("[location.pathname + location.search, window.popstates, window.attnSentOpened || 0]") \
            == ["/app/exercises?ex=step&seed=0", 0, 0]


def test_an_answer_to_an_address_the_page_has_drawn_anew_is_dropped_and_its_own_asked(chromium):
    """A student answers while the listener's request is open: the page draws its listener again in
    place, naming no exercise a reveal would change (``shows=``, another signature). The answer to
    the request made before (a reveal, signed for the exercise still unanswered) is not this page's:
    the listener asks again with the page's own address, whose answer leaves the page as it is."""
    redraw = """<script>
const realFetch = window.fetch; let calls = 0;
window.fetch = async (url, options) => {
  if (calls++ === 0) {  // the student's answer, drawn while this first request waits
    await new Promise(done => setTimeout(done, 300));
    const old = document.getElementById('attn-follow'), drawn = old.cloneNode();
    drawn.dataset.url = '/app/_attn/follow?class=ABC234&v=3&shows=';
    drawn.dataset.page = 'a1b2c3d4e5f6';
    old.replaceWith(drawn);
  }
  return realFetch(url, options);
};
</script>"""
    html = page_html(3, signature="0f9e8d7c6b5a").replace("<body>", "<body>" + redraw, 1)
    html = html.replace("v=3\"", "v=3&shows=which%3A3\"", 1)

    def answer(url: str):
        if "v=4" in url:
            return None  # the next wait: no answer within the test
        return {"version": 4, "open": True, "link": "exercises?ex=step&seed=0",  # the page it is on
                "page": "a1b2c3d4e5f6" if url.endswith("shows=") else "ffffffffffff"}  # the reveal, signed per address
    with headless_chromium(chromium, 800, 600) as page:
        asked = served(page, html, answer)
        wait_for(page, "document.getElementById('attn-follow').dataset.version === '4'", "waiting past the reveal", 30)
        assert asked[0].endswith("shows=which%3A3") and asked[1].endswith("v=3&shows=")
        assert page.evaluate("[window.looked || 0, window.popstates, window.attnSentOpened || 0]") == [0, 0, 0]


def test_a_removed_students_tab_opens_no_page(chromium):
    with headless_chromium(chromium, 800, 600) as page:
        served(page, page_html(3, stay=True), lambda url: {"version": 4, "open": True, "link": "step_through?s=Hi"})
        wait_for(page, "window.looked === 1", "Look again clicked", 30)
        assert page.evaluate("[location.pathname, window.popstates, window.attnSentOpened || 0]") \
            == ["/app/exercises", 0, 0]


def test_a_closed_class_clicks_look_again(chromium):
    with headless_chromium(chromium, 800, 600) as page:
        served(page, page_html(3), lambda url: {"version": 3, "open": False, "link": "step_through?s=Hi"})
        wait_for(page, "window.looked === 1", "Look again clicked", 30)
        assert page.evaluate("window.attnSentOpened || 0") == 0


def test_while_the_server_cannot_be_asked_look_again_is_clicked_every_safety_interval(chromium):
    with headless_chromium(chromium, 800, 600) as page:
        asked = served(page, page_html(3, safety_ms=300), lambda url: None)
        wait_for(page, "window.looked >= 1", "Look again clicked by the safety timer", 30)
        # the listener asks again after its failed request on its own backoff, which on a busy host may
        # come after the safety timer's click: wait for that request (the page's own), up to 30 s
        deadline = time.monotonic() + 30
        while len(asked) < 2 and time.monotonic() < deadline:
            page.wait_for_timeout(100)  # lets Playwright serve the route meanwhile
        assert len(asked) >= 2 and page.evaluate("window.attnSentOpened || 0") == 0


def test_the_address_is_kept_at_the_teachers_page_shown(chromium):
    """``data-here``: Streamlit's front end keeps the old address after a page switch the server
    made; the listener puts the shown page's link there (a reload shows the teacher's page)."""
    with headless_chromium(chromium, 800, 600) as page:
        served(page, page_html(3, here="/app/step_through?s=Hi&t=2"), lambda url: {"version": 3, "open": True})
        wait_for(page, "location.pathname + location.search === '/app/step_through?s=Hi&t=2'", "the address set", 30)
        assert page.evaluate("[window.popstates, window.looked || 0]") == [0, 0]
