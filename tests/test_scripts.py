"""The scripts in scripts/ that read results: the results and history tables, promoting a
fine-tuned model, comparing curves, the compute budget."""
from __future__ import annotations

import csv
import json
import sys

import pandas as pd
import pytest

from helpers.cli import ROOT, run


def test_results_table_reads_each_models_files(tmp_path, capsys):
    """scripts/results_table.py: the README's table, one row per zoo model from its config.json
    and metrics.json; the corpus columns come from the broad test split's origins, a missing
    model says so, and the decoding line says greedy only when every set was decoded greedily."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from results_table import main
    run_dir = tmp_path / "rnnsearch"
    run_dir.mkdir()
    (run_dir / "config.json").write_text(json.dumps({"training": {
        "data": "../shared/data/enfr-broad", "steps": 9143, "total_steps_run": 9143, "total_minutes_run": 277.0,
        "best_dev_bleu": 28.76}}))
    (run_dir / "metrics.json").write_text(json.dumps({
        "test": {"bleu": 44.06, "beam": 1, "signature": "nrefs:var|case:mixed",
                 "per_origin": {"tatoeba": {"bleu": 1.0}}},
        "broad-test": {"bleu": 30.2, "beam": 1, "per_origin": {"tatoeba": {"bleu": 43.68},
                                                                "multi30k-test_2017_flickr": {"bleu": 40.13}}},
        "newstest2014": {"bleu": 14.32, "beam": 1},
        "alignment": {"aer": 0.425, "as_given": {"aer": 0.447}}, "parameters": 6469184}))
    main(tmp_path)
    out = capsys.readouterr().out
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]] for line in out.splitlines()[2:]
            if line.startswith("|")}
    cells = rows["RNNsearch (Bahdanau, additive)"]
    assert cells[:7] == ["44.1", "30.2", "–", "40.1", "43.7", "14.3", "–"]
    assert cells[7:] == ["0.425", "0.447", "6,469,184", "`enfr-broad`", "9,143", "277 min", "28.8"]
    assert rows["Luong global, dot"][0] == "not trained yet"
    assert "\nGreedy; cased sacreBLEU, signature `nrefs:var|case:mixed`" in out
    (run_dir / "metrics.json").write_text(json.dumps({"test": {"bleu": 50.0, "beam": 5},
                                                      "newstest2014": {"bleu": 14.0, "beam": 1}}))
    main(tmp_path)
    assert "test: beam 5; newstest2014: greedy;" in capsys.readouterr().out
    from results_table import stages  # --stages: a model trained in one run is one stage
    stages(tmp_path)
    assert "| `rnnsearch` | 1, from scratch | – | – | 9,143 / – | 277 | 28.8 |" in capsys.readouterr().out.splitlines()


def test_history_table_prints_the_recorded_rounds(capsys):
    """scripts/history_table.py: every table in results/history/ is listed; one prints as
    markdown with each recorded row (the A/B rounds by commit); notes are found by a word."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from history_table import main, rows
    assert main([]) == 0
    listed = {line.split()[0] for line in capsys.readouterr().out.splitlines()}
    assert {"cpu-per-click-ab", "lecture-by-commit", "soak-by-commit", "budget-from-scratch"} <= listed
    assert main(["cpu-per-click-ab"]) == 0
    out = capsys.readouterr().out
    recorded = [r["row"] for r in rows("doc_tables.jsonl") if r["table"] == "cpu-per-click-ab"]
    assert len(recorded) == 29 and "| 1 | 60.0 ms | 45.3 ms | `c56285e` |" in out
    assert all(f"| {r['round']} |" in out for r in recorded)
    assert main(["--notes", "malloc arenas"]) == 0 and "M_ARENA_MAX" in capsys.readouterr().out
    assert main(["no-such-table"]) == 2


