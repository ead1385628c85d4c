"""The lecture hall for the tests of ``scripts/serve.py`` (``server/lecture.py``): the classroom
bench's websocket client and the launcher loaded as modules, and :class:`Hall`, the launcher
running as a child process with what it printed."""
from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

from server.lecture import proxy_stats

from helpers import ROOT

SENTENCE = "text=I%20will%20eat.&model=rnnsearch"


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


bench = _load("bench_classroom", ROOT / "bench" / "classroom.py")
serve = _load("scripts_serve", ROOT / "scripts" / "serve.py")


class Hall:
    """``scripts/serve.py`` running as a child process, and what it printed."""

    def __init__(self, proc: subprocess.Popen, port: int, workdir: Path):
        self.proc, self.port, self.workdir = proc, port, workdir
        self.output: list[str] = []
        self.seen = 0  # lines of output read_until has looked at
        self.replicas: dict[str, tuple[int, int]] = {}  # name -> (port, pid)
        self.stats_port = self.proxy_pid = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.output.append(line)

    def read_until(self, marker: str, timeout: float) -> None:
        """Wait for a line containing ``marker`` after the lines already looked at."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            while self.seen < len(self.output):
                line = self.output[self.seen]
                self.seen += 1
                if m := re.search(r"(r\d+): 127\.0\.0\.1:(\d+) \(pid (\d+)", line):
                    self.replicas[m[1]] = (int(m[2]), int(m[3]))
                if m := re.search(r"haproxy: pid (\d+), stats http://127\.0\.0\.1:(\d+)/", line):
                    self.proxy_pid, self.stats_port = int(m[1]), int(m[2])
                if marker in line:
                    return
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        logs = "".join(f"\n--- {p.name} ---\n{p.read_text(errors='replace')[-2000:]}" for p in self.workdir.glob("*.log"))
        raise AssertionError(f"no {marker!r} from scripts/serve.py; it printed:\n{''.join(self.output)}{logs}")

    def stats(self) -> dict[str, dict]:
        return {row["name"]: row for row in proxy_stats(self.stats_port)}

    def wait_status(self, name: str, status: str, timeout: float) -> float:
        start = time.monotonic()
        while time.monotonic() - start < timeout:
            if self.stats()[name]["status"].startswith(status):
                return time.monotonic() - start
            time.sleep(0.25)
        raise AssertionError(f"{name} not {status} after {timeout} s: {self.stats()[name]['status']}")
