"""The servers ``bench/classroom.py`` plays against, and what it measures of them.

``server``: one app process (``streamlit run app.py``) on loopback, healthy and past its
first (model-loading) page. ``lecture``: N replicas behind HAProxy (``server/lecture.py``, as
``scripts/serve.py`` runs them). Both yield a ``Target``, stop everything on the way out, and
name the processes whose memory (``rss_kb``, summed over children) and CPU (``cpu_seconds``,
from /proc) the ``Meter`` samples.
"""
from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))
from classroom_tab import Tab  # noqa: E402
from server.lecture import free_port  # noqa: E402
from helpers.browser import stop  # noqa: E402 - the browser tests' own helper


@dataclass
class Target:
    """What the sessions talk to: a URL; whether a proxy sets a replica cookie there; the
    server processes to measure (none for ``--url``); the lecture, when the bench runs one."""

    base: str
    sticky: bool = False
    pids: object = list
    lecture: object = None

    def kill_one(self) -> str:
        """SIGKILL the first local replica (its whole process group); its name."""
        replica = self.lecture.local[0]
        os.killpg(replica.proc.pid, signal.SIGKILL)
        return replica.name


@contextmanager
def server(port: int | None, env: dict | None = None, root: Path = ROOT):
    """The app's server on 127.0.0.1, healthy and past its first (model-loading) page; killed
    on the way out, whatever happens. ``env``: more environment (the class store's settings);
    ``root``: the checkout whose app.py runs (another commit's, for a before/after)."""
    port = port or free_port()
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
                             "--server.port", str(port), "--server.address", "127.0.0.1",
                             "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
                            cwd=root, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})},
                            start_new_session=True)  # Ctrl-C reaches us, and we stop it in order
    try:
        local = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never through a proxy
        deadline = time.monotonic() + 180
        error = "it did not answer /_stcore/health"
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                if local.open(f"http://127.0.0.1:{port}/_stcore/health", timeout=2).read() == b"ok":
                    error = None
                    break
            except OSError:
                pass
            time.sleep(0.2)
        if not error:  # the first page waits for the models: visit it once so no measured page does
            error = asyncio.run(Tab(f"http://127.0.0.1:{port}", 180).do(("open", "", "")))[2]
        if error:
            log.seek(0)
            raise RuntimeError(f"server on port {port}: {error}; its log ends:\n"
                               + log.read().decode(errors="replace")[-3000:])
        yield Target(f"http://127.0.0.1:{port}", pids=lambda: [proc.pid] if proc.poll() is None else [])
    finally:
        stop(proc)
        log.close()


@contextmanager
def lecture(replicas: int):
    """``replicas`` app processes behind HAProxy (server/lecture.py, as scripts/serve.py runs
    them) on loopback ports, each past its first page; the launcher restarts a replica that
    dies (``--kill-replica-after``). Everything is stopped on the way out."""
    import threading
    from server.lecture import Lecture
    hall = Lecture(replicas=replicas, port=free_port(), address="127.0.0.1", say=lambda m: print(m, file=sys.stderr))
    try:
        hall.start()
        hall.wait_healthy()
        for replica in hall.local:  # each replica's first page, as server() visits it
            error = asyncio.run(Tab(f"http://127.0.0.1:{replica.port}", 180).do(("open", "", "")))[2]
            if error:
                raise RuntimeError(f"replica {replica.name}: {error}")
        watcher = threading.Thread(target=hall.watch, name="lecture-watch", daemon=True)
        watcher.start()
        yield Target(f"http://127.0.0.1:{hall.port}", sticky=True, pids=lambda: [r.proc.pid for r in hall.local if r.alive],
                     lecture=hall)
    finally:
        hall.stop()


def rss_kb(pid: int) -> int:
    """VmRSS of a process and all its descendants."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            status = Path(f"/proc/{p}/status").read_text()
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except OSError:  # it exited meanwhile
            continue
        total += next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)
    return total


def cpu_ms_by_kind(cpu: dict[str, list[float]]) -> dict[str, float]:
    """Mean server CPU milliseconds per interaction of each kind, from ``reference``'s seconds."""
    return {kind: round(1000 * sum(v) / len(v), 1) for kind, v in cpu.items()}


@contextmanager
def profiled(pid: int, path: Path | None):
    """``py-spy record -f raw --gil --nonblocking`` of ``pid`` into ``path`` while the block runs
    (nothing when ``path`` is None). Only the thread holding the GIL: a thread waiting for it (30
    reruns at once, a hash or a socket write that let it go) is not where the CPU went. Non-blocking:
    a blocking attach stalls the server it measures."""
    spy = subprocess.Popen(["py-spy", "record", "-p", str(pid), "-f", "raw", "-r", "200", "--gil", "--nonblocking",
                            "-o", str(path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) if path else None
    try:
        yield
    finally:
        if spy:
            spy.send_signal(signal.SIGINT)  # py-spy writes its file on an interrupt
            spy.wait()


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (all its threads), from /proc/PID/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def host_busy_seconds() -> float:
    """CPU seconds every core of this host has spent busy so far (/proc/stat: all but idle and iowait)."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(values) - values[3] - values[4]) / os.sysconf("SC_CLK_TCK")


class Meter:
    """The server processes' peak resident memory (summed) and CPU seconds, sampled every
    0.5 s. A replica restarted during the run is counted from its first sample."""

    def __init__(self, target: Target):
        self.target, self.peak_kb, self.first, self.last = target, 0, {}, {}

    def sample(self) -> int:
        total = 0
        for pid in self.target.pids():
            try:
                cpu = cpu_seconds(pid)
            except OSError:
                continue
            self.first.setdefault(pid, cpu)
            self.last[pid] = cpu
            total += rss_kb(pid)
        self.peak_kb = max(self.peak_kb, total)
        return total

    @property
    def cpu_s(self) -> float:
        return sum(self.last[pid] - self.first[pid] for pid in self.last)
