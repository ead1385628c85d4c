"""bench/timeline_waves.py: a class bench's timeline read back as the bench reads its run: the p95
over the ordinary sessions' timed interactions (a faulty session's, the checks and the untimed
left out), which kinds the slowest twentieth holds, and the cores busy in each bucket."""
from __future__ import annotations

import json
import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
import timeline_waves  # noqa: E402


def test_the_slowest_twentieth_is_counted_by_kind_over_the_ordinary_sessions_only(tmp_path, capsys):
    rows = [{"t": 100.0 + i, "session": i, "step": 0, "kind": "open", "ms": 10.0 + i, "faulty": False} for i in range(36)]
    rows += [{"t": 140.0 + i, "session": i, "step": 1, "kind": "exercise", "ms": 900.0 + i, "faulty": False}
             for i in range(4)]
    # the cores busy every 0.5 s, from the lesson's first start on (one before it is not the lesson's)
    rows += [{"t": 99.0, "cpu_cores": {"host": 0.1, "servers": 0.0, "bench": 0.1}}]
    rows += [{"t": 100.5 + k / 2, "cpu_cores": {"host": 2.0, "servers": 1.5, "bench": 0.4}} for k in range(40)]
    rows += [{"t": 120.5 + k / 2, "cpu_cores": {"host": 1.0, "servers": 0.6, "bench": 0.3}} for k in range(30)]
    # far slower, but a faulty session's, a check and an untimed one: none of them counts
    rows += [{"t": 150.0, "session": 99, "step": 1, "kind": "exercise", "ms": 9000.0, "faulty": True},
             {"t": 151.0, "session": 1, "step": 2, "kind": "check", "ms": 8000.0, "faulty": False},
             {"t": 152.0, "session": 2, "step": 2, "kind": "answer", "ms": None, "faulty": False}]
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert timeline_waves.main([str(path), "--bucket", "20"]) == 0
    first, *kinds = capsys.readouterr().out.splitlines()
    # 40 ordinary interactions: the nearest-rank p95 is the 38th, the second exercise; it and the two above it
    assert first == "40 interactions, p95 901 ms; the slowest twentieth by kind: exercise 3"
    assert [k.split()[0] for k in kinds] == ["open", "exercise", "cores"]
    assert "n=   4 starts  40.0- 43.0 s" in kinds[1] and "p50 by start: 40s:902" in kinds[1]
    assert kinds[2] == "cores busy (host / servers / bench): 0s:2.0/1.5/0.4 20s:1.0/0.6/0.3"
