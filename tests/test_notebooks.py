"""Every registered notebook, executed through run_all.py in the smoke profile on synthetic data
(building its framework's environment in the cache the first time), judged by the record it
leaves: it ran, it learned, it is the same model as the numpy reference and as PyTorch's."""
import os
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from common import numpy_resnet, params, probe, records, reference, timing
from common.frameworks import precision
from runner.frameworks import DEFAULT_VARIANT, RUNNABLE, variants
from common.params import quality_target
from runner import report, verdict

import worker_cores

ROOT = Path(__file__).resolve().parent.parent
RUNS = [(framework.name, task, variant) for framework in RUNNABLE.values()
        for task in framework.tasks for variant in variants(framework, task)]
UNITS = {"CNN": "images", "RNN": "sequences", "FCN5": "images"}
# MultiGPU's whole device sweep (1 and all devices, RAM and disk) runs for PyTorch, whose launch path
# is two gloo processes; the other frameworks' smoke runs take all devices from disk only (each
# setting compiles DenseNet-121 afresh, minutes in JAX and TensorFlow).
FULL_DEVICE_SWEEP = ("pytorch",)
# FCN5's thread sweep (a run per count, each pinned) runs for the engines with thread pools of their
# own; Keras 3 runs on three of them, and Chainer and Lasagne on numpy's BLAS: they run on every core only.
FULL_THREAD_SWEEP = ("pytorch", "tensorflow", "jax_flax", "gluon", "paddle")
# The MultiGPU smoke runs of the JAX stack are XLA compiling DenseNet-121 four times over (training,
# prediction, the float64 steps on one and on all devices) at 32×32 pixels: minutes of LLVM. The
# tests check what that code computes, so XLA compiles it without LLVM's optimisations (a third less
# time: 171 s against 252 s for JAX + Flax, alone); the table runs time the optimised code, and hold
# it to the same checks.
UNOPTIMISED_XLA = {"XLA_FLAGS": "--xla_backend_optimization_level=0"}
XLA_MULTIGPU = ("jax_flax", "keras_jax")


# Each worker's smoke runs keep to its own cores (tests/worker_cores.py), one thread per physical core
# among them; FCN5's thread sweep runs on every core.
SMOKE_CORES = worker_cores.CORES
SMOKE_THREADS = worker_cores.THREADS


def run(folder, framework, tasks, data, *extra, cores=None, env=None):
    """run_all.py on `cores` (default: every core this process may use), `env` added to the
    environment; its records."""
    results = folder / "results"
    readme = folder / "README.md"
    readme.write_text(f"{report.BEGIN_MARKER}\n{report.END_MARKER}\n")
    result = subprocess.run(
        [sys.executable, str(ROOT / "run_all.py"), "--frameworks", framework, "--tasks", ",".join(tasks),
         "--profile", "smoke", "--data", data, "--timeout", "900", "--results-dir", str(results),
         "--readme", str(readme), *extra],
        capture_output=True, text=True, cwd=ROOT, timeout=3600,
        preexec_fn=worker_cores.pin(cores),
        # The records still name the whole machine (as after runner pinning: common.probe.cpu_cores).
        env=dict(os.environ, ROSETTA_RUNNER="1", **{probe.MACHINE_CORES_VARIABLE: str(probe.cpu_cores())}, **(env or {})))
    print(result.stdout[-3000:], result.stderr[-3000:])
    return result, records.read_records(results / "records.jsonl")


def by_task(written):
    """{(task, variant): the last record of it} (a thread sweep's last thread count)."""
    return {(record["task"], record["variant"]): record for record in written}


