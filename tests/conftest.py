"""Shared fixtures. The suite's tiny checkpoints (trained for seconds on a toy task, kept in
tests/fixtures/tiny_zoo/) are real checkpoint folders, so it never depends on the shipped ones
being present, the app never sees a fake model, and every host loads the same weights."""
from __future__ import annotations

import gzip
import json
import os
import random
import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
torch.set_num_threads(1)  # small models: one thread is fastest and leaves a core for the rest
# AppTest runs in this process: its failures show the page's full exception (the served app's
# visitors get none, .streamlit/config.toml; tests/test_error_details.py checks that on a real server)
import streamlit as _st  # noqa: E402
_st.set_option("client.showErrorDetails", "full")

from model.toy import TINY_ZOO  # noqa: E402
from model.vocabulary import Vocabulary  # noqa: E402
from helpers.apptest import toy_test_split  # noqa: E402
from model.checkpoint import load_checkpoint  # noqa: E402

TINY_CHECKPOINTS = Path(__file__).resolve().parent / "fixtures" / "tiny_zoo"  # scripts/make_tiny_zoo.py made them

# The layers (pytest.ini's markers): a test is marked by a fixture it uses, or by its module's
# ``pytestmark`` / its own decorator; scripts/test_fast.sh runs the tests with none of them.
LAYERS = ("browser", "server", "postgres", "latex", "slow")
FIXTURE_LAYERS = {"postgres_url": ("postgres",), "class_server": ("browser", "server"),
                  "class_server_process": ("browser", "server"), "shipped_server": ("browser", "server"),
                  "room": ("server",), "server": ("server",), "tls_lecture": ("server",), "hall": ("server",)}


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups (--dist loadgroup)
def pytest_collection_modifyitems(config, items):
    for item in items:
        # the suite runs on every core (scripts/test.sh: pytest-xdist, --dist loadgroup): a file's
        # tests stay on one worker, so its module fixtures start once, unless a
        # test names a group of its own (the axe scans, split to run side by side) or its module
        # spreads its tests (``SPREAD = True``: long tests on cheap fixtures, as the trainings)
        if not item.get_closest_marker("xdist_group"):
            spread = item.module is None or getattr(item.module, "SPREAD", False)
            item.add_marker(pytest.mark.xdist_group(item.nodeid if spread else item.module.__name__))
        layers = {m for f in getattr(item, "fixturenames", ()) for m in FIXTURE_LAYERS.get(f, ())}
        callspec = getattr(item, "callspec", None)
        if callspec is not None and "postgresql" in callspec.id:  # a store test run on both databases
            layers.add("postgres")
        for layer in sorted(layers):
            item.add_marker(layer)
        if not any(item.get_closest_marker(layer) for layer in LAYERS):
            item.add_marker("fast")


