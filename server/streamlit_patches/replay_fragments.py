"""The fragments a recorded run registered, kept with its record and set in each session it is
replayed in (``replay.py``: Streamlit's ``MemoryFragmentStorage``, read and written whole)."""
from __future__ import annotations


def fragments_of(storage) -> dict:
    """The fragments a run registered (Streamlit's ``MemoryFragmentStorage``): each one a closure
    over its function's arguments and copies of the page's cursors, which it copies again at each
    rerun and runs in whichever session's script thread calls it, so sessions may share it."""
    with storage._lock:
        return {"fragments": dict(storage._fragments), "parents": dict(storage._parent_by_id),
                "lifetimes": dict(storage._lifetime_by_id), "sequences": dict(storage._registration_sequence_by_id),
                "sequence": storage._registration_sequence, "target_keys": dict(storage._target_key_by_id),
                "by_target_key": {k: dict(v) for k, v in storage._ids_by_target_key.items()}}


def set_fragments(storage, saved: dict) -> None:
    """``storage`` as the recorded run left its own: its fragments, and no outside wrappers."""
    with storage._lock:
        storage._fragments = dict(saved["fragments"])
        storage._parent_by_id = dict(saved["parents"])
        storage._lifetime_by_id = dict(saved["lifetimes"])
        storage._registration_sequence_by_id = dict(saved["sequences"])
        storage._registration_sequence = max(storage._registration_sequence, saved["sequence"])
        storage._target_key_by_id = dict(saved["target_keys"])
        storage._ids_by_target_key = {k: dict(v) for k, v in saved["by_target_key"].items()}
        storage._outside_wrappers = {}