def test_promote_finetuned_keeps_the_weights_whole_history(tmp_path):
    """scripts/promote_finetuned.py: the fine-tuned weights replace the shipped ones only when
    their dev BLEU is higher; config.json keeps each stage and adds the counts up, train_log.csv
    continues where the shipped weights were saved, and the stale metrics.json goes."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from promote_finetuned import promote

    def folder(name, training, train, log_steps, weights):
        d = tmp_path / name
        d.mkdir()
        (d / "config.json").write_text(json.dumps({"name": "rnnsearch", "train": train, "training": training}))
        (d / "train_log.csv").write_text("epoch,steps,dev_bleu,minutes\n" + "".join(
            f"{s / 100},{s},{s / 10},{s / 10}\n" for s in log_steps))
        (d / "model.safetensors").write_bytes(weights)
        (d / "spm.model").write_bytes(b"vocab")
        return d

    shipped = folder("shipped", {"steps": 100, "total_steps_run": 120, "wall_time_minutes": 10.0,
                                 "total_minutes_run": 12.0, "target_tokens_seen": 1000, "best_dev_bleu": 20.0},
                     {"lr": 0.001}, [50, 100, 120], b"old")
    (shipped / "metrics.json").write_text("{}")
    worse = folder("worse", {"steps": 30, "wall_time_minutes": 3.0, "target_tokens_seen": 300,
                             "best_dev_bleu": 19.0}, {"lr": 0.00025}, [30], b"worse")
    with pytest.raises(SystemExit, match="not above the shipped 20.00"):
        promote(worse, shipped)
    assert (shipped / "model.safetensors").read_bytes() == b"old" and (shipped / "metrics.json").exists()

    tuned = folder("tuned", {"steps": 30, "total_steps_run": 40, "wall_time_minutes": 3.0, "total_minutes_run": 4.0,
                             "target_tokens_seen": 300, "best_dev_bleu": 22.0,
                             "initialised_from": {"checkpoint": "checkpoints/rnnsearch", "fresh": []}},
                    {"lr": 0.00025, "oversample": {"tatoeba": 3}}, [30, 40], b"new")
    merged = promote(tuned, shipped)
    t = merged["training"]
    assert (t["steps"], t["wall_time_minutes"], t["target_tokens_seen"]) == (130, 13.0, 1300)
    assert (t["total_steps_run"], t["total_minutes_run"], t["best_dev_bleu"]) == (160, 16.0, 22.0)
    assert [s["train"]["lr"] for s in t["stages"]] == [0.001, 0.00025] and "initialised_from" not in t
    assert merged["train"]["oversample"] == {"tatoeba": 3}
    assert json.loads((shipped / "config.json").read_text()) == merged
    assert (shipped / "model.safetensors").read_bytes() == b"new" and not (shipped / "metrics.json").exists()
    with (shipped / "train_log.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [int(r["steps"]) for r in rows] == [50, 100, 130, 140]  # 120 came after the shipped weights
    assert [float(r["minutes"]) for r in rows[2:]] == [13.0, 14.0]

    again = folder("again", {"steps": 10, "wall_time_minutes": 1.0, "target_tokens_seen": 100,
                             "best_dev_bleu": 23.0}, {"lr": 0.0001}, [10], b"newer")
    training = promote(again, shipped)["training"]
    assert [s["steps"] for s in training["stages"]] == [100, 30, 10]
    from results_table import history
    assert history(training) == " (12 + 4 mixed + 1)"  # the README table's CPU-minutes cell
    from results_table import minutes
    gpu = {**training["stages"][-1], "machine": "Xeon, 16 cores, torch 2.11, device cuda:0 (NVIDIA H200), 1 process(es)",
           "initialised_from": {"checkpoint": "checkpoints/rnnsearch"}, "train": {"oversample": {"tatoeba": 3}}}
    with_gpu = {**training, "stages": [*training["stages"], gpu]}
    assert minutes({"training": training}) == "17 min (12 + 4 mixed + 1)"
    assert minutes({"training": with_gpu}) == "17 CPU min (12 + 4 mixed + 1) + 1 GPU min"  # GPU minutes are not added to CPU ones
    from model.checkpoint import stage_kind
    assert [stage_kind(s) for s in with_gpu["stages"]][-1] == "mixed fine-tuning on a GPU"
    continued = folder("continued", {"steps": 20, "total_steps_run": 25, "wall_time_minutes": 2.0,
                                     "target_tokens_seen": 200, "best_dev_bleu": 24.0}, {"lr": 0.0001}, [10, 20, 25],
                       b"newest")  # the last run resumed: its record replaces its own stage
    training = promote(continued, shipped, continued=True)["training"]
    assert [s["steps"] for s in training["stages"]] == [100, 30, 20] and training["total_steps_run"] == 185
    with (shipped / "train_log.csv").open() as f:
        assert [int(r["steps"]) for r in csv.DictReader(f)] == [50, 100, 130, 140, 150, 155]
    from results_table import copies
    assert copies(training["stages"][1]["train"]["oversample"]) == "tatoeba ×3"
    assert copies({"a": 2, "b": 3, "c": 2, "d": 2}) == "b ×3; 3 corpora ×2"


def test_compare_curves_reads_the_first_stage_step_for_step(tmp_path):
    """scripts/compare_curves.py: a shipped log's later stages (steps restarting) are left out,
    and a step a run did not evaluate is a dash."""
    shipped, run_ = tmp_path / "shipped.csv", tmp_path / "run.csv"
    pd.DataFrame({"steps": [600, 1200, 300, 600], "dev_bleu": [2.0, 5.5, 9.0, 9.5]}).to_csv(shipped, index=False)
    pd.DataFrame({"steps": [600, 1800], "dev_bleu": [3.25, 9.8]}).to_csv(run_, index=False)
    out = run("scripts/compare_curves.py", f"shipped={shipped}", f"new={run_}").stdout.splitlines()
    assert out[0] == "| steps | shipped | new |"
    assert out[2:] == ["| 600 | 2.00 | 3.25 |", "| 1,200 | 5.50 | – |", "| 1,800 | – | 9.80 |"]
    bad = run("scripts/compare_curves.py", "nothing", check=False)
    assert bad.returncode != 0 and "NAME=PATH" in bad.stderr


def test_compute_budget_converts_each_stages_tokens_at_the_models_own_speed(tmp_path):
    """scripts/compute_budget.py: the tokens of every stage (CPU or GPU) add up, and one-core
    minutes are those tokens over the model's measured throughput in each precision."""
    stages = [{"target_tokens_seen": 1_200_000, "machine": "AMD EPYC, 2 cores, device cpu"},
              {"target_tokens_seen": 600_000, "machine": "Intel Xeon, device cuda:0 (NVIDIA H200)"}]
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(json.dumps({"training": {"stages": stages}}))
    (tmp_path / "m" / "metrics.json").write_text(json.dumps({"newstest2014": {"bleu": 12.345, "beam": 1}}))
    speeds = tmp_path / "speeds.csv"
    pd.DataFrame({"config": ["configs/m.yaml"] * 2, "precision": ["float32", "bfloat16"],
                  "tokens_per_second": [1000, 2000]}).to_csv(speeds, index=False)
    out = run("scripts/compute_budget.py", "m", "--checkpoints", str(tmp_path), "--speeds", str(speeds)).stdout
    assert "| `m` | 1.2M CPU + 0.6M GPU | 1.8M | 30 | 15 | 12.35 |" in out.splitlines()
    missing = run("scripts/compute_budget.py", "m", "--checkpoints", str(tmp_path),
                  "--speeds", str(ROOT / "results" / "train_speed.csv"), check=False)
    assert missing.returncode != 0 and "no training throughput" in missing.stderr
