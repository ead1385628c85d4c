"""A bench run side by side with an earlier commit: each commit's own bench and app, back to back
on the same host, in alternating order, so a day's or a host's speed moves both alike.

    python bench/side_by_side.py --against 82ab96d [--rounds 2] [--append results/benchmarks.jsonl] \
        -- bench/classroom.py --sessions 30 --json

The earlier commit is checked out once in a git worktree (``--trees``, kept for the next call);
each round runs the bench there and here (the order swapped every round), reads the JSON line
each prints last, and prints one line per run: the commit and the figures a reader compares
(p95, follow p95, server CPU per click; ``--fields`` for others), then each figure's ratio here /
there over the rounds' medians. ``--append`` adds every run's JSON line, with ``side_by_side``
naming the pair and round, to a JSONL file.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIELDS = ("p95_ms", "follow_p95_ms", "server_cpu_ms_per_click", "errors", "lost_answers", "cached_per_click_ms",
          "starve_p95_ratio", "flood_p95_ratio", "starve.p95_ms", "flood.p95_ms")


def git(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def tree_at(commit: str, trees: Path) -> Path:
    """A worktree of ``commit`` under ``trees`` (made once, reused)."""
    sha = git("rev-parse", "--short", commit)
    path = trees / sha
    if not (path / ".git").exists():
        trees.mkdir(parents=True, exist_ok=True)
        git("worktree", "add", "--detach", str(path), sha)
    shared, beside = ROOT.parent / "shared", trees / "shared"
    if shared.exists() and not beside.exists():  # the benches read the corpora at ../shared, as here
        beside.symlink_to(shared)
    return path


def run(tree: Path, bench: list[str]) -> dict:
    """The bench's last JSON line, run from ``tree`` with that tree's Python files."""
    done = subprocess.run([sys.executable, *bench], cwd=tree, capture_output=True, text=True)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode or not lines:
        raise SystemExit(f"{' '.join(bench)} at {tree} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(lines[-1])


def flat(result: dict, field: str):
    """A figure of the bench's JSON; ``a.b`` reads b inside a (``starve.p95_ms``: the class beside the tabs)."""
    for key in field.split("."):
        result = result.get(key) if isinstance(result, dict) else None
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", required=True, help="the earlier commit")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--trees", type=Path, default=Path("/tmp/attn-side-by-side"))
    parser.add_argument("--fields", default=",".join(FIELDS))
    parser.add_argument("--append", type=Path)
    parser.add_argument("bench", nargs=argparse.REMAINDER, help="-- the bench and its arguments")
    args = parser.parse_args(argv)
    bench = args.bench[1:] if args.bench[:1] == ["--"] else args.bench
    if not bench:
        parser.error("name the bench after --")
    trees = {"there": tree_at(args.against, args.trees), "here": ROOT}
    commits = {side: git("rev-parse", "--short", "HEAD", cwd=tree) for side, tree in trees.items()}
    fields = args.fields.split(",")
    results: dict[str, list[dict]] = {"there": [], "here": []}
    for r in range(args.rounds):
        for side in (("there", "here") if r % 2 == 0 else ("here", "there")):
            result = run(trees[side], bench)
            result["side_by_side"] = {"against": commits["there"], "here": commits["here"], "round": r, "side": side}
            results[side].append(result)
            shown = ", ".join(f"{f} {flat(result, f)}" for f in fields if flat(result, f) is not None)
            print(f"round {r} {side:5} {commits[side]}: {shown}", flush=True)
            if args.append:
                with open(args.append, "a") as out:
                    out.write(json.dumps(result) + "\n")
    for f in fields:
        values = {side: [flat(x, f) for x in results[side] if isinstance(flat(x, f), (int, float))] for side in results}
        if values["there"] and values["here"]:
            there, here = statistics.median(values["there"]), statistics.median(values["here"])
            ratio = f"{here / there:.2f}" if there else "-"
            print(f"{f}: {commits['there']} {there:g}, {commits['here']} {here:g}, ratio {ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
