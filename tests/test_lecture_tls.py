"""The lecture on a campus network (scripts/serve.py, server/lecture.py): real HAProxy serving
HTTPS with a self-signed certificate made by openssl, a Translate rerun over ``wss://``, plain
http refused, the per-client limits in force, the working folder and its files private, and
the teacher key in no file; and the launcher's refusals (a short key, SQLite or no shared
secret across machines)."""
from __future__ import annotations

import asyncio
import http.client
import os
import re
import signal
import ssl
import stat
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from websockets.asyncio.client import connect

from helpers.lecture import bench, Hall, serve, SENTENCE
from server.class_store import ClassStore
from server.lecture import COOKIE, haproxy_binary
from server.proxies import client_address
from server.sign_in import SignInAttempts
from helpers.lecture import self_signed

ROOT = Path(__file__).resolve().parent.parent


async def translate_over_wss(base: str, context: ssl.SSLContext, cookie: str) -> tuple[str, str | None]:
    """One Translate page's run over wss, spoken as bench/classroom.py's Tab speaks it."""
    tab = bench.Tab(base, 60)
    tab.cookie, tab.query = cookie, SENTENCE
    tab.ws = await connect(f"wss://{tab.host}/_stcore/stream", subprotocols=["streamlit"], origin=base, ssl=context,
                           proxy=None, max_size=None, additional_headers={"Cookie": cookie}, ping_interval=None,
                           open_timeout=60)
    try:
        await tab.send(page_name="")
        return await asyncio.wait_for(tab.rerun_end(), 60)
    finally:
        await tab.close()


@pytest.mark.server
def test_https_through_haproxy(tiny_zoo, tmp_path):
    assert haproxy_binary(), "haproxy is missing: scripts/test.sh installs it"
    cert, key = self_signed(tmp_path)
    port, workdir = bench.free_port(), tmp_path / "lecture"
    env = dict(os.environ, ATTN_EXPLORER_CHECKPOINTS=str(tiny_zoo), PYTHONUNBUFFERED="1",
               ATTN_EXPLORER_CLASS_DIR=str(tmp_path / "classes"), ATTN_EXPLORER_TEACHER_KEY="")
    proc = subprocess.Popen([sys.executable, "scripts/serve.py", "--replicas", "1", "--port", str(port), "--address",
                             "127.0.0.1", "--workdir", str(workdir), "--tls-cert", str(cert), "--tls-key", str(key)],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    hall = Hall(proc, port, workdir)
    try:
        hall.read_until("ready:", 180)
        base = f"https://127.0.0.1:{port}"
        context = ssl.create_default_context(cafile=str(cert))  # the browser, once told to trust it
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=context))
        with opener.open(f"{base}/", timeout=30) as page:
            assert page.status == 200
            cookie = next(h.split(";")[0] for h in page.headers.get_all("Set-Cookie") if h.startswith(COOKIE))
        digest, error = asyncio.run(translate_over_wss(base, context, cookie))
        assert error is None and digest
        with pytest.raises((OSError, http.client.HTTPException)):  # plain http on the TLS port: refused
            urllib.request.build_opener(urllib.request.ProxyHandler({})).open(f"http://127.0.0.1:{port}/", timeout=10)
        with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):  # untrusted: the browser's warning
            urllib.request.build_opener(urllib.request.ProxyHandler({})).open(f"{base}/", timeout=10)
        config = (workdir / "haproxy.cfg").read_text()
        assert "stick-table" in config and f"ssl crt {workdir / 'lecture.pem'}" in config
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(60)
    teacher_key = ClassStore(f"sqlite:///{tmp_path / 'classes' / 'classes.sqlite3'}").teacher_key()
    assert stat.S_IMODE(workdir.stat().st_mode) == 0o700
    files = list(workdir.iterdir())
    assert {p.name for p in files} >= {"haproxy.cfg", "haproxy.log", "r1.log", "lecture.pem"}
    for path in files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
        assert teacher_key not in path.read_text(errors="replace"), f"the key is in {path.name}"
    assert teacher_key not in "".join(hall.output)  # no terminal here: the launcher does not print it either
    for path in (tmp_path / "classes").iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


