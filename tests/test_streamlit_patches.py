"""The one door to Streamlit's private internals (server/streamlit_patches/): each patch's and
private read's targets are still the code its author read (a fingerprint of each source), start-up
chooses the patches and reads and refuses one written for another Streamlit, each is undone
cleanly, with the switch at ``none`` nothing private of Streamlit is read during a class's page
runs, and on a real ``streamlit run`` server the patches that change threading and message flow
are in effect and listed on ``/_attn/ready``."""
from __future__ import annotations

import asyncio
import gc
import json
import time
import urllib.request
from pathlib import Path

import pytest
import streamlit
from helpers.browser import wait_until
from helpers.lecture import load_bench

from server import serving
from server.streamlit_patches import patches, reads, testing
from server.streamlit_patches.fingerprints import fingerprint, resolve, source_of
from server.streamlit_patches.patches import BY_NAME, PATCHES
from server.streamlit_patches.reads import READS

ROOT = Path(__file__).resolve().parent.parent
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))
TARGETS = ([(p.name, p.targets) for p in PATCHES] + [(f"read {r.name}", r.targets) for r in READS]
           + [("testing shared_components", testing.TARGETS)])
EVERY = [p.name for p in PATCHES] + [r.name for r in READS]  # what the switch names, patches first


def stale_targets(name: str, targets: dict[str, str], source=source_of) -> list[str]:
    """The targets of patch ``name`` whose source is no longer the one fingerprinted, each as a
    message that says what to do."""
    return [f"re-read patch {name}: Streamlit's {target} is not the code the patch was written against "
            f"(fingerprint {fingerprint(source(target))}, recorded {recorded})"
            for target, recorded in targets.items() if fingerprint(source(target)) != recorded]


@pytest.fixture
def undone():
    """Every patch put back after the test: none stays installed for the rest of the process."""
    yield
    patches.undo_all()
    serving._OUTCOMES.clear()


@pytest.mark.parametrize(("name", "targets"), TARGETS, ids=[name for name, _ in TARGETS])
def test_each_target_is_the_code_its_patch_was_written_against(name, targets):
    assert stale_targets(name, targets) == []


def test_the_suites_apptests_share_one_registry_of_components():
    """Two new AppTests of the app run with one registry of v2 components, made once per process
    (server/streamlit_patches/testing.py), and it finds what a registry of their own would: none."""
    from streamlit.components.v2.manifest_scanner import scan_component_manifests
    from helpers.apptest import new_app, run
    first, second = run(new_app()), run(new_app())
    assert first._bidi_component_manager is second._bidi_component_manager is testing._registry()
    assert scan_component_manifests() == []  # what each AppTest's own registry would have registered


def test_a_changed_target_fails_its_fingerprint_and_names_the_patch():
    """Streamlit's flush loop without its yield after each message (or with another): the patch
    that removes that yield must be read again."""
    send = BY_NAME["send_promptly"]
    loop = "streamlit.runtime.runtime:Runtime._loop_coroutine"

    def upgraded(target: str) -> str:
        text = source_of(target)
        return text.replace("await asyncio.sleep(0)", "await asyncio.sleep(0.001)") if target == loop else text
    assert "await asyncio.sleep(0)" in source_of(loop)
    found = stale_targets(send.name, send.targets, upgraded)
    assert len(found) == 1 and found[0].startswith(f"re-read patch send_promptly: Streamlit's {loop} ")
    assert stale_targets("theme_once", BY_NAME["theme_once"].targets, lambda t: source_of(t) + "    # a comment\n")


def test_every_patch_says_why_and_what_it_re_implements():
    sections = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    for patch in PATCHES:
        assert patch.why == f"docs/performance.md#{patch.name}" and f"### `{patch.name}`" in sections, patch.name
        assert set(patch.replaces) <= set(patch.targets)
    assert {p.streamlit for p in (*PATCHES, *READS)} == {streamlit.__version__}, "written for another Streamlit: re-read it"


def test_the_environment_chooses_the_patches():
    every = EVERY
    assert serving.chosen("all") == (every, []) and serving.chosen("") == (every, [])
    assert serving.chosen("none") == ([], [])
    assert serving.chosen("send_promptly, theme_once") == (["theme_once", "send_promptly"], [])
    left_out = ("send_promptly", "superseded")
    assert serving.chosen("all,-send_promptly,-superseded") == ([n for n in every if n not in left_out], [])
    assert serving.chosen("theme_once,no_such,connection_id") == (["theme_once", "connection_id"], ["no_such"])


