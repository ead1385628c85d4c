"""Real servers for the tests: the classroom bench's websocket client and the launcher
(``scripts/serve.py``) loaded as modules, :class:`Hall` (the launcher running as a child process,
with what it printed), a server's readiness, and a self-signed certificate for HTTPS."""
from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

from server.lecture import proxy_stats

from helpers import ROOT

OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # no proxy from the environment

SENTENCE = "text=I%20will%20eat.&model=rnnsearch"


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


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


def load_bench():
    """bench/classroom.py, the client that speaks Streamlit's websocket protocol (loaded once)."""
    return sys.modules.get("bench_classroom") or _load("bench_classroom", ROOT / "bench" / "classroom.py")


def ready(base: str) -> int:
    """How many times the server has loaded its models (app.py's readiness route)."""
    text = OPENER.open(f"{base}/_attn/ready", timeout=5).read().decode()
    return int(re.search(r"models loaded (\d+) time", text)[1])


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for localhost and 127.0.0.1, as a teacher makes one (docs/lecture.md)."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"], check=True, capture_output=True)
    return cert, key


bench = load_bench()
