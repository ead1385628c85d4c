"""Serve a lecture: N app processes behind HAProxy on one public port.

    python scripts/serve.py --replicas 2 --port 8501            # students open http://ADDRESS:8501
    python scripts/serve.py --replicas 2 --backend 10.0.0.12:8501  # + a replica on another machine

Starts N ``streamlit run app.py`` processes on local ports (one shared cookie secret), writes
an ``haproxy.cfg`` (cookie stickiness, health checks, websocket tunnels, leastconn) into a
temporary folder (removed at the end; ``--workdir`` keeps one) and runs HAProxy on
``--address:--port``. A replica that exits is restarted;
Ctrl-C stops everything this command started. ``streamlit run app.py`` stays the one-machine
command. Design and measurements: docs/performance.md#a-lecture-several-processes.

A replica on another machine (``--backend HOST:PORT``) is started there by hand with the same
cookie secret, e.g. ``STREAMLIT_SERVER_COOKIE_SECRET=… streamlit run app.py --server.address
0.0.0.0 --server.port 8501``; pass the secret here the same way (the variable is read when set).
"""
from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from server.lecture import INSTALL_HINT, Lecture, haproxy_binary  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--replicas", type=int, default=2, help="app processes on this machine (about one per core)")
    p.add_argument("--port", type=int, default=8501, help="the public port students open")
    p.add_argument("--address", default="0.0.0.0", help="the public address HAProxy binds (default: all)")
    p.add_argument("--backend", action="append", default=[], metavar="HOST:PORT",
                   help="an app process on another machine (repeatable)")
    p.add_argument("--first-replica-port", type=int, default=None,
                   help="local replicas listen on this port and the next ones (default: free ports)")
    p.add_argument("--workdir", type=Path, default=None,
                   help="where haproxy.cfg and the logs go, kept afterwards (default: a temporary folder, "
                        "removed when the lecture stops)")
    args = p.parse_args(argv)
    if args.replicas < 0 or (args.replicas == 0 and not args.backend):
        p.error("--replicas must be at least 1 (or 0 with --backend)")
    if haproxy_binary() is None:
        print(INSTALL_HINT, file=sys.stderr)
        return 2

    lecture = Lecture(replicas=args.replicas, port=args.port, address=args.address, backends=args.backend,
                      first_port=args.first_replica_port, workdir=args.workdir,
                      say=lambda m: print(m, file=sys.stderr, flush=True))

    def interrupted(*_):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupted)  # a kill stops what we started, as Ctrl-C does
    try:
        lecture.start()
        shown = "localhost" if args.address in ("0.0.0.0", "::") else args.address
        print(f"HAProxy on http://{shown}:{args.port} in front of {args.replicas} local replica(s)"
              + (f" and {len(args.backend)} other(s)" if args.backend else "")
              + f"; config and logs in {lecture.workdir}", flush=True)
        print(f"  haproxy: pid {lecture.proxy.pid}, stats http://127.0.0.1:{lecture.stats_port}/stats", flush=True)
        for replica in lecture.local:
            print(f"  {replica.name}: 127.0.0.1:{replica.port} (pid {replica.proc.pid}, log {replica.log})", flush=True)
        lecture.wait_healthy()
        print(f"ready: students open http://{shown}:{args.port}  (Ctrl-C stops everything)", flush=True)
        lecture.watch()
        return 1  # the proxy exited
    except KeyboardInterrupt:
        print("stopping the proxy and the replicas…", file=sys.stderr, flush=True)
        return 0
    except (RuntimeError, TimeoutError, FileNotFoundError) as e:
        print(f"serve: {e}", file=sys.stderr)
        return 1
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not leave orphans
        lecture.stop()


if __name__ == "__main__":
    sys.exit(main())