def _untouched() -> bool:
    """Every target is Streamlit's own, as imported."""
    import asyncio as real
    from streamlit.runtime import runtime
    owners = [resolve(t) for p in PATCHES for t in p.targets]
    return (all(not getattr(getattr(owner, attr), "attn_patch", False) for owner, attr in owners)
            and runtime.asyncio is real and not patches._PAGE_ONCE.on)


def test_a_patch_written_for_another_streamlit_is_refused_and_the_server_runs_as_streamlit_does(undone, capsys):
    outcomes = serving.apply_patches("all", installed="99.0.0")
    assert [(o.name, o.applied) for o in outcomes] == [(name, False) for name in EVERY]
    assert all(o.reason.startswith("refused: written for Streamlit 1.67.0, this is 99.0.0") for o in outcomes)
    assert _untouched() and not any(r.on() for r in READS)  # the version gate covers the reads too
    printed = capsys.readouterr().out
    assert "Streamlit patch send_promptly: refused" in printed and "Streamlit read superseded: refused" in printed


def test_each_patch_applies_and_undoes_cleanly(undone):
    from streamlit.runtime.app_session import AppSession
    streamlits = AppSession._on_scriptrunner_event
    outcomes = serving.apply_patches("all")
    assert all(o.applied for o in outcomes), outcomes
    assert AppSession._on_scriptrunner_event is not streamlits and serving.apply_patches("all")  # again: a no-op
    assert [o["name"] for o in serving.outcomes()] == EVERY and all(r.on() for r in READS)
    patches.undo_all()
    assert _untouched() and AppSession._on_scriptrunner_event is streamlits
    assert "_on_scriptrunner_event" in vars(AppSession)  # Streamlit's own, where Streamlit put it


def test_a_held_rerun_keeps_the_press_of_the_request_it_replaces(monkeypatch):
    """``pace_reruns`` keeps only a tab's newest held request, but a button pressed in the one it
    replaces still reaches the run: the browser sends a press once (a trigger), and a value typed
    since wins. Real ClientState protos and Streamlit's own merge; the tab is a plain object."""
    from streamlit.proto.ClientState_pb2 import ClientState
    waits = iter([0.05, 0.05, 0.0])  # both requests held, then the share allows the kept one
    monkeypatch.setattr(patches, "_PACER", [lambda who: next(waits)])
    arrived = []
    request = patches._paced(lambda tab, state: arrived.append(state))

    def client_state(query: str, box: str, pressed: bool) -> ClientState:
        state = ClientState(query_string=query)
        widget = state.widget_states.widgets.add(id="box")
        widget.string_value = box
        if pressed:
            state.widget_states.widgets.add(id="open_after").trigger_value = True
        return state

    async def two_requests():
        tab = type("Tab", (), {"id": "tab"})()
        request(tab, client_state("a=1", "old", pressed=True))
        request(tab, client_state("a=2", "new", pressed=False))
        await asyncio.sleep(0.5)

    asyncio.run(two_requests())
    assert len(arrived) == 1 and arrived[0].query_string == "a=2"
    values = {w.id: getattr(w, w.WhichOneof("value")) for w in arrived[0].widget_states.widgets}
    assert values == {"box": "new", "open_after": True}


def test_superseded_reads_streamlits_own_script_requests(monkeypatch):
    """A rerun or a stop the tab asked for since the run started supersedes it; a fragment's rerun
    while the page runs does not (Streamlit runs it after the page). Real ScriptRequests, no fake."""
    from streamlit.runtime.scriptrunner_utils.script_requests import RerunData
    monkeypatch.setenv(serving.ENV, "all")
    requests = reads.script_requests()
    assert not reads.superseded(requests)
    requests.request_rerun(RerunData(query_string="text=a"))
    assert reads.superseded(requests)
    stopped = reads.script_requests()
    stopped.request_stop()
    assert reads.superseded(stopped)
    fragment = reads.script_requests()  # a fragment's rerun asked while the page runs: after it
    fragment.request_rerun(RerunData(fragment_id_queue=["f1"], is_fragment_scoped_rerun=False))
    assert not reads.superseded(fragment)


