"""The records ``replay.py`` keeps by key: the records themselves, with their size summed as they
come and go, and the tabs waiting for a key's recording."""
from __future__ import annotations

from collections import OrderedDict


class Records(OrderedDict):
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


class Waiting(list):
    """The (session, its request count, client state) of the tabs waiting for the recording run of
    session ``recorder``."""

    def __init__(self, recorder: str):
        super().__init__()
        self.recorder = recorder
