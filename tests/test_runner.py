"""run_all.py as a user meets it: arguments, the matrix, and notebooks that fail, hang or are
interrupted. The fault tests run made-up notebooks on the current interpreter's kernel."""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

import notebook_fixtures
from common import params, records
from runner import report

ROOT = Path(__file__).resolve().parent.parent
RUN_ALL = str(ROOT / "run_all.py")


def run_all(*arguments, timeout=300, **popen):
    return subprocess.run([sys.executable, RUN_ALL, *arguments], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, **popen)


@pytest.mark.parametrize("arguments, message", [
    (["--frameworks", "pytorch,fortran"], "unknown framework 'fortran'; valid frameworks: pytorch"),
    (["--tasks", "CNN,GAN"], "unknown task 'GAN'; valid tasks: CNN, Inference, RNN, MultiGPU, FCN5"),
    (["--profile", "huge"], "invalid choice: 'huge'"),
    (["--data", "maybe"], "invalid choice: 'maybe'"),
    (["--timeout", "-5"], "must be a positive number of seconds"),
    (["--timeout", "soon"], "'soon' is not a whole number"),
    (["--frameworks", "cntk"], "CNTK cannot run here: CNTK wheels exist only for CPython"),
    (["--variants", "default,fp8"], "unknown variant 'fp8'; valid variants: default, bf16"),
])
def test_bad_arguments_are_rejected_before_any_kernel_starts(arguments, message, tmp_path):
    result = run_all(*arguments, "--results-dir", str(tmp_path), timeout=60)
    assert result.returncode == 2
    assert message in result.stderr
    assert not any(tmp_path.iterdir())  # nothing ran, nothing was written


def test_variants_named_together_run_side_by_side_in_the_plan(tmp_path):
    """--variants default,bf16: each notebook that has a bf16 variant runs it beside its fp32 run,
    in the order the notebook lists them; a notebook without one runs its default only."""
    from runner.arguments import parse_arguments
    from runner.plan import plan_runs

    arguments = parse_arguments(["--frameworks", "pytorch,chainer", "--tasks", "CNN,Inference",
                                 "--variants", "bf16,default", "--threads", "2"])
    planned, _ = plan_runs(arguments, 2, tmp_path / "records.jsonl", "here")
    assert [(run.framework.name, run.task, run.variant) for run in planned] == [
        ("pytorch", "CNN", "default"), ("pytorch", "CNN", "bf16"), ("pytorch", "Inference", "default"),
        ("pytorch", "Inference", "bf16"), ("chainer", "CNN", "default"), ("chainer", "Inference", "default")]
    assert parse_arguments([]).variants == parse_arguments(["--variants", "all"]).variants


def test_records_kept_elsewhere_never_rewrite_this_repositorys_readme(tmp_path):
    """With --results-dir elsewhere and no --readme, the tables go to a README beside those records
    (where one exists), never to this repository's, which only its own results/ regenerate."""
    from runner.arguments import parse_arguments

    assert parse_arguments([]).readme == ROOT / "README.md"
    assert parse_arguments(["--results-dir", str(ROOT / "results")]).readme == ROOT / "README.md"
    assert parse_arguments(["--results-dir", str(tmp_path / "results")]).readme == tmp_path / "results" / "README.md"
    assert parse_arguments(["--results-dir", str(tmp_path), "--readme", str(tmp_path / "R.md")]).readme == tmp_path / "R.md"


