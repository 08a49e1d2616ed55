"""The plain loops of benchmarks/loops (issue 11): every one runs in its framework's environment and
reports a rate; the ratio table pairs each notebook with its loop on the same machine, threads and
profile only, from the newest sitting."""
import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from common import probe
from runner.frameworks import RUNNABLE
from runner import environments, plain_loops

import worker_cores

ROOT = Path(__file__).resolve().parent.parent


def loop_tasks(script):
    """The tasks a loop script passes to clock.start((...))."""
    tree = ast.parse((plain_loops.LOOPS_DIR / script).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "start":
            return set(ast.literal_eval(node.args[0]))
    raise AssertionError(f"{script} never calls clock.start")


def test_every_framework_and_task_has_a_plain_loop_or_a_reason():
    for name, framework in RUNNABLE.items():
        loop_name = plain_loops.SAME_LOOP_AS.get(name, name)
        assert loop_name in plain_loops.LOOPS, name
        script = plain_loops.LOOPS[loop_name][0]
        for task in framework.tasks:
            assert task in loop_tasks(script) or task in plain_loops.NO_LOOP_TASKS, (name, task)


LOOP_TASKS = {}
for _framework, _task in plain_loops.planned():
    LOOP_TASKS.setdefault(_framework, []).append(_task)


@pytest.mark.parametrize("framework", LOOP_TASKS)
def test_every_plain_loop_of_a_framework_runs_and_reports_a_rate(framework):
    """All of a framework's loops, one after another in one process (its import paid once)."""
    python = environments.environment_python(environments.build(RUNNABLE[framework].environment))
    command, env = plain_loops.loop_command(framework, LOOP_TASKS[framework], python, "smoke",
                                            threads=worker_cores.THREADS, steps=2)
    # On this worker's own cores, as its smoke runs (tests/worker_cores.py).
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=900, env=env,
                            preexec_fn=worker_cores.pin())
    assert result.returncode == 0, result.stderr[-3000:]
    reports = [json.loads(line) for line in result.stdout.splitlines() if line.startswith('{"task"')]
    assert [report["task"] for report in reports] == LOOP_TASKS[framework]
    for report in reports:
        assert report["steps"] == 2 and report["threads"] == worker_cores.THREADS and report["profile"] == "smoke"
        assert report["items_per_second"] > 0


def test_pytorch_s_inference_loop_runs_in_bf16_and_other_loops_refuse_the_flag():
    """The yardstick of a bf16 notebook (issue 25): PyTorch's ResNet-50 loop under autocast."""
    python = environments.environment_python(environments.build(RUNNABLE["pytorch"].environment))
    script = str(plain_loops.LOOPS_DIR / "pytorch.py")
    ran = subprocess.run([str(python), script, "Inference", "--profile", "smoke", "--steps", "1", "--bf16",
                          "--threads", "1"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert ran.returncode == 0, ran.stderr[-3000:]
    report = json.loads(ran.stdout.strip().splitlines()[-1])
    assert report["variant"] == "bf16" and report["items_per_second"] > 0
    refused = subprocess.run([str(python), script, "CNN", "--profile", "smoke", "--steps", "1", "--bf16"],
                             cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert refused.returncode == 2 and "this framework's CNN loop has no bf16 form" in refused.stderr


def test_the_command_records_each_loop_run_and_refuses_an_unknown_framework(tmp_path):
    command = [sys.executable, str(ROOT / "benchmarks" / "plain_loops.py"), "--results", str(tmp_path)]
    refused = subprocess.run(command + ["--frameworks", "caffe"], capture_output=True, text=True, cwd=ROOT)
    assert refused.returncode == 2 and "unknown framework caffe" in refused.stderr
    finished = subprocess.run(command + ["--frameworks", "pytorch", "--tasks", "FCN5", "--profile", "smoke"],
                              capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert finished.returncode == 0, finished.stderr
    [entry] = plain_loops.read(tmp_path)
    assert (entry["framework"], entry["task"], entry["status"], entry["profile"]) == ("pytorch", "FCN5", "ok", "smoke")
    assert entry["items_per_second"] > 0 and entry["hardware"]["threads_pinned"] == probe.cpu_cores()
    assert "pytorch FCN5" in finished.stdout


HARDWARE = {"cpu_model": "Test CPU", "cpu_family": 1, "cpu_model_number": 2, "cpu_flags": ["avx2"],
            "cpu_cores": 2, "threads_pinned": 2, "gpu_count": 0}


def notebook_record(framework, task, rate, started_at, variant="default", threads=2):
    metrics = {"images_per_second": rate, "sequences_per_second": rate, "test_accuracy": 0.9,
               "epoch_losses": [1.0, 0.5], "cpus_busy": 1.0, "seconds_per_step": 64 / rate if rate else None}
    return {"framework": framework, "task": task, "variant": variant, "profile": "quick", "data": "synthetic",
            "data_source": "synthetic", "status": "ok", "hardware": dict(HARDWARE, threads_pinned=threads),
            "params": {"batch_size": 64}, "metrics": metrics, "checks": {}, "started_at": started_at,
            "run_id": started_at}


def loop_entry(framework, task, rate, sitting, threads=2, status="ok", profile="quick"):
    return {"framework": framework, "task": task, "profile": profile, "sitting": sitting, "status": status,
            "hardware": dict(HARDWARE, threads_pinned=threads), "items_per_second": rate}


def test_ratio_rows_pair_a_notebook_with_its_newest_loop_on_the_same_machine_threads_and_profile():
    records = [notebook_record("pytorch", "FCN5", 900.0, "2026-01-01T00:00:00", threads=2),
               notebook_record("pytorch", "FCN5", 500.0, "2026-01-01T00:00:00", threads=1),
               notebook_record("keras_r", "RNN", 300.0, "2026-01-01T00:00:00"),
               notebook_record("pytorch", "RNN", 800.0, "2026-01-01T00:00:00", variant="compiled")]
    entries = [loop_entry("pytorch", "FCN5", 9999.0, "20250101T000000"),  # an older sitting: ignored
               loop_entry("pytorch", "FCN5", 1000.0, "20260101T000000"),
               loop_entry("pytorch", "FCN5", 1200.0, "20260101T000000"),
               loop_entry("pytorch", "FCN5", 1.0, "20270101T000000", status="failed"),
               loop_entry("pytorch", "FCN5", 1.0, "20270101T000000", profile="smoke"),
               loop_entry("keras_tf", "RNN", 400.0, "20260101T000000"),
               loop_entry("pytorch", "RNN", 1000.0, "20260101T000000")]
    rows = {(row["framework"], row["task"], row["threads"]): row
            for row in plain_loops.ratio_rows(records, entries)}
    # No 1-thread loop ran; the compiled variant has no default-variant row; R's Keras meets Keras-TF's loop.
    assert set(rows) == {("pytorch", "FCN5", 2), ("keras_r", "RNN", 2)}
    # FCN5's figure is the median mini-batch (64 / 900 s here), as a rate; the loop's the median of its sitting.
    assert rows["pytorch", "FCN5", 2]["ratio"] == pytest.approx(900.0 / 1100.0)
    assert rows["keras_r", "RNN", 2]["ratio"] == pytest.approx(0.75)
    table = plain_loops.markdown(records, entries)
    # These test records carry none of their task's checks: the table says the runs are invalid.
    assert "| FCN5 | PyTorch | 2 | 900 img/s (invalid run) | 1100 img/s | 0.82 ⚠ |" in table
    assert "| RNN | R + Python Keras 3 (TF, via reticulate) | 2 | 300 seq/s (invalid run) | 400 seq/s | 0.75 ⚠ |" in table
