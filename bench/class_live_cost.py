"""What the teacher's live views cost the class store: one read of a class's activity signature
(``server/class_store/activity.py``), which a process's live board makes every
``server.class_live.POLL_S`` for the classes whose teacher's page waits, on a class of
``--students`` students with ``--answers`` answers each (SQLite in a temporary folder, or
``--db``). One JSON line: the read's p50 / p95 / max in ms, and the share of one core that a
process spends on it per watched class.

    python bench/class_live_cost.py [--students 400] [--answers 40] [--reads 400] [--append FILE]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from classroom_report import emit, stamp  # noqa: E402
from server.class_live import POLL_S  # noqa: E402
from server.class_store import ClassStore, new_session_id  # noqa: E402
from server.class_store.schema import answers, roster  # noqa: E402

KEY = "bench-live-teachers-key"


def filled_class(store: ClassStore, students: int, per_student: int) -> str:
    """A class of ``students`` on the roster with ``per_student`` answers each, written in bulk."""
    code = store.open_class(KEY).code
    now = time.time()
    ids = [new_session_id() for _ in range(students)]
    store._run(lambda conn: conn.execute(roster.insert(), [
        dict(class_code=code, session=s, nickname=f"Student {n}", joined_at=now, address=f"a{n}", removed=False)
        for n, s in enumerate(ids)]), write=True)
    store._run(lambda conn: conn.execute(answers.insert(), [
        dict(class_code=code, exercise=f"which:{k % 12}", session=s, attempt=1 + k // 12, answer="{}",
             correct=True, answered_at=now) for s in ids for k in range(per_student)]), write=True)
    return code


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--students", type=int, default=400)
    p.add_argument("--answers", type=int, default=40, help="answers per student")
    p.add_argument("--reads", type=int, default=400)
    p.add_argument("--db", default=None, help="a database URL (default: SQLite in a temporary folder)")
    p.add_argument("--append", type=Path, help="also append the JSON line to this JSONL file")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        store = ClassStore(args.db or f"sqlite:///{folder}/classes.sqlite3", teacher_key=KEY)
        code = filled_class(store, args.students, args.answers)
        ms = []
        for _ in range(args.reads):
            start = time.perf_counter()
            store.activity_many([code])
            ms.append(1000 * (time.perf_counter() - start))
        kind = store.kind
        store.engine.dispose()
    ms.sort()
    p50, p95 = statistics.median(ms), ms[int(0.95 * (len(ms) - 1))]
    emit({"bench": "class-live-signature", "store": kind, "students": args.students,
          "answers": args.students * args.answers, "reads": args.reads, "p50_ms": round(p50, 3),
          "p95_ms": round(p95, 3), "max_ms": round(ms[-1], 3), "poll_s": POLL_S,
          "core_pct_per_watched_class": round(100 * p50 / 1000 / POLL_S, 3), **stamp(Path(__file__).parent.parent)},
         args.append)
    return 0


if __name__ == "__main__":
    sys.exit(main())
