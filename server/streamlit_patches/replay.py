"""``replay_follows``: a rerun answered with the messages and the state of the same rerun by
another tab, with no script run: a follower's rerun of a sent page, a new session on a sent page's
link (a reload), and a visitor's rerun of a link the class opened together.

When the teacher sends a page, every following tab reruns it at the same moment, and the
reruns differ only in what is the student's own: the follow line's nickname (and the ids that
Streamlit gives each run and session). A run costs a follower's server about 7 ms of CPU, a
burst of thirty 0.2 s; with copies, a burst costs about 2 ms a follower. So do a class's first
pages: thirty tabs open the link the teacher gave, change its sentence the same way, open the
next page. The app says which reruns may be shared and what in them is personal
(:class:`Policy`, ``ui/class_follow.py``); this module records one real run per key and answers
the others from it:

- **what may be shared** is the policy's: its key names everything the run reads of the
  session (the opening of a sent page or of a class's link, whose run keeps only the class's
  session keys; the class's state on the follow board; the link; the page; for a link page or a
  press of one of the policy's ``harmless`` buttons, the session's whole state and the client's
  widget values too; for a first run, the cookies it reads; in a class the student's values the
  policy gives without a read, ``own_state``) and is ``None`` for any other rerun. A rerun
  whose client reports another pressed button, or a changed value of a widget with a callback,
  is never replayed (a callback would have run); nor is one of a session with a run under way,
  or one that asks for a fragment the session no longer has (Streamlit drops it). A fragment's
  rerun is keyed with its fragment, recorded at its key's second ask (``_SEEN``) and
  replayed as that fragment's run;
- **the recording** is a real run of the first tab, every message sent in full (the others
  of its burst wait for it, on the event loop, and are replayed when it ends). It is kept only when it was one complete,
  successful run that drew only elements of ``replay_scan.SHAREABLE`` kinds, started no fragment timer
  and left no fragment writing outside its container, and holds none of the student's own words
  (the policy's ``personal_words``, before and after the run) but the first, the nickname, in
  exactly one text element, whose words are put in for each replayed follower; a refused key
  runs as Streamlit runs it for ``MAX_AGE_S``;
- **what a run would do first** may come before the key: where the policy answers
  :class:`Prepare` (a class's link opened by a student it has not yet taken: their join, a store
  write), that work runs off the event loop, and the rerun is then asked for again (once), its
  key now naming the work's outcome. Thirty tabs opening a class's link at once then share one
  run, each joined under its own name;
- **a replay** puts the recorded run's session state in the tab's session (the policy's
  personal keys kept as they were, or as the policy's ``own_state`` says the run sets them) and
  its fragments (shared: each copies what it holds at each
  rerun), sets its pages, page and client state as the run would, registers the run's
  downloads (made when clicked) for the session, and enqueues copies of the messages with the
  tab's session id, a new run id, its own file ids and its own nickname. A record answers
  until ``MAX_AGE_S`` after its last answer and ``MAX_LIFE_S`` after its recording; at most
  ``RECORDS_KEPT`` and ``RECORDS_BYTES`` are kept at once, the least recently answered dropped first.

Everything here runs on the server's event loop thread (``request_rerun`` and the script
runner's events are handled there), but a :class:`Prepare`'s work, in the loop's executor.
Fingerprints in ``patches.py``; measured and explained in docs/performance.md#replay_follows.
"""
from __future__ import annotations

import asyncio
import copy
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from server.streamlit_patches.replay_copies import copied_state, downloads_of, register_downloads
from server.streamlit_patches.replay_fragments import fragments_of, set_fragments
from server.streamlit_patches.replay_reads import context_of, cookies_of, page_path, visitor_of
from server.streamlit_patches.replay_scan import scan

