"""The suite's durations table in docs/testing.md, made from a run's JUnit report.

    bash scripts/test.sh                     # writes test-output/junit.xml
    python scripts/test_durations.py test-output/junit.xml [--write docs/testing.md] [--top 15]
    python scripts/test_durations.py test-output/junit.xml --times tests/durations.json

Prints (or writes between the ``<!-- durations -->`` and ``<!-- /durations -->`` lines of the
doc) the run's wall time and test count, and the test files that took longest: their tests and
seconds, summed over the workers (``pytest -n``: the files run side by side, so the sum exceeds
the wall time), each file's share of that sum.

``--times`` writes each test's seconds (those of a second or more; node id -> seconds) to the
file tests/conftest.py reads to hand pytest-xdist's workers the longest groups first.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

BEGIN, END = "<!-- durations -->", "<!-- /durations -->"


def per_file(report: Path) -> tuple[float, int, dict[str, list[float]]]:
    """(the run's wall seconds, its tests, file -> each test's seconds) from a JUnit report."""
    root = ET.parse(report).getroot()
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    wall = sum(float(s.get("time", 0)) for s in suites)
    files: dict[str, list[float]] = defaultdict(list)
    for case in root.iter("testcase"):
        module = case.get("classname", "").split(".")
        # "tests.test_x" or "tests.test_x.TestClass": the file is the first "test_" part
        name = next((m for m in module if m.startswith("test_")), module[-1])
        files[f"tests/{name}.py"].append(float(case.get("time", 0)))
    return wall, sum(len(v) for v in files.values()), files


def test_times(report: Path) -> dict[str, float]:
    """node id (``tests/test_x.py::test_y[param]``) -> seconds, for the tests of a second or more.
    pytest-xdist's ``--dist loadgroup`` adds "@GROUP" to each node id, which the report splits
    into its class name and name like any node id: the group is taken off here."""
    times = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        classname, name = case.get("classname", ""), case.get("name", "")
        if "@" in classname:  # a group that is a node id itself: "tests.test_x.test_y@tests/test_x.py"
            classname = classname[:classname.index("@")].rpartition(".")[0]
        name = name.split("@")[0]
        parts = classname.split(".")
        file = next((k for k, part in enumerate(parts) if part.startswith("test_")), len(parts) - 1)
        seconds = float(case.get("time", 0))
        if seconds >= 1:
            times["::".join(["/".join(parts[:file + 1]) + ".py", *parts[file + 1:], name])] = round(seconds, 1)
    return dict(sorted(times.items()))


def table(report: Path, top: int) -> str:
    wall, tests, files = per_file(report)
    total = sum(sum(v) for v in files.values()) or 1.0
    rows = sorted(files.items(), key=lambda kv: -sum(kv[1]))[:top]
    lines = [f"{tests} tests in {wall:,.0f} s of wall time; {total:,.0f} s of test time summed over the workers. "
             f"The {len(rows)} files that take longest:", "",
             "| file | tests | seconds | share |", "| --- | ---: | ---: | ---: |"]
    lines += [f"| `{name}` | {len(times)} | {sum(times):,.0f} | {sum(times) / total:.0%} |" for name, times in rows]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("report", type=Path, help="pytest's --junitxml report (scripts/test.sh: test-output/junit.xml)")
    parser.add_argument("--write", type=Path, help="the doc whose durations block to replace")
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--times", type=Path, help="write each test's seconds as JSON (tests/durations.json)")
    args = parser.parse_args(argv)
    if args.times is not None:
        args.times.write_text(json.dumps(test_times(args.report), indent=0) + "\n")
        return 0
    made = table(args.report, args.top)
    if args.write is None:
        print(made)
        return 0
    doc = args.write.read_text()
    block = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END), re.S)
    if not block.search(doc):
        print(f"{args.write} has no {BEGIN} … {END} block", file=sys.stderr)
        return 1
    args.write.write_text(block.sub(lambda _: f"{BEGIN}\n{made}\n{END}", doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
