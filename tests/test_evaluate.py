"""The evaluate command (python -m model.evaluate): JSON scores, plain source/reference files,
and the stress set's recipe."""
from __future__ import annotations

import pytest

import json

import pandas as pd

from model.evaluate import stress_set
from helpers.cli import run


@pytest.mark.slow
def test_evaluate_json(tiny_checkpoint, toy_split, tmp_path):
    csv = tmp_path / "bleu_by_length.csv"
    js = json.loads(run("-m", "model.evaluate", "--checkpoint", str(tiny_checkpoint), "--data",
                        str(toy_split / "test.tsv.gz"), "--json", "--length-csv", str(csv), "--bootstrap", "50").stdout)
    assert js["segments"] == 120  # the repeated English side is one segment with two references
    assert js["signature"].startswith("nrefs:var|case:mixed|eff:no|tok:13a")
    assert set(js["per_origin"]) == {"toy-a", "toy-b"}
    assert js["bleu"] > 50  # the tiny model reverses digits well
    assert sum(b["segments"] for b in js["by_length"]) == 120
    assert js["perplexity"] >= 1.0 and js["seconds"] >= 0
    trained = json.loads((tiny_checkpoint / "config.json").read_text())["training"]["steps"]
    assert js["steps"] == trained > 0  # the figure names the weights it was measured on
    table = pd.read_csv(csv)
    assert list(table.columns[:4]) == ["model", "set", "beam", "bucket"] and (table["ci_low"] <= table["bleu"]).all()


@pytest.mark.slow
def test_evaluate_src_ref_files(tiny_checkpoint, tmp_path):
    (tmp_path / "src.txt").write_text("1 2 3\n4 5 6 7\n")
    (tmp_path / "ref1.txt").write_text("3 2 1\n7 6 5 4\n")
    (tmp_path / "ref2.txt").write_text("3 2 1\n7 6 5\n")
    out = run("-m", "model.evaluate", "--checkpoint", str(tiny_checkpoint), "--src", str(tmp_path / "src.txt"),
              "--ref", str(tmp_path / "ref1.txt"), "--ref", str(tmp_path / "ref2.txt"), "--beam", "2").stdout
    assert "BLEU" in out and "signature: nrefs:2" in out


def test_stress_set_recipe():
    sources = [f"s{i}" for i in range(10)]
    refs = [[f"r{i}", f"alt{i}"] for i in range(10)]
    origins = ["a"] * 6 + ["b"] * 4
    src, ref, orig = stress_set(sources, refs, origins)
    assert all(2 <= len(s.split()) <= 5 for s in src)
    assert all(len(r) == 1 and len(r[0].split()) == len(s.split()) for s, r in zip(src, ref))
    for s, o in zip(src, orig):  # never joins across corpora
        assert {origins[int(w[1:])] for w in s.split()} == {o}
    assert stress_set(sources, refs, origins) == (src, ref, orig)  # seeded
