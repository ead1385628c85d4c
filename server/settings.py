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


def admin() -> bool:
    """Visitors read, the owner writes: only a server started with ATTN_EXPLORER_ADMIN=1
    writes to the repository or starts a full evaluation."""
    return os.environ.get("ATTN_EXPLORER_ADMIN", "").strip().lower() in ("1", "true", "yes", "on")


def live_trainings() -> int:
    return _count("ATTN_EXPLORER_LIVE_TRAININGS", 1)


def decoders() -> int:
    return _count("ATTN_EXPLORER_DECODERS", 2)


def hf_models() -> tuple[str, ...]:
    """The models made elsewhere to load beside the zoo, in the order given (none by default,
    and then ``transformers`` is never imported)."""
    return tuple(dict.fromkeys(s.strip() for s in os.environ.get("ATTN_EXPLORER_HF_MODELS", "").split(",") if s.strip()))