MAX_AGE_S = 60.0   # a record answers reruns until this long after its last answer (a refused key: after the refusal)
MAX_LIFE_S = 600.0  # …and this long after its recording at most: a page's stretch of the lesson, not all of it
WAIT_S = 10.0      # a recording not ended by then (its session gone before its run): those waiting run
RECORDS_KEPT = 256  # records a process keeps at once (each a page's messages, tens of kB: a class's first minute of pages)
SEEN_KEPT = 1024  # fragments' keys asked once, kept at most (a key, about a kB, and a time each)
RECORD_BYTES = 2_000_000    # a run that sent more is not kept (a visitor's long sentence: its hover labels)
RECORDS_BYTES = 64_000_000  # the records' messages together, at most (the least recently answered dropped first)


@dataclass(frozen=True)
class Policy:
    """What the app shares. ``key(session_id, query_string, state, pressed)``: the rerun's key from
    its link's query, the session's state (user key -> value) before the run and the key of the
    ``harmless`` button pressed (None: no press), or None when it is not to be shared;
    ``personal_keys``: session keys that stay each session's own; ``personal_words(state)``: the
    session's own words, the first of which (its nickname) is put in for each replay;
    ``refused_words``: words (a widget's key) of a run that may not be shared; ``harmless``: the
    keys of buttons with no callback whose press the page reads nowhere (a rerun's trigger);
    ``reads_widgets(key)``: does the run of that key read the page's widgets (their values, as
    the client reports them, are then in the key)? The key is called with the page's URL path
    too (``page=``; "" for the default page, None for one the app does not name) and a function
    giving the cookies of the request that opened the session's socket (``cookies=``) and one
    giving its peer address and last X-Forwarded-For header (``visitor=``) and the id of the
    fragment the rerun asks for (``fragment=``; "" for the whole page), and may answer
    :class:`Prepare`; ``own_state(query_string, cookies, state)``: the personal keys' values the run
    would set where it sets them (a first run, a join: the student's id and nickname), put in
    over the session's own."""
    key: Callable[..., Hashable | None]
    personal_keys: tuple[str, ...]
    personal_words: Callable[[dict], tuple[str, ...]]
    refused_words: tuple[str, ...] = ()
    harmless: tuple[str, ...] = ()
    reads_widgets: Callable[[Hashable], bool] = lambda key: False
    own_state: Callable[[str, Callable[[], dict], dict], dict] = lambda query_string, cookies, state: {}


@dataclass(frozen=True)
class Prepare:
    """A policy's answer for a rerun whose key depends on what its run would do first (a join):
    ``work`` runs in a thread off the event loop; the rerun is then asked for once more, and keyed
    (or run) as the policy then says. Any exception of ``work`` is the run's to meet again."""
    work: Callable[[], None]


_POLICY: list[Policy] = []
class _Records(OrderedDict):
    """key -> record, with its records' message bytes summed as they come and go (``_trim`` reads
    the sum at every recording: no walk over a class's hundreds of records)."""
    size = 0

    def __setitem__(self, key, value) -> None:
        self.size += getattr(value, "size", 0) - getattr(self.get(key), "size", 0)
        super().__setitem__(key, value)

    def __delitem__(self, key) -> None:
        self.size -= getattr(self.get(key), "size", 0)
        super().__delitem__(key)

    def clear(self) -> None:
        super().clear()
        self.size = 0


# key -> a _Record, the list of (session, its request count, client state) waiting for its
# recording, or the time a recording was refused (the key's reruns then run, until MAX_AGE_S)
_RECORDS = _Records()

# a fragment's rerun key -> when it was first asked for: it ran as Streamlit runs it, and its next
# ask within MAX_AGE_S is recorded. A slider moved in one tab alone, as most are, pays for no
# recording; a class moving theirs to one step pays for one run more. Kept apart from the records,
# whose room a class's own moves would take.
_SEEN: OrderedDict = OrderedDict()
_LOCK = threading.Lock()
_STREAMLITS: dict = {}  # "request": AppSession.request_rerun as this patch found it (a waiting rerun not replayed runs so)
COUNTS = {"recorded": 0, "refused": 0, "replayed": 0, "prepared": 0}


def set_policy(policy: Policy | None) -> None:
    """The app's policy (``ui/class_follow.py`` sets it); None: nothing is shared."""
    _POLICY[:] = [policy] if policy else []


