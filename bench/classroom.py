"""A class on one server: N browser sessions play a lesson at once; latency, errors, memory.

    python bench/classroom.py [--sessions 10] [--think 2.5] [--followers N] [--json] [--append results/benchmarks.jsonl]
    python bench/classroom.py --sessions 30 --flood            # the class beside a flooding tab, and without
    python bench/classroom.py --sessions 200 --replicas 2 --follow-only --idle 30   # following only
    python bench/classroom.py --sessions 30 --patches none    # as Streamlit runs, none of server/streamlit_patches/
    python bench/classroom.py --sessions 200 --replicas 2 --check   # the check before and after the lesson
    python bench/classroom.py --sessions 30 --prank           # the class beside a prankster on its address, and without
    python bench/classroom.py --sessions 200 --replicas 2 --timeline T.jsonl   # each interaction's start and latency

Starts the real server (``streamlit run app.py``, shipped checkpoints) and drives it the way
browsers do: over Streamlit's websocket (``/_stcore/stream``), sending the front end's
``BackMsg`` rerun requests and reading the ``ForwardMsg`` replies (no AppTest, no browser).
Each session opens a shared link to the Translate page, changes the sentence, opens Compare
with four models, Step through with two of its sections shown (``SHOWN_SECTIONS``, as a
teacher's link names them; then moves its step slider five times) and the Beam search tree,
then answers an exercise of the class the bench opened (``exercise``: the Exercises page of
the class link, ``choose``: a mechanism, ``answer``: the check button, which stores the
answer through the class store), thinking ``--think`` seconds (±20 %) between interactions.
Sessions start spread over ``--ramp`` seconds. ``--faulty`` of them send an empty, a
5,000-character or a markup sentence, or close the socket right after asking for a rerun
(then open the link again); by default a tenth, and a line of another ``--faulty`` (its ``faulty``
field) is another lesson to ``bench/best_line.py``.

- latency: from sending a request (for "open": from opening the websocket) to the
  ``script_finished`` message ending that rerun; per interaction kind, p50/p95/max.
- ``errors``: reruns, of any session, that end in an exception element, an ``st.error``, a
  compile error, a page-not-found, a disconnect or ``--timeout``. A faulty session's clear
  message (info/warning) is not one, nor is its deliberate hang-up; its interactions are
  reported apart (``faulty_interactions``, ``faulty_errors``) and left out of the latencies.
- ``mismatches``: every distinct lesson is first played alone, one session at a time, on
  its own server; an interaction of the concurrent run whose page differs from that
  reference is a mismatch. The page is digested as the front end would hold it when the
  rerun ends (the last element at each delta path), without element ids and transient
  spinners. The concurrent run gets a fresh server so that it computes its translations
  instead of finding the reference run's in the cache.
- ``lost_answers``: answers whose check rerun finished without an error, its page saying the
  answer was counted (or kept as a retry), that the class store does not hold afterwards
  (``answers_stored``: the class's rows, a removed student's too; ``answers_in_summary``: those
  the teacher's summary shows); ``answers_not_counted``: those whose page said otherwise beside
  *Check* (the student removed or refused at that moment, the store busy), which are not lost.
- ``teacher_failed``: the teacher's sends, reveals, removals and undos that the store still
  refused after 30 s of pressing again.
- ``told_cut``: interactions that found no widget to use because the page before had stopped
  short with a clear message (a costly run past its seconds, a tab past its share); not errors.
- ``students_counted``: the distinct anonymous student ids the class's answers are stored
  under. Each student answers twice (before the teacher's three sends and after a reload), the
  reload a new socket, so a student counted once per browser
  (the ``attn_student`` cookie the tab keeps, as a browser's jar does) gives ``sessions``.
  ``follow_lesson_p95_ms``: from each of those sends to the sent page drawn (the teacher sends
  once the room has reached the follow step, ``TeacherSends``).
- ``follow_*``: after the lesson, ``--followers`` sessions (default: ``--sessions``) open the
  class link and follow the teacher as the page's listener does (``/_attn/follow`` held open,
  then *Look again*); the bench
  opens a Step through page (a sentence, a model, step 3) as the teacher's screen, then sends
  it to the class through the store, as the teacher's *Send to class* does. Per follower: the time from the send until the
  teacher's page, opened as the page's listener asks, has finished drawing and shows that
  sentence at that step (``follow_p95_ms``; ``follow_errors``: a follower that never got it
  within 10 s, or got another page). Then, per page kind (``classroom_rounds``), the same from
  the teacher's send of the worked example and of an exercise, and from the reveal of that
  exercise, until it is drawn: ``follow_worked-example_p95_ms``, ``follow_exercise_p95_ms``,
  ``follow_reveal_p95_ms`` (with ``_p50_ms``, ``_max_ms``, ``_errors``).
- ``idle_cpu_pct_of_core`` (``--idle S``): with the followers in, the servers' CPU over S
  seconds of nobody clicking. ``--follow-only``: only that, no reference run and no lesson.
- ``flood`` (``--flood``): the class played again on a fresh server, in a class of its own,
  beside one tab that sends 20 reruns a second over a raw websocket, each with a new
  1,000-character sentence; the students' figures then, ``flood_p95_ratio`` (their p95 against
  the run without it) and the flooding tab's reruns asked, run and told to slow down.
- ``prank`` (``--prank``): the class played again on a fresh server, in a class of its own,
  beside one unfriendly student on the same address (``classroom_prank``: 1,000 unnamed follow
  requests, 80 random class codes a second, a wrong teacher key a second) while the teacher's
  right key is typed every 5 s in a new tab; the students' figures, ``prank_p95_ratio`` and what
  each prank got (``prank_teacher_signed_in`` of ``prank_teacher_tries``: first tries that signed in).
- ``--timeline FILE``: each interaction of the concurrent run as a JSON line (``t``: its start on
  the bench's monotonic clock, ``session``, ``step``, ``kind``, ``ms``, ``replica``, ``error``, ``faulty``):
  which wave of the lesson the slowest twentieth falls in; and every 0.5 s a line of the cores
  busy since the last (``cpu_cores``: the host's, the servers', this bench's own): whether the
  host was saturated then.
- ``streamlit_patches``: which of Streamlit's patches the servers applied (``--patches``).
- ``load_average_start``, ``load_average``: the host's load when the run started and ended.
- ``rss_mb``: peak resident memory of the server (its process and children, sampled every
  0.5 s) during the concurrent run.
- ``reference_cpu_ms``: the server's CPU milliseconds per interaction, by kind, in the reference
  run (each session alone on its server, so each interaction's CPU is its own; mean of 10 ms
  ticks): where a click's CPU goes, page by page. Its ``follow`` is a fresh open of each page the
  teacher sends (``reference_follow``: "opens"; a move that sends no page is not counted), not a
  follower's rerun inside its session, which ``bench/follow_cost.py`` measures.
- ``server_cpu_s``, ``client_cpu_s``, ``wall_s``: CPU seconds the server and this client used
  during the concurrent run, and its length: a server near one CPU-second per second is
  bound by the GIL (its Python runs on one core at a time).

Prints a table, then one JSON line (only that line with ``--json``).

``--check``: only the class's check before and after the lesson, each session taking both
halves (``classroom_check``: its figures, every answer counted, the teacher's gains as played).

The parts, each a module beside this one: ``classroom_tab`` (one browser tab over the
websocket), ``classroom_lesson`` (the lesson and its faults), ``classroom_servers`` (the
server, the lecture, what is measured of them), ``classroom_modes`` (reference, class, follow
the teacher, soak) and ``classroom_report`` (the summary and the table).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import shutil
import signal
import sys
import tempfile
from contextlib import nullcontext
from dataclasses import replace
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # the parts, also when loaded by path (tests)
from best_line import against_best, ratios, read, report, RESULTS  # noqa: E402
from classroom_check import play_check  # noqa: E402
from classroom_lesson import (BAD_TEXT, COMPARED, FAULTS, MODELS, ROOT, SENDS, SENTENCES,  # noqa: E402,F401
                              SHOWN_SECTIONS, Lesson, make_lessons, news_sentences)
from classroom_modes import (FOLLOWED, REFERENCE_FOLLOW, STARVE_WORK, TeacherSends, attend,  # noqa: E402,F401
                             classroom, follow_the_teacher, reconnect, reference, soak)
from classroom_report import emit, host, pct, print_table, stamp, summary  # noqa: E402,F401
from classroom_servers import Meter, Target, cpu_ms_by_kind, cpu_seconds, lecture, rss_kb, server  # noqa: E402,F401
from classroom_tab import Tab, draw  # noqa: E402,F401
from server.class_store import ClassStore, MAX_STUDENTS  # noqa: E402 - the class the bench opens, as the teacher
from server.lecture import free_port  # noqa: E402,F401 - tests/test_lecture.py uses it from here


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sessions", type=int, default=10)
    p.add_argument("--think", type=float, default=2.5, help="seconds between a session's interactions (±20%%)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds a rerun may take before it is an error")
    p.add_argument("--faulty", type=int, default=None,
                   help="sessions sending bad input or disconnecting (default: 10%%, at least 1 from 5 sessions)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeline", type=Path, default=None, metavar="FILE",
                   help="write each interaction of the concurrent run as a JSON line (its start, kind, ms, replica...)")
    p.add_argument("--dump", type=Path, default=None, metavar="DIR",
                   help="write the text of each page that ends in an error (and the page before it) to DIR")
    p.add_argument("--port", type=int, default=None, help="default: a free port")
    p.add_argument("--ramp", type=float, default=5.0, help="sessions start spread over this many seconds")
    p.add_argument("--followers", type=int, default=None, help="sessions following the teacher (default: --sessions)")
    p.add_argument("--class-db", default=None,
                   help="the class store's URL (e.g. postgresql://...); default: a new SQLite file in a temporary folder")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--url", help="play the lesson against a running address (e.g. the lecture's proxy) "
                                     "instead of starting a server; its reference run goes there too")
    where.add_argument("--replicas", type=int, default=0,
                       help="start N replicas behind HAProxy (scripts/serve.py's setup) for the class run")
    p.add_argument("--kill-replica-after", type=float, default=0.0, metavar="S",
                   help="with --replicas: SIGKILL one replica S seconds into the run (the fault test)")
    p.add_argument("--recover-within", type=float, default=60.0,
                   help="seconds a tab of a killed replica tries to be served again")
    p.add_argument("--soak", type=float, default=0.0, metavar="MINUTES",
                   help="waves of --sessions sessions on fresh news sentences for this long: RSS and p95 per wave")
    p.add_argument("--follow-only", action="store_true",
                   help="only the class following the teacher (--followers tabs, default --sessions): "
                        "no reference run, no lesson")
    p.add_argument("--check", action="store_true",
                   help="only the class's check: every session takes the check before and after (classroom_check)")
    p.add_argument("--idle", type=float, default=0.0, metavar="S",
                   help="with the followers in, measure the servers' CPU over S seconds of nobody clicking")
    p.add_argument("--flood", action="store_true",
                   help="play the class twice on fresh servers, the second time beside one tab flooding the server "
                        "(20 reruns/s, new 1,000-character sentences, raw websocket): the students' p95 both times")
    p.add_argument("--patches", default=None, metavar="all|none|NAME,…",
                   help="the Streamlit patches the servers apply (ATTN_EXPLORER_STREAMLIT_PATCHES, server/serving.py; "
                        "default: the environment's, else all)")
    p.add_argument("--starve", type=int, default=0, metavar="K",
                   help="play the class twice on fresh servers, the second time beside K tabs asking for the most "
                        "expensive work of --starve-page at the input limit, a new session per run: the p95 both times")
    p.add_argument("--starve-page", default="translate", choices=sorted(STARVE_WORK),
                   help="the page whose most expensive work the --starve tabs ask for")
    p.add_argument("--prank", action="store_true",
                   help="play the class again beside one unfriendly student on its address: 1,000 unnamed follow "
                        "requests, random class codes, a wrong teacher key a second (bench/classroom_prank.py)")
    p.add_argument("--one-address", action="store_true",
                   help="every student from one address, as behind a school's NAT, with the servers' own join "
                        "limits (by default the bench raises them for its one address)")
    p.add_argument("--json", action="store_true", help="print only the JSON line")
    p.add_argument("--append", type=Path, help="also append the JSON line to this JSONL file")
    args = p.parse_args(argv)
    if args.kill_replica_after and args.replicas < 2:
        p.error("--kill-replica-after needs --replicas 2 or more")
    return args


def open_class(args) -> tuple[ClassStore | None, str | None, str | None, str]:
    """The class: a store of its own (every server the bench starts shares it, through the
    environment they inherit), opened by the bench as the teacher; with --url, only if
    --class-db names the store of the server there. (store, teacher key, class code, its folder)."""
    class_dir = tempfile.mkdtemp(prefix="classroom-bench-")
    store = code = key = None
    if args.class_db or not args.url:
        key = os.environ.get("ATTN_EXPLORER_TEACHER_KEY") if args.url else secrets.token_urlsafe(12)
        if not args.url:
            os.environ.update(ATTN_EXPLORER_CLASS_DIR=class_dir, ATTN_EXPLORER_TEACHER_KEY=key,
                              ATTN_EXPLORER_CLASS_DB=args.class_db or "")
            # every student and follower joins from this machine, one address (a class behind one NAT):
            # the bench's own servers take them all, as a teacher sets it for a hall that large
            if not args.one_address:  # --one-address: the defaults a teacher starts with, as a school's NAT meets them
                joins = max(300, 2 * args.sessions + (args.followers or args.sessions) + 10)
                os.environ.setdefault("ATTN_EXPLORER_JOINS_PER_MINUTE", str(joins))
        store = ClassStore(args.class_db or f"sqlite:///{Path(class_dir) / 'classes.sqlite3'}", teacher_key=key)
        key = store.teacher_key()
        code = store.open_class(key).code
    return store, key, code, class_dir


def class_target(args):
    """Where the class run plays: the --url, the lecture (--replicas) or a server of its own."""
    if args.url:
        return nullcontext(Target(args.url.rstrip("/"), sticky=True))
    return lecture(args.replicas) if args.replicas else server(args.port)


def play_class(args, lessons: list[Lesson], store, key, code, say, setup: str) -> dict:
    """The reference run (each distinct lesson alone, on a fresh server), then the class, the
    answers it stored and the teacher's followers: the JSON line's figures."""
    n, result = len(lessons), {}
    if args.check:
        with class_target(args) as target:
            return play_check(args, store, key, code, target, say)
    if args.follow_only:
        followers = args.followers if args.followers is not None else n
        say(f"follow the teacher: {followers} session(s), {setup}")
        with class_target(args) as target:
            result.update(asyncio.run(follow_the_teacher(target, args, store, key, code, followers)))
        return result
    distinct = list(dict.fromkeys(lessons))
    if store and not args.url:  # the teacher sizes the class for its room: the reference run's students join it too
        store.set_admission(key, code, seats=min(MAX_STUDENTS, max(store.admission(code).seats, n + len(distinct))))
    say(f"reference: {len(distinct)} distinct lesson(s), one at a time, "
        + ("at the URL (its caches stay warm)" if args.url else "on a fresh server"))
    alone: dict[str, list[float]] = {}
    with (nullcontext(Target(args.url.rstrip("/"), sticky=True)) if args.url else server(args.port)) as target:
        ref = asyncio.run(reference(distinct, target, args, alone))
    # server CPU per interaction kind, each session alone on a fresh server (the tick is 10 ms)
    result["reference_cpu_ms"] = cpu_ms_by_kind(alone)
    result["reference_follow"] = REFERENCE_FOLLOW
    say(f"class: {n} session(s) ({sum(bool(x.fault) for x in lessons)} faulty), think {args.think} s, {setup}")
    # the students the class refused, every student's cookie, the answers told "Not counted" (``attend``)
    args.refused, args.students, args.not_counted, args.told = set(), [], [], []
    with class_target(args) as target:
        before = len(store.summary(key, code)) if store else 0
        first_id = last_row(store) if store else 0
        teacher = TeacherSends(store, key, code, n) if store else None
        out, measures = asyncio.run(classroom(lessons, target, args, teacher))
        if store:
            stored = store.summary(key, code)[before:]
            held = rows_after(store, code, first_id)
            answered = answers_counted(out, args, say)
            for failed in teacher.failed:
                say(f"the teacher's press failed: {failed}")
            # one student is one student: the distinct anonymous ids the class's answers came under
            result.update(answers=answered, answers_stored=len(held), lost_answers=max(0, answered - len(held)),
                          answers_in_summary=len(stored), teacher_failed=teacher.failed,
                          answers_not_counted=len(args.not_counted), told_cut=len(args.told),
                          students_counted=len({a.session for a in stored}), class_store=store.kind,
                          refused=len(args.refused),
                          sends=len(SENDS), follow_lesson_p95_ms=pct(teacher.from_send_ms, 0.95),
                          follow_lesson_n=len(teacher.from_send_ms))
            followers = args.followers if args.followers is not None else n
            say(f"follow the teacher: {followers} session(s)")
            result.update(asyncio.run(follow_the_teacher(target, args, store, key, code, followers)))
    killed = (measures["killed_replica"] or {}).get("name")
    result.update(summary(out, lessons, ref, say, killed), **measures)
    if args.flood:
        result.update(class_beside(args, lessons, store, key, say, result, "flood"))
    if args.starve:
        result.update(class_beside(args, lessons, store, key, say, result, "starve"))
    if args.prank and store:
        result.update(class_beside(args, lessons, store, key, say, result, "prank"))
    return result


def answers_counted(out: list, args, say) -> int:
    """The answers the class should hold: *Check* runs that ended without an error and whose page
    said the answer was counted (or kept as a retry); one that said otherwise beside *Check* (a
    student removed or refused at that moment, the store busy) was told, not lost."""
    told = {(n, step) for n, step, _ in args.not_counted}
    for n, step, why in sorted(args.not_counted):
        say(f"session {n} step {step}: its answer was not counted, and the page said: {why}")
    return sum(1 for row in out if row[2] == "answer" and not row[5] and (row[0], row[1]) not in told)


def rows_after(store, code: str, after: int) -> list:
    """(id, student id) of every answer row of class ``code`` after row id ``after``, a removed
    student's too: what the store holds, whatever the teacher's summary shows."""
    import sqlalchemy as sa
    from server.class_store.schema import answers
    with store.engine.connect() as conn:
        return conn.execute(sa.select(answers.c.id, answers.c.session).where(
            (answers.c.class_code == code) & (answers.c.id > after))).all()


def last_row(store) -> int:
    import sqlalchemy as sa
    from server.class_store.schema import answers
    with store.engine.connect() as conn:
        return conn.execute(sa.select(sa.func.coalesce(sa.func.max(answers.c.id), 0))).scalar()


def class_beside(args, lessons: list[Lesson], store, key: str, say, calm: dict, what: str) -> dict:
    """The same lesson again on a fresh server, in a class of its own (the first run's answers
    would make these retries), with the teacher's sends, beside the flooding tab (``what`` =
    "flood") or the starving tabs ("starve"): their figures, and the students' p95 against the run
    without them (no reference: its pages name another class)."""
    say({"flood": "the same class beside a flooding tab (20 reruns/s, new 1,000-character sentences)",
         "starve": f"the same class beside {args.starve} tab(s) asking for {args.starve_page}'s most expensive work",
         "prank": "the same class beside a prankster on its address (unnamed listeners, guessed codes, wrong keys)"}[what])
    code = store.open_class(key).code if store else ""
    lessons = [replace(lesson, class_code=code) if lesson.class_code else lesson for lesson in lessons]
    if what == "prank":
        args.pranking = (code, key)
    else:
        setattr(args, "flooding" if what == "flood" else "starving", True)
    args.not_counted, args.told = [], []
    first_id = last_row(store) if store else 0
    try:
        with class_target(args) as target:
            teacher = TeacherSends(store, key, code, len(lessons)) if store else None
            out, measures = asyncio.run(classroom(lessons, target, args, teacher))
    finally:
        args.flooding = args.starving = False
        args.pranking = None
    beside = summary(out, lessons, None, say)
    answered = answers_counted(out, args, say)
    stored = len(rows_after(store, code, first_id)) if store else 0
    return {what: {**{k: beside[k] for k in ("interactions", "p50_ms", "p95_ms", "max_ms", "errors")},
                   "lost_answers": max(0, answered - stored) if store else None,
                   "answers_not_counted": len(args.not_counted), "told_cut": len(args.told),
                   **({"page": args.starve_page, "tabs": args.starve} if what == "starve" else {}),
                   **{k: v for k, v in measures.items() if k.startswith(what + "_") or k.endswith("_per_click")}},
            f"{what}_p95_ratio": round(beside["p95_ms"] / calm["p95_ms"], 2) if calm.get("p95_ms") else None}


def main(argv=None) -> int:
    args = parse_args(argv)
    args.timeline_rows = [] if args.timeline else None
    for sig in (signal.SIGINT, signal.SIGTERM):  # Ctrl-C or a kill: stop the server, then exit
        signal.signal(sig, signal.default_int_handler)
    say = (lambda *a: None) if args.json else (lambda *a: print(*a, file=sys.stderr, flush=True))
    n = args.sessions
    if args.patches is not None:  # the servers this bench starts inherit its environment
        os.environ["ATTN_EXPLORER_STREAMLIT_PATCHES"] = args.patches
    store, key, code, class_dir = open_class(args)
    lessons = make_lessons(n, args.seed, SENTENCES, args.faulty, class_code=code or "")
    started = datetime.now().astimezone().isoformat(timespec="seconds")
    setup = f"{args.replicas} replicas behind HAProxy" if args.replicas else (args.url or "one process")
    load_start = [round(x, 2) for x in os.getloadavg()]  # the host's load: figures on a busy host are noisy
    result = {"bench": "classroom-soak" if args.soak else "classroom-follow" if args.follow_only
              else "classroom-check" if args.check else "classroom",
              "sessions": n,
              "replicas": args.replicas or (None if args.url else 1), "url": args.url,
              "streamlit_patches": os.environ.get("ATTN_EXPLORER_STREAMLIT_PATCHES", "all")}
    try:
        if args.soak:
            say(f"soak: waves of {n} session(s) on fresh news sentences for {args.soak} min, {setup}")
            with class_target(args) as target:
                result.update(soak(target, args, say))
        else:
            result.update(play_class(args, lessons, store, key, code, say, setup))
    except (RuntimeError, TimeoutError, FileNotFoundError) as e:  # a server did not start, or its first page failed
        print(f"classroom: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("classroom: interrupted; servers stopped", file=sys.stderr)
        return 130
    finally:
        if store:
            store.engine.dispose()
        shutil.rmtree(class_dir, ignore_errors=True)

    result.update(load_average_start=load_start, load_average=[round(x, 2) for x in os.getloadavg()])
    result.update(one_address=args.one_address or None, starve_page=args.starve_page if args.starve else None,
                  faulty=args.faulty)  # None: the lesson's default tenth
    result.update(faulty_sessions=0 if args.check else sum(bool(x.fault) for x in lessons), think_s=args.think,
                  ramp_s=args.ramp, timeout_s=args.timeout, seed=args.seed, started=started, **stamp(ROOT))
    compared = against_best(result, read(RESULTS))  # the best recorded on this host kind, not only the parent
    result["vs_best"] = ratios(compared)
    if not args.json and not args.soak and not args.check and "per_kind" in result:
        print_table(result, lessons)
    elif not args.json and args.check:
        print(f"the check: {result['sessions']} sessions, p50 {result['p50_ms']} ms, p95 {result['p95_ms']} ms, max "
              f"{result['max_ms']} ms, {result['errors']} errors, {result['lost_answers']} lost of {result['answers']}, "
              f"every answer counted: {result['every_answer_counted']}, gains as played: {result['gains_match']}")
    elif not args.json and args.follow_only:
        print(f"follow the teacher: {result['followers']} followers, p50 {result['follow_p50_ms']} ms, p95 "
              f"{result['follow_p95_ms']} ms, max {result['follow_max_ms']} ms, {result['follow_errors']} errors; idle: "
              f"{result.get('idle_cpu_pct_of_core')} % of a core; p95 worked example "
              f"{result.get('follow_worked-example_p95_ms')} ms, exercise {result.get('follow_exercise_p95_ms')} ms, "
              f"reveal {result.get('follow_reveal_p95_ms')} ms")
    if args.timeline:
        with open(args.timeline, "w") as f:
            f.writelines(json.dumps(row) + "\n" for row in args.timeline_rows)
    emit(result, args.append)
    report(compared)  # on stderr, after the JSON line
    return 0


if __name__ == "__main__":
    sys.exit(main())
