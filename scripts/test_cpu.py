"""Where a test run's CPU goes: run a command (by default the README's test command) and sample,
once a second, the CPU time of every process under it, sorted by kind (Chromium's renderers, its
browser and GPU processes, Playwright's driver, the Streamlit servers, the test workers, ...).

    python scripts/test_cpu.py [--out FILE] [-- COMMAND ...]      # default: bash scripts/test.sh

Prints one JSON line: the wall time, the host's busy CPU-seconds over the run (``/proc/stat``,
every process, this run's or not) and the CPU-seconds of each kind. A process is counted from
its own ``utime + stime`` at its last sample, so the last second of a short-lived process and the
work of a process that leaves the tree (a daemon, such as PostgreSQL's server) are not counted;
the kinds sum to a little under the run's own CPU. Linux only (``/proc``).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time

HZ = os.sysconf("SC_CLK_TCK")


def kind(pid: int) -> str:
    try:
        argv = open(f"/proc/{pid}/cmdline").read().split("\0")
    except OSError:
        return "gone"
    line = " ".join(argv)
    if "chromium" in argv[0]:  # its children set their title: one string, the arguments joined by spaces
        kinds = [a.split("=", 1)[1] for a in line.split() if a.startswith("--type=")]
        return f"chromium {kinds[0]}" if kinds else "chromium browser"
    if "streamlit" in line or "scripts/serve.py" in line:
        return "servers"
    if "exec(eval(sys.stdin.readline()))" in line or "pytest" in line:
        return "test workers"
    if "node" in os.path.basename(argv[0]):
        return "playwright driver"
    if "python" in os.path.basename(argv[0]):
        return "other python"
    return os.path.basename(argv[0]) or "?"


def busy_ticks() -> int:
    values = [int(v) for v in open("/proc/stat").readline().split()[1:]]
    return sum(values) - values[3] - values[4]  # less idle and iowait


class Sampler:
    def __init__(self, root: int):
        self.root, self.seen, self.stop = root, {}, threading.Event()  # (pid, start) -> [kind, ticks]

    def sweep(self) -> None:
        stats = {}
        for name in os.listdir("/proc"):
            if name.isdigit():
                try:
                    text = open(f"/proc/{name}/stat").read()
                except OSError:
                    continue
                fields = text[text.rindex(")") + 2:].split()  # after the command's name, which may hold spaces
                stats[int(name)] = (int(fields[1]), int(fields[19]), int(fields[11]) + int(fields[12]))
        children: dict[int, list[int]] = {}
        for pid, (parent, _, _) in stats.items():
            children.setdefault(parent, []).append(pid)
        todo = [self.root]
        while todo:
            pid = todo.pop()
            if pid in stats:
                key = (pid, stats[pid][1])
                if key not in self.seen:
                    self.seen[key] = [kind(pid), 0]
                self.seen[key][1] = max(self.seen[key][1], stats[pid][2])
            todo.extend(children.get(pid, []))

    def run(self) -> None:
        while not self.stop.wait(1.0):
            self.sweep()

    def by_kind(self) -> dict[str, float]:
        totals: dict[str, float] = {}
        for name, ticks in self.seen.values():
            totals[name] = totals.get(name, 0.0) + ticks / HZ
        return {k: round(v, 1) for k, v in sorted(totals.items(), key=lambda kv: -kv[1]) if v >= 0.1}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", help="also append the JSON line to this file")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- the command (default: bash scripts/test.sh)")
    args = parser.parse_args(argv)
    command = [c for c in args.command if c != "--"] or ["bash", "scripts/test.sh"]
    started, busy = time.monotonic(), busy_ticks()
    proc = subprocess.Popen(command)
    sampler = Sampler(proc.pid)
    thread = threading.Thread(target=sampler.run, daemon=True)
    thread.start()
    code = proc.wait()
    sampler.stop.set()
    thread.join()
    line = json.dumps({"command": " ".join(command), "returncode": code, "wall_s": round(time.monotonic() - started, 1),
                       "host_busy_cpu_s": round((busy_ticks() - busy) / HZ, 1), "cpu_s_by_kind": sampler.by_kind()})
    print(line)
    if args.out:
        with open(args.out, "a") as f:
            f.write(line + "\n")
    return code


if __name__ == "__main__":
    sys.exit(main())
