"""A lecture: several ``streamlit run app.py`` processes behind HAProxy, kept running.

One Streamlit process runs its Python on one core at a time, so a hall of students is served
by several independent processes ("replicas") behind a proxy. Each process keeps its own
sessions (and their media files) in memory, so a browser must keep reaching the same one:
HAProxy inserts a cookie naming the replica (cookie stickiness; students behind one NAT share
an address, so an address hash would send them all to one process), checks every replica's
health, and tunnels the websockets. ``scripts/serve.py`` is the command; this module is the
machinery, also used by ``bench/classroom.py --replicas`` and the tests.

What the proxy does, and why (``haproxy_config``):

- ``cookie ATTN_REPLICA insert indirect nocache httponly`` (and ``secure`` under TLS): the first
  response names the replica; the browser's websocket upgrade carries the cookie back.
- ``balance leastconn``: a websocket lives for the whole lesson, so "fewest open connections"
  spreads students; round robin would count requests, not students.
- health: ``/_stcore/health`` (Streamlit's runtime is up) and then ``/_attn/ready``
  (``app.py``: the warm-up thread has loaded the models). A replica still loading its models
  gets no student; a dead one (connection refused) is out after two failed checks, one second
  apart. A check may take 5 s (``timeout check``): a replica busy with 100 students answers
  late, and the 1 s default took live replicas out mid-lesson. Marking a replica down does
  not close its students' websockets: a dead replica's close by themselves, and a live one
  marked down by mistake keeps the students it has.
- ``option redispatch``: a student whose cookie names a dead replica is sent to a live one. The
  front end reconnects by itself and reruns the page from its URL, which carries the sentence
  and the choices (``ui/widgets.py``), so the page comes back as it was.
- ``timeout tunnel 1h``: an idle websocket (a student reading) stays open for a lecture.
- HTTPS (``tls``: a PEM holding the certificate and its key): HAProxy terminates TLS on the
  public port, the websockets are ``wss://``, the replicas behind it speak plain HTTP on
  loopback. Plain ``http://`` on that port is refused (the TLS handshake fails): students are
  given the ``https://`` link. Every answer carries ``Strict-Transport-Security`` (a day).
- per-client limits, a stick table keyed by the client's address: at most
  ``client_connections`` open connections and ``client_requests`` HTTP requests per 10 s.
  Sized for a whole class behind one address (a NAT): 200 students each hold a websocket and
  open about 5 connections and 40 requests while the page loads, 1,000 connections and 8,000
  requests, under the defaults (1,500 and 10,000); a client past them is refused (connections)
  or answered 429 (requests). ``option forwardfor`` passes the client's address to the
  replicas (X-Forwarded-For, the one HAProxy writes, a visitor's own removed first), which
  believe it from this proxy only (``ATTN_EXPLORER_PROXIES``) and limit teacher sign-ins and
  class joins by it.
- files: the working folder is 0700 and every file in it (config, logs, the certificate) 0600.

The launcher restarts a replica that exits, waiting a little longer after each quick exit, so
a replica that cannot start does not spin.
"""
from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from server.loading import READY_PATH

ROOT = Path(__file__).resolve().parent.parent
COOKIE = "ATTN_REPLICA"
INSTALL_HINT = "HAProxy is not installed: install it with `sudo apt-get install haproxy` (Debian/Ubuntu), then run this again."


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def proxy_stats(stats_port: int) -> list[dict]:
    """HAProxy's own figures per replica (the CSV of its stats page on 127.0.0.1:stats_port):
    name, status (UP, DOWN …), sessions_total, sessions_now."""
    import csv
    import io
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    text = opener.open(f"http://127.0.0.1:{stats_port}/stats;csv", timeout=5).read().decode()
    rows = csv.DictReader(io.StringIO(text.lstrip("# ")))
    return [{"name": r["svname"], "status": r["status"], "sessions_total": int(r["stot"] or 0),
             "sessions_now": int(r["scur"] or 0)}
            for r in rows if r["pxname"] == "replicas" and r["svname"] not in ("BACKEND", "FRONTEND")]


def haproxy_binary() -> str | None:
    return shutil.which("haproxy") or next((p for p in ("/usr/sbin/haproxy", "/usr/local/sbin/haproxy")
                                            if os.access(p, os.X_OK)), None)


