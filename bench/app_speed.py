"""How fast the app is on the shipped checkpoints; prints one JSON line.

    python bench/app_speed.py [--checkpoints checkpoints] [--repeats 5]

- ``cold_start_s``: from launching ``streamlit run app.py`` to the first rendered page in
  headless Chromium (the Translate page with its heatmap drawn; models loaded on the way),
  the median of ``--cold-starts`` fresh servers (each run in ``cold_start_runs_s``).
  Chromium is started before the clock does, so its own start-up is not counted.
- ``translate_ms`` / ``compare_ms``: server time of one interaction on a 20-word sentence
  (AppTest: a new sentence typed, the script rerun), median over ``--repeats`` sentences
  never seen before, so nothing comes from the translation cache.
- ``rss_mb``: resident memory of the running Streamlit server with every shipped model
  loaded, after the interactions above.

Targets (docs/performance.md): cold start ≤ 5 s, an interaction ≤ 300 ms, all models ≤ 600 MB RSS.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

# 20 words; the colour changes per repeat so every run misses the translation cache
SENTENCE = "The young woman in the {} coat walked across the old bridge while her two children played by the river."
COLOURS = ["red", "blue", "green", "black", "white", "yellow", "brown", "grey", "long", "warm", "new", "dark"]
HEATMAP_DRAWN = """(() => [...document.querySelectorAll('.js-plotly-plot')]
  .some(p => p.data && p.data[0] && p.data[0].type === 'heatmap' && p.querySelector('.hm')))()"""


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def cold_start(checkpoints: Path) -> dict:
    """Seconds from `streamlit run` to a drawn heatmap in Chromium, and the server's RSS then."""
    import subprocess
    import urllib.request
    from helpers.browser import find_chromium, headless_chromium, wait_until
    from server.lecture import free_port

    chromium = find_chromium(install=False)
    if not chromium:
        return {"cold_start_s": None, "cold_start_note": "chromium not found (bash scripts/setup_browser.sh)"}
    with headless_chromium(chromium) as page:
        port = free_port()
        env = dict(os.environ, ATTN_EXPLORER_CHECKPOINTS=str(checkpoints))
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
                                 "--server.port", str(port), "--server.address", "127.0.0.1",
                                 "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
                                cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            url = f"http://127.0.0.1:{port}"
            wait_until(lambda: urllib.request.urlopen(f"{url}/_stcore/health", timeout=1).read() == b"ok", 120,
                       "the server", interval=0.05)
            server_up = time.perf_counter() - start
            page.goto(url + "/", wait_until="commit")
            page.wait_for_function(HEATMAP_DRAWN, polling=50, timeout=120_000)
            first_page = time.perf_counter() - start
            return {"cold_start_s": round(first_page, 2), "server_up_s": round(server_up, 2),
                    "rss_first_page_mb": round(rss_mb(proc.pid), 1)}
        finally:
            proc.terminate()
            proc.wait(15)


def interactions(checkpoints: Path, repeats: int) -> dict:
    """Median server time of a Translate and a Compare rerun after typing a new 20-word sentence."""
    os.environ["ATTN_EXPLORER_CHECKPOINTS"] = str(checkpoints)
    from streamlit.testing.v1 import AppTest
    from ui.zoo_cache import available_models, zoo

    at = AppTest.from_file(str(ROOT / "navigation.py"), default_timeout=120).run()  # loads every model once
    timings = {}
    sentences = iter(SENTENCE.format(c) for c in COLOURS * 4)
    for page, key in (("translate", "translate_text"), ("compare", "compare_text")):
        if page == "compare":
            at.switch_page("app_pages/compare.py").run()
        times = []
        for _ in range(repeats):
            box = at.text_area(key=key).input(next(sentences))
            start = time.perf_counter()
            box.run()
            times.append(time.perf_counter() - start)
            if at.exception:
                raise RuntimeError(at.exception[0].value)
        timings[f"{page}_ms"] = round(1000 * statistics.median(times), 1)
        timings[f"{page}_max_ms"] = round(1000 * max(times), 1)
    timings["compare_models"] = len(at.multiselect(key="compare_models").value)
    timings["models_loaded"] = len(available_models())
    timings["models_unavailable"] = sorted(n for n, e in zoo().items() if not e.available)
    timings["rss_all_models_mb"] = round(rss_mb(os.getpid()), 1)
    return timings


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--checkpoints", default=os.environ.get("ATTN_EXPLORER_CHECKPOINTS", str(ROOT / "checkpoints")))
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--cold-starts", type=int, default=5,
                   help="cold starts to measure (the host's speed drifts, so one is not enough)")
    p.add_argument("--skip-browser", action="store_true", help="no cold-start measurement")
    args = p.parse_args(argv)
    checkpoints = Path(args.checkpoints).resolve()
    result = {"checkpoints": str(checkpoints)}
    if not args.skip_browser:
        runs = [cold_start(checkpoints)]
        if runs[0]["cold_start_s"] is None:  # no Chromium: say so
            result.update(runs[0])
        else:
            runs += [cold_start(checkpoints) for _ in range(args.cold_starts - 1)]
            result.update(cold_start_s=statistics.median(r["cold_start_s"] for r in runs),
                          cold_start_runs_s=[r["cold_start_s"] for r in runs],
                          server_up_s=statistics.median(r["server_up_s"] for r in runs),
                          rss_first_page_mb=max(r["rss_first_page_mb"] for r in runs))
    result.update(interactions(checkpoints, args.repeats))
    result["words"] = len(SENTENCE.format("red").split())
    result["machine"] = f"{platform.machine()} {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}"
    result["torch_threads"] = int(os.environ.get("OMP_NUM_THREADS", "0")) or None
    print(json.dumps(result, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