def forget() -> None:
    """No record kept (the patch undone; tests)."""
    with _LOCK:
        _RECORDS.clear()
        _SEEN.clear()


@dataclass
class _Record:
    at: float
    messages: list
    personal_at: int | None
    nickname: str | None
    state: dict
    client_state: object
    page: str
    size: int  # its messages' bytes
    pages: dict  # the app's pages, as the run's st.navigation registered them (hash -> Streamlit's page info)
    downloads: dict  # message index -> the deferred download registered there (Streamlit's entry)
    used: float = 0.0  # when it last answered a rerun (its recording's time until then)

    def answers(self, now: float) -> bool:
        """Does it still answer a rerun at ``now``? Within MAX_AGE_S of its last answer (a send's
        burst, then the reloads and late arrivals that keep coming) and MAX_LIFE_S of its
        recording. Its key names all that the run reads, so age is not what makes it right: it
        bounds how long a page nobody opens stays in memory, and how long one lives at all."""
        return now - max(self.at, self.used) < MAX_AGE_S and now - self.at < MAX_LIFE_S


def _state_of(session) -> dict:
    return session._session_state.filtered_state


_TRIGGERS = ("trigger_value", "string_trigger_value", "json_trigger_value", "chat_input_value")


def _may_share(session, client_state, policy: Policy) -> tuple[bool, str | None]:
    """A full rerun, no run under way, no callback it would call and no press but of one of the
    policy's harmless buttons: (may it be shared, the key of the button pressed)."""
    from streamlit.runtime.app_session import AppSessionState
    from streamlit.runtime.state.common import user_key_from_element_id
    if client_state is None or session._scriptrunner is not None:
        return False, None
    if client_state.fragment_id and not session._fragment_storage.contains(client_state.fragment_id):
        return False, None  # Streamlit drops the rerun of a fragment the session no longer has
    if session._state != AppSessionState.APP_NOT_RUNNING:
        return False, None
    ss = session._session_state
    metadata = ss._new_widget_state.widget_metadata
    pressed = None
    for widget in client_state.widget_states.widgets:
        meta = metadata.get(widget.id)
        if getattr(meta, "callback", None) is not None and not _unchanged(ss, meta, widget):
            return False, None
        kind = widget.WhichOneof("value")
        if kind not in _TRIGGERS:
            continue
        harmless = kind == "trigger_value" and user_key_from_element_id(widget.id) in policy.harmless
        if not harmless or pressed is not None:
            return False, None
        pressed = user_key_from_element_id(widget.id)
    return True, pressed


def _unchanged(ss, meta, widget) -> bool:
    """Streamlit's own test of whether a rerun calls a widget's callback
    (``SessionState._widget_changed``): the value the client reports, as the widget reads it,
    equal to the one its last run kept. Anything unsure (a value that does not compare) is a change."""
    from streamlit.runtime.state.common import unpack_widget_state_value
    try:
        return bool(meta.deserializer(unpack_widget_state_value(widget)) == ss._old_state.get(widget.id))
    except Exception:  # noqa: BLE001 - a value that cannot be read or compared: as if it changed
        return False


def _key(session, client_state, policy: Policy) -> Hashable | Prepare | None:
    """The rerun's key (None: not shared; a :class:`Prepare`: not yet): the policy's, with the
    client's page, link and context, and for a press the values of the page's widgets as the
    client reports them."""
    shared, pressed = _may_share(session, client_state, policy)
    app_key = policy.key(session.id, client_state.query_string, _state_of(session), pressed,
                         page=page_path(session, client_state), cookies=lambda: cookies_of(session),
                         visitor=lambda: visitor_of(session), fragment=client_state.fragment_id) if shared else None
    if app_key is None or isinstance(app_key, Prepare):
        return app_key
    widgets = pressed is not None or policy.reads_widgets(app_key)
    return (client_state.page_script_hash, client_state.page_name, client_state.query_string,
            client_state.fragment_id, client_state.is_history_navigation,
            context_of(session, client_state).SerializeToString(deterministic=True),
            _widget_values(client_state) if widgets else None, app_key)


def _widget_values(client_state) -> tuple:
    """The widget values the client reports, by widget id: a browser sends them in no fixed order
    (two browsers on one page, the same values, sent them in three orders), and Streamlit reads them by id."""
    return tuple(sorted((w.id, w.SerializeToString(deterministic=True)) for w in client_state.widget_states.widgets))


def replaying_rerun(streamlits_request):
    """``AppSession.request_rerun``: a shareable rerun is replayed, waits for its recording, or is
    recorded; any other goes to Streamlit."""
    _STREAMLITS["request"] = streamlits_request

    def request_rerun(self, client_state=None):
        self._attn_requests = getattr(self, "_attn_requests", 0) + 1
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not on the event loop (the server's own request): as Streamlit does
            return streamlits_request(self, client_state)
        return _route(self, client_state, loop)
    return request_rerun


def _route(session, client_state, loop, prepared: bool = False):
    """A rerun on the event loop: replayed, waiting for its recording, recorded, prepared
    (``prepared``: it was, and is not again) or run as Streamlit runs it."""
    streamlits_request = _STREAMLITS["request"]
    policy = _POLICY[0] if _POLICY else None
    try:
        key = _key(session, client_state, policy) if policy is not None else None
    except Exception:  # noqa: BLE001 - a rerun the patch cannot read runs as Streamlit runs it
        key = None
    if isinstance(key, Prepare) and not prepared:
        return _prepare(session, client_state, loop, key.work)
    if key is None or isinstance(key, Prepare):
        return streamlits_request(session, client_state)
    with _LOCK:
        record = _RECORDS.get(key)
        if isinstance(record, list):
            record.append((session, session._attn_requests, client_state))
            return None
        now = time.monotonic()
        if isinstance(record, float) and now - record < MAX_AGE_S:
            return streamlits_request(session, client_state)  # not shareable
        if client_state.fragment_id and not (isinstance(record, _Record) and record.answers(now)) \
                and now - _SEEN.pop(key, -MAX_AGE_S) >= MAX_AGE_S:
            _SEEN[key] = now  # its first ask (in MAX_AGE_S) runs as Streamlit's: most slider moves are one tab's
            if len(_SEEN) > SEEN_KEPT:
                _SEEN.popitem(last=False)
            return streamlits_request(session, client_state)
        if isinstance(record, _Record) and record.answers(now):
            record.used = now
            _RECORDS.move_to_end(key)  # the records least recently answered go first (_trim)
        else:
            record = None
            _RECORDS[key] = []
            _RECORDS.move_to_end(key)
            _trim()
    if record is not None and _replay(session, record, policy, client_state):
        return None
    if record is not None:
        return streamlits_request(session, client_state)
    session._attn_recording = recording = {"key": key, "messages": [], "words": policy.personal_words(_state_of(session)),
                                        "refused": policy.refused_words, "runs": 0, "ok": 0,
                                        "fragment": bool(client_state.fragment_id)}
    loop.call_later(WAIT_S, _release, recording)
    # every message sent in full (none as a reference to one this browser keeps): the others have none
    whole = type(client_state)()
    whole.CopyFrom(client_state)
    whole.ClearField("cached_message_hashes")
    return streamlits_request(session, whole)


def _prepare(session, client_state, loop, work: Callable[[], None]) -> None:
    """``work`` in a thread (the loop's executor), then the rerun routed once more, unless the tab
    asked for something newer meanwhile (that stands). Whatever goes wrong, the rerun still runs."""
    requests = getattr(session, "_attn_requests", 0)
    COUNTS["prepared"] += 1

    def quietly() -> None:
        try:
            work()
        except Exception:  # noqa: BLE001 - the run meets it again, and says so on its page
            pass

    def done(_future) -> None:
        if getattr(session, "_attn_requests", 0) != requests:
            return
        try:
            _route(session, client_state, loop, prepared=True)
        except Exception:  # noqa: BLE001 - never a rerun lost
            _STREAMLITS["request"](session, client_state)
    loop.run_in_executor(None, quietly).add_done_callback(done)


def _trim() -> None:
    """At most RECORDS_KEPT keys and RECORDS_BYTES of records' messages, the least recently
    answered (or recorded) dropped first (never a recording others wait for). Under ``_LOCK``."""
    extra = max(0, len(_RECORDS) - RECORDS_KEPT)
    if extra <= 0 and _RECORDS.size <= RECORDS_BYTES:
        return
    for old in list(_RECORDS):
        if extra <= 0 and _RECORDS.size <= RECORDS_BYTES:
            break
        if not isinstance(_RECORDS[old], list):
            extra -= 1
            del _RECORDS[old]


def recording_enqueue(streamlits_enqueue):
    """``AppSession._enqueue_forward_msg``: a recorded run's messages are kept, as sent."""
    def enqueue(self, msg) -> None:
        recording = getattr(self, "_attn_recording", None)
        if recording is not None:
            from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
            kind = msg.WhichOneof("type")
            recording["runs"] += kind == "new_session"
            recording["ok"] += kind == "script_finished" and msg.script_finished == (
                ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY if recording["fragment"] else ForwardMsg.FINISHED_SUCCESSFULLY)
            kept = ForwardMsg()
            kept.CopyFrom(msg)
            recording["messages"].append(kept)
        return streamlits_enqueue(self, msg)
    return enqueue


def recording_ends(streamlits_handle):
    """``AppSession._handle_scriptrunner_event_on_event_loop``: when the recorded run's script
    runner has shut down (its state final), the record is kept or refused, and the sessions that
    waited for it are replayed (or run as Streamlit runs them)."""
    def handle(self, sender, event, *args, **kwargs):
        out = streamlits_handle(self, sender, event, *args, **kwargs)
        recording = getattr(self, "_attn_recording", None)
        if recording is None or self._scriptrunner is not None:
            return out
        self._attn_recording = None
        _release(recording, _kept(self, recording))
        return out
    return handle


def _release(recording: dict, record: _Record | None = None) -> None:
    """The end of ``recording`` (``record``: what it gave, None if refused): the sessions that waited
    for it are replayed, or run as Streamlit runs them. Also called WAIT_S after it started, when
    it ends with the key still waiting for it (its session went away before its run)."""
    with _LOCK:
        waiting = _RECORDS.get(recording["key"])
        if not isinstance(waiting, list) or recording.get("released"):
            return
        recording["released"] = True
        _RECORDS[recording["key"]] = record if record is not None else time.monotonic()
        _trim()
    COUNTS["recorded" if record else "refused"] += 1
    policy = _POLICY[0] if _POLICY else None
    for session, requests, client_state in waiting:
        if getattr(session, "_attn_requests", 0) != requests:
            continue  # the tab asked for something newer meanwhile: that stands
        if record is not None and policy is not None and _key(session, client_state, policy) == recording["key"] \
                and _replay(session, record, policy, client_state):
            continue
        _STREAMLITS["request"](session, client_state)


def _kept(session, recording) -> _Record | None:
    """The record of a finished recording, or None when it may not be shared."""
    storage = session._fragment_storage
    if recording["runs"] != 1 or recording["ok"] != 1 or storage._outside_wrappers:
        return None
    policy = _POLICY[0] if _POLICY else None
    # the student's own words after the run refuse it too, but the nickname where the run named
    # the student anew (a join): then the run's own words are the ones put in for each replay, and
    # those it held before refuse it
    before = recording["words"]
    after = policy.personal_words(_state_of(session)) if policy is not None else ()
    words = after if after[:1] not in ((), ("",), before[:1]) else before
    refused = tuple(w for w in (*after[1:], *(before if words is after else ())) if w and w != words[0])
    shared, personal_at = scan(recording["messages"], words, recording["refused"] + refused)
    size = sum(msg.ByteSize() for msg in recording["messages"])
    downloads = downloads_of(recording["messages"]) if shared and size <= RECORD_BYTES else None
    if downloads is None:
        return None
    ss = session._session_state
    try:  # values a later callback may change in place (a set of stops done): each session its own copy
        values = copy.deepcopy((ss._old_state, ss._new_session_state, ss._new_widget_state.states))
    except Exception:  # noqa: BLE001 - a value that cannot be copied: this run is not shared
        return None
    state = {"old": values[0], "new": values[1],
             "widgets": values[2], "metadata": dict(ss._new_widget_state.widget_metadata),
             "key_ids": dict(ss._key_id_mapper._key_id_mapping), "id_keys": dict(ss._key_id_mapper._id_key_mapping),
             "query_params": copy.deepcopy(ss.query_params), "bound": set(ss._query_param_bound_widget_ids),
             "persist": copy.deepcopy(ss._persist_tracker), "fragments": fragments_of(storage)}
    client_state = type(session._client_state)()
    client_state.CopyFrom(session._client_state)
    return _Record(time.monotonic(), recording["messages"], personal_at,
                   words[0] if personal_at is not None else None, state, client_state,
                   session._pages_manager.current_page_script_hash, size, session._pages_manager.get_pages(),
                   downloads)


def _replay(session, record: _Record, policy: Policy, request) -> bool:
    """``record``'s run, as if it had run in ``session`` at its client's ``request``; False
    (nothing done) where the session has no nickname to put in the recorded one's place."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    from streamlit.runtime.forward_msg_cache import populate_hash_if_needed
    ss = session._session_state
    mine = _state_of(session)
    own = {k: mine[k] for k in policy.personal_keys if k in mine}  # the recorded session's never carried over
    # a first run, a join: the student's own values, as the run would have set them
    own.update(policy.own_state(request.query_string, lambda: cookies_of(session), mine))
    words = policy.personal_words({**mine, **own})
    if record.personal_at is not None and not (words and words[0]):
        return False
    saved = record.state
    old, new, widgets = copied_state((saved["old"], saved["new"], saved["widgets"]))
    ss._old_state = {**{k: v for k, v in old.items() if k not in policy.personal_keys}, **own}
    new = {k: v for k, v in new.items() if k not in policy.personal_keys}
    ss._new_session_state = new
    ss._new_widget_state.states = widgets
    ss._new_widget_state.widget_metadata = dict(saved["metadata"])
    ss._key_id_mapper._key_id_mapping = dict(saved["key_ids"])
    ss._key_id_mapper._id_key_mapping = dict(saved["id_keys"])
    ss.query_params = copy.deepcopy(saved["query_params"])
    ss._query_param_bound_widget_ids = set(saved["bound"])
    ss._persist_tracker = copy.deepcopy(saved["persist"])
    set_fragments(session._fragment_storage, saved["fragments"])
    session._pages_manager._set_pages(dict(record.pages))  # a session's first run registers them
    session._pages_manager.set_current_page_script_hash(record.page)
    client_state = type(session._client_state)()
    client_state.CopyFrom(record.client_state)
    client_state.context_info.CopyFrom(context_of(session, request))
    session._client_state = client_state
    # a fragment's run clears only what its fragments drew before, as Streamlit's would
    session._clear_queue(next((list(m.metadata.run.fragment_ids) or None for m in record.messages
                               if m.WhichOneof("type") == "new_session"), None))
    file_ids = register_downloads(session, record.downloads)
    run_id = str(uuid.uuid4())
    for i, msg in enumerate(record.messages):
        copied = ForwardMsg()
        copied.CopyFrom(msg)
        kind = copied.WhichOneof("type")
        if kind == "new_session":
            copied.metadata.run.script_run_id = run_id
            copied.new_session.initialize.session_id = session.id
        elif kind == "script_finished":
            copied.metadata.run.script_run_id = run_id
        elif i == record.personal_at:
            text = copied.delta.new_element.markdown
            text.body = text.body.replace(record.nickname, words[0])
            copied.hash = ""
            populate_hash_if_needed(copied)
        elif i in file_ids:
            copied.delta.new_element.download_button.deferred_file_id = file_ids[i]
            copied.hash = ""
            populate_hash_if_needed(copied)
        session._enqueue_forward_msg(copied)  # not recorded: no recording is under way in this session
    COUNTS["replayed"] += 1
    return True
