"""ui/zoo_cache.py's shared results: one stored object per result for every session of the process,
and, for a function a page script defines (run again on every rerun), one cached function per
process where no file is watched."""
from __future__ import annotations

import numpy as np
import pytest


def define(calls: list):
    """What a page script's rerun does: define the function again, decorated."""
    from ui.zoo_cache import shared_result

    @shared_result(max_entries=4)
    def doubled(x: int) -> np.ndarray:
        calls.append(x)
        return np.array([2 * x])
    return doubled


@pytest.mark.parametrize("watched", [False, True])
def test_a_page_scripts_shared_result_is_built_once_per_process_where_no_file_is_watched(monkeypatch, watched):
    from server import serving
    from ui import zoo_cache as zoo
    monkeypatch.setattr(serving, "files_watched", lambda: watched)
    monkeypatch.setattr(zoo, "_SHARED", {})
    calls = []
    first, again = define(calls), define(calls)
    first.clear()
    assert (first is again) is not watched  # watched: built on every run, as Streamlit does
    assert first(3) == [6] and again(3) == [6] and first(3) is again(3)  # one stored result either way
    assert calls == [3]
    with pytest.raises(ValueError):  # handed out read-only, not copied
        first(3)[0] = 1


def test_a_decoding_already_handed_out_skips_its_estimate_and_lane(monkeypatch, tiny_zoo):
    """A follower's rerun asks again for what is computed: the result comes from ``served``, with no
    SentencePiece estimate of its cost and no costly lane; a new sentence still pays both, and
    ``clear`` forgets the handed-out results with the cache."""
    from ui import zoo_cache as zoo
    monkeypatch.setenv("ATTN_EXPLORER_CHECKPOINTS", str(tiny_zoo))
    estimates, lane = [], []
    real_cost, real_lane = zoo.source_cost, zoo.costly_work
    monkeypatch.setattr(zoo, "source_cost", lambda *a: estimates.append(a) or real_cost(*a))
    monkeypatch.setattr(zoo, "costly_work", lambda *a: lane.append(a) or real_lane(*a))
    zoo.cached_translate.clear()
    first = zoo.cached_translate("rnnsearch", "1 2 3", 1)
    assert len(estimates) == len(lane) == 1
    assert zoo.cached_translate("rnnsearch", "1 2 3", 1) is first and len(estimates) == len(lane) == 1
    assert zoo.cached_translate("rnnsearch", "1 2 3", 2) is not first and len(estimates) == len(lane) == 2  # its beam
    zoo.cached_translate.clear()
    assert zoo.cached_translate("rnnsearch", "1 2 3", 1) is not first and len(estimates) == 3
