"""Every setting the server takes from its environment, in one place.

Each is read when asked, not when this module is imported, so a test (or a teacher
restarting the server) that sets a variable gets it on the next page run. The table below is
docs/settings.md (``python -m server.settings > docs/settings.md``; tests/test_settings.py
checks the two agree, and that every variable read here is in it).

ATTN_EXPLORER_CHECKPOINTS     checkpoints/                   the model folders the app loads
ATTN_EXPLORER_RESULTS         results/                       bleu_by_length.csv, benchmarks.jsonl
ATTN_EXPLORER_DATA            ../shared/data/enfr            the test split the BLEU page recomputes
ATTN_EXPLORER_GOLD            ../shared/data/hansards-align  the Hansards gold word alignments
ATTN_EXPLORER_HF_MODELS       (none)  Hugging Face encoder–decoders beside the zoo, comma-separated: Hub names
                                      already in the local cache, or save_pretrained folders (docs/own-model.md)
ATTN_EXPLORER_LIVE_TRAININGS  1       live toy trainings at once, server-wide (the rest queue)
ATTN_EXPLORER_DECODERS        2       decodings at once, server-wide (the rest wait their turn)
ATTN_EXPLORER_PAGE_RUNS       2       page runs at once per process (the rest wait their turn, one per tab a round)
ATTN_EXPLORER_COSTLY_RUNS     1       costly decodings at once per process (server/costs.py: a long sentence, a wide beam,
                                      an attribution); cheap runs pass them, and they pause while cheap runs are under way
ATTN_EXPLORER_RUN_SECONDS     20      seconds a run with costly work may take from its start, its wait for the costly
                                      lane and its pauses included; past them it stops with a message
ATTN_EXPLORER_BEAM_WORDS      60      words beam search takes (Translate, Compare, Beam search tree); greedy takes the whole box
ATTN_EXPLORER_COMPARE_WORDS   240     words Compare decodes in all, shared among the models picked (at least BEAM_WORDS each)
ATTN_EXPLORER_ATTRIBUTION_WORDS  30   words Attention or attribution? attributes (the first ones; the page says so)
ATTN_EXPLORER_MALLOC_ARENAS   2       glibc malloc arenas of the server process (0: glibc's default, 8 per core)
ATTN_EXPLORER_CLASS_DB        (SQLite)  the class store: postgresql://user@host/db, sqlite:///path, or unset
ATTN_EXPLORER_CLASS_DIR       ~/.cache/attention-explorer  the folder of the default SQLite file, classes.sqlite3
ATTN_EXPLORER_CLASS_HOURS     4       a class refuses answers this many hours after it opens, then is deleted
ATTN_EXPLORER_TEACHER_KEY     (generated)  the teacher's secret (at least 12 characters); unset: generated once, kept in the store
ATTN_EXPLORER_CLASS_SEATS     400     seats of a new class (the teacher changes them in the class panel, up to 600): its
                                      students, and the most one address may hold of them or follow with
ATTN_EXPLORER_JOINS_PER_MINUTE  600  new students one address may add to one class per minute (a school behind one NAT)
ATTN_EXPLORER_REJOINS_PER_MINUTE  3  new students a minute into a class from an address one of its students was removed from
ATTN_EXPLORER_PROXIES         (none)  addresses of the proxies whose X-Forwarded-For is believed (scripts/serve.py sets
                                      this machine's, 127.0.0.1,::1, for its HAProxy)
ATTN_EXPLORER_DB_CONNECTIONS  20      PostgreSQL connections one process may open (scripts/serve.py sizes it from the replicas)
ATTN_EXPLORER_CHROMIUM        /usr/bin/chromium  the headless browser that draws SVG/PDF/PNG exports (viz/export.py)
ATTN_EXPLORER_STREAMLIT_PATCHES  all  the changes to, and private reads of, Streamlit's internals in effect from start-up
                                      (server/serving.py): all, none (nothing private of Streamlit is changed or read),
                                      or names separated by commas; -name leaves one out (docs/performance.md)
"""
from __future__ import annotations

import functools
import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data"


def _path(name: str, default: Path) -> Path:
    return Path(os.environ.get(name) or default)


def _count(name: str, default: int) -> int:
    try:
        return max(1, int(os.environ.get(name, default)))
    except ValueError:
        return default


def checkpoints() -> Path:
    return _path("ATTN_EXPLORER_CHECKPOINTS", ROOT / "checkpoints")


