"""bench/best_line.py: a bench's figures set against the best recorded line of the same bench,
setting and host kind, never another host's or another setting's, never a run with errors."""
from __future__ import annotations

import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
from best_line import against_best, main, ratios, read, report, RESULTS  # noqa: E402

XEON, EPYC = "Intel(R) Xeon(R) Processor, 2 cores", "AMD EPYC, 2 cores"


def line(**kw) -> dict:
    return {"bench": "classroom", "sessions": 30, "replicas": 1, "host": XEON, "errors": 0, "lost_answers": 0,
            "commit": "abc1234", "date": "2026-11-29", "interactions": 621, **kw}


def test_the_best_is_the_lowest_of_the_same_bench_setting_and_host_only():
    recorded = [line(p95_ms=300.0, server_cpu_ms_per_click=20.0, commit="a"),
                line(p95_ms=250.0, server_cpu_ms_per_click=22.0, commit="b"),
                line(p95_ms=100.0, server_cpu_ms_per_click=5.0, host=EPYC, commit="other-host"),
                line(p95_ms=90.0, server_cpu_ms_per_click=4.0, sessions=200, commit="other-size"),
                line(p95_ms=80.0, server_cpu_ms_per_click=3.0, flood={"p95_ms": 1}, commit="flood-mode"),
                line(p95_ms=70.0, server_cpu_ms_per_click=2.0, errors=3, commit="with-errors"),
                line(p95_ms=60.0, server_cpu_ms_per_click=1.0, lost_answers=1, commit="lost-answers")]
    here = line(p95_ms=500.0, server_cpu_ms_per_click=23.0, commit="here")
    compared = against_best(here, recorded + [here])
    assert compared["p95_ms"]["best"] == 250.0 and compared["p95_ms"]["commit"] == "b"
    assert compared["p95_ms"]["ratio"] == 2.0
    assert compared["server_cpu_ms_per_click"]["best"] == 20.0 and compared["server_cpu_ms_per_click"]["commit"] == "a"
    assert compared["server_cpu_ms_per_click"]["ratio"] == 1.15


def test_per_kind_figures_are_compared_kind_by_kind_and_missing_kinds_are_left_out():
    recorded = [line(reference_cpu_ms={"open": 40.0, "follow": 20.0}), line(reference_cpu_ms={"open": 50.0, "follow": 10.0})]
    here = line(reference_cpu_ms={"open": 44.0, "follow": 8.0, "check": 3.0})
    compared = against_best(here, recorded)
    assert {k: v["best"] for k, v in compared["reference_cpu_ms"].items()} == {"open": 40.0, "follow": 10.0}
    assert ratios(compared) == {"reference_cpu_ms": {"open": 1.1, "follow": 0.8}}


def test_the_reference_follow_is_compared_only_with_lines_that_measured_it_alike():
    # older lines averaged the teacher's moves that open no page into `follow` (cheaper by them);
    # a line that counts only the fresh opens of sent pages is set against such lines alone
    recorded = [line(reference_cpu_ms={"open": 40.0, "follow": 11.0}),
                line(reference_cpu_ms={"open": 45.0, "follow": 21.0}, reference_follow="opens")]
    here = line(reference_cpu_ms={"open": 44.0, "follow": 20.0}, reference_follow="opens")
    assert ratios(against_best(here, recorded)) == {"reference_cpu_ms": {"open": 1.1, "follow": 0.95}}
    older = line(reference_cpu_ms={"open": 44.0, "follow": 12.0})
    assert ratios(against_best(older, recorded)) == {"reference_cpu_ms": {"open": 1.1, "follow": 1.09}}


def test_cpu_past_the_margin_is_a_budget_warning_and_latency_is_not():
    recorded = [line(p95_ms=100.0, server_cpu_ms_per_click=20.0)]
    said = []
    over = report(against_best(line(p95_ms=300.0, server_cpu_ms_per_click=22.4), recorded), said.append)
    assert len(over) == 1 and "server_cpu_ms_per_click is 1.12x" in over[0]
    assert any(text.startswith("BUDGET: ") for text in said)
    assert report(against_best(line(p95_ms=300.0, server_cpu_ms_per_click=21.9), recorded), said.append) == []
    assert against_best(line(p95_ms=1.0), []) == {}  # nothing recorded: nothing to say


def test_the_recorded_file_reads_and_the_command_lists_its_best_lines(capsys):
    lines = read(RESULTS)
    assert any(x.get("bench") == "classroom" and x.get("sessions") == 30 for x in lines)
    assert main(["--bench", "classroom", "--sessions", "30"]) == 0
    out = capsys.readouterr().out
    assert "classroom on " in out and "best p95_ms: " in out
