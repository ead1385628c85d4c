"""Server CPU per interaction kind, here and at an earlier commit, lesson by lesson in turn.

    python bench/kinds_interleaved.py --against c0d2c47 [--lessons 30] [--append results/benchmarks.jsonl]
    python bench/kinds_interleaved.py --against c0d2c47 --kinds exercise --profile /tmp/ex   # py-spy per click
    python bench/kinds_interleaved.py --diff /tmp/ex [--leaf]                                # where they differ

``bench/classroom.py``'s ``reference_cpu_ms`` plays each distinct lesson alone on a fresh server,
one commit after the other (``bench/side_by_side.py``): minutes apart, so a shared host's drift
lands on one side. Here both apps run at once, each on its own server and class store, and the
reference lessons (``make_lessons``, the class bench's default lesson) are played alternately,
the order swapped every lesson (here, there, there, here, ...): the same minutes for both. The
earlier commit's class is opened by its own code (``open_class`` at that tree). Prints each
kind's mean server CPU milliseconds (10 ms ticks, as ``attend`` measures them) on each side and
the ratio here / there; ``--out`` writes a row per interaction (side, lesson, kind, ms).

``--profile PREFIX``: py-spy (``--gil``, raw) of each server, over the whole run, or with
``--kinds`` only around each interaction of those kinds (``PREFIX-here-N.raw``, ``-there-``).
``--diff PREFIX``: those files summed per side, then per function (inclusive samples; ``--leaf``:
self samples) the difference here minus there, largest first.
"""
from __future__ import annotations

import argparse
import asyncio
import collections
import glob
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from classroom_lesson import SENTENCES, make_lessons  # noqa: E402
from classroom_modes import attend  # noqa: E402
from classroom_report import stamp  # noqa: E402
from classroom_servers import profiled, server  # noqa: E402
from classroom_tab import Tab  # noqa: E402
from side_by_side import ROOT, git, tree_at  # noqa: E402

# which Tab.do action each profiled kind is (classroom_lesson.Lesson.steps)
KIND_TEST = {
    "open": lambda a: a[0] == "open" and a[1] == "",
    "edit": lambda a: a[0] in ("set", "drop") and a[1] == "translate_text",
    "compare": lambda a: a[0] == "goto" and a[1] == "compare",
    "step": lambda a: a[0] == "goto" and a[1] == "step-through",
    "slide": lambda a: a[0] == "set" and a[1] == "step_i",
    "beam": lambda a: a[0] == "goto" and a[1] == "beam-tree",
    "exercise": lambda a: a[0] == "goto" and a[1] == "exercises",
    "choose": lambda a: a[0] == "set" and str(a[1]).startswith("ex_which_"),
    "answer": lambda a: a[0] == "click",
    "follow": lambda a: a[0] == "open" and a[1] != "",
    "reload": lambda a: a[0] == "reload",
}
# run in the earlier tree: its own store opens its class (its schema, its API), seats for every lesson
OPEN_CLASS = """
import sys; from server.class_store import ClassStore
store = ClassStore(sys.argv[1], teacher_key=sys.argv[2]); key = store.teacher_key()
code = store.open_class(key).code
try: store.set_admission(key, code, seats=int(sys.argv[3]))
except (AttributeError, TypeError): pass  # an earlier store without seats: every student joins
print(code)
"""


def open_class(tree: Path, folder: str, lessons: int) -> tuple[dict, str]:
    """A class store in ``folder``, opened by ``tree``'s own code: (the server's environment, code)."""
    key = secrets.token_urlsafe(12)
    db = f"sqlite:///{folder}/classes.sqlite3"
    done = subprocess.run([sys.executable, "-c", OPEN_CLASS, db, key, str(lessons + 5)], cwd=tree,
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(tree)})
    if done.returncode:
        raise SystemExit(f"opening the class at {tree} failed:\n{done.stderr[-2000:]}")
    env = {"ATTN_EXPLORER_CLASS_DIR": folder, "ATTN_EXPLORER_TEACHER_KEY": key, "ATTN_EXPLORER_CLASS_DB": db,
           "ATTN_EXPLORER_JOINS_PER_MINUTE": str(10 * lessons + 50)}
    return env, done.stdout.split()[-1]


def per_click_profiles(kinds: set[str], prefix: str, pids: dict[str, int]) -> None:
    """Wrap ``Tab.do`` so that each action of ``kinds`` runs inside a py-spy of its server."""
    plain, count = Tab.do, collections.Counter()

    async def do(tab, action):
        if not any(KIND_TEST[k](action) for k in kinds):
            return await plain(tab, action)
        side = tab.side
        count[side] += 1
        with profiled(pids[side], Path(f"{prefix}-{side}-{count[side]}.raw")):
            await asyncio.sleep(0.3)  # py-spy attached before the click
            return await plain(tab, action)

    Tab.do = do


