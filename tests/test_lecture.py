"""The lecture setup (scripts/serve.py, server/lecture.py): real HAProxy in front of two real
app processes, driven over Streamlit's own websocket protocol as bench/classroom.py drives it.

HAProxy is Debian's ``haproxy`` package; ``scripts/test.sh`` installs it (as it installs
chromium), so a missing proxy fails here rather than skipping."""
from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import ROOT
from helpers.lecture import bench, Hall, serve, SENTENCE
from server.lecture import COOKIE, haproxy_binary

pytestmark = pytest.mark.server

OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@pytest.fixture(scope="module")
def hall(tiny_zoo, tmp_path_factory):
    assert haproxy_binary(), "haproxy is missing: scripts/test.sh installs it (apt-get install haproxy)"
    port, workdir = bench.free_port(), tmp_path_factory.mktemp("lecture")
    env = dict(os.environ, ATTN_EXPLORER_CHECKPOINTS=str(tiny_zoo), PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "scripts/serve.py", "--replicas", "2", "--port", str(port),
                             "--address", "127.0.0.1", "--workdir", str(workdir)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    hall = Hall(proc, port, workdir)
    try:
        hall.read_until("ready:", 180)
        yield hall
    finally:
        if proc.poll() is None:  # a failed test: stop it as Ctrl-C does, by force if need be
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)


def _open(base: str, cookie: str = "") -> bench.Tab:
    """One browser tab opening the Translate page through the proxy; the tab, its rerun finished."""
    async def go():
        tab = bench.Tab(base, 60, sticky=True)
        tab.cookie = cookie
        try:
            _, digest, error = await tab.do(("open", "", SENTENCE))
        finally:
            await tab.close()
        assert error is None and digest, error
        return tab
    return asyncio.run(go())


def test_a_session_through_the_proxy_is_sticky_and_its_translate_page_finishes(hall):
    base = f"http://127.0.0.1:{hall.port}"
    tab = _open(base)
    assert re.fullmatch(rf"{COOKIE}=r[12]", tab.cookie), tab.cookie  # the proxy named a replica
    chosen = tab.replica
    before = {name: row["sessions_total"] for name, row in hall.stats().items()}
    for _ in range(3):  # the same browser comes back: each time to the replica its cookie names
        assert _open(base, tab.cookie).replica == chosen
    after = {name: row["sessions_total"] for name, row in hall.stats().items()}
    other = "r2" if chosen == "r1" else "r1"
    assert after[chosen] - before[chosen] >= 6  # three pages and three websockets
    assert after[other] == before[other]


def test_a_killed_replica_is_taken_out_restarted_and_its_students_served(hall):
    base = f"http://127.0.0.1:{hall.port}"
    port, pid = hall.replicas["r1"]
    os.kill(pid, signal.SIGKILL)
    out_after = hall.wait_status("r1", "DOWN", 15)  # the health check takes it out within seconds
    tab = _open(base, f"{COOKIE}=r1")  # a student of the dead replica reconnects: served by r2
    assert tab.replica == "r2"
    assert _open(base).replica == "r2"  # a new student too
    hall.read_until("replica r1", 30)  # the launcher noticed, and restarts it
    hall.wait_status("r1", "UP", 120)
    assert out_after < 15


def test_ctrl_c_stops_everything_the_launcher_started(hall):
    ports = [port for port, _ in hall.replicas.values()] + [hall.port]
    started = [pid for _, pid in hall.replicas.values()] + [hall.proxy_pid]
    started += [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and _is_ours(p, hall)]
    hall.proc.send_signal(signal.SIGINT)
    assert hall.proc.wait(60) == 0
    time.sleep(0.5)
    alive = [pid for pid in set(started) if Path(f"/proc/{pid}").exists() and not _zombie(pid)]
    assert not alive, f"left running: {alive}"
    for port in ports:
        with pytest.raises(OSError):
            OPENER.open(f"http://127.0.0.1:{port}/_stcore/health", timeout=2)
    assert (hall.workdir / "haproxy.cfg").exists() and (hall.workdir / "r1.log").exists()  # --workdir: kept


def test_without_workdir_the_launcher_leaves_no_folder_behind(tiny_zoo):
    """The temporary folder of the config and logs is removed when the lecture stops."""
    port = bench.free_port()
    env = dict(os.environ, ATTN_EXPLORER_CHECKPOINTS=str(tiny_zoo), PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "scripts/serve.py", "--replicas", "1", "--port", str(port),
                             "--address", "127.0.0.1"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    hall = Hall(proc, port, Path("/nonexistent"))
    try:
        hall.read_until("r1: 127.0.0.1", 60)
        workdir = Path(re.search(r"config and logs in (\S+)", "".join(hall.output))[1])
        assert (workdir / "haproxy.cfg").exists()
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(60) == 0
    assert not workdir.exists()


def _is_ours(proc_dir: Path, hall: Hall) -> bool:
    """A process whose command line names this hall's workdir or one of its replica ports."""
    try:
        cmdline = (proc_dir / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return False
    return str(hall.workdir) in cmdline or any(f"--server.port {port} " in cmdline for port, _ in hall.replicas.values())


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return False


def test_a_killed_launcher_takes_its_replicas_and_proxy_with_it(tiny_zoo, tmp_path):
    """Even SIGKILL (no Ctrl-C handler runs) leaves nothing behind: the children die with it."""
    port = bench.free_port()
    env = dict(os.environ, ATTN_EXPLORER_CHECKPOINTS=str(tiny_zoo), PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "scripts/serve.py", "--replicas", "1", "--port", str(port),
                             "--address", "127.0.0.1", "--workdir", str(tmp_path)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    hall = Hall(proc, port, tmp_path)
    hall.read_until("r1: 127.0.0.1", 60)
    children = [pid for _, pid in hall.replicas.values()] + [hall.proxy_pid]
    proc.kill()
    proc.wait(10)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() and not _zombie(pid) for pid in children):
        time.sleep(0.25)
    assert not [pid for pid in children if Path(f"/proc/{pid}").exists() and not _zombie(pid)]


def test_without_haproxy_the_launcher_says_how_to_install_it(monkeypatch, capsys):
    monkeypatch.setattr(serve, "haproxy_binary", lambda: None)
    assert serve.main(["--replicas", "1"]) == 2
    assert "apt-get install haproxy" in capsys.readouterr().err