@pytest.fixture(scope="session")
def smoke_record(tmp_path_factory):
    """The smoke record of (framework, task, variant); each framework's notebooks and their
    variants run once, together."""
    runs = {}

    def get(framework, task, variant=DEFAULT_VARIANT, every_thread_count=False):
        if framework not in runs:
            folder = tmp_path_factory.mktemp(framework)
            tasks = RUNNABLE[framework].tasks
            sweep = () if framework in FULL_DEVICE_SWEEP else ("--devices", "all", "--pipelines", "disk")
            # bf16 variants run on every machine, emulated where bf16 is not native; every variant's run
            # is the short one (params.SHORT_RUN), for its checks.
            runs[framework] = []
            if framework in FULL_THREAD_SWEEP and "FCN5" in tasks:
                # The thread sweep needs every core; its runs are short.
                runs[framework] += run(tmp_path_factory.mktemp(f"{framework}-fcn5"), framework, ["FCN5"],
                                       "synthetic", "--emulate-bf16")[1]
                tasks = [task for task in tasks if task != "FCN5"]
            if framework in XLA_MULTIGPU:
                runs[framework] += run(tmp_path_factory.mktemp(f"{framework}-multigpu"), framework, ["MultiGPU"],
                                       "synthetic", *sweep, "--threads", str(SMOKE_THREADS), cores=SMOKE_CORES,
                                       env=UNOPTIMISED_XLA)[1]
                tasks = [task for task in tasks if task != "MultiGPU"]
            runs[framework] += run(folder, framework, tasks, "synthetic", "--emulate-bf16", *sweep,
                                   "--threads", str(SMOKE_THREADS), cores=SMOKE_CORES)[1]
        if every_thread_count:
            return [r for r in runs[framework] if (r["task"], r["variant"]) == (task, variant)]
        record = by_task(runs[framework]).get((task, variant))
        assert record is not None, f"{framework} {task} ({variant}) left no record"
        return record

    return get


@pytest.mark.parametrize("framework, task, variant", RUNS)
def test_notebook_runs_and_records_everything(smoke_record, framework, task, variant):
    record = smoke_record(framework, task, variant)
    assert record["status"] == "ok", record.get("reason")
    assert not records.missing_fields(record)
    assert (record["framework"], record["task"], record["variant"], record["profile"], record["data"]) == (
        framework, task, variant, "smoke", "synthetic")
    assert record["hardware"]["cpu_cores"] >= 1 and record["hardware"]["threads"]
    assert len(record["versions"]) > 3
    assert (ROOT / record["notebook"]).exists()
    # fp32 measured inside the run (precision_probes): its product, its convolution where it convolves,
    # PyTorch's GRU where cuDNN's switch would apply; each within the bound (the validity below).
    probed = {name for name in record["checks"] if name.startswith("precision_") and name.endswith("_relative_error")}
    assert set(verdict.PRECISION_CHECKS[task]) <= probed
    assert ("precision_recurrent_relative_error" in probed) == (framework == "pytorch" and task == "RNN")
    if precision(variant) == "fp32":
        assert "bf16_native" not in record["hardware"]
        assert report.validity(record) == (True, "")
    else:
        # Shown where the hardware computes bf16; elsewhere its checks pass and its speed is hidden.
        native, _ = probe.bf16_native("cpu")
        assert record["hardware"]["bf16_native"] is native
        assert report.validity(record) == ((True, "") if native else (False, verdict.EMULATED))


@pytest.mark.parametrize("framework, variant", [(f, v) for f, t, v in RUNS if t == "GPT"])
def test_gpt_learns_below_its_loss_target_generates_and_matches_the_numpy_gpt(smoke_record, framework, variant):
    """nanoGPT's model from the shared start: the validation loss meets its smoke target (below the
    uniform ln 96), the greedy sample continues the prompt, and its AdamW steps with clipping, one on
    each parity batch, match the float64 numpy GPT."""
    record = smoke_record(framework, "GPT", variant)
    metrics, checks, run_params = record["metrics"], record["checks"], record["params"]
    assert checks["quality_target"] == quality_target("GPT", "smoke", record["data_source"]) < np.log(96)
    assert metrics["validation_loss"] <= checks["quality_target"] and checks["quality_met"] is True
    assert metrics["sample"].startswith(run_params["prompt"]) and len(metrics["sample"]) == len(run_params["prompt"]) + run_params["generate_tokens"]
    assert metrics["tokens_per_second"] > 0 and metrics["generation_tokens_per_second"] > 0
    assert metrics["steps"] == run_params["train_steps"]
    # Its yardsticks, on the same validation text (common.ngrams): each longer context predicts better.
    baselines = metrics["baseline_losses"]
    assert set(baselines) == {"unigram", "bigram", "trigram"} and baselines["unigram"] > baselines["bigram"] > baselines["trigram"] > 0
    assert checks["train_parity_max_abs_error"] <= checks["train_parity_tolerance"] == reference.TRAIN_PARITY_TOLERANCE["GPT"]
    assert checks["train_parity_steps"] == len(reference.parity_batches("GPT")) >= 10


