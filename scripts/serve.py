"""Serve a lecture: N app processes behind HAProxy on one public port.

    python scripts/serve.py --replicas 2 --port 8501            # students open http://ADDRESS:8501
    python scripts/serve.py --replicas 2 --port 8443 --tls-cert cert.pem --tls-key key.pem  # https://ADDRESS:8443
    python scripts/serve.py --replicas 2 --backend 10.0.0.12:8501  # + a replica on another machine

Starts N ``streamlit run app.py`` processes on local ports (one shared cookie secret), writes
an ``haproxy.cfg`` (cookie stickiness, health checks, websocket tunnels, leastconn, per-client
limits) into a temporary folder (removed at the end; ``--workdir`` keeps one, 0700, its files
0600) and runs HAProxy on ``--address:--port``. With ``--tls-cert`` HAProxy serves HTTPS (and
wss) there and refuses plain http on that port. A replica that exits is restarted; Ctrl-C
stops everything this command started. ``streamlit run app.py`` stays the one-machine command.
The teacher key is shown once, on this terminal, never in a log. Design and measurements:
docs/performance.md#a-lecture-several-processes.

A replica on another machine (``--backend HOST:PORT``, HOST its private address) is started
there by hand, as this command prints: bound to that private address (never 0.0.0.0, where
students could reach it past the proxy), with the same STREAMLIT_SERVER_COOKIE_SECRET and the
same PostgreSQL class store (a SQLite file is one machine's: refused with --backend).
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from server import settings  # noqa: E402
from server.lecture import (CLIENT_CONNECTIONS, CLIENT_REQUESTS, INSTALL_HINT, Lecture, haproxy_binary,  # noqa: E402
                            to_terminal)


def parse(argv) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--replicas", type=int, default=2, help="app processes on this machine (about one per core)")
    p.add_argument("--port", type=int, default=8501, help="the public port students open")
    p.add_argument("--address", default="0.0.0.0", help="the public address HAProxy binds (default: all)")
    p.add_argument("--backend", action="append", default=[], metavar="HOST:PORT",
                   help="an app process on another machine, at its private address (repeatable)")
    p.add_argument("--first-replica-port", type=int, default=None,
                   help="local replicas listen on this port and the next ones (default: free ports)")
    p.add_argument("--workdir", type=Path, default=None,
                   help="where haproxy.cfg and the logs go, kept afterwards (default: a temporary folder, "
                        "removed when the lecture stops)")
    p.add_argument("--tls-cert", type=Path, default=None, help="serve HTTPS with this certificate (PEM)")
    p.add_argument("--tls-key", type=Path, default=None, help="its private key (PEM), unless --tls-cert holds it")
    p.add_argument("--client-connections", type=int, default=CLIENT_CONNECTIONS,
                   help="open connections one client address may hold")
    p.add_argument("--client-requests", type=int, default=CLIENT_REQUESTS,
                   help="HTTP requests one client address may make per 10 s")
    args = p.parse_args(argv)
    if args.replicas < 0 or (args.replicas == 0 and not args.backend):
        p.error("--replicas must be at least 1 (or 0 with --backend)")
    return args


def refusal(args) -> str | None:
    """Why this lecture cannot start as asked, or None."""
    if settings.teacher_key_problem():
        return settings.teacher_key_problem()
    if args.tls_cert and not args.tls_cert.is_file():
        return f"--tls-cert {args.tls_cert}: no such file"
    if args.backend and settings.class_db().startswith("sqlite"):
        return ("replicas on several machines need one class store that all of them reach: a SQLite file is one "
                "machine's. Set ATTN_EXPLORER_CLASS_DB=postgresql://… here and on every other machine")
    if args.backend and not os.environ.get("STREAMLIT_SERVER_COOKIE_SECRET"):
        return ("replicas on several machines must share one cookie secret: set STREAMLIT_SERVER_COOKIE_SECRET "
                "(e.g. to the output of `python -c 'import secrets; print(secrets.token_urlsafe(32))'`) here and there")
    return None


def backend_recipe(backends: list[str], connections: int) -> list[str]:
    """What to run on each other machine: bound to its private address, same secret and store."""
    return [f"  on {hostport.rsplit(':', 1)[0]}: STREAMLIT_SERVER_COOKIE_SECRET=(the same) ATTN_EXPLORER_CLASS_DB=(the same) "
            f"ATTN_EXPLORER_DB_CONNECTIONS={connections} ATTN_EXPLORER_PROXIES=(this machine's address) "
            "streamlit run app.py --server.address "
            f"{hostport.rsplit(':', 1)[0]} --server.port {hostport.rsplit(':', 1)[1]}" for hostport in backends]


def show_teacher_key() -> None:
    """The key, once, on this terminal (the replicas print none); where it can be read otherwise."""
    from server.class_store import class_store, StoreUnavailable
    try:
        key = class_store().teacher_key()
    except StoreUnavailable as e:
        print(f"the class store: {e}; exercises work without classes", flush=True)
        return
    if not to_terminal(f"teacher key: {key}"):
        print("teacher key: shown on a terminal only (`python scripts/teacher_key.py`)", flush=True)


def main(argv=None) -> int:
    args = parse(argv)
    if haproxy_binary() is None:
        print(INSTALL_HINT, file=sys.stderr)
        return 2
    why_not = refusal(args)
    if why_not:
        print(f"serve: {why_not}", file=sys.stderr)
        return 2
    processes = args.replicas + len(args.backend)
    # every process's share of PostgreSQL's connections (settings.db_connections_for)
    connections = int(os.environ.get("ATTN_EXPLORER_DB_CONNECTIONS") or settings.db_connections_for(processes))
    env = dict(os.environ, ATTN_EXPLORER_DB_CONNECTIONS=str(connections))
    lecture = Lecture(replicas=args.replicas, port=args.port, address=args.address, backends=args.backend,
                      first_port=args.first_replica_port, workdir=args.workdir, env=env,
                      say=lambda m: print(m, file=sys.stderr, flush=True), tls_cert=args.tls_cert,
                      tls_key=args.tls_key, client_connections=args.client_connections,
                      client_requests=args.client_requests)

    def interrupted(*_):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupted)  # a kill stops what we started, as Ctrl-C does
    # Ctrl-C too, even where it was ignored when we started (a shell's `&` job): the replicas and
    # the proxy must not outlive an interrupted launcher
    signal.signal(signal.SIGINT, interrupted)
    try:
        return run(lecture, args, connections)
    except KeyboardInterrupt:
        print("stopping the proxy and the replicas…", file=sys.stderr, flush=True)
        return 0
    except (RuntimeError, TimeoutError, FileNotFoundError, ValueError) as e:
        print(f"serve: {e}", file=sys.stderr)
        return 1
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not leave orphans
        lecture.stop()


def run(lecture: Lecture, args, connections: int) -> int:
    lecture.start()
    shown = "localhost" if args.address in ("0.0.0.0", "::") else args.address
    url = f"{'https' if args.tls_cert else 'http'}://{shown}:{args.port}"
    print(f"HAProxy on {url} in front of {args.replicas} local replica(s)"
          + (f" and {len(args.backend)} other(s)" if args.backend else "")
          + f"; config and logs in {lecture.workdir}", flush=True)
    print(f"  haproxy: pid {lecture.proxy.pid}, stats http://127.0.0.1:{lecture.stats_port}/stats", flush=True)
    for replica in lecture.local:
        print(f"  {replica.name}: 127.0.0.1:{replica.port} (pid {replica.proc.pid}, log {replica.log})", flush=True)
    for line in backend_recipe(args.backend, connections):
        print(line, flush=True)
    show_teacher_key()
    lecture.wait_healthy()
    print(f"ready: students open {url}  (Ctrl-C stops everything)"
          + ("; plain http:// on this port is refused" if args.tls_cert else ""), flush=True)
    lecture.watch()
    return 1  # the proxy exited


if __name__ == "__main__":
    sys.exit(main())