CLIENT_CONNECTIONS = 1500  # open connections per client address (see the module)
CLIENT_REQUESTS = 10_000   # HTTP requests per client address per 10 s
HSTS_SECONDS = 86_400      # Strict-Transport-Security under TLS


def client_limits(connections: int, requests: int) -> list[str]:
    """The frontend's per-address limits (a stick table) and the address it passes on."""
    return [
        "    stick-table type ip size 100k expire 10m store conn_cur,http_req_rate(10s)",
        "    tcp-request connection track-sc0 src",
        f"    tcp-request connection reject if {{ sc_conn_cur(0) gt {connections} }}",
        f"    http-request deny deny_status 429 if {{ sc_http_req_rate(0) gt {requests} }}",
        "    # the replicas read the client's address from the one X-Forwarded-For HAProxy writes",
        "    http-request del-header X-Forwarded-For",
        "    option forwardfor",
    ]


def haproxy_config(address: str, port: int, servers: list[tuple[str, str]], stats_port: int, tls: Path | None = None,
                   connections: int = CLIENT_CONNECTIONS, requests: int = CLIENT_REQUESTS) -> str:
    """The proxy's configuration. ``servers``: (name, "host:port") of every replica, local or
    on another machine (``--backend``); ``tls``: a PEM of the certificate and its key, to
    serve HTTPS."""
    lines = [f"    server {name} {hostport} check cookie {name}" for name, hostport in servers]
    bind = f"    bind {address}:{port}" + (f" ssl crt {tls} alpn http/1.1" if tls else "")
    return "\n".join([
        "global",
        "    maxconn 4096",
        "",
        "defaults",
        "    mode http",
        "    timeout connect 5s",
        "    timeout client 60s",
        "    timeout server 60s",
        "    timeout http-request 30s",
        "    # a replica busy with a full class answers its health check late, not never: only one that",
        "    # cannot answer in 5 s (or refuses the connection: a dead one, out in about 2 s) is taken out",
        "    timeout check 5s",
        "    # a websocket is a tunnel once upgraded: a student reading a page sends nothing for minutes",
        "    timeout tunnel 1h",
        "    timeout client-fin 10s",
        "    option redispatch",
        "    retries 2",
        "",
        "frontend lecture",
        bind,
        *client_limits(connections, requests),
        *(["    http-request set-header X-Forwarded-Proto https",
            "    # a browser that saw the lecture over HTTPS never falls back to http:// on this host (a day:",
            "    # the length of a lecture, without pinning a laptop's name to HTTPS for months)",
            f"    http-response set-header Strict-Transport-Security max-age={HSTS_SECONDS}"] if tls else []),
        "    default_backend replicas",
        "",
        "backend replicas",
        "    balance leastconn",
        f"    cookie {COOKIE} insert indirect nocache httponly" + (" secure" if tls else ""),
        "    option httpchk",
        "    http-check connect",
        "    http-check send meth GET uri /_stcore/health",
        "    http-check expect status 200",
        "    http-check connect",
        f"    http-check send meth GET uri {READY_PATH}",
        "    http-check expect status 200",
        "    default-server inter 1s fastinter 500ms downinter 1s fall 2 rise 1",
        *lines,
        "",
        "listen stats",
        f"    bind 127.0.0.1:{stats_port}",
        "    stats enable",
        "    stats uri /stats",
        "",
    ])


@dataclass
class Replica:
    """One local ``streamlit run app.py`` process on 127.0.0.1:port."""

    name: str
    port: int
    log: Path
    proc: subprocess.Popen | None = None
    restarts: int = 0
    started_at: float = 0.0

    def start(self, env: dict) -> None:
        with private_file(self.log) as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
                 "--server.port", str(self.port), "--server.address", "127.0.0.1",
                 "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent,
                start_new_session=True)  # its own process group: stopped whole, never by a stray Ctrl-C
        self.started_at = time.monotonic()

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