def test_two_nodes_run_only_where_the_closing_section_prints_a_command_that_runs(tmp_path, capsys):
    """--nodes 2 adds MultiGPU's runs across two nodes on this machine (every device of each, per
    pipeline) for the notebooks whose closing section prints a runnable multi-node command; the
    others say why they have none; --nodes 1,2 keeps the single machine's sweep too."""
    from runner.arguments import parse_arguments
    from runner.plan import plan_runs

    arguments = parse_arguments(["--frameworks", "pytorch,gluon", "--tasks", "MultiGPU", "--nodes", "2",
                                 "--pipelines", "ram", "--threads", "2"])
    planned, _ = plan_runs(arguments, 2, tmp_path / "records.jsonl", "here")
    assert [(run.framework.name, run.settings) for run in planned] == [
        ("pytorch", {"devices": 0, "pipeline": "ram", "nodes": 2})]
    assert "MXNet (Gluon) MultiGPU: its closing section prints no multi-node command" in capsys.readouterr().out
    both = parse_arguments(["--frameworks", "pytorch", "--tasks", "MultiGPU", "--nodes", "1,2", "--threads", "2"])
    assert len(plan_runs(both, 2, tmp_path / "records.jsonl", "here")[0]) == 4 + 2
    assert parse_arguments([]).nodes == ["1"]


def test_list_shows_the_matrix_with_the_rows_that_cannot_run():
    result = run_all("--list", timeout=60)
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    chainer = next(line for line in lines if line.startswith("Chainer"))
    assert chainer.split()[1] == "chainer" and "ready" in chainer and "no notebook" in chainer  # no MultiGPU
    assert any(line.startswith("Caffe2") and "unavailable" in line for line in lines)
    assert "Julia (Knet): cannot run here" in result.stdout


def test_help_explains_itself():
    result = run_all("--help", timeout=60)
    assert result.returncode == 0
    for option in ("--frameworks", "--tasks", "--profile", "--data", "--timeout", "--resume", "--list"):
        assert option in result.stdout


def tables(readme):
    """The README and every machine page generated beside it (docs/machines/: the task tables)."""
    pages = sorted((readme.parent / "docs" / "machines").glob("*.md"))
    return "\n".join([readme.read_text()] + [page.read_text() for page in pages])


@pytest.fixture
def fault_notebooks(tmp_path):
    folder = tmp_path / "notebooks"
    folder.mkdir()
    notebook_fixtures.raising(folder / "PyTorch_CNN.ipynb")
    notebook_fixtures.recording(folder / "PyTorch_Inference.ipynb")
    notebook_fixtures.sleeping(folder / "PyTorch_RNN.ipynb")
    readme = tmp_path / "README.md"
    readme.write_text(f"# fixture\n{report.BEGIN_MARKER}\n{report.END_MARKER}\n")
    return folder, tmp_path / "results", readme


def fault_run(fault_notebooks, *extra):
    folder, results, readme = fault_notebooks
    # The made-up notebooks have no variants: one run each.
    return ["--use-current-python", "--frameworks", "pytorch", "--tasks", "CNN,Inference,RNN", "--variants", "default",
            "--notebooks-dir", str(folder), "--results-dir", str(results), "--readme", str(readme),
            *extra]


