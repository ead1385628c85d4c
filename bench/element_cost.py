"""What one Streamlit element costs the server per rerun (docs/performance.md, "Where a
click's server CPU goes"); one JSON line.

    python bench/element_cost.py [--moves 80] [--kinds chart,popover]

A page is a fragment holding a slider and N elements of one kind; a client moves the slider
``--moves`` times over the websocket, as ``bench/classroom.py`` does, and the server's CPU per
move is read from /proc. ``none`` is the fragment and its slider alone: the fixed cost of a
rerun that redraws one element. The other kinds add N of:

- ``markdown`` (``st.markdown`` of a short line), ``latex`` (``st.latex``), ``container``
  (an empty ``st.container``);
- ``columns`` (``st.columns([2, 3])``: three blocks, the row and its two columns);
- ``chart`` (``st.plotly_chart`` of a 15-bar chart given as a spec, as ``viz/`` makes them);
- ``download`` (``st.download_button`` whose data is written when clicked), ``expander``
  (a closed ``st.expander(on_change="rerun")``) and ``popover`` (a closed
  ``st.popover(on_change="rerun")``, as a figure's export popover): widgets, each with its id
  and state.

``per_element_ms`` = (CPU per move − the ``none`` page's) / N. These are Streamlit's own costs
(element id, protobuf delta, queueing, one websocket message each), which a page can only
lower by drawing fewer elements. The app's own pages are not involved.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from classroom import Tab, cpu_seconds  # noqa: E402
from server.lecture import free_port  # noqa: E402

PAGE = '''
import os
import streamlit as st
from viz.fast_figure import Figure

KIND, N = os.environ["ELEMENT_KIND"], int(os.environ["ELEMENT_COUNT"])
TOKENS = [f"piece{j}" for j in range(15)]


@st.fragment
def view():
    i = st.slider("step", 1, 1000, key="step_i")
    for j in range(N):
        if KIND == "markdown":
            st.markdown(f"**line {j}**: value {i * j}")
        elif KIND == "latex":
            st.latex(rf"e_{{{i}{j}}} = {i * j}")
        elif KIND == "container":
            st.container()
        elif KIND == "columns":
            st.columns([2, 3])
        elif KIND == "chart":
            st.plotly_chart(Figure({"data": [{"type": "bar", "x": TOKENS, "y": [(i * k + j) % 7 for k in range(15)]}],
                                    "layout": {"height": 240}}), key=f"chart{j}")
        elif KIND == "download":  # written only when clicked, as the pages' downloads are
            st.download_button("Download", lambda j=j: f"{i},{j}", file_name=f"f{j}.csv", key=f"download{j}")
        elif KIND == "expander":  # closed and lazy (on_change="rerun"), as the pages' are
            st.expander(f"section {j}", key=f"expander{j}", on_change="rerun")
        elif KIND == "popover":  # closed and lazy, as a figure's SVG · PDF · PNG popover
            st.popover("SVG · PDF · PNG", key=f"popover{j}", on_change="rerun", icon=":material/image:")


view()
'''
KINDS = [("none", 0), ("markdown", 40), ("latex", 40), ("container", 40), ("columns", 20), ("chart", 10),
         ("download", 20), ("expander", 20), ("popover", 20)]


def cpu_per_move(page: Path, kind: str, count: int, moves: int) -> float:
    """Server CPU milliseconds per slider move, after 10 unmeasured moves."""
    port = free_port()
    env = {**os.environ, "ELEMENT_KIND": kind, "ELEMENT_COUNT": str(count), "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(page), "--server.headless", "true",
                             "--server.port", str(port), "--server.address", "127.0.0.1",
                             "--server.fileWatcherType", "none", "--runner.postScriptGC", "false",
                             "--browser.gatherUsageStats", "false"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError(f"the {kind} page did not start") from None
                time.sleep(0.2)

        async def play() -> float:
            tab = Tab(f"http://127.0.0.1:{port}", 30)
            for action in [("open", "", "")] + [("set", "step_i", i) for i in range(2, 12)]:
                error = (await tab.do(action))[2]
                if error:
                    raise RuntimeError(f"{kind}: {error}")
            before = cpu_seconds(proc.pid)
            for i in range(12, 12 + moves):
                await tab.do(("set", "step_i", i))
            await asyncio.sleep(0.1)  # the last replies still being sent
            spent = cpu_seconds(proc.pid) - before
            await tab.close()
            return 1000 * spent / moves

        return asyncio.run(play())
    finally:
        proc.terminate()
        proc.wait(10)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--moves", type=int, default=80)
    p.add_argument("--kinds", default=",".join(kind for kind, _ in KINDS), help="which kinds to measure (none always)")
    args = p.parse_args(argv)
    kinds = [(kind, count) for kind, count in KINDS if kind == "none" or kind in args.kinds.split(",")]
    with tempfile.TemporaryDirectory(prefix="attn-element-cost-") as folder:
        page = Path(folder) / "page.py"
        page.write_text(PAGE)
        per_move = {kind: round(cpu_per_move(page, kind, count, args.moves), 2) for kind, count in kinds}
    base = per_move["none"]
    result = {"bench": "element_cost", "moves": args.moves, "cpu_ms_per_move": per_move,
              "per_element_ms": {kind: round((per_move[kind] - base) / count, 3) for kind, count in kinds if count}}
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
