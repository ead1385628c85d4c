"""Nothing a visitor sends resets what the server shares (server/shared.py): Streamlit's
``clear_cache`` message, sent over a raw websocket as any client can, leaves the models, the
class store, the decoding slots and the training queue as they were."""
from __future__ import annotations

import pytest

import asyncio
import contextlib
import os
import threading
import urllib.request
from pathlib import Path

import streamlit as st
from helpers.lecture import load_bench, ready

ROOT = Path(__file__).resolve().parent.parent
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def test_clearing_streamlits_caches_leaves_the_shared_objects(tiny_zoo):
    """What Streamlit's own clear_cache handler does (both caches cleared) reaches none of them."""
    from ui import zoo_cache
    from server import settings
    from server.class_store import class_store
    from server.limits import _decoding_slots, decoding_slot
    from server.training_queue import training_queue
    models = zoo_cache.zoo()
    loads, store, queue = zoo_cache.zoo_loads, class_store(), training_queue()
    slots = _decoding_slots(settings.decoders())
    st.cache_resource.clear()
    st.cache_data.clear()
    assert zoo_cache.zoo() is models and zoo_cache.zoo_loads == loads
    assert class_store() is store and training_queue() is queue and _decoding_slots(settings.decoders()) is slots
    # the limit still holds: with every slot taken, one more decoding waits
    held = threading.Event()

    def one_more():
        with decoding_slot():
            held.set()
    with contextlib.ExitStack() as every_slot:
        for _ in range(settings.decoders()):
            every_slot.enter_context(decoding_slot())
        threading.Thread(target=one_more, daemon=True).start()
        assert not held.wait(0.3)
    assert held.wait(5)


@pytest.mark.server
def test_a_clear_cache_message_from_a_visitor_unloads_nothing(tiny_zoo):
    from streamlit.proto.BackMsg_pb2 import BackMsg
    bench = load_bench()
    # the guard_clear_cache patch is what keeps the caches (server/streamlit_patches/patches.py): on, whatever the suite's setting
    env = {"ATTN_EXPLORER_CHECKPOINTS": str(tiny_zoo), "OMP_NUM_THREADS": "1", "ATTN_EXPLORER_STREAMLIT_PATCHES": "all"}

    async def visit(base: str) -> list:
        tab = bench.Tab(base, 60)
        try:
            first = await tab.do(("open", "", "text=I%20will%20eat.&model=rnnsearch"))
            clear = BackMsg()
            clear.clear_cache = True
            await tab.ws.send(clear.SerializeToString())  # as the front end's "Clear cache" sends it
            await asyncio.sleep(0.5)
            second = await tab.do(("open", "", "text=Where%20is%20it%3F&model=rnnsearch"))
            return [first[2], second[2]]
        finally:
            await tab.close()

    with bench.server(None, env=env) as target:
        assert ready(target.base) == 1
        assert asyncio.run(visit(target.base)) == [None, None]
        assert ready(target.base) == 1  # not reloaded
    assert os.environ.get("ATTN_EXPLORER_CHECKPOINTS") == str(tiny_zoo)
