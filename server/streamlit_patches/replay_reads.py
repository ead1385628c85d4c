"""What a rerun's key reads of its session, outside a run (``replay.py``): the page it asks for,
the cookies and the address of the request that opened its socket, the browser's context."""
from __future__ import annotations


def page_path(session, client_state) -> str | None:
    """The URL path of the page the rerun asks for ("" the default page; None: not one the app
    has named). Before the session's first run no page is named yet: the path the browser asks
    for, which the policy checks against its own pages."""
    pages = session._pages_manager.get_pages()  # before the first run: the main script alone, with no path
    first = all("url_pathname" not in info for info in pages.values())
    if client_state.page_script_hash:
        info = pages.get(client_state.page_script_hash)
        return info.get("url_pathname") if info else None
    named = {info.get("url_pathname") for info in pages.values()}
    return client_state.page_name if first or client_state.page_name in named or not client_state.page_name else None


def cookies_of(session) -> dict:
    """The cookies of the request that opened the session's socket (what ``st.context.cookies`` reads)."""
    from streamlit import runtime
    client = runtime.get_instance().get_client(session.id)
    context = getattr(client, "client_context", None)
    return dict(context.cookies) if context is not None else {}


def visitor_of(session) -> tuple[str | None, str | None]:
    """(the peer address of the session's socket, None for this machine; its request's last
    X-Forwarded-For header): what ``st.context.ip_address`` and ``st.context.headers`` read."""
    from streamlit import runtime
    context = getattr(runtime.get_instance().get_client(session.id), "client_context", None)
    if context is None:
        return None, None
    forwarded = [value for name, value in context.headers if name.lower() == "x-forwarded-for"]
    peer = context.remote_ip
    return (None if peer in ("::1", "127.0.0.1") else peer), (forwarded[-1] if forwarded else None)


def context_of(session, client_state):
    """The browser's context (its address, time zone, locale…) as the run would have it: the
    request's, else the one the session last had (Streamlit keeps it so)."""
    return client_state.context_info if client_state.HasField("context_info") else session._client_state.context_info
