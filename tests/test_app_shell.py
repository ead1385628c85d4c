"""server/app_shell.py: a page load's HTML given again from memory, byte for byte as Streamlit first
answered it; everything it cannot repeat exactly goes to Streamlit."""
from __future__ import annotations

import asyncio

from server.app_shell import AppShell, MAX_PATHS

PAGE = b"<!doctype html><title>Streamlit</title>" * 20
HEADERS = [(b"content-type", b"text/html; charset=utf-8"), (b"content-length", str(len(PAGE)).encode()),
           (b"etag", b'"abc"'), (b"cache-control", b"no-cache")]


class Streamlit:
    """What the app's inner stack would answer: the page, or what ``answer`` says; counts its calls."""

    def __init__(self, headers=HEADERS, status=200, chunks=(PAGE,)):
        self.calls, self.headers, self.status, self.chunks = [], headers, status, chunks

    async def __call__(self, scope, receive, send):
        self.calls.append(scope["path"])
        await send({"type": "http.response.start", "status": self.status, "headers": list(self.headers)})
        for i, chunk in enumerate(self.chunks):
            await send({"type": "http.response.body", "body": chunk, "more_body": i < len(self.chunks) - 1})


def load(app, path="/exercises", method="GET", accept=b"text/html,application/xhtml+xml", **more):
    sent = []

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message):
        sent.append(message)
    headers = [(b"accept", accept), *[(k.replace("_", "-").encode(), v) for k, v in more.items()]]
    asyncio.run(app({"type": "http", "method": method, "path": path, "headers": headers}, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    return start["status"], start["headers"], b"".join(m.get("body", b"") for m in sent[1:])


def test_a_page_load_is_given_again_as_streamlit_first_answered_it():
    inner = Streamlit()
    shell = AppShell(inner)
    first = load(shell)
    assert first == (200, HEADERS, PAGE)
    assert load(shell) == first and load(shell) == first
    assert inner.calls == ["/exercises"]  # asked once
    assert load(shell, "/")[2] == PAGE and inner.calls == ["/exercises", "/"]  # each path its own first answer
    status, headers, body = load(shell, if_none_match=b'"old", "abc"')  # a reload that has the page
    assert (status, body) == (304, b"") and (b"etag", b'"abc"') in headers
    assert inner.calls == ["/exercises", "/"]


def test_what_it_cannot_repeat_goes_to_streamlit_every_time():
    inner = Streamlit()
    shell = AppShell(inner)
    load(shell)
    for request in ({"method": "HEAD"}, {"accept": b"*/*"}, {"range": b"bytes=0-10"},
                    {"if_modified_since": b"Sun, 29 Nov 2026 08:19:54 GMT"}, {"if_none_match": b'"other"'},
                    {"path": "/_stcore/health"}, {"path": "/static/js/main.js"}, {"path": "/a/b"},
                    {"path": "/Exercises"}):
        calls = len(inner.calls)
        load(shell, **request)
        assert len(inner.calls) == calls + 1, request
    for answer in (Streamlit(status=404), Streamlit(headers=[*HEADERS, (b"set-cookie", b"s=1")]),
                   Streamlit(headers=[*HEADERS, (b"content-encoding", b"gzip")]),  # to a request without gzip
                   Streamlit(headers=[*HEADERS, (b"content-encoding", b"br")]),
                   Streamlit(chunks=(PAGE[:10],))):  # shorter than its content-length
        shell = AppShell(answer)
        load(shell)
        load(shell)
        assert answer.calls == ["/exercises", "/exercises"]


def test_a_compressed_page_is_given_to_requests_that_accept_it_only():
    inner = Streamlit(headers=[*HEADERS, (b"content-encoding", b"gzip")])
    shell = AppShell(inner)
    gzip = {"accept_encoding": b"gzip, deflate, br"}
    assert load(shell, **gzip) == load(shell, **gzip) == (200, inner.headers, PAGE)
    assert inner.calls == ["/exercises"]
    load(shell)  # no gzip: Streamlit's own answer (compressed here, so never kept for such requests)
    load(shell)
    assert inner.calls == ["/exercises"] * 3
    plain = Streamlit()
    shell = AppShell(plain)
    load(shell)
    assert load(shell, **gzip) == (200, HEADERS, PAGE) and plain.calls == ["/exercises", "/exercises"]


def test_a_long_answer_in_parts_is_kept_whole_and_made_up_paths_are_bounded():
    inner = Streamlit(chunks=(PAGE[:100], PAGE[100:]))
    shell = AppShell(inner)
    assert load(shell)[2] == PAGE and load(shell)[2] == PAGE and inner.calls == ["/exercises"]
    for i in range(MAX_PATHS + 10):
        load(shell, f"/made-up-{i}")
    assert len(shell.kept) == MAX_PATHS