@pytest.mark.parametrize("framework, task, variant", [run for run in RUNS if run[1] in UNITS])
def test_training_learns_to_its_target_and_matches_the_numpy_reference(smoke_record, framework, task, variant):
    """From the shared start, in the shared order: the loss falls, the accuracy meets the task's
    smoke target (which a linear classifier on the same images misses, tests/test_synthetic.py),
    PARITY_STEPS training steps match float64 numpy, and the timer kept its windows."""
    record = smoke_record(framework, task, variant)
    losses = [float(loss) for loss in record["metrics"]["epoch_losses"]]
    checks = record["checks"]
    if task in reference.TRAJECTORY_TASKS:
        # FCN5 (one epoch, at chance accuracy at DLBench's settings): the whole run's loss against
        # float32 numpy's, instead of an accuracy target.
        tolerance = reference.TRAIN_TRAJECTORY_TOLERANCE if precision(variant) == "fp32" else reference.BF16_TRAIN_TRAJECTORY_TOLERANCE
        assert "quality_target" not in checks
        assert checks["train_trajectory_max_abs_error"] <= checks["train_trajectory_tolerance"] == tolerance
        assert losses == pytest.approx(checks["reference_epoch_losses"], abs=tolerance)
    elif variant != DEFAULT_VARIANT:
        # A variant's smoke run is short (params.SHORT_RUN), bf16 native or not: its accuracy is not
        # judged (the default variant's is, below; a variant's in the quick runs).
        assert record["params"]["accuracy_run"] is False and "quality_target" not in checks
        assert record["params"]["n_train"] == params.SHORT_RUN[task]["n_train"] and all(np.isfinite(losses))
    else:
        assert all(np.isfinite(losses)) and losses[-1] < losses[0]
        assert checks["quality_target"] == quality_target(task, "smoke", record["data_source"])
        assert record["metrics"]["test_accuracy"] >= checks["quality_target"] and checks["quality_met"] is True
    assert checks["train_parity_steps"] == reference.PARITY_STEPS
    assert checks["train_parity_tolerance"] == reference.TRAIN_PARITY_TOLERANCE[task]
    assert checks["train_parity_max_abs_error"] <= reference.TRAIN_PARITY_TOLERANCE[task]
    if precision(variant) == "fp32":
        assert "bf16_train_parity_max_abs_error" not in checks
    else:
        # The same model's fp32 steps above; its bf16 steps here, inside bf16's bound but not exact.
        assert checks["bf16_train_parity_tolerance"] == reference.BF16_TRAIN_PARITY_TOLERANCE[task]
        assert checks["train_parity_max_abs_error"] < checks["bf16_train_parity_max_abs_error"] <= checks["bf16_train_parity_tolerance"]
    assert record["metrics"][f"{UNITS[task]}_per_second"] > 0
    assert len(record["metrics"][f"{UNITS[task]}_per_second_windows"]) >= timing.WINDOWS
    assert record["metrics"]["warmup_seconds"] > 0


