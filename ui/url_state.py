"""The page's state in its URL (``?text=…&model=…``), so a teacher can share a link.

Every parameter a page reads is bounded: ``int_param`` and ``names_param`` turn a number out of
range or a list too long into the default and a clear message, never an error.

Torch-free on purpose: ``navigation.py`` draws the class panel (``class_panel``) on the first
visit while the server's warm-up thread is still importing torch (``server/loading.py``)."""
from __future__ import annotations

import streamlit as st


def query_param(name: str, default: str | None = None) -> str | None:
    value = st.query_params.get(name)
    return value if value not in (None, "") else default


def set_query_params(**values) -> None:
    """Keep the current choices in the URL so a teacher can share a link."""
    for k, v in values.items():
        if v is None or v == "":
            st.query_params.pop(k, None)
        elif st.query_params.get(k) != str(v):
            st.query_params[k] = str(v)


def int_param(name: str, default: int, low: int, high: int, clamp: bool = False, past_high: int | None = None) -> int:
    """The link's whole number ``?name=`` within [low, high]; anything else (not a number, out of
    range, megabytes of digits) gives ``default`` (or, with ``clamp``, a number out of range the
    nearest bound, or ``past_high`` above it) and a message naming the bounds. The value itself
    is not echoed: a link's text is the visitor's."""
    raw = query_param(name)
    if raw is None:
        return default
    raw = str(raw).strip()
    value = int(raw) if len(raw) <= 12 and raw.lstrip("-").isdigit() and raw.count("-") <= 1 else None
    if value is not None and low <= value <= high:
        return value
    shown = default
    if clamp and value is not None:
        shown = low if value < low else (high if past_high is None else past_high)
    st.warning(f"The link's `{name}` is not a whole number from {low:,} to {high:,}: showing {shown} instead.",
               icon=":material/link_off:")
    return shown


def names_param(name: str, known, most: int) -> list[str]:
    """The link's comma-separated ``?name=`` as known names, each once, at most ``most`` of them;
    a message says what was left out (unknown names, repeats, more than ``most``)."""
    given = [n.strip() for n in str(query_param(name) or "")[:4000].split(",") if n.strip()]
    chosen = list(dict.fromkeys(n for n in given if n in known))
    unknown = sum(n not in known for n in given)
    repeats = len(given) - unknown - len(chosen)
    left = [f"{unknown} unknown left out"] * bool(unknown) + [f"{repeats} repeated"] * bool(repeats)
    left += [f"at most {most} are shown, the first {most} kept"] * (len(chosen) > most)
    if left:
        st.warning(f"The link's `{name}` names {len(given)} item(s): {'; '.join(left)}.", icon=":material/link_off:")
    return chosen[:most]


LINKED = "url_state_linked"  # widget key -> the runs left in which its link value is set again
RESENT_RUNS = 8  # a click during the page's first runs (a slow first run, a sign-in) sends a few reruns


def from_link(key: str, read) -> None:
    """The one rule for a widget whose first value comes from the page's link: ``read()``'s value
    is put in the widget's session state before the widget is drawn, and the widget takes no
    default of its own. Following the teacher opens a sent link inside the session and drops the
    page's state (``ui/class_follow.py``); a value set through the session state then reaches
    the browser's widget too, where a default would not (the browser would go on showing the old
    value, and send it back with the next click).

    The browser takes the value only from the run that set it: when a click interrupts that
    run before the browser drew the widget (a click during a slow first run, as a teacher
    signing in at once), the next run draws it without the value, the browser shows its empty
    default, and sends that back. So the value (the link's, or what the widget holds since) is
    set again through the session state in the next ``RESENT_RUNS`` runs; a None (what a required
    selector sends back when it showed nothing) is taken from the link again."""
    left = st.session_state.setdefault(LINKED, {})
    if key not in st.session_state or st.session_state[key] is None:
        st.session_state[key] = read()
        left[key] = RESENT_RUNS
    elif left.get(key, 0) > 0:
        st.session_state[key] = st.session_state[key]  # the same value, marked to be set in the browser
        left[key] -= 1
