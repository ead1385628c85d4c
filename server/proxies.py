"""Whom the server believes about a visitor's address: the proxies named in ``ATTN_EXPLORER_PROXIES``
(HAProxy's ``option forwardfor``) and nobody else.
"""
from __future__ import annotations

from server import settings


def from_proxy(peer: str | None) -> bool:
    """Is ``peer`` one of the proxies in front of this server (``settings.proxies``)?"""
    return bool(peer) and peer in settings.proxies()


def client_address(peer: str | None, forwarded_for: str | None) -> str:
    """The visitor's address: the connection's peer, or, when the peer is a proxy named in
    ``ATTN_EXPLORER_PROXIES`` (HAProxy's ``option forwardfor``), the last address in
    X-Forwarded-For, the one that proxy appended (anything before it, the visitor could have
    written). A header from anyone else, this machine included, is ignored. Streamlit gives no
    peer (None) for a loopback connection: that is 127.0.0.1."""
    peer = peer or "127.0.0.1"
    if not from_proxy(peer):
        return peer
    hops = [h.strip() for h in (forwarded_for or "").split(",") if h.strip()]
    return hops[-1] if hops else peer


LOOPBACK = ("127.0.0.1", "::1")


class BelieveProxiesOnly:
    """ASGI middleware, outermost of the app's own: undoes what the server in front believed.

    uvicorn, which serves ``st.App``, rewrites a request's client address and scheme from its
    X-Forwarded-For and X-Forwarded-Proto when the connection comes from FORWARDED_ALLOW_IPS,
    read when it starts, before ``app.py`` runs: by default this machine, so that any local
    client could claim any address. Unless this machine is a proxy named in
    ``ATTN_EXPLORER_PROXIES``, a request carrying X-Forwarded-For whose client is one of the
    addresses in it is taken for what it was, a connection from this machine (a remote visitor
    who names their own address there only ends up counted as this machine), and its scheme for
    the one the server itself serves."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] in ("http", "websocket") and not any(a in settings.proxies() for a in LOOPBACK):
            headers = dict(scope.get("headers") or [])
            hosts = _named_hosts(headers.get(b"x-forwarded-for", b"").decode("latin-1"))
            client = scope.get("client")
            if client and client[0] in hosts:
                scope = {**scope, "client": ("127.0.0.1", client[1])}
            if b"x-forwarded-proto" in headers:  # the scheme this server itself serves
                from streamlit import config
                tls = bool(config.get_option("server.sslCertFile"))
                scope = {**scope, "scheme": ("wss" if tls else "ws") if scope["type"] == "websocket"
                         else ("https" if tls else "http")}
        await self.app(scope, receive, send)


def _named_hosts(forwarded_for: str) -> set[str]:
    """The hosts an X-Forwarded-For names, each as written and without a port ("1.2.3.4:80", "[::1]:80")."""
    found = set()
    for entry in (e.strip() for e in forwarded_for.split(",")):
        if entry:
            found.add(entry)
            if entry.startswith("[") and "]" in entry:
                found.add(entry[1:entry.index("]")])
            elif entry.count(":") == 1:
                found.add(entry.split(":")[0])
    return found