def results() -> Path:
    return _path("ATTN_EXPLORER_RESULTS", ROOT / "results")


def bleu_data() -> Path:
    return _path("ATTN_EXPLORER_DATA", SHARED_DATA / "enfr")


def gold() -> Path:
    return _path("ATTN_EXPLORER_GOLD", SHARED_DATA / "hansards-align")


def chromium() -> str:
    return os.environ.get("ATTN_EXPLORER_CHROMIUM") or "/usr/bin/chromium"


def streamlit_patches() -> str:
    return os.environ.get("ATTN_EXPLORER_STREAMLIT_PATCHES", "").strip() or "all"


def live_trainings() -> int:
    return _count("ATTN_EXPLORER_LIVE_TRAININGS", 1)


def decoders() -> int:
    return _count("ATTN_EXPLORER_DECODERS", 2)


def page_runs() -> int:
    """Page runs (reruns of a page script) at once per process; the others wait their turn
    (``server.limits.page_run_slot``)."""
    return _count("ATTN_EXPLORER_PAGE_RUNS", 2)


def costly_runs() -> int:
    """Costly decodings at once per process (``server.lanes``); the cheap ones never wait for them."""
    return _count("ATTN_EXPLORER_COSTLY_RUNS", 1)


def run_seconds() -> float:
    """Seconds a run with costly work may take from its start, its wait for the lane and its pauses
    for cheap runs included (``server.lanes``)."""
    try:
        return max(1.0, float(os.environ.get("ATTN_EXPLORER_RUN_SECONDS", 20)))
    except ValueError:
        return 20.0


def beam_words() -> int:
    return _count("ATTN_EXPLORER_BEAM_WORDS", 60)


def compare_words() -> int:
    return _count("ATTN_EXPLORER_COMPARE_WORDS", 240)


def attribution_words() -> int:
    return _count("ATTN_EXPLORER_ATTRIBUTION_WORDS", 30)


def malloc_arenas() -> int:
    """Streamlit runs every rerun on a new thread, and glibc gives threads their own malloc
    arenas (up to 8 per core): in a 30-minute classroom soak the server held 9 arenas and its
    memory crept up by about 90 MB after the caches had filled (docs/performance.md). Two
    arenas keep that memory reusable. 0 leaves glibc's default."""
    try:
        return max(0, int(os.environ.get("ATTN_EXPLORER_MALLOC_ARENAS", 2)))
    except ValueError:
        return 2


def class_db() -> str:
    """The class store's SQLAlchemy URL: ATTN_EXPLORER_CLASS_DB, else one SQLite file in
    ATTN_EXPLORER_CLASS_DIR (docs/exercises.md)."""
    url = os.environ.get("ATTN_EXPLORER_CLASS_DB", "").strip()
    if url:
        return url
    return _sqlite_url(os.environ.get("ATTN_EXPLORER_CLASS_DIR", ""), os.environ.get("HOME", ""))


@functools.lru_cache(maxsize=16)
def _sqlite_url(folder: str, home: str) -> str:
    """The SQLite file's URL for these settings, made once: a page run asks for the store several
    times, and paths cost more than the lookup (``home``: only a key, as Path.home reads it)."""
    return f"sqlite:///{Path(folder or Path.home() / '.cache' / 'attention-explorer') / 'classes.sqlite3'}"


def class_hours() -> float:
    try:
        return max(0.01, float(os.environ.get("ATTN_EXPLORER_CLASS_HOURS", 4)))
    except ValueError:
        return 4.0


def teacher_key() -> str | None:
    """The key a server was started with, or None: the store then keeps one, generated once,
    so that every process on one store shares it."""
    return os.environ.get("ATTN_EXPLORER_TEACHER_KEY", "").strip() or None


MIN_TEACHER_KEY = 12  # characters of a chosen key: a short word is guessed by trying words


def teacher_key_problem() -> str | None:
    """Why the chosen ATTN_EXPLORER_TEACHER_KEY cannot serve, or None: the server refuses to
    start with it (``app.py``, ``scripts/serve.py``) rather than guard a class with a guessable key."""
    key = teacher_key()
    if key is not None and len(key) < MIN_TEACHER_KEY:
        return (f"ATTN_EXPLORER_TEACHER_KEY is {len(key)} characters long; a teacher key needs at least "
                f"{MIN_TEACHER_KEY} (or unset it and the server makes one)")
    return None