async def play(lessons, targets: dict, codes: dict, args) -> list[tuple]:
    """Each lesson on both sides in turn; rows (side, lesson, kind, ms)."""
    rows = []
    init = Tab.__init__

    for i, lesson in enumerate(lessons):
        for side in (("here", "there") if i % 2 == 0 else ("there", "here")):
            def tagged(tab, *a, _side=side, **k):
                init(tab, *a, **k)
                tab.side = _side
            Tab.__init__ = tagged
            cpu: dict[str, list[float]] = {}
            await attend(0, replace(lesson, class_code=codes[side]), targets[side], args, 0.0, 0.0, [], cpu)
            rows += [(side, i, kind, round(1000 * s, 1)) for kind, seconds in cpu.items() for s in seconds]
    Tab.__init__ = init
    return rows


def report(rows: list[tuple]) -> dict:
    kinds = list(dict.fromkeys(kind for _, _, kind, _ in rows))
    out = {}
    for kind in kinds:
        mean = {side: statistics.mean([ms for s, _, k, ms in rows if s == side and k == kind] or [0.0])
                for side in ("here", "there")}
        out[kind] = {"here": round(mean["here"], 1), "there": round(mean["there"], 1),
                     "ratio": round(mean["here"] / mean["there"], 2) if mean["there"] else None}
        print(f"{kind:9} here {mean['here']:6.1f} ms  there {mean['there']:6.1f} ms  ratio {out[kind]['ratio']}")
    return out


def diff(prefix: str, leaf: bool, top: int = 40) -> None:
    """Per function, py-spy samples here minus there (files ``PREFIX-{side}*.raw`` summed)."""
    totals = {}
    for side in ("here", "there"):
        by_function, samples = collections.Counter(), 0
        for path in glob.glob(f"{prefix}-{side}*.raw"):
            for line in Path(path).read_text().splitlines():
                stack, _, n = line.rpartition(" ")
                frames = [f.rsplit(":", 1)[0] for f in stack.split(";") if f]  # function (file), no line
                samples += int(n)
                for f in ([frames[-1]] if leaf else set(frames)) if frames else []:
                    by_function[f] += int(n)
        totals[side] = (by_function, samples)
    print(f"samples: here {totals['here'][1]}, there {totals['there'][1]}")
    here, there = totals["here"][0], totals["there"][0]
    for f in sorted(set(here) | set(there), key=lambda f: -abs(here[f] - there[f]))[:top]:
        print(f"{here[f] - there[f]:+6d}  {here[f]:6d} {there[f]:6d}  {f}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", help="the earlier commit")
    parser.add_argument("--lessons", type=int, default=30, help="the class bench's reference lessons (--sessions)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--trees", type=Path, default=Path("/tmp/attn-side-by-side"))
    parser.add_argument("--kinds", default="", help="with --profile: only around these kinds' interactions")
    parser.add_argument("--profile", help="py-spy raw files' prefix")
    parser.add_argument("--diff", help="print the profiles' difference (a --profile prefix) and stop")
    parser.add_argument("--leaf", action="store_true", help="with --diff: self samples, not inclusive")
    parser.add_argument("--out", type=Path, help="a JSON row per interaction")
    parser.add_argument("--append", type=Path)
    args = parser.parse_args(argv)
    if args.diff:
        diff(args.diff, args.leaf)
        return 0
    if not args.against:
        parser.error("--against is needed")
    args.kill_replica_after, args.recover_within = 0, 0.0  # what attend reads of the class bench's options
    trees = {"here": ROOT, "there": tree_at(args.against, args.trees)}
    commits = {side: git("rev-parse", "--short", "HEAD", cwd=tree) for side, tree in trees.items()}
    lessons = list(dict.fromkeys(make_lessons(args.lessons, args.seed, SENTENCES, class_code="x")))
    kinds = {k for k in args.kinds.split(",") if k}
    if unknown := kinds - set(KIND_TEST):
        parser.error(f"unknown kinds {sorted(unknown)}; known: {sorted(KIND_TEST)}")
    with ExitStack() as stack:
        targets, codes, pids = {}, {}, {}
        for side, tree in trees.items():
            folder = stack.enter_context(tempfile.TemporaryDirectory(prefix=f"interleaved-{side}-"))
            env, codes[side] = open_class(tree, folder, len(lessons))
            targets[side] = stack.enter_context(server(None, env=env, root=tree))
            pids[side] = targets[side].pids()[0]
            if args.profile and not kinds:
                stack.enter_context(profiled(pids[side], Path(f"{args.profile}-{side}.raw")))
        if kinds and args.profile:
            per_click_profiles(kinds, args.profile, pids)
        start = time.perf_counter()
        rows = asyncio.run(play(lessons, targets, codes, args))
    print(f"{len(lessons)} lessons on each side in {time.perf_counter() - start:.0f} s: "
          f"here {commits['here']}, there {commits['there']}")
    result = {"bench": "kinds_interleaved", "lessons": len(lessons), "against": commits["there"],
              "cpu_ms": report(rows), **stamp(ROOT)}
    if args.out:
        args.out.write_text("\n".join(json.dumps(dict(zip(("side", "lesson", "kind", "ms"), r))) for r in rows))
    print(json.dumps(result))
    if args.append:
        with open(args.append, "a") as f:
            f.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