@pytest.fixture(scope="session")
def tiny_zoo(tmp_path_factory) -> Path:
    """A checkpoints/ folder with every zoo model trained tiny on digit reversal, copied from the
    fixtures every host shares (tests write metrics into it), plus one deliberately broken folder,
    ``broken``; and the app pointed at it (and at a class store in a temporary folder)."""
    root = tmp_path_factory.mktemp("checkpoints")
    for name in TINY_ZOO:
        shutil.copytree(TINY_CHECKPOINTS / name, root / name)
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
    try:
        run(str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
        run(str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(folder / "log"), "-w", "-t", "60", "start", "-o",
            f"-h 127.0.0.1 -p {port} -k {folder} -c fsync=off -c max_connections=200")
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        # always stopped, whatever failed: a start that timed out may still have left a server running
        for mode in ("fast", "immediate"):
            if not (data / "postmaster.pid").exists():
                break
            try:
                run(str(bin_dir / "pg_ctl"), "-D", str(data), "-m", mode, "-w", "-t", "30", "stop")
            except (subprocess.SubprocessError, OSError):
                continue
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


@pytest.fixture(scope="session")
def vocab():
    """The toy task's SentencePiece vocabulary (digits): the tiny checkpoints' own, kept with them."""
    return Vocabulary(TINY_CHECKPOINTS / "rnnsearch" / "spm.model")


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


@pytest.fixture(scope="module")
def product(tiny_zoo, tmp_path_factory, monkeypatch_module):
    """The tiny zoo evaluated for real (``python -m model.evaluate`` on a toy test split:
    metrics.json and the BLEU-by-length CSV), plus a training log, and the app pointed at them."""
    from model.evaluate import main as evaluate_main
    from ui import zoo_cache
    tmp = tmp_path_factory.mktemp("product")
    data = toy_test_split(tmp / "data")
    results = tmp / "results"
    for name in ("rnnsearch", "rnnenc"):
        for stress in ([], ["--stress"]):
            assert evaluate_main(["--checkpoint", str(tiny_zoo / name), "--data", str(data / "test.tsv"),
                                  "--bootstrap", "50", "--no-perplexity", "--write-metrics",
                                  "--length-csv", str(results / "bleu_by_length.csv"), *stress]) == 0
    pd.DataFrame({"epoch": [0.5, 1.0, 1.5], "steps": [40, 80, 120], "train_loss": [2.1, 1.4, 0.9],
                  "dev_loss": [2.0, 1.5, 1.1], "dev_bleu": [3.0, 20.0, 41.5], "tokens_per_second": [900, 950, 940],
                  "lr": [1e-3] * 3, "minutes": [0.01, 0.02, 0.03]}).to_csv(tiny_zoo / "rnnsearch" / "train_log.csv",
                                                                         index=False)
    gold = tmp / "gold"  # a toy gold alignment set, scored for real into rnnsearch's metrics.json
    gold.mkdir()
    (gold / "enfr.src-tgt").write_text("1 2 3 ||| 3 2 1 .\n4 5 ||| 5 4\n", encoding="utf-8")
    (gold / "enfr.gold").write_text("1-3 2-2 3-1\n1-2 2p1\n", encoding="utf-8")
    from model.align import main as align_main
    assert align_main(["--checkpoint", str(tiny_zoo / "rnnsearch"), "--gold", str(gold), "--write-metrics"]) == 0
    # local-p's position tracking, measured for real (evaluate --positions), for its Models card
    assert evaluate_main(["--checkpoint", str(tiny_zoo / "luong-local"), "--data", str(data / "test.tsv"),
                          "--positions", "--min-pieces", "3", "--write-metrics"]) == 0
    local = tiny_zoo / "luong-local" / "config.json"  # a warm-started model's card says from what
    config = json.loads(local.read_text())
    config["training"]["initialised_from"] = {"checkpoint": "checkpoints/luong-general",
                                              "fresh": ["decoder.attention.W_p.weight", "decoder.attention.v_p.weight"]}
    local.write_text(json.dumps(config))
    dot = tiny_zoo / "luong-dot" / "config.json"  # a fine-tuned model's card lists its training stages
    config = json.loads(dot.read_text())
    config["training"]["stages"] = [
        {"steps": 9143, "total_minutes_run": 277.0, "best_dev_bleu": 26.9, "train": {"lr": 0.001}},
        {"steps": 2400, "total_minutes_run": 95.04, "best_dev_bleu": 28.1, "train": {"lr": 0.00025, "oversample":
         {"tatoeba": 3, "newstest2012": 2}}, "initialised_from": {"checkpoint": "checkpoints/luong-dot", "fresh": []},
         "averaged": {"snapshots_at_steps": [1800, 2400], "dev_bleu_by_count": {"2": 28.1}}},
        {"steps": 3638, "total_minutes_run": 7.0, "best_dev_bleu": 30.7, "train": {"lr": 0.0005, "oversample":
         {"tatoeba": 3}}, "initialised_from": {"checkpoint": "checkpoints/luong-dot", "fresh": []},
         "machine": "Xeon, 16 cores, 2 torch thread(s), torch 2.11.0+cu130, device cuda:0 (NVIDIA H200), 1 process(es)"}]
    dot.write_text(json.dumps(config))
    monkeypatch_module.setenv("ATTN_EXPLORER_RESULTS", str(results))
    monkeypatch_module.setenv("ATTN_EXPLORER_DATA", str(data))
    zoo_cache._load_zoo.clear()  # metrics.json is read when the zoo loads
    from model.zoo import DISPLAY_NAMES
    yield {"data": data, "results": results / "bleu_by_length.csv", "zoo": tiny_zoo, "display": DISPLAY_NAMES}
    zoo_cache._load_zoo.clear()


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as mp:
        yield mp


@pytest.fixture(scope="module")
def tiny(tiny_zoo):
    """name -> (model, vocab) for every tiny checkpoint, loaded as the app loads them (packed for decoding)."""
    return {name: load_checkpoint(tiny_zoo / name)[:2] for name in TINY_ZOO}


BROWSER_CLASS_KEY = "browser-teachers-key"  # the teacher's key of class_server


@pytest.fixture(scope="session")
def class_server_process(tiny_zoo, tmp_path_factory):
    """A real server on a class store of its own (SQLite in a temporary folder), with a known key:
    one per test process, shared by its browser files (each test opens a class of its own, in
    browser contexts of its own), so a server's start (about 6 CPU-seconds) is paid once per
    worker, not once per file. Yields (url, store, Chromium's path)."""
    from helpers.browser import find_chromium, OUTPUT, streamlit_app
    from server.class_store import ClassStore
    chromium = find_chromium()
    if not chromium:
        pytest.skip("Chromium not found and scripts/setup_browser.sh could not install it (needs root and apt)")
    url_db = f"sqlite:///{tmp_path_factory.mktemp('class') / 'classes.sqlite3'}"
    store = ClassStore(url_db, teacher_key=BROWSER_CLASS_KEY)
    settings = {"ATTN_EXPLORER_CLASS_DB": url_db, "ATTN_EXPLORER_TEACHER_KEY": BROWSER_CLASS_KEY}
    log = OUTPUT / f"class-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.log"
    try:
        with streamlit_app(tiny_zoo, log, settings) as url:
            yield url, store, chromium
    finally:
        store.engine.dispose()


@pytest.fixture
def class_server(class_server_process):
    """(url, store, playwright browser): the process's class server and Chromium, for one test."""
    from helpers.browser import browser_in_use
    url, store, chromium = class_server_process
    with browser_in_use(chromium) as browser:
        yield url, store, browser


@pytest.fixture(scope="session", autouse=True)
def one_chromium_per_process():
    """The browser tests' Chromium (helpers.browser) is closed with the session."""
    yield
    if "helpers.browser" in sys.modules:
        sys.modules["helpers.browser"].close_shared_browser()


@pytest.fixture(autouse=True)
def streamlit_as_shipped_after_each_test():
    """A test that imports app.py applies the server's Streamlit patches (its start-up does, in
    this process): they are undone after it, so that no other test runs on a patched Streamlit
    it did not ask for (tests/test_streamlit_patches.py checks Streamlit untouched)."""
    yield
    from server.streamlit_patches import patches, reads
    if any(p.applied for p in patches.PATCHES) or any(r.chosen is not None for r in reads.READS):
        patches.undo_all()


@pytest.fixture(autouse=True)
def a_full_share_for_each_test():
    """Every AppTest session has one id (Streamlit's "test session id"), so the per-session shares
    of server/limits.py would carry one test's decodings and reruns into the next one's page, and
    whether a page says "slow down" would depend on what ran before it. Each test starts with a
    full share, as a new visitor does."""
    from server.limits import decode_rate, rerun_rate
    decode_rate.clear()
    rerun_rate.clear()
