"""The browser-session driver of ``bench/classroom.py``: one tab over Streamlit's websocket.

A ``Tab`` speaks to ``/_stcore/stream`` as the front end does: it sends ``BackMsg`` rerun
requests (the page, the URL's query string, the widget values it holds) and reads the
``ForwardMsg`` replies until the rerun ends, keeping the page as drawn (the last element at
each delta path, without element ids and transient spinners) and digesting it, so that two
runs of one lesson can be compared page by page. Behind HAProxy it keeps the replica cookie
as a browser's cookie jar does. No AppTest, no browser: ``bench/element_cost.py``,
``bench/page_cost.py`` and ``tests/test_lecture.py`` drive the server with it too.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import re
import sys
import time
import urllib.request
from pathlib import Path

from streamlit.proto.Alert_pb2 import Alert
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from server.class_store import ADJECTIVES, ANIMALS  # noqa: E402
from server.identity import STUDENT_COOKIE  # noqa: E402
from server.lecture import COOKIE as REPLICA_COOKIE  # noqa: E402

VOLATILE = ("id", "form_id", "deferred_file_id")  # element fields that name, not show, something
# a student's nickname in a class (server/class_store/, drawn at random on joining) says who, not what
# the page shows: two runs of one lesson draw different ones
NICKNAME = re.compile(("(?:" + "|".join(ADJECTIVES) + ") (?:" + "|".join(ANIMALS) + r")(?: [0-9]+)?").encode())
# a follower's wait for the teacher (and the exercise whose reveal changes its page: ui.class_session.reveal_shown)
LISTENER = re.compile(rb'(/_attn/follow\?class=[A-Z0-9]+&(?:amp;)?v=-?[0-9]+(?:&(?:amp;)?shows=[^"&]*)?)')
SIGNATURE = re.compile(rb'data-page="([0-9a-f]+)"')  # what the page shows of the class (server.follow.page_signature)
LOOK = "class_follow_look"  # the button the page's listener clicks when the teacher sends
WARM_CHART = "class_charts_warm"  # the follow panel's chart warm-up (ui/class_follow.py _warm_charts)


class Tab:
    """One browser tab: its websocket and what the front end keeps between reruns (the page,
    the URL's query string, the widget values it sends back).

    It names no cached messages (``cached_message_hashes``), so the server always sends
    elements in full; a browser would name the large ones it holds, but in this lesson no
    page repeats one within a tab, so the server would send them all anyway."""

    def __init__(self, base: str, timeout: float, sticky: bool = False, load_page: bool = False):
        self.base, self.timeout, self.sticky = base.rstrip("/"), timeout, sticky
        self.load_page = load_page  # GET the page's HTML before its socket, as a browser does (the student cookie)
        self.host = self.base.split("://", 1)[1]
        self.cookie = ""  # behind HAProxy: "ATTN_REPLICA=r1", as the browser's cookie jar holds it
        self.student = ""  # "attn_student=…": the app's anonymous student id, kept as the browser's jar keeps it
        self.path = ""  # the page's URL path, for a reconnect
        self.ws = None
        self.pages: dict[str, str] = {}  # url path -> page script hash (the navigation message)
        self.page = ""
        self.query = ""
        # the values this tab set, resent with every rerun as the front end does (it also sends
        # the untouched widgets' defaults, which the server knows already)
        self.widgets: dict[str, WidgetState] = {}
        self.keys: dict[str, str] = {}  # user key -> widget id, as drawn by the last rerun
        self.fragment_of: dict[str, str] = {}  # widget id -> the fragment it is drawn in, if any
        self.listen: str | None = None  # the follow listener's request (path and query), as the page's script holds it
        self.signature: str | None = None  # the page's signature beside its listener (data-page)
        self.timer: tuple[float, str] | None = None  # (seconds, fragment id) of an st.fragment(run_every=...)
        self.drawn = b""  # the page as last drawn, every element's bytes
        # what the browser's widgets show, by user key, as the front end keeps them: a widget drawn
        # with a value to set (set_value) shows it; one it held before (the same id) keeps its own;
        # a new one shows its default (``shown_value``)
        self.shown: dict[str, str] = {}
        self.shown_ids: dict[str, str] = {}
        self.headers: dict[str, str] = {}  # more request headers (a test's X-Forwarded-For, a teacher cookie)
        self.ssl = None  # an ssl.SSLContext for an https:// base (wss://)
        self.downloads: dict[str, str] = {}  # a download button's label -> the file id its click asks for
        self.session_id = ""  # Streamlit's id of the tab's session, as its runs name it

    async def do(self, action: tuple) -> tuple[float, str | None, str | None]:
        """Perform one action; (milliseconds, page digest, error or None)."""
        verb, target, value = action
        if verb == "reload":  # the browser's reload button: the same address, a new socket
            verb, target, value = "open", self.path, self.query
        start = time.perf_counter()
        try:
            if verb == "open":
                await self.close()
                if self.sticky or self.load_page:  # a browser loads the page first; the answer names the
                    await asyncio.to_thread(self.fetch_cookie, target)  # replica and sets the student cookie
                jar = "; ".join(c for c in (self.cookie, self.student, self.headers.get("Cookie")) if c)
                headers = {**self.headers, **({"Cookie": jar} if jar else {})} or None
                scheme = "wss" if self.base.startswith("https") else "ws"
                self.ws = await connect(f"{scheme}://{self.host}/_stcore/stream", subprotocols=["streamlit"],
                                        origin=self.base, proxy=None, max_size=None, additional_headers=headers,
                                        **({"ssl": self.ssl} if self.ssl else {}),
                                        ping_interval=None, open_timeout=self.timeout)  # as browsers: deflate, no pings
                self.page, self.query, self.widgets, self.path = "", value, {}, target
                await self.send(page_name=target)  # a first load names its page by URL path
            elif verb in ("goto", "history"):  # a page link carrying query parameters, as a shared link does;
                # "history": the page's listener opening the teacher's page, as the Back button opens one
                self.page, self.query, self.path = self.pages[target], value, target
                # a browser resends navigation.py's own widgets (the class panel's) with a page change;
                # these tabs set none of them, and the session keeps their values by key
                self.widgets = {}
                await self.send(history=verb == "history")
            else:
                if target not in self.keys:
                    return 0.0, None, f"no widget {target!r} on the page"
                state = WidgetState(id=self.keys[target])
                if verb == "click":
                    state.trigger_value = True  # a button: true for this one rerun, never resent
                elif isinstance(value, bool):
                    state.bool_value = value  # a toggle, or an expander opened (st.expander(on_change=...))
                elif isinstance(value, str):
                    state.string_value = value
                else:
                    state.double_array_value.data.append(value)  # a slider's value
                if verb != "click":
                    self.widgets[state.id] = state
                # a widget inside an st.fragment reruns that fragment alone, as the front end asks
                fragment = self.fragment_of.get(state.id, "")
                await self.send(fragment_id=fragment, extra=[state] if verb == "click" else [])
                if verb == "drop":
                    await self.close()
                    return 1000 * (time.perf_counter() - start), None, None
                digest, error = await asyncio.wait_for(self.rerun_end(fragment), self.timeout)
                return 1000 * (time.perf_counter() - start), digest, error
            digest, error = await asyncio.wait_for(self.rerun_end(), self.timeout)
            if verb == "open" and target in self.pages:  # a page opened by its path: later reruns name it
                self.page = self.pages[target]
        except TimeoutError:
            digest, error = None, "timeout"
        except (ConnectionClosed, OSError) as e:
            digest, error = None, f"disconnect ({type(e).__name__})"
        return 1000 * (time.perf_counter() - start), digest, error

    async def send(self, page_name: str = "", fragment_id: str = "", extra: list | None = None,
                   history: bool = False) -> None:
        msg = BackMsg()
        state = msg.rerun_script  # the ClientState the front end's sendRerunBackMsg builds
        state.query_string = self.query
        state.is_history_navigation = history
        state.fragment_id = fragment_id
        state.page_script_hash = self.page
        state.page_name = page_name
        state.widget_states.widgets.extend(self.widgets.values())
        state.widget_states.widgets.extend(extra or [])
        info = state.context_info
        info.timezone, info.timezone_offset, info.locale, info.color_scheme = "Europe/Paris", -60, "en-GB", "light"
        info.url = f"{self.base}/{page_name}?{self.query}"
        await self.ws.send(msg.SerializeToString())

    async def rerun_end(self, fragment: str = "") -> tuple[str, str | None]:
        """Read until the rerun finishes; (digest of the page as drawn, error or None). A
        fragment's rerun redraws that fragment only: the digest is of what it drew."""
        shown: dict[tuple, bytes] = {}  # delta path -> the element last drawn there, as compared
        raw: dict[tuple, bytes] = {}  # … as sent
        ids: dict[str, str] = {}  # element id -> its user key ("" if none)
        fragments: dict[str, str] = {}  # element id -> its fragment id
        values: dict[str, tuple] = {}  # element id -> (set_value, value, default) of a widget drawn
        error = None
        while True:
            msg = ForwardMsg.FromString(await self.ws.recv())
            kind = msg.WhichOneof("type")
            if kind == "new_session":  # a run starts: the page is drawn afresh
                self.page = msg.new_session.page_script_hash
                self.session_id = msg.new_session.initialize.session_id or self.session_id
                shown.clear()
                raw.clear()
                ids.clear()
                if not msg.metadata.run.fragment_ids:  # a whole run, or a fragment that switched page
                    fragment = ""  # (following the teacher): the whole page is new
                self.path = next((path for path, h in self.pages.items() if h == self.page), self.path)
            elif kind == "navigation":
                self.pages = {p.url_pathname: p.page_script_hash for p in msg.navigation.app_pages}
            elif kind == "page_info_changed":  # the app rewrote the URL (st.query_params)
                self.query = msg.page_info_changed.query_string
            elif kind == "delta":
                if msg.delta.new_element.WhichOneof("type") == "download_button":  # its id, before draw() drops it
                    button = msg.delta.new_element.download_button
                    self.downloads[button.label] = button.deferred_file_id
                error = draw(msg, shown, ids, fragments, raw, values) or error
            elif kind == "auto_rerun":  # the browser's timer for a run_every fragment (a refused tab's panel)
                self.timer = (msg.auto_rerun.interval, msg.auto_rerun.fragment_id)
            elif kind == "page_not_found":
                error = "page not found"
            elif kind == "script_finished" and msg.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                if msg.script_finished == ForwardMsg.FINISHED_WITH_COMPILE_ERROR:  # its details come after
                    error = "the script did not compile"
                break  # a run stopped early for a newer one is followed by that one
        drawn = {key: wid for wid, key in ids.items() if key}
        if fragment:  # the rest of the page stands as it was
            self.keys.update(drawn)
            self.fragment_of.update(fragments)
        else:
            self.keys, self.fragment_of = drawn, fragments
            self.widgets = {wid: s for wid, s in self.widgets.items() if wid in ids}  # the front end drops stale widgets
        for key, wid in drawn.items():
            if wid in values:
                set_value, value, default = values[wid]
                self.shown[key] = value if set_value else (
                    self.shown.get(key) if self.shown_ids.get(key) == wid else default)
                self.shown_ids[key] = wid
        page = hashlib.sha256()
        for path, body in sorted(shown.items()):
            if LISTENER.search(body):  # a follower's listener (the version it waits past, the address it
                body = b"follow listener"  # keeps) is the same page, fresh or followed
            page.update(repr(path).encode() + body)
        self.drawn = b"".join(body for _, body in sorted(raw.items()))  # a fragment's run: what it drew
        listening = LISTENER.findall(self.drawn)
        signed = SIGNATURE.findall(self.drawn)
        if listening or not fragment:  # the listener stands outside a fragment, as it was
            self.listen = listening[-1].decode().replace("&amp;", "&") if listening else None
            self.signature = signed[-1].decode() if signed else None
        return page.hexdigest()[:16], error

    async def download(self, label: str) -> bytes:
        """What a click on the download button ``label`` gives, as the front end asks for a file made
        when clicked: the server runs its callable and answers the file's address, then a GET."""
        msg = BackMsg()
        msg.backend_operation_request.request_id = request_id = f"download-{label}"
        msg.backend_operation_request.session_id = self.session_id
        msg.backend_operation_request.deferred_file.file_id = self.downloads[label]
        await self.ws.send(msg.SerializeToString())
        while True:
            answer = ForwardMsg.FromString(await asyncio.wait_for(self.ws.recv(), self.timeout))
            if answer.WhichOneof("type") == "backend_operation_response" \
                    and answer.backend_operation_response.request_id == request_id:
                break
        url = answer.backend_operation_response.deferred_file.url
        if not url:
            raise RuntimeError(f"no file for {label!r}: {answer.backend_operation_response.error_msg}")
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        return await asyncio.to_thread(lambda: opener.open(self.base + url, timeout=self.timeout).read())

    def fetch_cookie(self, path: str) -> None:
        """GET the page's HTML through the proxy, keeping the replica cookie it sets (or the one
        it sets anew when the replica named by the old cookie is gone)."""
        jar = "; ".join(c for c in (self.cookie, self.student, self.headers.get("Cookie")) if c)
        request = urllib.request.Request(f"{self.base}/{path}", headers={**self.headers, "Accept": "text/html",
                                                                         **({"Cookie": jar} if jar else {})})
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}),
                                             *([urllib.request.HTTPSHandler(context=self.ssl)] if self.ssl else []))
        with opener.open(request, timeout=self.timeout) as response:
            for header in response.headers.get_all("Set-Cookie") or []:
                pair = header.split(";", 1)[0].strip()
                if pair.startswith(REPLICA_COOKIE + "="):
                    self.cookie = pair
                elif pair.startswith(STUDENT_COOKIE + "="):
                    self.student = pair

    def wait_past(self, version: int) -> None:
        """What the listener does when an answer leaves its page as it is (the same signature): it
        waits past the new version, with no rerun (ui/follow_listener.js)."""
        self.listen = re.sub(r"([?&]v=)-?[0-9]+", rf"\g<1>{int(version)}", self.listen or "")

    async def wait_for_change(self, timeout: float = 60.0) -> dict | None:
        """What the page's follow listener does: hold ``/_attn/follow`` open until the server answers
        (the class changed, or its wait ran out); the JSON answer, or None on a failure. Plain
        HTTP/1.1 on the event loop (:func:`http_get`), so hundreds of tabs wait without a thread each."""
        if not self.listen:
            return None
        jar = "; ".join(c for c in (self.cookie, self.student) if c)
        status, answer = await http_get(self.base, self.listen, jar, timeout)
        return answer if status == 200 else None

    @property
    def replica(self) -> str:
        return self.cookie.split("=", 1)[1] if self.cookie else ""

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()
            self.ws = None


