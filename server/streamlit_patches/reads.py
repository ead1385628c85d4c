"""What the rest of the code reads of Streamlit's runtime, as small public functions; the two
that need Streamlit's *private* state are switchable records, as the patches are.

A :class:`Read` names its targets (fingerprinted: ``tests/test_streamlit_patches.py``) and the
Streamlit it was written for. It reads only where that Streamlit is installed and the switch
chooses it (``ATTN_EXPLORER_STREAMLIT_PATCHES``, :mod:`~server.streamlit_patches.switch`: ``none``
reads nothing private); otherwise its function answers from public state:

- ``superseded``: has the tab asked for another rerun since this run began? Off, the answer is
  "no": a decoding is not abandoned early, and the run stops where Streamlit stops it, at its next
  Streamlit call (``docs/performance.md``, "Streamlit patches").
- ``connection_id``: the tab's connection. Off, Streamlit's session id alone, which is one per
  tab on a server (AppTest's sessions share one).
"""
from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass, field
from functools import lru_cache

from streamlit.runtime.scriptrunner_utils.exceptions import StopException  # noqa: F401 - a page run's stop (server.limits)

from server import settings
from server.streamlit_patches import switch
from server.streamlit_patches.fingerprints import installed_streamlit, WRITTEN_FOR


@dataclass(eq=False)
class Read:
    """One read of Streamlit's private state: ``targets`` maps what it relies on to the fingerprint
    of its source as read. ``chosen``: set at start-up (``server/serving.py``); None until then,
    and the environment decides."""
    name: str
    targets: dict[str, str]
    streamlit: str = WRITTEN_FOR
    chosen: bool | None = field(default=None, compare=False)
    used: bool = field(default=False, compare=False)  # has it read since the server started?

    def on(self) -> bool:
        if self.chosen is not None:
            return self.chosen
        return _chosen_by(self.name, self.streamlit, settings.streamlit_patches())


@lru_cache(maxsize=32)
def _chosen_by(name: str, written_for: str, value: str) -> bool:
    """Does the switch's ``value`` choose read ``name``, and is its Streamlit the installed one?"""
    return written_for == installed_streamlit() and name in switch.chosen([r.name for r in READS], value)[0]


_SR = "streamlit.runtime.scriptrunner_utils.script_requests:ScriptRequests"
SUPERSEDED = Read("superseded", {f"{_SR}.__init__": "68b4b7e407dc6153", f"{_SR}.request_stop": "15546956f201c36f",
                                 f"{_SR}._request_rerun_locked": "80c778b029dacbf4"})
CONNECTION_ID = Read("connection_id",
                     {"streamlit.runtime.state.safe_session_state:SafeSessionState.__init__": "59b081048b586bbb"})
READS: tuple[Read, ...] = (SUPERSEDED, CONNECTION_ID)
BY_NAME = {r.name: r for r in READS}


def forget_choices() -> None:
    """Back to the environment's choice (tests; a process whose start-up chose)."""
    for read in READS:
        read.chosen, read.used = None, False


def script_run_ctx():
    """This thread's script-run context, or None outside a page run (a server thread)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx  # the path Streamlit exports it from
    return get_script_run_ctx(suppress_warning=True)


def session_requests() -> tuple[str, object]:
    """(this rerun's session id, its Streamlit script requests) — ("", None) outside a browser's
    session: a server thread, or Streamlit's AppTest, whose every page shares one made-up id
    and no server."""
    from streamlit.runtime import Runtime
    ctx = script_run_ctx()
    if ctx is None or not Runtime.exists():
        return "", None
    return ctx.session_id, ctx.script_requests


def superseded(requests) -> bool:
    """Has the tab asked for another rerun (or a stop) since this run started? Reads
    ``ScriptRequests``' private state where the ``superseded`` read is on (a renamed attribute
    raises rather than reading as "never superseded"); off, False: no early abandonment."""
    if not SUPERSEDED.on():
        return False
    SUPERSEDED.used = True
    state = requests._state.name
    if state == "RERUN":  # as Streamlit decides: a fragment's rerun waits for the page's run to end
        data = requests._rerun_data
        return not (data.fragment_id_queue and not data.is_fragment_scoped_rerun)
    return state == "STOP"


def connection_id() -> str | None:
    """This browser tab's connection: Streamlit's session id and, where the ``connection_id`` read
    is on, its SessionState (which lives as long as the connection; SafeSessionState wraps it anew
    for every script runner), so AppTest's sessions, which share one id, are told apart too.
    None outside a page run."""
    ctx = script_run_ctx()
    if ctx is None:
        return None
    if not CONNECTION_ID.on():
        return ctx.session_id
    CONNECTION_ID.used = True
    return f"{ctx.session_id}:{id(getattr(ctx.session_state, '_state', ctx.session_state))}"


def script_requests():
    """A tab's script requests as Streamlit makes them (what :func:`superseded` reads; tests
    drive it with ``request_rerun``/``request_stop``)."""
    from streamlit.runtime.scriptrunner_utils.script_requests import ScriptRequests
    return ScriptRequests()


@contextlib.contextmanager
def quiet_missing_context():
    """Silence Streamlit's "missing ScriptRunContext" warning: a server thread filling the shared
    caches with no browser session expects it."""
    log = logging.getLogger("streamlit.runtime.scriptrunner_utils.script_run_context")
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(level)
