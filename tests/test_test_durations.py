"""scripts/test_durations.py: docs/testing.md's durations block from a run's JUnit report."""
from __future__ import annotations

import subprocess
import sys

from conftest import ROOT

REPORT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" tests="4" time="50.0">
<testcase classname="tests.test_slow" name="a" time="30.0"/><testcase classname="tests.test_slow" name="b" time="20.5"/>
<testcase classname="tests.test_quick.TestSome" name="c" time="9.5"/><testcase classname="tests.test_none" name="d" time="0"/>
</testsuite></testsuites>"""


def test_the_block_is_made_from_the_report_and_replaces_only_itself(tmp_path):
    report, doc = tmp_path / "junit.xml", tmp_path / "testing.md"
    report.write_text(REPORT)
    doc.write_text("before\n<!-- durations -->\nold table\n<!-- /durations -->\nafter\n")
    run = [sys.executable, str(ROOT / "scripts" / "test_durations.py"), str(report), "--top", "2"]
    subprocess.run([*run, "--write", str(doc)], check=True)
    text = doc.read_text()
    assert text.startswith("before\n<!-- durations -->\n4 tests in 50 s of wall time; 60 s of test time")
    assert text.endswith("<!-- /durations -->\nafter\n") and "old table" not in text
    # the two longest files, their tests summed, their share of the 60 s
    assert "| `tests/test_slow.py` | 2 | 50 | 84% |\n| `tests/test_quick.py` | 1 | 10 | 16% |" in text
    assert "test_none" not in text
    doc.write_text("no block here\n")
    assert subprocess.run([*run, "--write", str(doc)], capture_output=True).returncode == 1