@pytest.mark.parametrize("framework, task, variant", RUNS)
def test_threads_are_pinned_and_read_back(smoke_record, framework, task, variant):
    record = smoke_record(framework, task, variant)
    hardware = record["hardware"]
    # What the runner was told (SMOKE_THREADS), or the last count of FCN5's thread sweep: the runner's
    # default, the physical cores.
    told = probe.physical_cores() if (task == "FCN5" and framework in FULL_THREAD_SWEEP) else SMOKE_THREADS
    assert hardware["threads_pinned"] == told
    assert hardware["cpu_cores"] == probe.cpu_cores()  # the machine's, pinned or not
    # MultiGPU on N CPU devices may give each device its share of the threads (at least one each).
    devices = record["metrics"].get("devices", 1)
    assert hardware["threads"] in {told, max(1, told // devices) * devices}
    shares = {hardware["threads_pinned"], hardware["threads_pinned"] // devices}
    assert int(hardware["thread_settings"]["OMP_NUM_THREADS"]) in shares


@pytest.mark.parametrize("framework", [framework for framework, task, variant in RUNS
                                       if task == "FCN5" and variant == DEFAULT_VARIANT and framework in FULL_THREAD_SWEEP])
def test_fcn5_runs_once_per_thread_count_and_times_every_mini_batch(smoke_record, framework):
    """The runner's thread sweep: one run per count in probe.thread_sweep(), each pinned and read
    back at that count, each keeping its own executed notebook; the timer keeps one window per
    steady mini-batch (training and forward only) and reports their median."""
    written = smoke_record(framework, "FCN5", every_thread_count=True)
    assert sorted(r["hardware"]["threads_pinned"] for r in written) == probe.thread_sweep()
    assert len({r["notebook"] for r in written}) == len(written)
    smoke = params.get_params("FCN5", "smoke")
    for record in written:
        assert record["status"] == "ok", record.get("reason")
        assert record["hardware"]["threads"] == record["hardware"]["threads_pinned"]
        metrics = record["metrics"]
        steady = metrics["seconds_per_step_windows"]
        assert len(steady) == metrics["steps"] - metrics["warmup_steps"] == (
            smoke["epochs"] * (smoke["n_train"] // smoke["batch_size"]) - smoke["warmup_steps"])
        assert metrics["seconds_per_step"] == pytest.approx(statistics.median(steady))
        assert len(metrics["forward_seconds_per_step_windows"]) == smoke["forward_batches"]
        assert 0 < metrics["forward_seconds_per_step"] < 5 * metrics["seconds_per_step"]
        # The pinning held: no more cores kept busy than threads pinned (XLA included).
        assert metrics["cpus_busy"] <= verdict.CPU_SLACK * record["hardware"]["threads_pinned"] + 0.15
        assert record["hardware"]["thread_settings"]["cpu_affinity"] == min(record["hardware"]["threads_pinned"], probe.cpu_cores())
        assert record["hardware"]["cpu_cores"] == probe.cpu_cores()


@pytest.mark.parametrize("framework", [framework for framework, task, _ in RUNS if task == "MultiGPU"])
def test_multigpu_trains_one_model_on_one_and_all_devices_from_ram_and_disk(smoke_record, framework):
    """The runner's device sweep: 1 and all devices (params' cpu_devices here: PyTorch's are two
    gloo processes), images from RAM and from PNG files. Every run on all devices proves that they
    train the same model as one device, every copy of its timed loop made the same update, and the two
    pipelines feed the same pixels: one device's epoch loss is the same from RAM as from disk."""
    written = smoke_record(framework, "MultiGPU", every_thread_count=True)
    sweep = list(params.DEVICE_SWEEP) if framework in FULL_DEVICE_SWEEP else [(0, "disk")]
    assert [(r["settings"]["devices"], r["settings"]["pipeline"]) for r in written] == sweep
    assert len({r["notebook"] for r in written}) == len(written)
    smoke = params.get_params("MultiGPU", "smoke")
    losses = {}
    for record in written:
        assert record["status"] == "ok", record.get("reason")
        settings, metrics, checks = record["settings"], record["metrics"], record["checks"]
        devices = 1 if settings["devices"] == 1 else smoke["cpu_devices"]
        assert (metrics["devices"], record["params"]["pipeline"]) == (devices, settings["pipeline"])
        if devices > 1:
            assert checks["data_parallel_devices"] == smoke["cpu_devices"]
            # The margin the bound was chosen for (the README's margins table): a correct engine sits far below it.
            assert checks["data_parallel_update_relative_error"] <= checks["data_parallel_update_tolerance"] / 100
            assert checks["data_parallel_loss_fell"] is True
            assert len(checks["data_parallel_losses"]) == smoke["equivalence_steps"]
            # The timed loop's own evidence: a copy per device, all with the first one's update, and
            # where the engine is the batch's sharding, a slice of every timed batch per device.
            assert checks["data_parallel_replicas"] == checks["data_parallel_replica_devices"] == devices
            assert checks["data_parallel_replica_relative_error"] <= checks["data_parallel_replica_tolerance"] / 100
            assert checks.get("data_parallel_batch_shards", devices) == devices
            assert ("data_parallel_batch_shards" in checks) == (framework in XLA_MULTIGPU)
        else:  # no engine to check: the baseline's own steps on the check's batch lowered the loss
            assert sorted(name for name in checks if not name.startswith("precision_")) == [
                    "data_parallel_devices", "data_parallel_loss_fell", "data_parallel_losses"]
            assert checks["data_parallel_devices"] == 1 and checks["data_parallel_loss_fell"] is True
            assert len(checks["data_parallel_losses"]) == smoke["equivalence_steps"]
        assert metrics["steps"] == smoke["epochs"] * (smoke["n_train"] // (devices * smoke["batch_size"]))
        assert metrics["images_per_second"] > 0 and np.isfinite(metrics["epoch_losses"]).all()
        assert 0 <= metrics["mean_auc"] <= 1
        losses[(metrics["devices"], settings["pipeline"])] = metrics["epoch_losses"]
    if framework in FULL_DEVICE_SWEEP:
        assert losses[(1, "ram")] == pytest.approx(losses[(1, "disk")], abs=1e-5)


@pytest.mark.parametrize("framework, variant", [(f, v) for f, t, v in RUNS if t == "RNN"])
def test_gru_records_whether_it_used_a_fused_kernel(smoke_record, framework, variant):
    assert isinstance(smoke_record(framework, "RNN", variant)["checks"]["fused_gru"], bool)


@pytest.mark.parametrize("framework, variant", [(f, v) for f, t, v in RUNS if t == "Inference"])
def test_inference_features_match_the_numpy_reference(smoke_record, framework, variant):
    """Every variant's features of the two parity images match the float64 numpy ResNet-50 within
    its precision's bound (random weights with non-zero biases and statistics in the smoke run, so
    a wrong mapping shows); the known photos need real weights."""
    record = smoke_record(framework, "Inference", variant)
    checks, metrics = record["checks"], record["metrics"]
    assert checks["features_finite"] is True
    assert checks["feature_tolerance"] == numpy_resnet.FEATURE_TOLERANCE
    assert checks["feature_max_abs_error"] <= checks["feature_tolerance"]
    if variant == "bf16":
        # Its model in fp32 above, its bf16 features here.
        assert 0 < checks["bf16_feature_relative_error"] <= checks["bf16_feature_tolerance"] == numpy_resnet.BF16_FEATURE_TOLERANCE
    assert checks["known_photos_correct"] is None and checks["known_photos_skipped"]
    assert metrics["seconds_per_1000_images"] == pytest.approx(1000 / metrics["images_per_second"])


def test_pytorch_inference_with_real_weights_when_they_can_be_had(tmp_path):
    """With `--data auto` the ImageNet weights and the 20 photos come from the package registries
    (or the cache); every photo's class must then be in its top 5 (19 of 20 are top-1 with
    PyTorch fp32). Where either cannot be had, the run falls back and says so."""
    _, written = run(tmp_path, "pytorch", ["Inference"], "auto", "--variants", "default")
    record = by_task(written)[("Inference", DEFAULT_VARIANT)]
    assert record["status"] == "ok", record.get("reason")
    checks = record["checks"]
    assert checks["feature_max_abs_error"] <= checks["feature_tolerance"]
    if record["data"] == "real":
        assert checks["known_photos_correct"] is True
        assert checks["known_photos"] == checks["known_photos_top5"] == 20
        assert checks["known_photos_top1"] >= 18
    else:
        text = (ROOT / record["notebook"]).read_text()
        assert "RANDOM weights" in text or "SYNTHETIC images" in text
        assert checks["known_photos_correct"] is None and checks["known_photos_skipped"]