async def http_get(base: str, path: str, cookie: str = "", timeout: float = 60.0) -> tuple[int, dict]:
    """One GET over a connection of its own, plain HTTP/1.1 on the event loop: (status, JSON answer
    or {}); status 0 when it failed or ran past ``timeout``."""
    host = base.split("://", 1)[1].rstrip("/")
    name, _, port = host.partition(":")
    request = (f"GET {path} HTTP/1.1\r\nHost: {host}\r\nAccept: application/json\r\n"
               + (f"Cookie: {cookie}\r\n" if cookie else "") + "Connection: close\r\n\r\n")
    writer = None
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(name, int(port or 80)), timeout)
        writer.write(request.encode())
        answer = await asyncio.wait_for(reader.read(), timeout)
        head, _, body = answer.partition(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        try:
            return status, json.loads(body) if body else {}
        except ValueError:
            return status, {}
    except (OSError, TimeoutError, ValueError, IndexError):
        return 0, {}
    finally:
        if writer is not None:
            writer.close()


def shown_value(part) -> tuple | None:
    """(set_value, value, default) of a widget's element, as text: what the front end shows of it
    (a segmented control's or radio's option labels, a number box's number); None for others."""
    fields = part.DESCRIPTOR.fields_by_name
    if "set_value" not in fields or "default" not in fields:
        return None
    options = [getattr(o, "content", o) for o in part.options] if "options" in fields else []

    def text(value) -> str:
        if hasattr(value, "__len__") and not isinstance(value, str):
            return ",".join(str(options[i]) if options and isinstance(i, int) and 0 <= i < len(options) else str(i)
                            for i in value)
        if isinstance(value, float) and value.is_integer():
            return str(int(value))
        return str(value)
    now = ",".join(part.raw_values) if "raw_values" in fields else text(getattr(part, "value", None))
    return bool(part.set_value), now, text(part.default)


def draw(msg: ForwardMsg, shown: dict, ids: dict, fragments: dict, raw: dict | None = None,
         values: dict | None = None) -> str | None:
    """Record one delta in the page as drawn (``raw``: as sent; ``shown``: as compared, without what
    names rather than shows: element ids, a student's nickname; ``values``: each widget's
    :func:`shown_value` by element id); returns an error the element shows, if any."""
    what = msg.delta.WhichOneof("type")
    if what not in ("new_element", "add_block"):  # transients: spinners, shown or not by timing
        return None
    body = getattr(msg.delta, what)
    element = body.WhichOneof("type") if what == "new_element" else None
    part = getattr(body, element) if element else body
    user_key = ""
    if "id" in part.DESCRIPTOR.fields_by_name and part.id:  # "$$ID-<hash>-<user key, or None>"
        key = part.id.split("-", 2)[-1] if part.id.startswith("$$ID-") else "None"
        ids[part.id] = user_key = "" if key == "None" else key
        if msg.delta.fragment_id:
            fragments[part.id] = msg.delta.fragment_id
        value = shown_value(part) if values is not None else None
        if value is not None:
            values[part.id] = value
    for name in VOLATILE:
        if name in part.DESCRIPTOR.fields_by_name:
            part.ClearField(name)
    if raw is not None:
        raw[tuple(msg.metadata.delta_path)] = body.SerializeToString(deterministic=True)
    if user_key == WARM_CHART:
        return None  # drawn on a tab's first following run only, the panel's last element: not the page's content
    if isinstance(getattr(part, "body", None), str) and NICKNAME.search(part.body.encode()):
        part.body = NICKNAME.sub(b"(nickname)", part.body.encode()).decode()
    shown[tuple(msg.metadata.delta_path)] = body.SerializeToString(deterministic=True)
    if element == "exception":
        return f"exception: {part.type}: {part.message[:120]}"
    if element == "alert" and part.format == Alert.ERROR:
        return f"st.error: {part.body[:120]}"
    return None