def test_a_failing_and_a_hanging_notebook_are_recorded_and_the_run_goes_on(fault_notebooks):
    folder, results, readme = fault_notebooks
    result = run_all(*fault_run(fault_notebooks, "--timeout", "15"))
    assert result.returncode == 1, result.stdout + result.stderr
    by_task = {r["task"]: r for r in records.read_records(results / "records.jsonl")}
    assert by_task.keys() == {"CNN", "Inference", "RNN"}
    assert by_task["CNN"]["status"] == "failed"
    assert "ZeroDivisionError" in by_task["CNN"]["reason"]
    # A failed run's record holds the parameters its notebook ran on, decided once (common.params.run_params).
    threads = by_task["CNN"]["hardware"]["threads_pinned"]
    assert by_task["RNN"]["params"] == params.run_params("RNN", "quick", "default", threads, threads)[0]
    # Told by papermill's CellTimeoutError, not by the runner's own last-resort kill (which says so).
    assert by_task["RNN"]["status"] == "failed" and by_task["RNN"]["reason"] == "timeout after 15 s"
    ok = by_task["Inference"]
    assert ok["status"] == "ok" and ok["metrics"]["images_per_second"] == 12.5
    # The runner's own time around the cells is measured: kernel start-up and the rest.
    assert 0 < ok["runner_overhead_seconds"] <= ok["wall_seconds"] and ok["cells_seconds"] >= 0
    assert "[run] runner overhead:" in result.stdout
    assert (ROOT / ok["notebook"]).exists() if not Path(ok["notebook"]).is_absolute() else Path(ok["notebook"]).exists()
    assert Path(ok["artifacts"]["extra.txt"]).name == "PyTorch_Inference.extra.txt"
    assert (ROOT / ok["artifacts"]["extra.txt"]).read_text() == "artifact"
    # Each executed notebook is kept, the failing one with its error.
    executed = list(results.glob("notebooks/*/quick/PyTorch_CNN.ipynb"))
    assert executed and "ZeroDivisionError" in executed[0].read_text()
    # No machine's own folders in its metadata: outside the repository a path keeps its name only.
    metadata = json.loads(executed[0].read_text())["metadata"]["papermill"]
    assert (metadata["input_path"], metadata["output_path"]) == ("PyTorch_CNN.ipynb", "PyTorch_CNN.ipynb")
    # The machine's tables were regenerated with the failures said in their cells.
    text = tables(readme)
    assert "**12.5** img/s" in text
    assert "failed: ZeroDivisionError" in text and "failed: timeout after 15 s" in text
    # The run ends with one line per failure, and says so with its exit status (above).
    summary = result.stdout[result.stdout.index("2 of 3 notebook run(s) failed:"):].splitlines()
    assert summary[1].startswith("  pytorch CNN: failed") and "ZeroDivisionError" in summary[1]
    assert summary[2] == "  pytorch RNN: failed · failed: timeout after 15 s"


def test_a_selection_without_notebooks_runs_nothing_and_says_so(fault_notebooks, tmp_path):
    folder, results, readme = fault_notebooks
    empty = tmp_path / "empty"
    empty.mkdir()
    result = run_all(*fault_run(fault_notebooks, "--notebooks-dir", str(empty)))
    assert result.returncode == 1
    assert "no notebook matches the selection: nothing ran" in result.stdout
    assert records.read_records(results / "records.jsonl") == []


def test_resume_skips_what_is_already_recorded(fault_notebooks):
    folder, results, readme = fault_notebooks
    notebook_fixtures.recording(folder / "PyTorch_CNN.ipynb", task="CNN")
    (folder / "PyTorch_RNN.ipynb").unlink()
    run_all(*fault_run(fault_notebooks, "--tasks", "Inference"))
    result = run_all(*fault_run(fault_notebooks, "--tasks", "CNN,Inference", "--resume"))
    tasks = [r["task"] for r in records.read_records(results / "records.jsonl")]
    assert tasks == ["Inference", "CNN"], result.stdout
    assert "1 already recorded, skipped" in result.stdout


