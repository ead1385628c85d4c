"""The command-line entry points run as a user runs them (python -m …, from the repository root)."""
from __future__ import annotations

import os
import subprocess
import sys

from helpers import ROOT

ENV = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))


def run(*args, input=None, check=True):
    proc = subprocess.run([sys.executable, *args], cwd=ROOT, env=ENV, capture_output=True, text=True,
                          input=input, timeout=300)
    if check and proc.returncode != 0:
        raise AssertionError(f"{args} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc
