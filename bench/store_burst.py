"""A class's answers arriving at once, at the class store alone: ``--processes`` processes (the
replicas) each submit ``--answers`` answers from as many threads at the same moment to one SQLite
store, as the class bench's room answers the exercise it reloaded. The answers' latency p50, p95
and maximum (ms), each process's p50 and maximum (``by_process``: one process's writers kept
waiting while the other's go shows there), and the errors.

    python bench/store_burst.py [--processes 2] [--answers 100] [--busy 2] [--app DIR] [--append FILE]

``--busy K``: K threads in each process run Python the whole burst, as a replica's page runs do,
so that a writer between two of its statements waits for the GIL while it holds the store's lock.

``--app DIR`` takes another checkout's ``server.class_store`` (a worktree made by
``bench/side_by_side.py``), so two commits' stores are timed back to back on one host.
"""
from __future__ import annotations

import argparse
import multiprocessing
import secrets
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEACHER = "store-burst-teacher-key"
EXERCISE = "which:0"


def _store(app: Path, url: str):
    sys.path.insert(0, str(app))
    from server.class_store import ClassStore
    return ClassStore(url, teacher_key=TEACHER)


def _spin(until: threading.Event) -> None:
    """Python bytecode until ``until`` is set: a page run's hold on the GIL."""
    n = 0
    while not until.is_set():
        for i in range(1000):
            n += i


def replica(app: Path, url: str, code: str, students: list[str], go, out, busy: int = 0) -> None:
    """One process: its students' answers, each from a thread of its own, released together
    (beside ``busy`` threads running Python)."""
    store = _store(app, url)
    store.class_info(code)  # the schema checked and a connection made before the clock starts
    times, together = [], threading.Barrier(len(students))

    def answer(student: str) -> None:
        together.wait()
        start = time.perf_counter()
        try:
            store.submit(code, EXERCISE, student, {"label": "Luong (dot)"}, True)
            error = None
        except Exception as e:  # noqa: BLE001 - counted, with its kind
            error = type(e).__name__
        times.append((1000 * (time.perf_counter() - start), error))
    go.wait()
    done = threading.Event()
    spinners = [threading.Thread(target=_spin, args=(done,)) for _ in range(busy)]
    threads = [threading.Thread(target=answer, args=(s,)) for s in students]
    for t in spinners + threads:
        t.start()
    for t in threads:
        t.join()
    done.set()
    for t in spinners:
        t.join()
    out.put(times)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--answers", type=int, default=100, help="answers per process")
    parser.add_argument("--busy", type=int, default=0, help="threads running Python in each process meanwhile")
    parser.add_argument("--app", type=Path, default=ROOT)
    parser.add_argument("--append", type=Path, help="also append the JSON line to this file")
    args = parser.parse_args(argv)
    app = args.app.resolve()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.path.append(str(ROOT))  # the benches' parts read this checkout's zoo; the store is the --app's (_store)
    from classroom_report import emit, stamp
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/classes.sqlite3"
        store = _store(app, url)
        code = store.open_class(TEACHER).code
        students = [secrets.token_hex(12) for _ in range(args.processes * args.answers)]
        for student in students:
            store.join(code, student)
        store.add_exercise(TEACHER, code, EXERCISE)
        store.engine.dispose()
        context = multiprocessing.get_context("spawn")  # each replica its own interpreter, as the servers
        go, out = context.Event(), context.Queue()
        replicas = [context.Process(target=replica, args=(app, url, code, students[i::args.processes], go, out,
                                                                        args.busy))
                    for i in range(args.processes)]
        for p in replicas:
            p.start()
        time.sleep(3.0)  # every replica's store made
        go.set()
        each = [out.get(timeout=300) for _ in replicas]
        times = [t for one in each for t in one]
        for p in replicas:
            p.join()
    ms = sorted(m for m, _ in times)
    emit({"bench": "store_burst", "app": str(args.app), "processes": args.processes, "answers": args.answers,
          "busy": args.busy, "by_process": [{"p50_ms": round(sorted(m for m, _ in one)[len(one) // 2], 1),
                                              "max_ms": round(max(m for m, _ in one), 1)} for one in each],
          "p50_ms": round(ms[len(ms) // 2], 1), "p95_ms": round(ms[int(0.95 * len(ms))], 1),
          "max_ms": round(ms[-1], 1), "errors": sum(1 for _, e in times if e), **stamp(args.app)}, args.append)
    return 0


if __name__ == "__main__":
    sys.exit(main())
