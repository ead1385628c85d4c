"""The teacher's cookie is a session, not the key (server/identity.py, server/limits.py, the
class store's ``teacher_sessions``), through real servers: one process on a SQLite store with a
generated key, and a one-replica HAProxy lecture serving HTTPS. A ticket works once and only
from the server's own pages; *Sign out* ends every copy of the cookie; a cookie cannot make a
new key; wrong keys from the teacher's own address do not keep the right one out, and
``clear_cache`` resets no count; under TLS every cookie is Secure and HSTS is sent; a visitor's
own X-Forwarded-For is rewritten by HAProxy."""
from __future__ import annotations

import asyncio
import os
import re
import ssl
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request

import pytest

from helpers.lecture import load_bench, ready

bench = load_bench()
TICKET = re.compile(rb'encodeURIComponent\("([A-Z2-9]{6}\.[0-9]+\.ts-[0-9a-f]{32}\.[0-9a-f]{32})"\)')
TEACHER_VIEW = "the answers, live"  # what only the class's teacher sees on Exercises
JOINS = 10  # joins per address and minute on the one-process server


@pytest.fixture(scope="module")
def server(tiny_zoo, tmp_path_factory):
    """One process on a SQLite store of its own, with a generated key (so that *New key* works)."""
    from server.class_store import ClassStore
    folder = tmp_path_factory.mktemp("session-store")
    env = {"ATTN_EXPLORER_CHECKPOINTS": str(tiny_zoo), "OMP_NUM_THREADS": "1", "ATTN_EXPLORER_CLASS_DB": "",
           "ATTN_EXPLORER_CLASS_DIR": str(folder), "ATTN_EXPLORER_TEACHER_KEY": "", "ATTN_EXPLORER_PROXIES": "",
           "ATTN_EXPLORER_JOINS_PER_MINUTE": str(JOINS)}
    store = ClassStore(f"sqlite:///{folder / 'classes.sqlite3'}")
    with bench.server(None, env=env) as target:
        yield target.base, store
    store.engine.dispose()


def post(base: str, path: str, data: dict | None = None, origin: str | None = "", cookie: str = "",
         context: ssl.SSLContext | None = None) -> tuple[int, list[str]]:
    """A POST as a page's fetch sends it: (status, Set-Cookie headers). ``origin`` "" means the
    server's own; None sends none."""
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    if origin is not None:
        headers["Origin"] = origin or base
    if cookie:
        headers["Cookie"] = cookie
    request = urllib.request.Request(base + path, data=urllib.parse.urlencode(data or {}).encode(), headers=headers)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}),
                                         *([urllib.request.HTTPSHandler(context=context)] if context else []))
    try:
        with opener.open(request, timeout=30) as response:
            return response.status, response.headers.get_all("Set-Cookie") or []
    except urllib.error.HTTPError as e:
        return e.code, []


def tab(base: str, cookie: str = "", context: ssl.SSLContext | None = None):
    t = bench.Tab(base, 120, load_page=True)
    t.ssl = context
    if cookie:
        t.headers = {"Cookie": cookie}
    return t


async def sign_in(t, code: str, key: str) -> str:
    """Type the key into the class panel of the class link's page (opened once per tab, the panel
    opened by a click on its title) and press *Sign in*."""
    opening = [("open", "exercises", f"ex=step&seed=0&class={code}")] if t.ws is None else []
    for action in (*opening, ("set", "class_panel", True), ("set", "class_key_box", key),
                   ("click", "class_sign_in", True)):
        _, _, error = await t.do(action)
        assert error is None, (action, error)
    return t.drawn.decode("utf-8", "replace")


async def is_teacher(t, code: str) -> bool:
    _, _, error = await t.do(("open", "exercises", f"ex=step&seed=0&class={code}"))
    assert error is None, error
    return TEACHER_VIEW in t.drawn.decode("utf-8", "replace")


def teacher_cookie(headers: list[str]) -> str:
    pair = next(h for h in headers if h.startswith("attn_teacher="))
    assert "HttpOnly" in pair and "SameSite=Strict" in pair
    return pair.split(";", 1)[0]


