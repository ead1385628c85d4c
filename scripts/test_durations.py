"""The suite's durations table in docs/testing.md, made from a run's JUnit report.

    bash scripts/test.sh                     # writes test-output/junit.xml
    python scripts/test_durations.py test-output/junit.xml [--write docs/testing.md] [--top 15]

Prints (or writes between the ``<!-- durations -->`` and ``<!-- /durations -->`` lines of the
doc) the run's wall time and test count, and the test files that took longest: their tests and
seconds, summed over the workers (``pytest -n``: the files run side by side, so the sum exceeds
the wall time), each file's share of that sum.
"""
from __future__ import annotations

import argparse
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
    args = parser.parse_args(argv)
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
