"""What a replay gives each session of its own (``replay.py``): the recorded run's session state
with its values copied where a run could change them in place, and the run's downloads (made
when clicked) registered for the session."""
from __future__ import annotations

import copy
import uuid


def downloads_of(messages: list) -> dict | None:
    """The deferred downloads a recorded run registered (message index -> a copy of Streamlit's
    entry: the callable, its MIME type, file name and place), or None where one is no longer
    registered. Copied now: the recording session's next run lets its own go."""
    from streamlit import runtime
    found = {i: msg.delta.new_element.download_button.deferred_file_id for i, msg in enumerate(messages)
             if msg.WhichOneof("type") == "delta" and msg.delta.WhichOneof("type") == "new_element"
             and msg.delta.new_element.WhichOneof("type") == "download_button"}
    if not found:
        return {}
    manager = runtime.get_instance().media_file_mgr
    with manager._lock:
        entries = {i: manager._deferred_callables.get(file_id) for i, file_id in found.items()}
    return None if any(e is None for e in entries.values()) else {i: dict(e) for i, e in entries.items()}


def register_downloads(session, downloads: dict) -> dict:
    """As a run of ``session`` does (``ScriptRunner``: the session's files let go, then each
    button's callable registered at its place; ``media_file_mgr.add_deferred``), with the recorded
    callables: message index -> the session's new file id. What the session let go is removed at
    the next run's end, which removes every session's (``remove_orphaned_files``, a walk over all
    the process's files: not once per follower of a burst)."""
    from streamlit import runtime
    manager = runtime.get_instance().media_file_mgr
    manager.clear_session_refs(session.id)
    ids = {}
    with manager._lock:
        for i, entry in downloads.items():
            ids[i] = file_id = uuid.uuid4().hex
            manager._deferred_callables[file_id] = {**entry, "session_id": session.id}
            manager._deferred_ids_by_session[session.id].add(file_id)
            manager._files_by_session_and_coord[session.id][entry["coordinates"]] = file_id
    return ids


_IMMUTABLE = frozenset((str, int, float, complex, bool, bytes, type(None)))


def _immutable(value, widget_value: type) -> bool:
    """Can no run change ``value`` in place (a string, a number, a tuple of them, a widget's
    ``Value`` of one)? Such a value is shared by every replay, not copied."""
    kind = type(value)
    if kind in _IMMUTABLE:
        return True
    if kind is tuple or kind is frozenset:
        return all(_immutable(v, widget_value) for v in value)
    return kind is widget_value and _immutable(value.value, widget_value)


def copied_state(states: tuple[dict, ...]) -> tuple[dict, ...]:
    """Each of a record's state dicts for one replay: its values deep-copied, with one memo (a
    value in two of them stays one value), but the immutable ones, shared. A deep copy of the
    whole was 0.1–0.6 ms of a replay, most of it a sent page's widgets' ``Value(None)``s."""
    from streamlit.runtime.state.session_state import Value
    memo: dict = {}
    return tuple({k: v if _immutable(v, Value) else copy.deepcopy(v, memo) for k, v in state.items()}
                 for state in states)