def test_a_ticket_works_once_from_this_server_and_sign_out_ends_every_copy(server):
    base, store = server
    key = store.teacher_key()
    code = store.open_class(key).code

    async def lesson():
        teacher = tab(base)
        drawn = await sign_in(teacher, code, key)
        assert TEACHER_VIEW in drawn and key not in drawn and key not in teacher.query
        ticket = TICKET.search(teacher.drawn)[1].decode()
        assert post(base, "/_attn/teacher", {"ticket": ticket}, origin="http://evil.example:8501")[0] == 403
        assert post(base, "/_attn/teacher", {"ticket": ticket}, origin=None)[0] == 403
        status, headers = post(base, "/_attn/teacher", {"ticket": ticket})
        assert status == 200
        cookie = teacher_cookie(headers)
        assert post(base, "/_attn/teacher", {"ticket": ticket})[0] == 403  # replayed: refused
        other = store.open_class(key).code
        assert post(base, "/_attn/teacher", {"ticket": other + ticket[6:]})[0] == 403  # another class's
        assert post(base, "/_attn/teacher", {"ticket": ticket[:-1] + "0"})[0] == 403  # forged
        copy = tab(base, cookie)
        assert await is_teacher(copy, code)  # a reload, another tab: the teacher of this class
        assert not await is_teacher(tab(base, cookie), other)  # and of no other
        assert post(base, "/_attn/sign-out", cookie=cookie, origin="http://evil.example:8501")[0] == 403
        assert await is_teacher(tab(base, cookie), code)  # the cross-site POST changed nothing
        _, _, error = await teacher.do(("click", "class_sign_out", True))
        assert error is None
        assert not await is_teacher(tab(base, cookie), code)  # the copy ends with the sign-out
        for t in (teacher, copy):
            await t.close()
    asyncio.run(lesson())


def test_the_sign_out_route_ends_the_session_in_the_store(server):
    from server import identity
    base, store = server
    key = store.teacher_key()
    code = store.open_class(key).code
    token = store.start_teacher_session(key, code, identity.TICKET_SECONDS)
    status, headers = post(base, "/_attn/teacher", {"ticket": identity.teacher_ticket(store.cookie_secret(), token, code)})
    cookie = teacher_cookie(headers)
    assert status == 200 and store.teacher_session_class(token) == code
    status, headers = post(base, "/_attn/sign-out", cookie=cookie)
    assert status == 200 and any(h.startswith("attn_teacher=;") for h in headers)
    assert store.teacher_session_class(token) is None
    assert not asyncio.run(is_teacher(tab(base, cookie), code))


def test_new_key_needs_the_key_not_the_cookie(server):
    from server import identity
    base, store = server
    key = store.teacher_key()
    code = store.open_class(key).code
    token = store.start_teacher_session(key, code, identity.TICKET_SECONDS)
    cookie = teacher_cookie(post(base, "/_attn/teacher",
                                 {"ticket": identity.teacher_ticket(store.cookie_secret(), token, code)})[1])

    async def try_new_key():
        t = tab(base, cookie)
        assert await is_teacher(t, code)
        for typed in ("", "a-wrong-key-of-some-length"):
            for action in (("set", "class_new_key_current", typed), ("click", "class_new_key", True)):
                _, _, error = await t.do(action)
                assert error is None, error
            assert "new key needs it" in t.drawn.decode("utf-8", "replace")
        await t.close()
    asyncio.run(try_new_key())
    assert store.teacher_key() == key and store.is_teacher(key)


def test_wrong_keys_from_the_teachers_address_do_not_keep_the_right_key_out(server):
    """Six tabs type 30 wrong keys from one address (the teacher's): each waits after its five
    (the address is busy now), and a tab that errs once more waits at once; a waiting tab's right
    key is not even checked, and 200 clear_cache messages from it neither reload the models nor
    reset its count. The teacher's own tab, which sent no wrong key, signs in at its first try."""
    from streamlit.proto.BackMsg_pb2 import BackMsg
    base, store = server
    key = store.teacher_key()
    code = store.open_class(key).code

    async def room():
        pranksters = [tab(base) for _ in range(6)]
        for t in pranksters:
            for n in range(5):
                said = await sign_in(t, code, f"guess-number-{n:04d}-x")
                # wrong, or (the address busy with others' wrong keys, other tests' among them) a wait
                assert "not the teacher key" in said or "Too many wrong keys" in said, said[-300:]
        clear = BackMsg()
        clear.clear_cache = True
        for _ in range(200):
            await pranksters[0].ws.send(clear.SerializeToString())
        said = await sign_in(pranksters[0], code, key)  # the right key, from a tab that used its tries
        assert "Too many wrong keys" in said and TEACHER_VIEW not in said
        late = tab(base)
        assert "not the teacher key" in await sign_in(late, code, "one-more-wrong-guess")  # its first: checked
        assert "Too many wrong keys" in await sign_in(late, code, key)  # a busy address: one try a minute a tab
        teacher = tab(base)
        assert TEACHER_VIEW in await sign_in(teacher, code, key)
        for t in (*pranksters, late, teacher):
            await t.close()
    asyncio.run(room())
    assert ready(base) == 1


