"""Who a page run is for, as the server's shares count visitors: by address, then by the student id
a class knows (the signed ``attn_student`` cookie), never by the browser session alone, which a
script makes anew for nothing. Every session of one address without a valid student id shares one
turn (``server/limits.py``'s slots, ``server/lanes.py``'s costly lane)."""
from __future__ import annotations


def visitor() -> tuple[str, str] | None:
    """(address, student id or "") of this script run's visitor, or None outside a browser's session."""
    from server.streamlit_patches.reads import session_requests
    if not session_requests()[0]:  # a server thread, or AppTest: no visitor
        return None
    import streamlit as st
    from server.proxies import client_address
    address = client_address(st.context.ip_address, st.context.headers.get("X-Forwarded-For"))
    return address, student(st.context.cookies)


def student(cookies) -> str:
    """The signed student id of the visitor's cookie, "" without a valid one (then the address alone counts)."""
    from server import identity
    value = cookies.get(identity.STUDENT_COOKIE)
    if not value:
        return ""
    try:
        from server.class_store import class_store
        return identity.student_id(class_store().cookie_secret(), value) or ""
    except Exception:  # noqa: BLE001 - a store that is down: the address alone counts
        return ""


def turn(session: str) -> str:
    """The key a visitor's turn in a queue goes by: "address|student" (the address alone, "address|",
    for every session of it without a student id); the session outside a browser's session."""
    who = visitor()
    return f"{who[0]}|{who[1]}" if who is not None else session
