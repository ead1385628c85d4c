"""AppTest of Run it for a class (app_pages/classroom.py)."""
from __future__ import annotations

import json

from helpers.apptest import chart, open_page


def test_classroom_page_reads_the_measured_limits(tiny_zoo, tmp_path, monkeypatch):
    monkeypatch.setenv("ATTN_EXPLORER_RESULTS", str(tmp_path))
    at = open_page("classroom")
    assert any("No load test recorded yet" in t for t in at.info.values)
    assert any("read-only for visitors" in t for t in at.markdown.values)
    rows = [{"bench": "classroom", "sessions": n, "think_s": 2.5, "interactions": 10 * n, "p50_ms": p50, "p95_ms": p95,
             "max_ms": mx, "errors": err, "mismatches": 0, "rss_mb": 700.0, "commit": "abc", "host": "test host"}
            for n, p50, p95, mx, err in [(1, 40, 60, 90, 0), (30, 300, 900, 1500, 0), (60, 900, 2500, 4000, 0)]]
    (tmp_path / "benchmarks.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n"
                                                + json.dumps({"bench": "translate_speed"}) + "\n")
    at.run()
    assert not at.exception
    assert any("Measured: 30 students at once** on one process, 2.5 s of thinking" in t and "0.90 s" in t
               for t in at.markdown.values)
    assert any("read-only, as a visitor" in t for t in at.markdown.values)  # no switch makes a visitor the owner
    curve = chart(at, "classroom_curve")
    assert [t["y"] for t in curve["data"] if t["name"] == "95th percentile"][0] == [60, 900, 2500]
    assert any("/compare?text=" in c.value for c in at.code)
    assert any("scripts/serve.py --replicas 2" in c.value for c in at.code)  # the lecture command

    # a lecture's runs: one p95 line per setup; a fault test (a replica killed on purpose) is no class size
    lecture = [dict(rows[0], replicas=2, sessions=n, p95_ms=p95) for n, p95 in [(60, 800), (120, 1400)]]
    fault = dict(rows[0], replicas=2, sessions=30, errors=15, killed_replica={"name": "r1", "at_s": 10})
    with open(tmp_path / "benchmarks.jsonl", "a") as f:
        f.write("".join(json.dumps(r) + "\n" for r in lecture + [fault]))
    at.run()
    assert not at.exception
    assert any("Measured: 60 students at once** on 2 processes behind HAProxy" in t for t in at.markdown.values)
    lines = {t["name"]: list(t["y"]) for t in chart(at, "classroom_curve")["data"]}
    assert lines["95th percentile, 1 process"] == [60, 900, 2500]
    assert lines["95th percentile, 2 replicas behind HAProxy"] == [800, 1400]
    assert len(at.dataframe[0].value) == 5  # three one-process sizes, two lecture sizes; not the fault test
