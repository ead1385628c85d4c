"""scripts/test_cpu.py: a command's CPU, sampled per process and sorted by kind."""
from __future__ import annotations

import json
import subprocess
import sys

from conftest import ROOT

SPIN = "import time\nwhile time.process_time() < 2.5: pass"


def test_a_childs_cpu_is_counted_under_its_kind(tmp_path):
    out = tmp_path / "cpu.jsonl"
    # the command is a shell whose child spins 2.5 CPU-seconds: counted under "other python",
    # less at most the one second after its last sample
    run = subprocess.run([sys.executable, "scripts/test_cpu.py", "--out", str(out), "--", "bash", "-c",
                          f"{sys.executable} -c '{SPIN}'; exit 3"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 3, run.stderr  # the command's own status
    line = json.loads(run.stdout.strip().splitlines()[-1])
    assert line == json.loads(out.read_text())
    assert line["returncode"] == 3 and line["wall_s"] >= 2.4
    assert 1.4 <= line["cpu_s_by_kind"]["other python"] <= 2.6, line
    assert line["host_busy_cpu_s"] >= 1.4
