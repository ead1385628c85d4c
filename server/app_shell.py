"""A page load's HTML answered from memory: the same bytes Streamlit serves, without its file reads.

Every page of the app is one HTML document, Streamlit's ``index.html`` (its front end then opens
the websocket and asks for the page's run). Streamlit answers each page load through its own
middleware and a static-files handler that looks the path up on disk, falls back to
``index.html`` and reads it, each step on a worker thread: about 6.7 ms of the server's CPU a
load on the 2-core host (``python bench/open_cost.py``), a third of what a new session costs, and
a class reloading at once pays it 200 times a process. ``AppShell``, inside the app's own
middleware (``app.py``), keeps the first answer Streamlit gives to a page load of each page path
and gives later loads of that path the same status, headers and bytes; an ``If-None-Match`` that
names its ETag gets a 304, as Starlette's static files answer it. Whatever it cannot repeat
exactly goes to Streamlit every time: another method, a request not asking for HTML, a range, a
conditional request on anything else, a path that is not a page's, an answer that is not a plain
200 (streamed, setting a cookie). Streamlit compresses the page for a browser that accepts gzip,
so an answer is kept for each path and for whether the request accepts gzip (every browser does),
and a compressed one is given only to a request that accepts it. At most ``MAX_PATHS`` answers are
kept, so paths a visitor makes up cannot grow it.
"""
from __future__ import annotations

import re

PAGE_PATH = re.compile(r"/[a-z0-9-]{0,64}")  # "/" and a page's url path (navigation.py), nothing Streamlit routes
MAX_PATHS = 64  # answers kept: the app has 15 pages, each kept twice at most; made-up paths are served as before
PASSED_ON = (b"range", b"if-modified-since", b"if-range", b"if-match", b"if-unmodified-since")


class AppShell:
    """ASGI middleware: a page load (GET asking for HTML) of a page path answered from the first
    such answer of that path (see the module)."""

    def __init__(self, app):
        self.app = app
        # (path, accepts gzip) -> status, headers, body, ETag
        self.kept: dict[tuple[str, bool], tuple[int, list, bytes, bytes | None]] = {}

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope.get("method") != "GET" or not PAGE_PATH.fullmatch(scope["path"]):
            return await self.app(scope, receive, send)
        headers = dict(scope.get("headers") or [])
        if b"text/html" not in headers.get(b"accept", b"") or any(h in headers for h in PASSED_ON):
            return await self.app(scope, receive, send)
        key = (scope["path"], b"gzip" in headers.get(b"accept-encoding", b""))
        kept = self.kept.get(key)
        if kept is None:
            return await self._keep(key, scope, receive, send)
        status, response_headers, body, etag = kept
        asked = headers.get(b"if-none-match")
        if asked is not None:
            if etag is None or etag not in (tag.strip() for tag in asked.split(b",")):
                return await self.app(scope, receive, send)
            await send({"type": "http.response.start", "status": 304,
                        "headers": [(k, v) for k, v in response_headers
                                    if k in (b"etag", b"cache-control", b"last-modified", b"vary")]})
            await send({"type": "http.response.body", "body": b""})
            return None
        await send({"type": "http.response.start", "status": status, "headers": response_headers})
        await send({"type": "http.response.body", "body": body})
        return None

    async def _keep(self, key: tuple[str, bool], scope, receive, send):
        """Pass the load on to Streamlit, and keep its answer when it can be given again as it is."""
        start, parts, plain = {}, [], [True]

        async def noting(message):
            if message["type"] == "http.response.start":
                start.update(message)
                named = {bytes(k).lower(): bytes(v).lower() for k, v in message.get("headers", [])}
                encoding = named.get(b"content-encoding")  # gzip only for a request that accepts it
                plain[0] = (message.get("status") == 200 and not message.get("trailers")
                            and not named.keys() & {b"set-cookie", b"transfer-encoding"}
                            and (encoding is None or (key[1] and encoding == b"gzip")))
            elif message["type"] == "http.response.body" and plain[0]:
                parts.append(message.get("body", b""))
                if not message.get("more_body", False):
                    self._store(key, start, b"".join(parts))
            await send(message)
        await self.app(scope, receive, noting)

    def _store(self, key: tuple[str, bool], start: dict, body: bytes) -> None:
        headers = [(bytes(k).lower(), bytes(v)) for k, v in start.get("headers", [])]
        length = dict(headers).get(b"content-length")
        if length is not None and length != str(len(body)).encode():
            return  # not the whole body: nothing kept
        if key not in self.kept and len(self.kept) >= MAX_PATHS:
            return
        self.kept[key] = (200, headers, body, dict(headers).get(b"etag"))


__all__ = ["AppShell", "MAX_PATHS", "PAGE_PATH"]