# ---- a real server: `streamlit run app.py`, its runtime going through the patches


def _ready(base: str) -> dict:
    return json.loads(OPENER.open(f"{base}/_attn/ready?format=json", timeout=10).read())


async def _burst_then_slow_down(bench, base: str, reruns: int) -> tuple[str | None, bool, str | None]:
    """Open the landing page, ask for ``reruns`` full-page reruns at once (beyond the tab's share),
    and read until a page says "Slow down" (30 s at most); a clear_cache, then a second page on a
    new socket. (the first page's error, "Slow down" seen, the second page's error)."""
    from classroom_tab import draw
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    tab = bench.Tab(base, 120)
    try:
        first = (await tab.do(("open", "", "text=I%20will%20eat.&model=rnnsearch")))[2]
        for _ in range(reruns):
            await tab.send()
        slowed, deadline = False, time.monotonic() + 30
        while not slowed and time.monotonic() < deadline:
            msg = ForwardMsg.FromString(await asyncio.wait_for(tab.ws.recv(), deadline - time.monotonic()))
            if msg.WhichOneof("type") == "delta":
                shown: dict = {}
                draw(msg, shown, {}, {})
                slowed = any(b"Slow down" in body for body in shown.values())
        clear = BackMsg()
        clear.clear_cache = True
        await tab.ws.send(clear.SerializeToString())
        second = (await tab.do(("open", "", "text=Where%20is%20it%3F&model=rnnsearch")))[2]
        return first, slowed, second
    finally:
        await tab.close()


@pytest.mark.server
def test_a_real_server_goes_through_every_patch_and_lists_them_on_ready(tiny_zoo):
    """Streamlit's runtime still calls every target: each patch, applied at start-up, is used
    by a visit (a burst of reruns is paced and its page says "Slow down"; the page's runs are
    started by the starter thread and their messages sent through the one wake-up; the script
    cache survives the last tab leaving); /_attn/ready says so, as text and as JSON."""
    from server.limits import RERUN_BURST
    bench = load_bench()
    env = {"ATTN_EXPLORER_CHECKPOINTS": str(tiny_zoo), "OMP_NUM_THREADS": "1", serving.ENV: "all"}
    with bench.server(None, env=env) as target:
        first, slowed, second = asyncio.run(_burst_then_slow_down(bench, target.base, int(RERUN_BURST) + 10))
        assert (first, slowed, second) == (None, True, None)
        text = OPENER.open(f"{target.base}/_attn/ready", timeout=10).read().decode()
        assert text.splitlines()[0] == "ready; models loaded 1 time(s)"
        assert all(f"patch {p.name}: applied" in text for p in PATCHES), text
        assert all(f"read {r.name}: reads Streamlit's private state" in text for r in READS), text
        gc.collect()  # the server's first visit (bench.server's) left its socket to the collector: close it
        wait_until(lambda: all(p["used"] for p in _ready(target.base)["patches"] if p["kind"] == "patch"), 60,
                   "every patch gone through (the script cache's clear once the last tab has left)")
        listed = _ready(target.base)
        assert listed["ready"] and listed["models_loaded"] == 1
        assert [(p["name"], p["applied"]) for p in listed["patches"]] == [(name, True) for name in EVERY]


@pytest.mark.server
def test_a_real_server_without_patches_serves_as_streamlit_does_and_says_so(tiny_zoo):
    bench = load_bench()
    env = {"ATTN_EXPLORER_CHECKPOINTS": str(tiny_zoo), "OMP_NUM_THREADS": "1", serving.ENV: "none"}
    with bench.server(None, env=env) as target:
        async def visit():
            tab = bench.Tab(target.base, 120)
            try:
                return [(await tab.do(("open", "", q)))[2] for q in ("text=I%20will%20eat.", "text=Where%20is%20it%3F")]
            finally:
                await tab.close()
        assert asyncio.run(visit()) == [None, None]
        listed = _ready(target.base)["patches"]
        assert [(p["name"], p["applied"], p["used"]) for p in listed] == [(name, False, False) for name in EVERY]
        assert all(p["reason"] == f"not chosen ({serving.ENV})" for p in listed)