def test_on_one_process_a_local_visitors_x_forwarded_for_is_ignored(server):
    """No proxy named: a visitor on this machine writing X-Forwarded-For is still 127.0.0.1 (uvicorn
    would believe it from loopback by default), so the joins-a-minute limit holds."""
    base, store = server
    code = store.open_class(store.teacher_key()).code

    async def joins():
        pages = []
        for k in range(JOINS + 1):
            t = tab(base)
            t.headers = {"X-Forwarded-For": f"198.51.100.{k}", "X-Forwarded-Proto": "https"}
            _, _, error = await t.do(("open", "exercises", f"ex=step&seed=0&class={code}"))
            assert error is None, error
            pages.append(t.drawn.decode("utf-8", "replace"))
            await t.close()
        return pages
    pages = asyncio.run(joins())
    assert "within the last minute" in pages[-1] and store.class_counts(store.teacher_key(), code).joined == JOINS
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    page = opener.open(urllib.request.Request(base + "/", headers={"Accept": "text/html", "X-Forwarded-Proto": "https"}),
                       timeout=60)
    student = next(h for h in page.headers.get_all("Set-Cookie") if h.startswith("attn_student="))
    assert "Secure" not in student  # nor is a plain http request taken for HTTPS on its word


# -- HTTPS through HAProxy ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tls_lecture(tiny_zoo, tmp_path_factory):
    """A one-replica lecture over HTTPS (scripts/serve.py's machinery), a SQLite store with a known
    key, five joins a minute per address."""
    from server.class_store import ClassStore
    from server.lecture import haproxy_binary, Lecture
    from helpers.lecture import self_signed
    assert haproxy_binary(), "haproxy is missing: scripts/test.sh installs it"
    folder = tmp_path_factory.mktemp("tls-lecture")
    cert, key_file = self_signed(folder)
    key = "tls-lecture-teacher-key"
    env = {**os.environ, "ATTN_EXPLORER_CHECKPOINTS": str(tiny_zoo), "ATTN_EXPLORER_CLASS_DB": "",
           "ATTN_EXPLORER_CLASS_DIR": str(folder / "store"), "ATTN_EXPLORER_TEACHER_KEY": key,
           "ATTN_EXPLORER_JOINS_PER_MINUTE": "5"}
    env.pop("ATTN_EXPLORER_PROXIES", None)  # the lecture names its own HAProxy
    hall = Lecture(replicas=1, port=bench.free_port(), address="127.0.0.1", env=env, tls_cert=cert, tls_key=key_file,
                   say=lambda m: print(m, file=sys.stderr))
    store = ClassStore(f"sqlite:///{folder / 'store' / 'classes.sqlite3'}", teacher_key=key)
    try:
        hall.start()
        hall.wait_healthy()
        yield f"https://127.0.0.1:{hall.port}", ssl.create_default_context(cafile=str(cert)), store, key
    finally:
        hall.stop()
        store.engine.dispose()


def test_under_tls_every_cookie_is_secure_and_hsts_is_sent(tls_lecture):
    base, context, store, key = tls_lecture
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=context))
    with opener.open(urllib.request.Request(base + "/", headers={"Accept": "text/html"}), timeout=60) as page:
        cookies = {h.split("=", 1)[0]: h for h in page.headers.get_all("Set-Cookie")}
        assert page.headers["Strict-Transport-Security"].startswith("max-age=")
    assert {"ATTN_REPLICA", "attn_student"} <= set(cookies)
    for header in cookies.values():
        assert "Secure" in header.split(";", 1)[1] and re.search("httponly", header, re.I), header
    from server import identity
    code = store.open_class(key).code
    ticket = identity.teacher_ticket(store.cookie_secret(), store.start_teacher_session(key, code, 120), code)
    status, headers = post(base, "/_attn/teacher", {"ticket": ticket}, context=context)
    assert status == 200 and teacher_cookie(headers) and "; Secure" in next(h for h in headers if "attn_teacher" in h)
    assert post(base, "/_attn/teacher", {"ticket": ticket}, context=context)[0] == 403


def test_a_visitors_own_x_forwarded_for_is_rewritten_by_haproxy(tls_lecture):
    """Six new ids, each claiming another address in X-Forwarded-For: HAProxy writes the real one
    (127.0.0.1), so the five-a-minute limit on joins from one address holds."""
    base, context, store, key = tls_lecture
    code = store.open_class(key).code

    async def join(k: int) -> str:
        t = tab(base, context=context)
        t.headers = {"X-Forwarded-For": f"203.0.113.{k}"}
        _, _, error = await t.do(("open", "exercises", f"ex=step&seed=0&class={code}"))
        await t.close()
        assert error is None, error
        return t.drawn.decode("utf-8", "replace")

    async def six():
        return [await join(k) for k in range(6)]
    pages = asyncio.run(six())
    assert sum("within the last minute" in p for p in pages) == 1 and store.class_counts(key, code).joined == 5


def test_the_launcher_tells_a_backend_to_believe_the_proxy_only(monkeypatch, capsys):
    out = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, 'scripts'); import serve; "
                          "print(serve.backend_recipe(['10.0.0.12:8501'], 20)[0])"],
                         capture_output=True, text=True, cwd=bench.ROOT, timeout=60)
    assert "ATTN_EXPLORER_PROXIES=(this machine's address)" in out.stdout, out.stderr
