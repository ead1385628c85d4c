"""What a student's join costs the class store, alone in one process: ``--students`` first joins of
one class (each from its own address, after 20 already in), the same students joining again (a
reload, a followed page: one read), and one read of the follow board. Milliseconds a call, SQLite
in a temporary folder.

    python bench/join_cost.py [--students 200] [--app DIR] [--append FILE]

``--app DIR`` takes another checkout's ``server.class_store`` (a worktree made by
``bench/side_by_side.py``), so two commits' stores are timed back to back on one host.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEACHER = "join-cost-teacher-key-0123"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=200)
    parser.add_argument("--app", type=Path, default=ROOT)
    parser.add_argument("--append", type=Path, help="also append the JSON line to this file")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(args.app.resolve()))
    from server.class_store import ClassStore, new_session_id
    sys.path.insert(1, str(Path(__file__).resolve().parent))
    from classroom_report import emit, stamp
    with tempfile.TemporaryDirectory() as folder:
        store = ClassStore(f"sqlite:///{folder}/classes.sqlite3", hours=1, teacher_key=TEACHER)
        code = store.open_class(TEACHER).code
        store.set_admission(TEACHER, code, seats=min(400, args.students + 20))
        students = [new_session_id() for _ in range(args.students + 20)]
        for k, s in enumerate(students[:20]):  # a class under way
            store.join(code, s, f"10.0.{k}.1")

        def per_call(calls) -> float:
            start = time.perf_counter()
            n = sum(1 for _ in calls)
            return round(1000 * (time.perf_counter() - start) / n, 3)
        first = per_call(store.join(code, s, f"10.1.{k % 250}.{k // 250 + 1}") for k, s in enumerate(students[20:]))
        again = per_call(store.join(code, s, "10.1.0.1") for s in students[20:])
        board = per_call(store.follow_many([code]) for _ in range(args.students))
        store.engine.dispose()
    emit({"bench": "join_cost", "app": str(args.app), "students": args.students, "first_join_ms": first,
          "join_again_ms": again, "follow_read_ms": board, **stamp(args.app)}, args.append)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
