"""The translate command (python -m model.translate) on tiny checkpoints: text and JSON out,
local-p's positions, and bad input or a corrupt checkpoint never a traceback."""
from __future__ import annotations

import json
import shutil

import pytest

from helpers.cli import run


@pytest.mark.slow
def test_translate_text_and_json(tiny_checkpoint):
    out = run("-m", "model.translate", "--checkpoint", str(tiny_checkpoint), "1 2 3 4").stdout
    assert "attends to" in out and "</s>" in out
    js = json.loads(run("-m", "model.translate", "--checkpoint", str(tiny_checkpoint), "--json", "--beam", "3",
                        "1 2 3 4").stdout)
    assert set(js) >= {"translation", "source_tokens", "target_tokens", "attention"}
    assert len(js["attention"]) == len(js["target_tokens"])
    assert all(len(row) == len(js["source_tokens"]) for row in js["attention"])
    assert js["translation"].split() == ["4", "3", "2", "1"]  # the tiny model learned to reverse
    assert js["positions"] is None  # local-p only


@pytest.mark.slow
def test_translate_json_gives_local_p_positions_and_evaluate_scores_them(tiny_zoo, toy_split, tmp_path):
    js = json.loads(run("-m", "model.translate", "--checkpoint", str(tiny_zoo / "luong-local"), "--json",
                        "1 2 3 4 5 6").stdout)
    assert len(js["positions"]) == len(js["target_tokens"])
    assert all(0 <= p <= len(js["source_tokens"]) - 1 for p in js["positions"])
    folder = tmp_path / "luong-local"
    shutil.copytree(tiny_zoo / "luong-local", folder)
    out = json.loads(run("-m", "model.evaluate", "--checkpoint", str(folder), "--data", str(toy_split / "test.tsv.gz"),
                         "--positions", "--min-pieces", "3", "--write-metrics", "--json").stdout)
    assert out["sentences"] > 0 and all(-1 <= out[k] <= 1 for k in ("spearman_align", "chance_align", "spearman_weights"))
    assert 0 <= out["window_share"]["min"] <= out["window_share"]["mean"] <= 1
    assert json.loads((folder / "metrics.json").read_text())["position_tracking"] == out
    proc = run("-m", "model.evaluate", "--checkpoint", str(tiny_zoo / "rnnsearch"), "--data",
               str(toy_split / "test.tsv.gz"), "--positions", check=False)
    assert proc.returncode != 0 and "local-p" in proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize("text,expect", [
    ("", "empty"),
    ("1 2 " * 2500, "too long"),
    ("1 😀 2", None),
    ("<b>1</b> <script>x</script>", None),
    ("1\x00\x1b[31m2", "Control characters"),
], ids=["empty", "5000-characters", "emoji", "markup", "control-characters"])  # short names in pytest's report
def test_translate_bad_input_never_crashes(tiny_checkpoint, text, expect):
    proc = run("-m", "model.translate", "--checkpoint", str(tiny_checkpoint), "--json", input=text + "\n", check=False)
    assert "Traceback" not in proc.stderr
    if expect == "empty":
        assert proc.returncode == 1 and "empty" in proc.stderr
    else:
        assert proc.returncode == 0
        json.loads(proc.stdout)
        if expect:
            assert expect in proc.stderr


@pytest.mark.slow
def test_translate_reports_a_corrupt_checkpoint(tiny_zoo):
    proc = run("-m", "model.translate", "--checkpoint", str(tiny_zoo / "broken"), "1 2", check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "model.safetensors" in proc.stderr and "corrupt or truncated" in proc.stderr