def test_ctrl_c_stops_cleanly_and_keeps_finished_records(fault_notebooks):
    folder, results, readme = fault_notebooks
    (folder / "PyTorch_CNN.ipynb").unlink()
    # Unbuffered, so that a run that does not stop shows how far it got.
    # SIGINT back to its default in the child: a suite started in the background of a
    # non-interactive shell inherits it ignored, and Python then installs no KeyboardInterrupt
    # handler, so the Ctrl-C below would never reach the runner (its CI hangs of 2026-11-30).
    process = subprocess.Popen([sys.executable, RUN_ALL, *fault_run(fault_notebooks)], cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env=dict(os.environ, PYTHONUNBUFFERED="1"),
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    records_path = results / "records.jsonl"
    deadline = time.monotonic() + 120
    while not records.read_records(records_path) and time.monotonic() < deadline:
        time.sleep(0.5)
    time.sleep(3)  # the sleeping RNN notebook is running now
    process.send_signal(signal.SIGINT)
    # Stopping the notebook may take the runner up to 10 s, regenerating the tables a few more; on a
    # machine busy with the rest of the suite once more than 60 s (CI, 2026-11-30).
    output, _ = process.communicate(timeout=180)
    assert process.returncode == 130, output
    statuses = [(r["task"], r["status"], r.get("reason")) for r in records.read_records(records_path)]
    assert statuses[0][:2] == ("Inference", "ok")
    assert statuses[1] == ("RNN", "failed", "interrupted (Ctrl-C)")
    assert "finished records are kept" in output
    # No kernel is left behind sleeping.
    leftover = subprocess.run(["pgrep", "-f", "time.sleep\\(600\\)"], capture_output=True, text=True)
    assert leftover.stdout.strip() == ""


def test_repeat_runs_each_notebook_in_rounds_and_the_table_shows_the_spread(fault_notebooks):
    folder, results, readme = fault_notebooks
    (folder / "PyTorch_CNN.ipynb").unlink()
    (folder / "PyTorch_RNN.ipynb").unlink()
    notebook_fixtures.recording(folder / "PyTorch_CNN.ipynb", task="CNN")
    result = run_all(*fault_run(fault_notebooks, "--tasks", "CNN,Inference", "--repeat", "2"))
    assert result.returncode == 0, result.stdout + result.stderr
    runs = [(r["task"], r["repeat"], r["repeats"]) for r in records.read_records(results / "records.jsonl")]
    assert runs == [("CNN", 1, 2), ("Inference", 1, 2), ("CNN", 2, 2), ("Inference", 2, 2)]
    assert "**12.5** img/s (12.5–12.5, 2 runs)" in tables(readme)


def test_repeat_must_be_a_positive_count(tmp_path):
    result = run_all("--repeat", "0", "--results-dir", str(tmp_path), timeout=60)
    assert result.returncode == 2 and "must be a positive number, not 0" in result.stderr


def test_an_executed_notebook_keeps_paths_relative_to_the_repository():
    from runner.execute import shown_path

    assert shown_path(ROOT / "notebooks" / "PyTorch_CNN.ipynb") == "notebooks/PyTorch_CNN.ipynb"
    assert shown_path("/elsewhere/results/PyTorch_CNN.ipynb") == "PyTorch_CNN.ipynb"


def test_the_thread_sweep_counts_powers_of_two_up_to_the_physical_cores():
    from common import probe

    assert probe.thread_sweep(1) == [1]
    assert probe.thread_sweep(2) == [1, 2]
    assert probe.thread_sweep(6) == [1, 2, 4, 6]
    assert probe.thread_sweep(16) == [1, 2, 4, 8, 16]
    assert 1 <= probe.physical_cores() <= probe.cpu_cores()
    assert probe.thread_sweep()[-1] == probe.physical_cores()


def test_fcn5_sweeps_threads_on_the_cpu_only(monkeypatch):
    """On a GPU the CPU threads only feed the device: one FCN5 run, not one per thread count."""
    from types import SimpleNamespace

    from common import probe
    from runner.plan import thread_counts

    monkeypatch.setattr(probe, "physical_cores", lambda: 16)
    for accelerator, expected in (("cpu", [1, 2, 4, 8, 16]), ("cuda", [16])):
        arguments = SimpleNamespace(accelerator=accelerator, threads=0, emulate_bf16=False)
        assert thread_counts("FCN5", arguments, 16) == expected
        assert thread_counts("CNN", arguments, 16) == [16]
    assert thread_counts("FCN5", SimpleNamespace(accelerator="cpu", threads=2, emulate_bf16=False), 2) == [2]


def test_fcn5_runs_once_per_thread_count_unless_threads_names_one(fault_notebooks):
    """Each count of the sweep in its own kernel, its executed notebook kept apart; --resume skips
    the counts already recorded; --threads N runs that count only."""
    from common import probe

    folder, results, readme = fault_notebooks
    notebook_fixtures.sweeping(folder / "PyTorch_FCN5.ipynb")
    arguments = fault_run(fault_notebooks, "--tasks", "FCN5")
    result = run_all(*arguments)
    assert result.returncode == 0, result.stdout + result.stderr
    sweep = probe.thread_sweep()
    written = records.read_records(results / "records.jsonl")
    assert [r["hardware"]["threads_pinned"] for r in written] == sweep
    assert sorted(path.name for path in results.glob("notebooks/*/quick/PyTorch_FCN5*.ipynb")) == sorted(
        f"PyTorch_FCN5.{threads}-threads.ipynb" for threads in sweep)
    # Every count's run is on the machine's page (the fixture's records, at chance, are listed apart
    # from the tables; tests/test_report.py checks the sweep's table of valid ones).
    assert all(f"PyTorch_FCN5.{threads}-threads.ipynb" in tables(readme) for threads in sweep)
    resumed = run_all(*arguments, "--resume")
    assert f"{len(sweep)} already recorded, skipped" in resumed.stdout
    run_all(*arguments, "--threads", "1")
    assert [r["hardware"]["threads_pinned"] for r in records.read_records(results / "records.jsonl")] == sweep + [1]


def test_pinning_fewer_threads_than_cores_narrows_the_cores_the_process_may_use():
    """XLA takes no thread count: the process's CPU affinity is what bounds it."""
    code = ("import os; from common import probe; before = probe.cpu_cores(); probe.pin_threads(1); "
            "print(before, len(os.sched_getaffinity(0)), probe.thread_settings()['cpu_affinity'], probe.cpu_cores())")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    before, after, recorded, machine = map(int, result.stdout.split())
    # The record still names the machine by its cores, so its column does not change.
    assert (after, recorded) == (1, 1) and machine == before


def test_multigpu_runs_on_one_and_all_devices_from_ram_and_disk(fault_notebooks):
    """Four runs, each told its devices and pipeline, each record keeping what it was asked, each
    executed notebook under its own name; --resume knows all four."""
    folder, results, readme = fault_notebooks
    notebook_fixtures.device_sweeping(folder / "PyTorch_MultiGPU.ipynb")
    arguments = fault_run(fault_notebooks, "--tasks", "MultiGPU")
    result = run_all(*arguments)
    assert result.returncode == 0, result.stdout + result.stderr
    written = records.read_records(results / "records.jsonl")
    assert [r["settings"] for r in written] == [{"devices": d, "pipeline": p} for d, p in params.DEVICE_SWEEP]
    assert [(r["params"]["pipeline"], r["metrics"]["devices"]) for r in written] == [
        ("ram", 1), ("disk", 1), ("ram", 2), ("disk", 2)]
    assert sorted(path.name for path in results.glob("notebooks/*/quick/PyTorch_MultiGPU*.ipynb")) == [
        "PyTorch_MultiGPU.1-device.disk.ipynb", "PyTorch_MultiGPU.1-device.ram.ipynb",
        "PyTorch_MultiGPU.all-devices.disk.ipynb", "PyTorch_MultiGPU.all-devices.ram.ipynb"]
    assert "pytorch MultiGPU · all devices · disk: ok" in result.stdout
    assert "| PyTorch | **10.0** img/s" in tables(readme) and "| 25 % | 25 % |" in tables(readme)  # 5 / (2 × 10)
    resumed = run_all(*arguments, "--resume")
    assert "4 already recorded, skipped" in resumed.stdout


def test_kernels_talk_over_unix_sockets_unless_their_path_would_be_too_long(tmp_path, monkeypatch):
    """TCP ports chosen by jupyter_client can be taken by another process before the kernel binds
    them ("Address already in use": the kernel died in a CI run); IPC sockets cannot."""
    from runner import execute

    with tempfile.TemporaryDirectory(dir="/tmp") as runtime:  # a short path, as the cache's
        monkeypatch.setenv("JUPYTER_RUNTIME_DIR", runtime)
        one, other = execute.kernel_config().KernelManager, execute.kernel_config().KernelManager
    assert one.get("transport") == other.get("transport") == "ipc"
    # Each kernel's sockets are its own, whatever folder it starts in.
    assert one.ip != other.ip and one.ip.startswith(runtime + os.sep)
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / ("long-" * 20)))
    assert execute.kernel_config().KernelManager.get("transport") is None
