"""The report of ``bench/classroom.py``: percentiles, the summary of a run and its table.

``summary`` turns the interactions (session, step, kind, ms, digest, error, replica) into the
JSON line's figures: latency of the ordinary sessions per kind, the errors and mismatches of
all of them, sessions per replica and, after a killed replica, how its sessions fared.
"""
from __future__ import annotations

import json
import math
import os
import platform
import subprocess
from datetime import date
from pathlib import Path

from classroom_lesson import Lesson


def pct(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile."""
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[max(0, math.ceil(q * len(ordered)) - 1)], 1)


def host() -> str:
    models = [line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
              if line.startswith("model name")]
    return f"{models[0] if models else platform.machine()}, {os.cpu_count()} cores"


def stamp(root: Path) -> dict:
    """What every JSON line of these benches carries: the host, the commit of the checkout whose
    app ran, the date and the machine (as scripts/run_benchmarks.sh stamps)."""
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True)
    return {"host": host(), "commit": commit.stdout.strip(), "date": date.today().isoformat(),
            "machine": f"{platform.machine()} {os.cpu_count()} cores"}


def emit(result: dict, append: Path | None) -> None:
    """Print the run's JSON line, and append it to ``append`` (results/benchmarks.jsonl) if given."""
    line = json.dumps(result, ensure_ascii=False)
    if append:
        with open(append, "a") as f:
            f.write(line + "\n")
    print(line)


def summary(out: list, lessons: list[Lesson], ref: dict | None, say, killed: str | None = None) -> dict:
    """Latency of the ordinary sessions per kind; errors and mismatches of all of them (no
    mismatches without a reference: ``--soak``); sessions per replica; with a killed replica,
    the errors of its sessions apart from the others' and how long they took to be served again."""
    rows = {"normal": [], "faulty": []}
    reconnects, by_replica, on_killed = [], {}, set()
    moves: dict[int, list] = {}  # the teacher's k-th move -> its follows' rows (the ordinary sessions')
    plans: dict[Lesson, list] = {}
    for session, step, kind, ms, digest, error, replica in out:
        lesson = lessons[session]
        if replica:
            by_replica.setdefault(replica, set()).add(session)
            if replica == killed:
                on_killed.add(session)
        if kind == "reconnect":
            reconnects.append((session, ms, error))
            if error:
                say(f"session {session}: {error}")
            continue
        expected = ref[lesson].get(step, (None, None))[0] if ref else None
        mismatch = bool(digest and expected and digest != expected)
        told = error
        if error and error.startswith("mismatch: "):  # a check of what the tab shows (classroom_modes.check)
            mismatch, error = True, None
        rows["faulty" if lesson.fault else "normal"].append((kind, ms, error, mismatch, session))
        if kind == "follow" and not lesson.fault:
            plan = plans.setdefault(lesson, lesson.steps())
            moves.setdefault(plan[step][1][1], []).append((kind, ms, error, mismatch, session))
        if error or mismatch:
            say(f"session {session} step {step} ({kind}, fault {lesson.fault}, replica {replica or '-'}): "
                + (error or (told if kind == "check" else f"page {digest} differs from the reference {expected}")))

    def stats(rows_: list) -> dict:
        # a check reads what the tab holds, and a follow that left the page as it was drew nothing: no time
        times = [r[1] for r in rows_ if r[0] != "check" and r[1] is not None]
        return {"n": len(times) or len(rows_), "p50_ms": pct(times, 0.5), "p95_ms": pct(times, 0.95),
                "max_ms": round(max(times), 1) if times else None,
                "errors": sum(bool(r[2]) for r in rows_), "mismatches": sum(r[3] for r in rows_)}

    normal, faulty = stats(rows["normal"]), stats(rows["faulty"])
    result = {"interactions": normal["n"], "p50_ms": normal["p50_ms"], "p95_ms": normal["p95_ms"],
              "max_ms": normal["max_ms"], "errors": normal["errors"] + faulty["errors"],
              "mismatches": (normal["mismatches"] + faulty["mismatches"]) if ref else None,
              "faulty_interactions": faulty["n"], "faulty_errors": faulty["errors"],
              "faulty_mismatches": faulty["mismatches"] if ref else None,
              "reference_errors": sum(bool(e) for steps in ref.values() for _, e in steps.values()) if ref else None,
              "replica_sessions": {name: len(s) for name, s in sorted(by_replica.items())} or None,
              "per_kind": {kind: stats([r for r in rows["normal"] if r[0] == kind])
                           for kind in dict.fromkeys(r[0] for r in rows["normal"])},
              # each teacher's move apart (the sends, then MOVES): which burst sets the follows' tail
              "follow_per_move": {k: stats(moves[k]) for k in sorted(moves)} or None}
    if killed:
        all_rows = rows["normal"] + rows["faulty"]
        result.update(
            killed_replica_sessions=len(on_killed),
            killed_replica_errors=sum(bool(r[2]) for r in all_rows if r[4] in on_killed),
            other_replica_errors=sum(bool(r[2]) for r in all_rows if r[4] not in on_killed),
            reconnects=len(reconnects), reconnects_failed=sum(bool(e) for *_, e in reconnects),
            served_again_max_s=round(max((ms for _, ms, _ in reconnects), default=0) / 1000, 1))
    return result


def print_table(r: dict, lessons: list[Lesson]) -> None:
    table = [(kind, k["n"], k["p50_ms"], k["p95_ms"], k["max_ms"], k["errors"], k["mismatches"])
             for kind, k in r["per_kind"].items()]
    table += [("all", r["interactions"], r["p50_ms"], r["p95_ms"], r["max_ms"], r["errors"] - r["faulty_errors"],
               (r["mismatches"] or 0) - (r["faulty_mismatches"] or 0)),
              ("faulty", r["faulty_interactions"], "", "", "", r["faulty_errors"], r["faulty_mismatches"])]
    for row in [("interaction", "n", "p50 ms", "p95 ms", "max ms", "errors", "mismatches")] + table:
        print("{:<12}{:>6}{:>10}{:>10}{:>10}{:>8}{:>12}".format(*(str(v) for v in row)))
    faults = ", ".join(sorted({lesson.fault for lesson in lessons if lesson.fault})) or "none"
    print(f"faulty sessions: {r['faulty_sessions']} ({faults}); server peak RSS {r['rss_mb']} MB; "
          f"server CPU per click {r['server_cpu_ms_per_click']} ms; sessions per replica {r['replica_sessions']}")
    if r.get("answers") is not None:
        print(f"answers: {r['answers']} answered, {r['answers_stored']} stored, {r['lost_answers']} lost")
    if r.get("followers"):
        print(f"follow the teacher: {r['followers']} followers, p50 {r['follow_p50_ms']} ms, p95 {r['follow_p95_ms']} ms, "
              f"max {r['follow_max_ms']} ms, {r['follow_errors']} errors {r['follow_error_kinds'] or ''}")
    if r.get("killed_replica"):
        print(f"killed {r['killed_replica']}: its {r['killed_replica_sessions']} session(s) had "
              f"{r['killed_replica_errors']} error(s), the others {r['other_replica_errors']}; "
              f"served again within {r['served_again_max_s']} s ({r['reconnects_failed']} of {r['reconnects']} not)")