@pytest.mark.parametrize("args, env, says", [
    (["--replicas", "1"], {"ATTN_EXPLORER_TEACHER_KEY": "short-key"}, "at least 12"),
    (["--replicas", "1", "--backend", "10.0.0.12:8501"], {"ATTN_EXPLORER_CLASS_DB": ""}, "SQLite file is one machine"),
    (["--replicas", "1", "--backend", "10.0.0.12:8501"],
     {"ATTN_EXPLORER_CLASS_DB": "postgresql://u@10.0.0.5/db", "STREAMLIT_SERVER_COOKIE_SECRET": ""}, "cookie secret"),
])
def test_the_launcher_refuses_what_would_not_be_safe(monkeypatch, capsys, args, env, says):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert serve.main(args) == 2
    assert says in capsys.readouterr().err


def test_a_short_chosen_key_stops_the_one_process_server():
    env = dict(os.environ, ATTN_EXPLORER_TEACHER_KEY="eleven-char")
    out = subprocess.run([sys.executable, "-c", "import app"], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 1 and re.search(r"11 characters long; a teacher key needs at least 12", out.stderr)


def test_the_visitors_address_is_the_one_the_proxy_saw(monkeypatch):
    monkeypatch.delenv("ATTN_EXPLORER_PROXIES", raising=False)  # one process, no proxy: no header is believed
    assert client_address("10.1.2.3", "6.6.6.6") == "10.1.2.3"
    assert client_address(None, "6.6.6.6") == "127.0.0.1"  # Streamlit gives None for loopback
    monkeypatch.setenv("ATTN_EXPLORER_PROXIES", "127.0.0.1,::1")  # behind scripts/serve.py's HAProxy
    assert client_address(None, "10.1.2.3") == "10.1.2.3"
    assert client_address("127.0.0.1", "forged, 10.1.2.3") == "10.1.2.3"
    assert client_address("10.9.9.9", "6.6.6.6") == "10.9.9.9"  # not the proxy: its header is the visitor's
    assert client_address(None, None) == "127.0.0.1"
    limit = SignInAttempts(per_session=3, session_window=60, per_address=5, address_window=600, entries=4)
    for t in range(3):
        assert limit.wait("tab-a", "net", t) == 0
        limit.failed("tab-a", "net", t)
    assert limit.wait("tab-a", "net", 3) == 57 and limit.wait("tab-b", "net", 3) == 0
    assert limit.wait("tab-a", "net", 61) == 0  # the window has passed
    limit.failed("tab-b", "net", 62)
    limit.failed("tab-b", "net", 63)  # the address's fifth: busy now
    assert limit.wait("tab-b", "net", 64) == 59  # one try a minute per tab that sent a wrong key
    assert limit.wait("tab-c", "net", 64) == 0  # a new tab's first key is checked at once: nobody is locked out
    limit.failed("tab-c", "net", 64)
    assert limit.wait("tab-c", "net", 65) == 59 and limit.wait("tab-e", "net", 65) == 0  # only the sender waits
    limit.failed("tab-d", "other", 65)  # a fifth entry: the quietest ("tab-a") is forgotten
    assert len(limit._failures) == 4 and ("session", "tab-a") not in limit._failures


@pytest.mark.server
def test_https_from_one_process(tiny_zoo, tmp_path):
    """The one-machine command with Streamlit's own TLS: a Translate rerun over wss."""
    from helpers.browser import stop, wait_until
    cert, key = self_signed(tmp_path)
    port = bench.free_port()
    env = dict(os.environ, ATTN_EXPLORER_CHECKPOINTS=str(tiny_zoo), OMP_NUM_THREADS="1")
    with open(tmp_path / "server.log", "w") as log:
        proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
                                 "--server.port", str(port), "--server.address", "127.0.0.1",
                                 "--server.sslCertFile", str(cert), "--server.sslKeyFile", str(key)],
                                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        base = f"https://127.0.0.1:{port}"
        context = ssl.create_default_context(cafile=str(cert))
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=context))
        wait_until(lambda: opener.open(f"{base}/_attn/ready", timeout=2).status == 200, 120, "the server's models")
        digest, error = asyncio.run(translate_over_wss(base, context, ""))
        assert error is None and digest, (tmp_path / "server.log").read_text()[-3000:]
    finally:
        stop(proc)
