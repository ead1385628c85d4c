"""What a visitor's ``clear_cache`` costs the server: nothing, if the shared state is out of reach.

    python bench/clear_cache.py [--rounds 6] [--json] [--append results/campus.jsonl]

Starts the real server (``streamlit run app.py`` on the shipped checkpoints, as
bench/classroom.py does) and, over a raw websocket as any client can, per round: opens
Translate on a sentence never sent before (a real decoding), sends Streamlit's ``clear_cache``
message, then opens Translate on another new sentence and on the first one again
(``--control``: the same steps without the message, the baseline for "after"). Reports the
models' load count before and after (``/_attn/ready``) and the median milliseconds of each
kind of translation: a fresh one before the message, a fresh one after it, and the repeat
(served from the shared cache unless the message emptied it).
"""
from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import re
import statistics
import subprocess
import sys
import urllib.request
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parent.parent
SENTENCES = ["The committee will meet again next week.", "My sister reads a book every evening.",
             "The train to the airport leaves at noon.", "We need more teachers in rural schools.",
             "The museum opens a new exhibition in May.", "He forgot his umbrella at the office.",
             "The council approved the budget for the hospital.", "Children play in the park after school.",
             "The price of bread rose again this month.", "She writes letters to her grandmother.",
             "The bridge was closed because of the storm.", "Our neighbours bought a new house."]


def classroom():
    spec = importlib.util.spec_from_file_location("bench_classroom", ROOT / "bench" / "classroom.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_classroom"] = module
    spec.loader.exec_module(module)
    return module


def commit() -> str | None:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def loads(base: str) -> int:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    return int(re.search(r"models loaded (\d+) time", opener.open(f"{base}/_attn/ready", timeout=5).read().decode())[1])


async def one_round(bench, base: str, first: str, second: str, send: bool = True) -> dict[str, float]:
    from streamlit.proto.BackMsg_pb2 import BackMsg
    tab = bench.Tab(base, 120)
    link = lambda text: f"text={quote(text)}&model=rnnsearch"  # noqa: E731
    try:
        before, _, error = await tab.do(("open", "", link(first)))
        clear = BackMsg()
        clear.clear_cache = True
        if send:  # --control: the same steps without the message
            await tab.ws.send(clear.SerializeToString())
        await asyncio.sleep(0.5)
        after, _, error2 = await tab.do(("open", "", link(second)))
        repeat, _, error3 = await tab.do(("open", "", link(first)))
    finally:
        await tab.close()
    if error or error2 or error3:
        raise RuntimeError(f"a rerun failed: {error or error2 or error3}")
    return {"fresh_before_ms": before, "fresh_after_ms": after, "repeat_after_ms": repeat}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--control", action="store_true", help="the same rounds without sending clear_cache")
    p.add_argument("--json", action="store_true")
    p.add_argument("--append", type=Path, default=None)
    args = p.parse_args(argv)
    bench = classroom()
    rounds = []
    with bench.server(None, env={"OMP_NUM_THREADS": "1"}) as target:
        loads_before = loads(target.base)
        for k in range(min(args.rounds, len(SENTENCES) // 2)):
            first, second = SENTENCES[2 * k], SENTENCES[2 * k + 1]
            if k % 2:  # each pair's order alternates, so neither side gets the longer sentences
                first, second = second, first
            rounds.append(asyncio.run(one_round(bench, target.base, first, second, not args.control)))
        loads_after = loads(target.base)
    result = {"bench": "clear_cache", "control": args.control, "rounds": len(rounds), "model_loads_before": loads_before,
              "model_loads_after": loads_after, "commit": commit(), "host": bench.host()}
    for name in rounds[0]:
        result[name] = round(statistics.median(r[name] for r in rounds), 1)
    line = json.dumps(result)
    if not args.json:
        for name in rounds[0]:
            print(f"{name:>18}: median {result[name]:8.1f} ms  ({', '.join(f'{r[name]:.0f}' for r in rounds)})")
        print(f"model loads: {loads_before} before the clear_cache messages, {loads_after} after")
    print(line)
    if args.append:
        with open(args.append, "a") as f:
            f.write(line + "\n")
    return 0 if loads_after == loads_before else 1


if __name__ == "__main__":
    sys.exit(main())
