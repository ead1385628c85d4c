"""scripts/test_durations.py: docs/testing.md's durations block from a run's JUnit report."""
from __future__ import annotations

import json
import subprocess
import sys

from conftest import longest_groups_first, ROOT

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


GROUPED = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" tests="5" time="50.0">
<testcase classname="tests.test_slow" name="a[1400-0]@axe-1400-0" time="30.04"/>
<testcase classname="tests.test_quick.TestSome" name="c@tests.test_quick" time="9.5"/>
<testcase classname="tests.test_spread.t_one@tests/test_spread.py" name="t_one" time="2.0"/>
<testcase classname="tests.test_spread" name="t_two[x]@tests/test_spread.py::t_two[x]" time="3.0"/>
<testcase classname="tests.test_none" name="d@tests.test_none" time="0.4"/>
</testsuite></testsuites>"""


def test_the_times_are_keyed_by_node_id_without_the_workers_group(tmp_path):
    """--times: pytest-xdist's "@GROUP" taken off each name (a group may be a node id itself, which
    the report splits like one); the tests under a second left out."""
    report, times = tmp_path / "junit.xml", tmp_path / "durations.json"
    report.write_text(GROUPED)
    subprocess.run([sys.executable, str(ROOT / "scripts" / "test_durations.py"), str(report), "--times", str(times)],
                   check=True)
    assert json.loads(times.read_text()) == {"tests/test_quick.py::TestSome::c": 9.5, "tests/test_slow.py::a[1400-0]": 30.0,
                                             "tests/test_spread.py::t_one": 2.0, "tests/test_spread.py::t_two[x]": 3.0}


def test_the_longest_group_goes_first_and_a_group_keeps_its_order():
    groups = ["fast", "mod", "alone", "mod", "fast", "unknown"]
    seconds = [0.5, 4.0, 5.0, 2.0, 0.5, 0.5]  # mod 6 s, alone 5, fast 1, unknown 0.5
    assert longest_groups_first(groups, seconds) == [1, 3, 2, 0, 4, 5]
    assert longest_groups_first(["a", "b"], [1.0, 1.0]) == [0, 1]  # a tie: the file order