def private_file(path: Path, mode: str = "ab"):
    """``path`` opened for writing, readable by its owner only (0600), whatever the umask."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | (os.O_APPEND if "a" in mode else os.O_TRUNC), 0o600)
    os.fchmod(fd, 0o600)
    return os.fdopen(fd, mode)


def to_terminal(text: str) -> bool:
    """Write ``text`` on the terminal this process was started from, never into its output when
    that is redirected (a log file); False when it has none (a replica of a lecture, a service)."""
    try:
        if sys.stdout.isatty():
            print(text, flush=True)
            return True
        with open("/dev/tty", "w") as tty:
            tty.write(text + "\n")
        return True
    except OSError:
        return False


def tls_pem(cert: Path, key: Path | None, folder: Path) -> Path:
    """HAProxy's one PEM (certificate, then its key) in ``folder``, 0600; ValueError when the
    key is neither in ``cert`` nor given."""
    text = cert.read_text()
    if key is not None:
        text = text.rstrip("\n") + "\n" + key.read_text()
    if "PRIVATE KEY-----" not in text:
        raise ValueError(f"{cert} holds no private key: give it with --tls-key")
    pem = folder / "lecture.pem"
    with private_file(pem, "w") as out:
        out.write(text)
    return pem


def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM when the launcher dies, even by SIGKILL (Linux's
    PR_SET_PDEATHSIG), so no replica or proxy outlives the command that started it."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: Ctrl-C and stop() still end everything
        pass


def stop_process(proc: subprocess.Popen | None, grace: float = 10.0) -> None:
    """End a child and its process group: SIGTERM, then SIGKILL after ``grace`` seconds."""
    if proc is None:
        return
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        if proc.poll() is not None:
            break
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(wait)
        except subprocess.TimeoutExpired:
            continue
    try:  # anything the group left behind (the replica's own children)
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if proc.poll() is None:
        proc.wait()


@dataclass
class Lecture:
    """N local replicas (+ replicas elsewhere) behind one HAProxy on ``address:port``.

    ``start()`` returns once the proxy listens; replicas become reachable as each turns
    healthy. ``watch()`` restarts replicas that exit; ``stop()`` ends everything it started."""

    replicas: int = 2
    port: int = 8501
    address: str = "0.0.0.0"
    backends: list[str] = field(default_factory=list)
    first_port: int | None = None
    workdir: Path | None = None
    env: dict | None = None
    say: object = print
    tls_cert: Path | None = None  # HTTPS: the certificate (PEM), with its key in it or in tls_key
    tls_key: Path | None = None
    client_connections: int = CLIENT_CONNECTIONS
    client_requests: int = CLIENT_REQUESTS
    local: list[Replica] = field(default_factory=list, init=False)
    proxy: subprocess.Popen | None = field(default=None, init=False)
    stats_port: int = field(default=0, init=False)
    _stopping: threading.Event = field(default_factory=threading.Event, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)  # a restart and stop() never overlap
    _own_workdir: bool = field(default=False, init=False)  # a temporary folder of ours: removed by stop()

    def start(self) -> None:
        binary = haproxy_binary()
        if binary is None:
            raise FileNotFoundError(INSTALL_HINT)
        self._own_workdir = self.workdir is None
        self.workdir = Path(self.workdir or tempfile.mkdtemp(prefix="attn-lecture-"))
        self.workdir.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.workdir.chmod(0o700)  # logs and the certificate's key are the owner's alone
        tls = tls_pem(Path(self.tls_cert), self.tls_key and Path(self.tls_key), self.workdir) if self.tls_cert else None
        env = dict(os.environ if self.env is None else self.env)
        env.setdefault("OMP_NUM_THREADS", "1")
        # one secret for every replica: Streamlit signs its XSRF cookie with it, and a student's
        # cookie must stay valid when the proxy moves them to another replica
        env.setdefault("STREAMLIT_SERVER_COOKIE_SECRET", secrets.token_urlsafe(32))
        # the replicas believe the X-Forwarded-For of this machine's HAProxy, and nobody else's
        env.setdefault("ATTN_EXPLORER_PROXIES", "127.0.0.1,::1")
        self.env = env
        for i in range(self.replicas):
            port = self.first_port + i if self.first_port else free_port()
            self.local.append(Replica(f"r{i + 1}", port, self.workdir / f"r{i + 1}.log"))
        for replica in self.local:
            replica.start(env)
        servers = [(r.name, f"127.0.0.1:{r.port}") for r in self.local]
        servers += [(f"b{i + 1}", hostport) for i, hostport in enumerate(self.backends)]
        self.stats_port = free_port()
        config = self.workdir / "haproxy.cfg"
        with private_file(config, "w") as out:
            out.write(haproxy_config(self.address, self.port, servers, self.stats_port, tls, self.client_connections,
                                     self.client_requests))
        check = subprocess.run([binary, "-c", "-q", "-f", str(config)], capture_output=True, text=True)
        if check.returncode != 0:
            self.stop()
            raise RuntimeError(f"haproxy refused {config}:\n{check.stdout}{check.stderr}")
        with private_file(self.workdir / "haproxy.log") as log:
            self.proxy = subprocess.Popen([binary, "-db", "-f", str(config)], stdout=log, stderr=subprocess.STDOUT,
                                          preexec_fn=_die_with_parent, start_new_session=True)
        time.sleep(0.3)
        if self.proxy.poll() is not None:
            self.stop()
            raise RuntimeError(f"haproxy exited at start; see {self.workdir / 'haproxy.log'}:\n"
                               + (self.workdir / "haproxy.log").read_text(errors="replace")[-2000:])

    def watch_once(self) -> None:
        """Restart every local replica that has exited (not while stopping). A replica that
        dies within 30 s of its start waits 2, 4, 8 … (at most 60) seconds before the next try."""
        with self._lock:
            self._restart_exited()

    def _restart_exited(self) -> None:
        for replica in self.local:
            if self._stopping.is_set() or replica.alive or replica.proc is None:
                continue
            code = replica.proc.returncode
            quick = time.monotonic() - replica.started_at < 30
            delay = min(60, 2 ** min(replica.restarts, 6)) if quick else 0
            if delay and time.monotonic() - replica.started_at < 30 + delay:
                continue
            replica.restarts += 1
            self.say(f"replica {replica.name} (port {replica.port}) exited with code {code}; restarting it")
            replica.start(self.env)

    def watch(self, interval: float = 0.5) -> None:
        """Restart replicas until ``stop()``; returns if HAProxy itself exits."""
        while not self._stopping.wait(interval):
            if self.proxy is not None and self.proxy.poll() is not None:
                self.say(f"haproxy exited with code {self.proxy.returncode}; see {self.workdir / 'haproxy.log'}")
                return
            self.watch_once()

    def healthy(self) -> dict[str, bool]:
        """Each local replica: does it answer both health checks now (as the proxy asks)?"""
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        state = {}
        for replica in self.local:
            ok = False
            try:
                ok = all(opener.open(f"http://127.0.0.1:{replica.port}{path}", timeout=2).status == 200
                         for path in ("/_stcore/health", READY_PATH))
            except OSError:
                pass
            state[replica.name] = ok
        return state

    def wait_healthy(self, timeout: float = 180.0) -> None:
        """Until every local replica answers both checks and the proxy has marked it up."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(self.healthy().values()) and self.proxy_up():
                return
            if self.proxy is not None and self.proxy.poll() is not None:
                raise RuntimeError("haproxy exited")
            self.watch_once()
            time.sleep(0.3)
        logs = "\n".join(f"--- {r.log} ---\n" + r.log.read_text(errors="replace")[-1500:] for r in self.local)
        raise TimeoutError(f"replicas not healthy after {timeout:.0f} s: {self.healthy()}\n{logs}")

    def proxy_stats(self) -> list[dict]:
        return proxy_stats(self.stats_port)

    def proxy_up(self) -> bool:
        try:
            status = {row["name"]: row["status"] for row in self.proxy_stats()}
        except OSError:
            return False
        return all(status.get(r.name, "").startswith("UP") for r in self.local)

    def pids(self) -> list[int]:
        return [r.proc.pid for r in self.local if r.alive] + ([self.proxy.pid] if self.proxy else [])

    def stop(self) -> None:
        """Stop the proxy first (no new student reaches a replica that is going), then every
        replica; then remove the temporary folder of the config and logs, unless ``workdir``
        named one (``--workdir``: keep them, e.g. to read a replica's log afterwards)."""
        self._stopping.set()
        with self._lock:
            stop_process(self.proxy, grace=5)
            for replica in self.local:
                stop_process(replica.proc)
            if self._own_workdir and self.workdir is not None:
                shutil.rmtree(self.workdir, ignore_errors=True)
