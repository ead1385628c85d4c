"""The command-line entry points run as a user runs them (``python -m …`` or ``python SCRIPT``, from
the repository root): each in a process of its own, with its own argv, standard streams, exit code
and message, and the module executed as ``__main__``.

Most are forked from a server process that has already imported torch, pandas and SentencePiece
(``multiprocessing``'s forkserver, one per test process): a new interpreter would spend about
5 CPU-seconds importing them, and a training run 2.4 more importing ``torch._dynamo`` (the first
optimiser's ``add_param_group`` does), for commands that take a second. ``fresh=True`` starts a new
interpreter instead, for what must begin from nothing (``torch.distributed.run`` starts its own)."""
from __future__ import annotations

import io
import multiprocessing
import os
import runpy
import subprocess
import sys
import tempfile
import types
from pathlib import Path

from helpers import ROOT

ENV = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))
TIMEOUT_S = 300
_FORKS = multiprocessing.get_context("forkserver")
_FORKS.set_forkserver_preload(["helpers.cli_preload"])


def run(*args, input=None, check=True, fresh=False):
    """Run ``python *args``; the finished process's ``returncode``, ``stdout`` and ``stderr``."""
    fresh = fresh or (args[0].startswith("-") and args[0] != "-m")  # -c CODE: a new interpreter
    proc = _fresh(args, input) if fresh else _forked(args, input)
    if check and proc.returncode != 0:
        raise AssertionError(f"{args} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def _fresh(args, input) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, env=ENV, capture_output=True, text=True,
                          input=input, timeout=TIMEOUT_S)


def _forked(args, input) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="cli-") as tmp:
        streams = [Path(tmp) / name for name in ("stdin", "stdout", "stderr")]
        streams[0].write_text(input or "", encoding="utf-8")
        child = _FORKS.Process(target=_main, args=(list(args), [str(p) for p in streams]), daemon=True)
        # A child runs the parent's __main__ again when it has a file, and a page run by Streamlit
        # in this process (AppTest) leaves itself there: the child starts from a bare one instead.
        main, sys.modules["__main__"] = sys.modules["__main__"], types.ModuleType("__main__")
        try:
            child.start()
        finally:
            sys.modules["__main__"] = main
        child.join(TIMEOUT_S)
        if child.exitcode is None:
            child.kill()
            child.join()
            raise subprocess.TimeoutExpired(["python", *args], TIMEOUT_S)
        out, err = (p.read_text(encoding="utf-8") for p in streams[1:])
    return subprocess.CompletedProcess(["python", *args], child.exitcode, out, err)


def _main(args: list[str], streams: list[str]) -> None:
    """In the forked process: what ``python ARGS`` does after start-up. An uncaught SystemExit
    ends it as the interpreter would (multiprocessing writes a message to stderr, exit code 1)."""
    os.chdir(ROOT)
    os.environ.clear()
    os.environ.update(ENV)
    for fd, (path, mode) in enumerate(zip(streams, ("r", "w", "w"))):
        with open(path, mode, encoding="utf-8") as f:
            os.dup2(f.fileno(), fd)
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", line_buffering=True)
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8", line_buffering=True)
    if args[0] == "-m":
        sys.argv = [args[1], *args[2:]]
        sys.modules.pop(args[1], None)  # preloaded as a library; it runs again as __main__
        runpy.run_module(args[1], run_name="__main__", alter_sys=True)
    else:
        script = ROOT / args[0]
        sys.argv = [str(script), *args[1:]]
        sys.path.insert(0, str(script.parent))  # as the interpreter does for a script
        runpy.run_path(str(script), run_name="__main__")
