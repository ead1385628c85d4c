"""Which wave of the lesson sets the class bench's p95: a ``bench/classroom.py --timeline`` file
read back.

    python bench/classroom.py --replicas 2 --sessions 200 --json --timeline /tmp/t.jsonl
    python bench/timeline_waves.py /tmp/t.jsonl [--bucket 2]

Prints the p95 over every timed interaction (a faulty session's left out, as the bench leaves
them out), how many of the slowest twentieth each kind has, and per kind: when its interactions
started (seconds from the first), their p50 and p95, and the p50 of each ``--bucket`` seconds of
starts, so a wave that queues behind the one before shows as its latency climbing while its
starts pile up. Then, from the file's ``cpu_cores`` lines, the cores busy in each bucket: the
host's, the servers', the bench's own: a wave's latency on a saturated host is its work.
"""
from __future__ import annotations

import argparse
import collections
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # classroom_report reads the zoo
sys.path.insert(0, str(Path(__file__).resolve().parent))
from classroom_report import pct  # noqa: E402 - the bench's own nearest-rank percentile


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("timeline", help="a bench/classroom.py --timeline file")
    p.add_argument("--bucket", type=float, default=2.0, help="seconds of starts per p50 shown")
    args = p.parse_args(argv)
    rows = [json.loads(line) for line in open(args.timeline, encoding="utf-8")]
    cpu_rows = [r for r in rows if "cpu_cores" in r]
    # as the bench's p95: the faulty sessions' interactions apart
    rows = [r for r in rows if "kind" in r and r["ms"] is not None and r["kind"] != "check" and not r.get("faulty")]
    if not rows:
        print("no timed interactions", file=sys.stderr)
        return 1
    t0 = min(r["t"] for r in rows)
    p95 = pct([r["ms"] for r in rows], 0.95)
    slowest = collections.Counter(r["kind"] for r in rows if r["ms"] >= p95)
    print(f"{len(rows)} interactions, p95 {p95:.0f} ms; the slowest twentieth by kind: "
          + ", ".join(f"{kind} {n}" for kind, n in slowest.most_common()))
    by_kind = collections.defaultdict(list)
    for r in rows:
        by_kind[r["kind"]].append(r)
    for kind, kind_rows in by_kind.items():
        starts = [r["t"] - t0 for r in kind_rows]
        ms = [r["ms"] for r in kind_rows]
        buckets = collections.defaultdict(list)
        for start, latency in zip(starts, ms):
            buckets[int(start // args.bucket * args.bucket)].append(latency)
        waves = " ".join(f"{t}s:{statistics.median(v):.0f}" for t, v in sorted(buckets.items()))
        print(f"{kind:9s} n={len(ms):4d} starts {min(starts):5.1f}-{max(starts):5.1f} s  p50 {statistics.median(ms):6.0f}"
              f"  p95 {pct(ms, 0.95):6.0f} ms  | p50 by start: {waves}")
    cores = collections.defaultdict(list)
    for r in cpu_rows:
        if r["t"] >= t0:
            cores[int((r["t"] - t0) // args.bucket * args.bucket)].append(r["cpu_cores"])
    if cores:
        print("cores busy (host / servers / bench): " + " ".join(
            f"{t}s:" + "/".join(f"{statistics.mean(c[name] for c in v):.1f}" for name in ("host", "servers", "bench"))
            for t, v in sorted(cores.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
