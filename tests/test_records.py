import json
import math
import os

import numpy as np
import pytest

from common import harness, params, records


def example(**changes):
    fields = dict(framework="pytorch", task="CNN", profile="quick", data="synthetic",
                  hardware={"cpu_model": "Test CPU", "cpu_cores": 2}, versions={"torch": "9"},
                  params={"n_classes": 10}, metrics={"images_per_second": np.float32(100.5),
                                                     "epoch_losses": np.array([2.0, 1.5])},
                  checks={"parity_max_abs_error": 1e-7, "parity_tolerance": 1e-4})
    fields.update(changes)
    return records.make_record(**fields)


def test_round_trip_keeps_every_field_as_plain_json(tmp_path):
    path = tmp_path / "deep" / "records.jsonl"
    first, second = example(), example(task="RNN")
    records.append_record(first, path)
    records.append_record(second, path)
    loaded = records.read_records(path)
    assert loaded == [first, second]
    assert loaded[0]["metrics"]["images_per_second"] == pytest.approx(100.5)
    assert loaded[0]["metrics"]["epoch_losses"] == [2.0, 1.5]
    assert not records.missing_fields(loaded[0])


def test_records_are_appended_never_rewritten(tmp_path):
    path = tmp_path / "records.jsonl"
    records.append_record(example(), path)
    before = path.read_text()
    records.append_record(example(task="RNN"), path)
    assert path.read_text().startswith(before)


def test_a_torn_last_line_is_skipped(tmp_path, capsys):
    path = tmp_path / "records.jsonl"
    records.append_record(example(), path)
    with open(path, "a") as handle:
        handle.write('{"framework": "pyto')  # an interrupted write
    assert len(records.read_records(path)) == 1
    assert "unreadable" in capsys.readouterr().out


def test_non_finite_numbers_survive_as_text():
    record = example(metrics={"epoch_losses": [float("nan"), 1.0]})
    text = json.dumps(record)
    assert json.loads(text)["metrics"]["epoch_losses"][0] == "nan"
    assert math.isnan(float(json.loads(text)["metrics"]["epoch_losses"][0]))


def test_unknown_status_is_rejected():
    with pytest.raises(ValueError, match="valid"):
        example(status="great")


def test_artifact_lies_beside_the_record(tmp_path):
    path = records.artifact_path(tmp_path / "x" / "records.jsonl", "features.npy")
    assert path.parent == (tmp_path / "x").resolve()


class FakeDataSet:
    data, source = "synthetic", "synthetic stand-in (oriented stripes)"


def test_a_run_checks_its_variant_pins_threads_and_holds_accuracy_to_its_target(tmp_path, monkeypatch):
    from common import probe

    for name in probe.THREAD_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ValueError, match="valid: default, compiled"):
        harness.start("pytorch", "CNN", "smoke", "xla")
    # In the smoke profile a variant's run is the short one for its checks: no accuracy target.
    short = harness.start("pytorch", "CNN", "smoke", "compiled", threads=1)
    assert short.params["n_train"] == params.SHORT_RUN["CNN"]["n_train"] and short.params["accuracy_run"] is False
    assert short.finish(FakeDataSet(), {"test_accuracy": 0.2, "epoch_losses": [2.0, 1.0]})["checks"] == {}
    run = harness.start("pytorch", "CNN", "quick", "compiled", threads=1, record_path=tmp_path / "r.jsonl")
    assert run.params["n_train"] == params.get_params("CNN", "quick")["n_train"] and run.threads == 1
    assert all(os.environ[name] == "1" for name in probe.THREAD_VARIABLES)
    good = run.finish(FakeDataSet(), {"test_accuracy": 0.9, "epoch_losses": [2.0, 1.0]})
    low = run.finish(FakeDataSet(), {"test_accuracy": 0.2, "epoch_losses": [2.0, 1.0]}, threads=3, build="x")
    assert good["checks"] == {"quality_target": params.quality_target("CNN", "quick", "synthetic"), "quality_met": True}
    assert low["checks"]["quality_met"] is False
    assert good["hardware"]["threads_pinned"] == 1 and good["hardware"]["thread_settings"]["OMP_NUM_THREADS"] == "1"
    # threads: what the framework reports, beside what was pinned; extra versions are kept.
    assert good["hardware"]["threads"] == 1 and low["hardware"]["threads"] == 3 and low["versions"]["build"] == "x"
    assert [r["variant"] for r in records.read_records(tmp_path / "r.jsonl")] == ["compiled", "compiled"]


def test_a_run_names_its_framework_when_a_gpu_is_asked_for_and_missing():
    run = harness.start("gluon", "CNN", "smoke")
    with pytest.raises(RuntimeError, match="MXNet \\(Gluon\\) sees no GPU"):
        run.use_gpu("cuda", False)
    assert run.use_gpu("auto", False) is False and run.on_gpu is False


def test_a_run_times_every_full_batch_of_its_epochs_or_its_inference_batches():
    run = harness.start("pytorch", "CNN", "smoke")
    timer = run.timer()
    steps = run.params["epochs"] * (run.params["n_train"] // run.params["batch_size"])
    assert timer.warmup_steps == run.params["warmup_steps"]
    assert timer.window_steps == (steps - timer.warmup_steps) // 6
    assert run.timer(window_steps=1).window_steps == 1
    inference = harness.start("pytorch", "Inference", "smoke")
    assert inference.timer().warmup_steps == inference.params["warmup_batches"]


def test_versions_name_the_frameworks_the_process_has_loaded(monkeypatch):
    import sys
    import types

    from common import probe

    monkeypatch.setitem(sys.modules, "chainer", types.SimpleNamespace(__version__="7.8.1"))
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    found = probe.versions(extra="1")
    assert found["chainer"] == "7.8.1" and found["extra"] == "1" and "torch" not in found
