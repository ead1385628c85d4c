"""Shared fixtures. The suite trains its own tiny checkpoints (seconds, on a toy task), so
it never depends on the shipped ones being present, and the app never sees a fake model."""
from __future__ import annotations

import gzip
import os
import random
import shutil
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
torch.set_num_threads(1)  # small models: one thread is fastest and leaves a core for the rest
# AppTest runs in this process: its failures show the page's full exception (the served app's
# visitors get none, .streamlit/config.toml; tests/test_error_details.py checks that on a real server)
import streamlit as _st  # noqa: E402
_st.set_option("client.showErrorDetails", "full")

from model.toy import make_tiny_checkpoint, toy_vocabulary  # noqa: E402

TINY_ZOO = {
    "rnnsearch": ("rnnsearch", "additive"),
    "luong-general": ("luong", "general"),
    "luong-dot": ("luong", "dot"),
    "luong-concat": ("luong", "concat"),
    "luong-local": ("luong", "local-general"),
    "rnnenc": ("rnnenc", "none"),
    "transformer": ("transformer", "scaled-dot"),
}


@pytest.fixture(scope="session")
def tiny_zoo(tmp_path_factory) -> Path:
    """A checkpoints/ folder with every zoo model trained tiny on digit reversal
    (plus one deliberately broken folder, ``broken``), and the app pointed at it (and at a
    class store in a temporary folder)."""
    root = tmp_path_factory.mktemp("checkpoints")
    for name, (decoder, attention) in TINY_ZOO.items():
        make_tiny_checkpoint(root / name, decoder, attention, steps=120)
    broken = root / "broken"
    shutil.copytree(root / "rnnsearch", broken)
    (broken / "model.safetensors").write_bytes((broken / "model.safetensors").read_bytes()[:1000])
    os.environ["ATTN_EXPLORER_CHECKPOINTS"] = str(root)
    # the class store of the app under test (and of its real servers): a file of the suite's own
    os.environ["ATTN_EXPLORER_CLASS_DIR"] = str(tmp_path_factory.mktemp("classes"))
    return root


@pytest.fixture(scope="session")
def tiny_checkpoint(tiny_zoo) -> Path:
    return tiny_zoo / "rnnsearch"


# -- a throwaway PostgreSQL cluster for the class store --------------------------------------------
def _postgres_bin() -> Path | None:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    return found[-1].parent if found else None


@pytest.fixture(scope="session")
def postgres_url():
    """A PostgreSQL server of its own: initdb in a temporary folder, started on a free loopback
    port (as the ``postgres`` user when the suite runs as root, as CI does), stopped and deleted
    afterwards. Skipped where PostgreSQL is not installed, unless ATTN_EXPLORER_REQUIRE_PG=1
    (scripts/test.sh, which installs it) makes that a failure."""
    import socket
    import subprocess
    import tempfile
    bin_dir = _postgres_bin()
    if bin_dir is None:
        if os.environ.get("ATTN_EXPLORER_REQUIRE_PG") == "1":
            pytest.fail("PostgreSQL is not installed: run bash scripts/setup_postgres.sh")
        pytest.skip("PostgreSQL is not installed (bash scripts/setup_postgres.sh)")
    folder = Path(tempfile.mkdtemp(prefix="attn-pg-"))
    as_user: list[str] = []
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root
        shutil.chown(folder, "postgres", "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data = folder / "data"

    def run(*cmd):
        subprocess.run([*as_user, *cmd], check=True, capture_output=True, timeout=120)
    run(str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
    run(str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(folder / "log"), "-w", "-t", "60", "start", "-o",
        f"-h 127.0.0.1 -p {port} -k {folder} -c fsync=off -c max_connections=200")
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        run(str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop")
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def tiny_hf(tmp_path_factory) -> Path:
    """A MarianMT made here (``hf_tiny``: random weights, SentencePiece models trained on toy
    sentences, English → French), saved with ``save_pretrained``: a model "made elsewhere"."""
    from helpers.hf_tiny import tiny_marian
    return tiny_marian(tmp_path_factory.mktemp("hf") / "tiny-marian")


TEACHER_KEY = "the-teachers-key"


@pytest.fixture
def store(tmp_path, monkeypatch, tiny_zoo):
    """A class store of its own (SQLite in tmp_path) with a known key (TEACHER_KEY), and the app
    pointed at it: the class tests of the Exercises and Lesson pages."""
    from server.class_store import ClassStore
    url = f"sqlite:///{tmp_path / 'classes.sqlite3'}"
    monkeypatch.setenv("ATTN_EXPLORER_CLASS_DB", url)
    monkeypatch.setenv("ATTN_EXPLORER_TEACHER_KEY", TEACHER_KEY)
    s = ClassStore(url, teacher_key=TEACHER_KEY)
    yield s
    s.engine.dispose()


@pytest.fixture(scope="module")
def vocab(tmp_path_factory):
    """The toy task's SentencePiece vocabulary (digits), made once per test file."""
    return toy_vocabulary(tmp_path_factory.mktemp("vocab"))


@pytest.fixture(scope="module")
def toy_split(tmp_path_factory) -> Path:
    """A small en/fr/origin TSV in the real format: digit reversal, two 'corpora', repeated
    English sides for multi-reference scoring."""
    rng = random.Random(7)
    rows = []
    for k in range(120):
        digits = [str(rng.randint(0, 9)) for _ in range(rng.randint(2, 12))]
        rows.append((" ".join(digits), " ".join(digits[::-1]), "toy-a" if k % 2 else "toy-b"))
    rows.append((rows[0][0], "9 9 9", rows[0][2]))  # a second reference for the first source
    folder = tmp_path_factory.mktemp("data")
    for split in ("train", "dev", "test"):
        with gzip.open(folder / f"{split}.tsv.gz", "wt", encoding="utf-8") as f:
            f.write("en\tfr\torigin\n")
            for r in rows:
                f.write("\t".join(r) + "\n")
    return folder