# PostgreSQL: how long one statement may wait before the class store refuses instead of hanging.
# Set on every connection (server/class_store/). An answer holds its class's row for a few
# milliseconds, so a second's wait for a lock means something is stuck: the student reads "busy,
# try again" while the page stays usable. PostgreSQL's docs recommend the idle-in-transaction limit
# for interactive services: a connection left in a transaction loses it, and its locks, after 10 s.
PG_LOCK_TIMEOUT_MS = 1000
PG_STATEMENT_TIMEOUT_MS = 5000
PG_IDLE_IN_TRANSACTION_MS = 10_000
# PostgreSQL's default max_connections is 100, 3 of them reserved for superusers; the app's
# processes share 80 of the rest, leaving room for psql, backups and monitoring
PG_APP_CONNECTIONS = 80


def pg_options() -> str:
    """The libpq ``options`` that set the timeouts above on a connection."""
    return (f"-c lock_timeout={PG_LOCK_TIMEOUT_MS} -c statement_timeout={PG_STATEMENT_TIMEOUT_MS} "
            f"-c idle_in_transaction_session_timeout={PG_IDLE_IN_TRANSACTION_MS}")


def db_connections() -> int:
    """The most connections one process opens to PostgreSQL (its pool plus overflow)."""
    return _count("ATTN_EXPLORER_DB_CONNECTIONS", 20)


def db_connections_for(processes: int) -> int:
    """Each process's share of PG_APP_CONNECTIONS when ``processes`` app processes use one
    database: 2 replicas get 32 each (the most one needs), 4 get 20, 8 get 10."""
    return max(2, min(32, PG_APP_CONNECTIONS // max(1, processes)))


def hf_models() -> tuple[str, ...]:
    """The models made elsewhere to load beside the zoo, in the order given (none by default,
    and then ``transformers`` is never imported)."""
    return tuple(dict.fromkeys(s.strip() for s in os.environ.get("ATTN_EXPLORER_HF_MODELS", "").split(",") if s.strip()))


def joins_per_minute() -> int:
    """New students one address may add to one class within a minute (``ClassStore.join``): room
    for a whole class behind one NAT joining at once; a script minting ids from one address gets
    no more, and the teacher locks the class once the room is in (docs/campus.md)."""
    return _count("ATTN_EXPLORER_JOINS_PER_MINUTE", 600)


def class_seats() -> int:
    """Seats of a new class: a lecture hall. The teacher sets a class's own (``docs/campus.md``)."""
    return _count("ATTN_EXPLORER_CLASS_SEATS", 400)


def rejoins_per_minute() -> int:
    """New students a minute into a class from an address the teacher removed a student of: a
    prankster removed cannot come back under fresh ids faster than this (docs/campus.md)."""
    return _count("ATTN_EXPLORER_REJOINS_PER_MINUTE", 3)


def proxies() -> frozenset[str]:
    """The addresses of the proxies in front of this process (HAProxy of ``scripts/serve.py``: this
    machine). Only a request from one of them has its X-Forwarded-For believed; a visitor's own
    header, from anywhere else (127.0.0.1 too, when no proxy is set), is ignored."""
    return frozenset(a.strip() for a in os.environ.get("ATTN_EXPLORER_PROXIES", "").split(",") if a.strip())


def documented() -> list[tuple[str, str, str]]:
    """This module's table of settings, as (variable, default, what) rows: a row starts with the
    variable's name, its columns are two or more spaces apart, an indented line continues it."""
    rows: list[list[str]] = []
    for line in __doc__.splitlines():
        if line.startswith("ATTN_EXPLORER_"):
            rows.append(re.split(r"\s{2,}", line.strip(), maxsplit=2))
        elif rows and line.startswith(" ") and line.strip():
            rows[-1][2] += " " + line.strip()
    return [(name, default, what) for name, default, what in rows]


def markdown() -> str:
    """docs/settings.md: the table of :func:`documented` for a reader."""
    lines = ["# Settings", "",
             "Every setting of the server is an environment variable, read in `server/settings.py` when a page",
             "asks for it (a server restarted with a new value uses it on the next page run). This page is",
             "made from that module's own table: `python -m server.settings > docs/settings.md`.", "",
             "| variable | default | what |", "| --- | --- | --- |"]
    lines += [f"| `{name}` | {default} | {what} |" for name, default, what in documented()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown(), end="")
