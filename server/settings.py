"""Every setting the server takes from its environment, in one place.

Each is read when asked, not when this module is imported, so a test (or a teacher
restarting the server) that sets a variable gets it on the next page run.

ATTN_EXPLORER_CHECKPOINTS     checkpoints/                   the model folders the app loads
ATTN_EXPLORER_RESULTS         results/                       bleu_by_length.csv, benchmarks.jsonl
ATTN_EXPLORER_DATA            ../shared/data/enfr            the test split the BLEU page recomputes
ATTN_EXPLORER_GOLD            ../shared/data/hansards-align  the Hansards gold word alignments
ATTN_EXPLORER_HF_MODELS       (none)  Hugging Face encoder–decoders beside the zoo, comma-separated: Hub names
                                      already in the local cache, or save_pretrained folders (docs/own-model.md)
ATTN_EXPLORER_ADMIN           off     1: the owner's server; the BLEU page may recompute and write results
ATTN_EXPLORER_LIVE_TRAININGS  1       live toy trainings at once, server-wide (the rest queue)
ATTN_EXPLORER_DECODERS        2       decodings at once, server-wide (the rest wait their turn)
ATTN_EXPLORER_MALLOC_ARENAS   2       glibc malloc arenas of the server process (0: glibc's default, 8 per core)
ATTN_EXPLORER_CLASS_DB        (SQLite)  the class store: postgresql://user@host/db, sqlite:///path, or unset
ATTN_EXPLORER_CLASS_DIR       ~/.cache/attention-explorer  the folder of the default SQLite file, classes.sqlite3
ATTN_EXPLORER_CLASS_HOURS     4       a class refuses answers this many hours after it opens, then is deleted
ATTN_EXPLORER_TEACHER_KEY     (generated)  the teacher's secret; unset: generated once, kept in the store
ATTN_EXPLORER_CHROMIUM        /usr/bin/chromium  the headless browser that draws SVG/PDF/PNG exports (viz/export.py)
"""
from __future__ import annotations

import os
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


def admin() -> bool:
    """Visitors read, the owner writes: only a server started with ATTN_EXPLORER_ADMIN=1
    writes to the repository or starts a full evaluation."""
    return os.environ.get("ATTN_EXPLORER_ADMIN", "").strip().lower() in ("1", "true", "yes", "on")


def live_trainings() -> int:
    return _count("ATTN_EXPLORER_LIVE_TRAININGS", 1)


def decoders() -> int:
    return _count("ATTN_EXPLORER_DECODERS", 2)


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
    folder = _path("ATTN_EXPLORER_CLASS_DIR", Path.home() / ".cache" / "attention-explorer")
    return f"sqlite:///{folder / 'classes.sqlite3'}"


def class_hours() -> float:
    try:
        return max(0.01, float(os.environ.get("ATTN_EXPLORER_CLASS_HOURS", 4)))
    except ValueError:
        return 4.0


def teacher_key() -> str | None:
    """The key a server was started with, or None: the store then keeps one, generated once,
    so that every process on one store shares it."""
    return os.environ.get("ATTN_EXPLORER_TEACHER_KEY", "").strip() or None


def hf_models() -> tuple[str, ...]:
    """The models made elsewhere to load beside the zoo, in the order given (none by default,
    and then ``transformers`` is never imported)."""
    return tuple(dict.fromkeys(s.strip() for s in os.environ.get("ATTN_EXPLORER_HF_MODELS", "").split(",") if s.strip()))
