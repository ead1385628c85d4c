"""A bench's figures against the best line recorded for the same bench, setting and host kind.

    python bench/best_line.py [--bench classroom] [--sessions 30] [--file results/benchmarks.jsonl]

A run compared only with its parent lets a room drift slower one commit at a time; each bench
that writes ``results/benchmarks.jsonl`` lines (``bench/classroom.py``, ``bench/page_cost.py``)
also prints, after its JSON line and on stderr, each figure's ratio to the best recorded line
of its kind (``vs_best`` in the JSON line too), and says so when the server CPU per click is
more than ``CPU_MARGIN`` over that best, the bar past which a change states why
(docs/performance.md, "The budget"). The best line may come from a faster day of a shared host
or from a lighter lesson (its commit, date and interactions are printed with it): the ratio
says where to look, and a side-by-side run (``bench/side_by_side.py``) says whether a change
is slower.

Without ``--bench`` options, the command prints the best line of each kind in the file.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results" / "benchmarks.jsonl"
CPU_MARGIN = 1.10  # a change past 10 % over the best CPU per click states why (docs/performance.md)

# what makes two lines of a bench comparable: their setting; lines without the key count as its default
SETTINGS = {
    "classroom": {"sessions": None, "replicas": 1, "one_address": None, "starve_page": None,
                  "streamlit_patches": "all", "flood": False, "prank": False, "url": None, "faulty": None},
    "classroom-follow": {"sessions": None, "replicas": 1, "streamlit_patches": "all"},
    "classroom-check": {"sessions": None, "replicas": 1},
    "page_cost": {"lessons": None},
    # named: followers with a student cookie; reveal: a reveal (of an exercise that share answered), not the sends
    "follow_cost": {"followers": None, "rounds": None, "named": False, "reveal": None},
}
# the figures compared, each lower-is-better; a dict figure (per kind) is compared key by key
FIGURES = {
    "classroom": ("p95_ms", "follow_p95_ms", "server_cpu_ms_per_click", "reference_cpu_ms"),
    "classroom-follow": ("follow_p95_ms",),
    "classroom-check": ("p95_ms",),
    "page_cost": ("cached_per_click_ms", "fresh_per_click_ms", "cached_ms"),
    "follow_cost": ("server_cpu_ms_per_follow", "click_p95_ms"),
}
# a kind of a per-kind figure compared only with lines that measured it alike: the class bench's
# reference ``follow`` is a fresh open of each sent page where the line says so, and before that
# averaged in the teacher's moves that open nothing (bench/classroom_modes.py, REFERENCE_FOLLOW)
ALIKE = {("reference_cpu_ms", "follow"): "reference_follow"}
CPU_FIGURES = ("server_cpu_ms_per_click", "cached_per_click_ms", "server_cpu_ms_per_follow")


def setting(line: dict) -> tuple:
    """A line's setting: the values of its bench's SETTINGS keys (a mode's dict counts as on)."""
    keys = SETTINGS.get(line.get("bench"), {})
    return tuple(bool(line.get(k)) if default is False else line.get(k, default) for k, default in keys.items())


def host_kind(line: dict) -> str | None:
    return line.get("host")


def read(path: Path) -> list[dict]:
    lines = []
    if path.exists():
        for text in path.read_text(encoding="utf-8").splitlines():
            try:
                lines.append(json.loads(text))
            except json.JSONDecodeError:
                continue
    return lines


def comparable(result: dict, lines: list[dict]) -> list[dict]:
    """The recorded lines of the same bench, setting and host kind as ``result``, with no error
    (a run with errors or lost answers is no budget), other than ``result`` itself."""
    return [line for line in lines
            if line is not result and line.get("bench") == result.get("bench")
            and host_kind(line) == host_kind(result) and setting(line) == setting(result)
            and not line.get("errors") and not line.get("lost_answers")]


def against_best(result: dict, lines: list[dict]) -> dict:
    """Each figure of ``result`` against the lowest recorded for it among ``comparable`` lines:
    ``{figure: {"here", "best", "ratio", "commit", "date", "interactions"}}``; a per-kind figure
    gives ``{figure: {kind: {...}}}``."""
    pool = comparable(result, lines)
    out: dict = {}

    def best_of(value, get, alike: str | None = None) -> dict | None:
        found = [(get(line), line) for line in pool if alike is None or line.get(alike) == result.get(alike)]
        found = [(v, line) for v, line in found if isinstance(v, (int, float)) and v > 0]
        if not isinstance(value, (int, float)) or not found:
            return None
        v, line = min(found, key=lambda x: x[0])
        return {"here": value, "best": v, "ratio": round(value / v, 2), "commit": line.get("commit"),
                "date": line.get("date"), "interactions": line.get("interactions")}

    for figure in FIGURES.get(result.get("bench"), ()):
        value = result.get(figure)
        if isinstance(value, dict):
            kinds = {kind: best_of(v, lambda line, k=kind, f=figure: (line.get(f) or {}).get(k),
                                   ALIKE.get((figure, kind)))
                     for kind, v in value.items()}
            kinds = {k: v for k, v in kinds.items() if v}
            if kinds:
                out[figure] = kinds
        else:
            found = best_of(value, lambda line, f=figure: line.get(f))
            if found:
                out[figure] = found
    return out


def report(compared: dict, say=lambda text: print(text, file=sys.stderr)) -> list[str]:
    """Print the ratios, one line a figure (per-kind figures on one line); return the warnings:
    a CPU figure more than CPU_MARGIN over its best."""
    warnings = []
    for figure, found in compared.items():
        if "ratio" in found:
            say(f"vs best {figure}: {found['here']} / {found['best']} = {found['ratio']}x "
                f"(best at {found['commit']}, {found['date']}, {found['interactions'] or '-'} interactions)")
            if figure in CPU_FIGURES and found["ratio"] > CPU_MARGIN:
                warnings.append(f"{figure} is {found['ratio']}x the best line on this host kind "
                                f"(over {CPU_MARGIN}x: state why in the commit and docs/performance.md)")
        else:
            say(f"vs best {figure}: " + ", ".join(f"{kind} {f['ratio']}x ({f['best']} at {f['commit']})"
                                                  for kind, f in found.items()))
    for warning in warnings:
        say("BUDGET: " + warning)
    return warnings


def ratios(compared: dict) -> dict:
    """The JSON line's ``vs_best``: each figure's ratio to its best (per kind for a per-kind figure)."""
    return {figure: found["ratio"] if "ratio" in found else {kind: f["ratio"] for kind, f in found.items()}
            for figure, found in compared.items()}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--file", type=Path, default=RESULTS)
    p.add_argument("--bench", help="only this bench's lines")
    p.add_argument("--sessions", type=int, help="only lines of this many sessions")
    args = p.parse_args(argv)
    lines = [line for line in read(args.file) if line.get("bench") in SETTINGS
             and (not args.bench or line.get("bench") == args.bench)
             and (args.sessions is None or line.get("sessions") == args.sessions)]
    groups: dict = {}
    for line in lines:
        if not line.get("errors") and not line.get("lost_answers"):
            groups.setdefault((line["bench"], host_kind(line), setting(line)), []).append(line)
    for (bench, host, kind), members in sorted(groups.items(), key=lambda g: str(g[0])):
        print(f"{bench} on {host}, setting {dict(zip(SETTINGS[bench], kind))}: {len(members)} line(s)")
        for figure in FIGURES[bench]:
            found = [(m.get(figure), m) for m in members if isinstance(m.get(figure), (int, float))]
            if found:
                v, m = min(found, key=lambda x: x[0])
                print(f"  best {figure}: {v} at {m.get('commit')} ({m.get('date')})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
