"""GPU hosts, checked on a machine without a GPU: the accelerator is chosen from what nvidia-smi
lists (a fake one on PATH stands in for a GPU host), each accelerator has its own environment
build and kernel, a CUDA run never quietly times the CPU, and every GPU requirement file resolves
for this Python on Linux x86_64 (package metadata only, nothing downloaded)."""
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

import notebook_fixtures
from test_runner import tables
from common import paths, probe, records
from runner import environments, report
from runner.frameworks import RUNNABLE

ROOT = Path(__file__).resolve().parent.parent
RUN_ALL = str(ROOT / "run_all.py")
GPU_NAME, DRIVER = "NVIDIA H200", "570.86.15"


def fake_nvidia_smi(folder, gpus, compute_capability="9.0"):
    """An nvidia-smi that lists `gpus` GPUs of `compute_capability`, or, with none, fails as it
    does on a host whose driver is missing. Returns a PATH that finds it first."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "nvidia-smi"
    if gpus:
        names = "\n".join(f"echo '{GPU_NAME}, {DRIVER}'" for _ in range(gpus))
        capabilities = "\n".join(f"echo '{compute_capability}'" for _ in range(gpus))
        script.write_text(f'#!/bin/sh\ncase "$*" in\n*compute_cap*)\n{capabilities}\n;;\n*)\n{names}\n;;\nesac\n')
    else:
        script.write_text("#!/bin/sh\necho 'NVIDIA-SMI has failed because it could not communicate "
                          "with the NVIDIA driver.' >&2\nexit 9\n")
    script.chmod(0o755)
    return f"{folder}{os.pathsep}{os.environ['PATH']}"


def run_all(*arguments, path, timeout=300):
    return subprocess.run([sys.executable, RUN_ALL, *arguments], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, env=dict(os.environ, PATH=path))


# ----------------------------------------------------------------------------- choosing

def test_the_probe_reads_the_gpus_that_nvidia_smi_lists(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", fake_nvidia_smi(tmp_path / "two", 2))
    assert probe.nvidia_accelerator() == {"gpu_name": GPU_NAME, "gpu_count": 2, "driver": DRIVER}
    # A CPU run records no GPU, even on a host that has two.
    assert probe.hardware(None)["gpu_count"] == 0 and probe.hardware(None)["gpu_name"] is None
    # A GPU run gets the driver from nvidia-smi when its framework does not say.
    assert probe.hardware({"gpu_name": "H200", "gpu_count": 1, "cuda": "12.9"})["driver"] == DRIVER
    monkeypatch.setenv("PATH", fake_nvidia_smi(tmp_path / "none", 0))
    assert probe.nvidia_accelerator() is None


@pytest.mark.parametrize("device, gpu_found, expected", [
    ("auto", True, True), ("auto", False, False), ("cpu", True, False), ("cpu", False, False),
    ("cuda", True, True)])
def test_a_notebook_uses_the_gpu_as_its_device_parameter_says(device, gpu_found, expected):
    assert probe.use_gpu(device, gpu_found, "PyTorch") is expected


def test_bf16_counts_as_native_only_where_the_hardware_computes_it(tmp_path, monkeypatch):
    monkeypatch.setattr(probe, "cpu_flags", lambda: {"avx2", "fma", "avx512f"})
    assert probe.bf16_native("cpu") == (False, "bf16 not native on this CPU (no AVX512_BF16, AMX or Arm BF16)")
    monkeypatch.setattr(probe, "cpu_flags", lambda: {"avx2", "avx512_bf16"})
    assert probe.bf16_native("cpu") == (True, "")
    monkeypatch.setenv("PATH", fake_nvidia_smi(tmp_path / "v100", 1, "7.0"))
    assert probe.nvidia_compute_capability() == (7, 0)
    assert probe.bf16_native("cuda") == (False, "bf16 not native on this GPU (compute capability 7.0 < 8.0)")
    monkeypatch.setenv("PATH", fake_nvidia_smi(tmp_path / "h200", 1, "9.0"))
    assert probe.bf16_native("cuda") == (True, "")


def test_device_cuda_without_a_gpu_is_an_error_not_a_fallback():
    with pytest.raises(RuntimeError, match=r"device='cuda', but MXNet sees no GPU: .*CPU-only build"):
        probe.use_gpu("cuda", False, "MXNet")
    with pytest.raises(ValueError, match="unknown device 'gpu'; valid: auto, cpu, cuda"):
        probe.use_gpu("gpu", True, "MXNet")


def test_auto_lists_the_cuda_builds_on_a_gpu_host_and_the_cpu_builds_elsewhere(tmp_path):
    on_gpu = run_all("--list", path=fake_nvidia_smi(tmp_path / "gpu", 1))
    assert on_gpu.returncode == 0, on_gpu.stderr
    assert "accelerator: cuda (environments from envs/<name>.cuda.txt)" in on_gpu.stdout
    lasagne = next(line for line in on_gpu.stdout.splitlines() if line.startswith("Theano + Lasagne"))
    assert "no cuda build" in lasagne
    assert "environment 'theano': no GPU build" in on_gpu.stdout
    on_cpu = run_all("--list", path=fake_nvidia_smi(tmp_path / "cpu", 0))
    assert "accelerator: cpu (environments from envs/<name>.txt)" in on_cpu.stdout
    assert "no cuda build" not in on_cpu.stdout


def test_cuda_without_a_gpu_stops_before_anything_is_built_or_run(tmp_path):
    results = tmp_path / "results"
    result = run_all("--accelerator", "cuda", "--frameworks", "pytorch", "--results-dir", str(results),
                     path=fake_nvidia_smi(tmp_path / "bin", 0), timeout=60)
    assert result.returncode == 2
    assert "--accelerator cuda: nvidia-smi lists no GPU on this machine" in result.stderr
    assert not results.exists()


# ----------------------------------------------------------------------------- environments

def test_each_accelerator_has_its_own_build_in_the_cache(monkeypatch, tmp_path):
    monkeypatch.setenv(paths.CACHE_VARIABLE, str(tmp_path))
    cpu, cuda = environments.environment_path("torch", "cpu"), environments.environment_path("torch", "cuda")
    assert cpu != cuda and cuda.name.startswith("torch-cuda-") and not cpu.name.startswith("torch-cuda")
    assert environments.requirements_file("torch", "cuda").name == "torch.cuda.txt"
    # Chainer's CUDA build compiles Chainer against the same build pins as its CPU build.
    assert environments.build_requirements_file("chainer", "cuda").name == "chainer.pre.txt"
    with pytest.raises(RuntimeError, match="no GPU build: Theano's GPU backend"):
        environments.build("theano", accelerator="cuda")
    with pytest.raises(ValueError, match="unknown accelerator 'tpu'"):
        environments.build("torch", accelerator="tpu")


def test_every_framework_environment_has_a_cuda_build_or_says_why_not():
    for framework in RUNNABLE.values():
        name = framework.environment
        assert environments.has_build(name, "cuda") != (name in environments.NO_GPU_BUILD), name
    assert set(environments.gpu_environments()) == {
        "torch", "tensorflow", "jax", "onnxruntime", "mxnet", "chainer", "paddle"}


# The package that makes each CUDA build a GPU build, at the version its file pins.
GPU_PACKAGES = {"torch": "nvidia-cudnn-cu13", "tensorflow": "nvidia-cudnn-cu12",
                "jax": "jax-cuda12-plugin", "onnxruntime": "nvidia-cudnn-cu13",
                "mxnet": "mxnet-cu117", "chainer": "cupy-cuda12x", "paddle": "paddlepaddle-gpu"}


def test_every_gpu_requirement_file_resolves_for_this_python_on_linux_x86_64():
    resolved = environments.resolve_gpu_requirements()
    for name, packages in resolved.items():
        assert GPU_PACKAGES[name] in packages, (name, sorted(packages))
        for line in environments.requirements_file(name, "cuda").read_text().splitlines():
            line = line.split("#")[0].strip()
            if line:
                package, version = line.split("==")
                assert packages[package.split("[")[0].lower()] == version, (name, line)


def test_a_requirement_that_does_not_exist_fails_to_resolve(monkeypatch, tmp_path):
    monkeypatch.setattr(environments, "ENVS_DIR", tmp_path)
    (tmp_path / "demo.cuda.txt").write_text("numpy==0.0.404\n")
    with pytest.raises(RuntimeError, match="demo.cuda.txt does not resolve"):
        environments.resolve_requirements("demo")


# ----------------------------------------------------------------------------- the runner on a GPU host

def device_notebook(path, framework, task):
    """A made-up notebook that records the `device` the runner passed it."""
    body = (notebook_fixtures.WRITE_RECORD.replace('params={"n_classes": 2}', 'params={"device": device}')
            .replace('framework="pytorch"', f'framework={framework!r}').replace("task=TASK,", "task=TASK, variant=variant,"))
    assert "device}" in body and framework in body and "variant=variant" in body
    notebook_fixtures.write_notebook(path, f"TASK = {task!r}\nMETRICS = {{'images_per_second': 3.0}}\n"
                                           f"CHECKS = {notebook_fixtures.INFERENCE_CHECKS!r}\n{body}")
    notebook = nbformat.read(str(path), as_version=4)
    notebook.cells[0].source += 'device = "auto"\nvariant = "default"\n'
    nbformat.write(notebook, str(path))


@pytest.mark.parametrize("accelerator", ["cuda", "cpu"])
def test_a_gpu_host_runs_cuda_kernels_and_says_which_frameworks_have_no_gpu_build(tmp_path, accelerator):
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    device_notebook(notebooks / "PyTorch_Inference.ipynb", "pytorch", "Inference")
    device_notebook(notebooks / "Lasagne_CNN.ipynb", "lasagne", "CNN")
    readme = tmp_path / "README.md"
    readme.write_text(f"{report.BEGIN_MARKER}\n{report.END_MARKER}\n")
    results = tmp_path / "results"
    result = run_all("--use-current-python", "--accelerator", accelerator, "--frameworks", "pytorch,lasagne",
                     "--tasks", "CNN,Inference", "--variants", "default", "--notebooks-dir", str(notebooks),
                     "--results-dir", str(results), "--readme", str(readme),
                     *(("--repeat", "2") if accelerator == "cuda" else ()), path=fake_nvidia_smi(tmp_path / "bin", 1))
    written = records.read_records(results / "records.jsonl")
    by_framework = {r["framework"]: r for r in written}
    if accelerator == "cuda":
        # Run in both rounds; the run that cannot run here recorded as skipped once, not once per round.
        assert [r["framework"] for r in written] == ["pytorch", "lasagne", "pytorch"]
    pytorch, lasagne = by_framework["pytorch"], by_framework["lasagne"]
    assert pytorch["status"] == "ok", pytorch.get("reason")
    assert pytorch["params"]["device"] == accelerator
    assert pytorch["kernel"] == f"rosetta-current-{accelerator}"
    if accelerator == "cuda":
        assert (lasagne["status"], lasagne["kernel"], lasagne["notebook"]) == ("skipped", None, None)
        assert lasagne["reason"].startswith("no GPU build: Theano's GPU backend")
        assert lasagne["hardware"]["gpu_name"] == GPU_NAME and lasagne["hardware"]["driver"] == DRIVER
        assert "skipped: no GPU build" in tables(readme)
        # No CPU GEMMs for a GPU run: its speeds are held to no peak.
        assert "no peak measured" in result.stdout and "peak" not in pytorch["hardware"]
    else:
        assert lasagne["status"] == "ok" and lasagne["params"]["device"] == "cpu"
    # A framework without a GPU build is no failure of the run: its row says why.
    assert result.returncode == 0, result.stdout + result.stderr


# ----------------------------------------------------------------------------- the notebooks themselves

# One notebook per environment with a CUDA build, and Keras' way of asking its backend; the message
# names the framework as the tables do.
REFUSING = {"PyTorch_CNN": "pytorch", "Keras_Torch_CNN": "keras_torch", "Tensorflow_CNN": "tensorflow",
            "JAX_Flax_CNN": "jax_flax", "ONNXRuntime_Inference": "onnxruntime", "Gluon_CNN": "gluon",
            "Chainer_CNN": "chainer", "Paddle_CNN": "paddle"}


@pytest.mark.parametrize("notebook", sorted(REFUSING))
def test_a_notebook_asked_for_cuda_on_a_cpu_build_stops_with_a_clear_message(notebook, tmp_path):
    environment, framework = RUNNABLE[REFUSING[notebook]].environment, RUNNABLE[REFUSING[notebook]].title
    python = environments.environment_python(environments.build(environment))
    kernel = environments.write_kernel(f"rosetta-{environment}-cpu", python, f"Rosetta {environment}")
    record_path = tmp_path / "records.jsonl"
    result = subprocess.run(
        [sys.executable, "-m", "papermill", str(ROOT / "notebooks" / f"{notebook}.ipynb"),
         str(tmp_path / "out.ipynb"), "-k", kernel, "--cwd", str(ROOT / "notebooks"),
         "-p", "profile", "smoke", "-p", "data", "synthetic", "-p", "device", "cuda",
         "-p", "record_path", str(record_path)],
        capture_output=True, text=True, timeout=600, env=environments.papermill_environment())
    assert result.returncode != 0
    assert f"device='cuda', but {framework} sees no GPU" in result.stdout + result.stderr
    assert not record_path.exists()


def test_a_gpu_column_comes_home_with_import_records(tmp_path):
    """A GPU VM's results folder, imported into another clone's: records once each (importing
    twice adds nothing), executed notebooks beside them, and the tables regenerated."""
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    device_notebook(notebooks / "PyTorch_Inference.ipynb", "pytorch", "Inference")
    device_notebook(notebooks / "Lasagne_CNN.ipynb", "lasagne", "CNN")
    away, home = tmp_path / "gpu-vm", tmp_path / "home"
    for folder in (away, home):
        folder.mkdir()
        (folder / "README.md").write_text(f"{report.BEGIN_MARKER}\n{report.END_MARKER}\n")
    run_all("--use-current-python", "--accelerator", "cuda", "--frameworks", "pytorch,lasagne",
            "--tasks", "Inference,CNN", "--variants", "default", "--notebooks-dir", str(notebooks),
            "--results-dir", str(away / "results"), "--readme", str(away / "README.md"),
            path=fake_nvidia_smi(tmp_path / "bin", 1))
    away_records = records.read_records(away / "results" / "records.jsonl")
    assert len(away_records) == 2
    for _ in range(2):
        result = run_all("--import-records", str(away / "results"), "--results-dir", str(home / "results"),
                         "--readme", str(home / "README.md"), path=os.environ["PATH"], timeout=120)
        assert result.returncode == 0, result.stdout + result.stderr
    imported = records.read_records(home / "results" / "records.jsonl")
    assert [record_key(r) for r in imported] == [record_key(r) for r in away_records]
    ok = next(r for r in imported if r["status"] == "ok")
    assert str(home / "results" / "notebooks") in str(ROOT / ok["notebook"])
    assert (ROOT / ok["notebook"]).exists()
    assert "imported 0 record(s)" in result.stdout
    home_tables = tables(home / "README.md")
    assert "**3** img/s" in home_tables and "skipped: no GPU build" in home_tables and "NVIDIA H200" in home_tables


def record_key(record):
    return record["framework"], record["task"], record["status"], record["started_at"]


def test_import_records_refuses_a_path_without_records(tmp_path):
    result = run_all("--import-records", str(tmp_path), path=os.environ["PATH"], timeout=60)
    assert result.returncode == 2 and "--import-records: no records.jsonl at" in result.stderr


@pytest.mark.parametrize("compute_capability, bf16_runs", [("7.0", False), ("9.0", True)])
def test_a_bf16_variant_runs_only_on_a_gpu_that_computes_bf16(tmp_path, compute_capability, bf16_runs):
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    device_notebook(notebooks / "PyTorch_Inference.ipynb", "pytorch", "Inference")
    results = tmp_path / "results"
    result = run_all("--use-current-python", "--accelerator", "cuda", "--frameworks", "pytorch",
                     "--tasks", "Inference", "--notebooks-dir", str(notebooks), "--results-dir", str(results),
                     "--readme", str(tmp_path / "none.md"), path=fake_nvidia_smi(tmp_path / "bin", 1, compute_capability))
    assert result.returncode == 0, result.stdout + result.stderr
    by_variant = {r["variant"]: r for r in records.read_records(results / "records.jsonl")}
    assert by_variant.keys() == {"default", "compiled", "bf16"}
    assert by_variant["default"]["status"] == by_variant["compiled"]["status"] == "ok"
    if bf16_runs:
        assert by_variant["bf16"]["status"] == "ok"
    else:
        assert (by_variant["bf16"]["status"], by_variant["bf16"]["reason"]) == (
            "skipped", "bf16 not native on this GPU (compute capability 7.0 < 8.0); --emulate-bf16 runs it for its checks")
