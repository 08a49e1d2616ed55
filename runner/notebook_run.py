"""Executing one notebook: its kernel (its framework's environment, built when missing), its
parameters, the papermill process (runner.execute, in a process group of its own so that a hang
is killed with its kernel), and its outcome turned into one record: the notebook's own when it
wrote one, else a failed or skipped record saying why; what it wrote besides (artifacts) kept next
to the executed notebook."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common.params import THREAD_SWEEP_TASKS
from common.paths import REPOSITORY_ROOT, relative, slug
from runner.frameworks import DEFAULT_VARIANT
from runner.plan import bf16_not_native, settings_slug

# How long after a notebook's timeout the runner kills it, should papermill not have stopped it.
KILL_GRACE_SECONDS = 60


def kernel_name(environment, accelerator, language="python"):
    """The Jupyter kernel of an environment's build: rosetta-torch-cpu, rosetta-jax-cuda; the R
    notebooks' kernel on the TensorFlow environment is rosetta-r-tensorflow-cpu."""
    return f"rosetta-{'r-' if language == 'r' else ''}{environment}-{accelerator}"


def error_tail(log_path, lines=20):
    """The end of papermill's log, where the notebook's exception is."""
    try:
        text = Path(log_path).read_text(errors="replace").splitlines()
    except OSError:
        return "no log"
    return "\n".join(line for line in text[-lines:] if line.strip())


def kill_group(process):
    """Stop papermill and the kernel it started (they share a process group)."""
    import signal

    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=10)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()


def executed_cells_seconds(executed):
    """Seconds the executed notebook's cells ran (papermill's per-cell durations), or None."""
    try:
        cells = json.loads(Path(executed).read_text())["cells"]
    except (OSError, ValueError, KeyError):
        return None
    durations = [cell.get("metadata", {}).get("papermill", {}).get("duration") for cell in cells]
    durations = [duration for duration in durations if isinstance(duration, (int, float))]
    return sum(durations) if durations else None


def keep_artifacts(staging, runner_files, out_dir, name):
    """Move what the notebook wrote beside its record (records.artifact_path) next to the
    executed notebook, prefixed with its name; return {file name: path from the root}."""
    kept = {}
    for path in sorted(staging.iterdir()):
        if path not in runner_files and path.is_file():
            destination = out_dir / f"{name}.{path.name}"
            shutil.move(str(path), destination)
            kept[path.name] = relative(destination)
    return kept


class NotebookRunner:
    """Runs notebooks one at a time for one session (its run id, hardware and results folder),
    keeping the kernels it has made and the peaks the session measured (copied into records)."""

    def __init__(self, arguments, results, hardware, hardware_label, run_id):
        self.arguments = arguments
        self.results = results
        self.records_path = results / "records.jsonl"
        self.accelerator = arguments.accelerator
        self.hardware = hardware
        self.hardware_label = hardware_label
        self.run_id = run_id
        self.kernels = {}
        self.pythons = {}  # framework name: the interpreter its kernel runs
        self.peaks = {}  # threads: common.peak.combine's peaks

    # -- kernels

    def kernel_for(self, framework):
        """The framework's kernel name, named after its environment and the accelerator, building
        the environment the first time."""
        from runner import environments

        if framework.name in self.kernels:
            return self.kernels[framework.name]
        if self.arguments.use_current_python:
            python, environment = sys.executable, "current"
        else:
            python = environments.environment_python(
                environments.build(framework.environment, accelerator=self.accelerator))
            environment = framework.environment
            self.note_install_cost(framework.environment)
        if framework.language == "r":
            environments.ensure_system_packages("r")
        name = kernel_name(environment, self.accelerator, framework.language)
        kernel = environments.write_kernel(name, python, f"Rosetta {name[len('rosetta-'):]}",
                                           framework.language)
        self.kernels[framework.name], self.pythons[framework.name] = kernel, python
        return kernel

    def note_install_cost(self, environment, remeasure=False):
        from runner import install_costs

        entry = install_costs.note(self.results, environment, self.accelerator, self.hardware_label, remeasure)
        if entry:
            print(f"[env] {environment} ({self.accelerator}): {install_costs.size_text(entry['size_mb'])}, built in "
                  f"{entry['build_seconds']} s, cold import {entry['import_seconds']} s")

    # -- one notebook

    def failed_record(self, framework, task, variant, threads, reason, started_at, status="failed", settings=None):
        """The record of a run that failed or was skipped, with the parameters its notebook would have
        run on (common.params.run_params, as the harness decides them)."""
        from common import params, probe, records

        run_params, _ = params.run_params(task, self.arguments.profile, variant, threads, probe.physical_cores(),
                                          bool(self.emulation(variant)), **(settings or {}))
        return records.make_record(
            framework=framework.name, task=task, variant=variant, profile=self.arguments.profile,
            data=None, hardware=dict(self.hardware, threads_pinned=threads), versions={}, metrics={},
            params=run_params, status=status, reason=reason, started_at=started_at)

    def execute(self, run, repeat=1):
        """Run one PlannedRun (its `repeat`th time); return its record (ok from the notebook, or
        skipped/failed from here), appended to the records."""
        from common import records

        framework, task, variant, notebook, threads, settings = run
        started_at = records.now()
        settings = settings or {}
        finish = dict(threads=threads, settings=settings, repeat=repeat)
        name, executed, log_path = self.output_paths(notebook, variant, threads if task in THREAD_SWEEP_TASKS else None,
                                                     settings)
        why_not = self.why_not_here(framework, variant)
        if why_not:
            record = self.failed_record(framework, task, variant, threads, why_not, started_at, "skipped", settings)
            return self.finish_record(record, None, None, time.monotonic(), **finish)
        began = time.monotonic()
        try:
            kernel = self.kernel_for(framework)
        except RuntimeError as error:
            record = self.failed_record(framework, task, variant, threads, f"environment: {error}", started_at,
                                        settings=settings)
            return self.finish_record(record, None, None, began, **finish)
        with tempfile.TemporaryDirectory(prefix="rosetta-record-") as staging:
            record_path = Path(staging) / "record.jsonl"
            parameters = {"profile": self.arguments.profile, "data": self.arguments.data,
                          "device": self.accelerator, "threads": threads,
                          "record_path": str(record_path), **settings}
            if variant != DEFAULT_VARIANT:
                parameters["variant"] = variant
            papermill_began = time.monotonic()
            try:
                if settings.get("nodes", 1) > 1:
                    outcome = self.run_nodes(notebook, framework, parameters, Path(staging), log_path)
                else:
                    outcome = self.run_papermill(notebook, executed, kernel, parameters, log_path, staging,
                                                 self.emulation(variant))
            except KeyboardInterrupt:
                record = self.failed_record(framework, task, variant, threads, "interrupted (Ctrl-C)", started_at,
                                            settings=settings)
                self.finish_record(record, executed, kernel, began, **finish)
                raise
            written = records.read_records(record_path)
            artifacts = keep_artifacts(Path(staging), {record_path, Path(staging) / "status.json"},
                                       executed.parent, name)
        papermill_seconds = time.monotonic() - papermill_began
        reason = self.failure_reason(outcome, written, log_path)
        record = (self.failed_record(framework, task, variant, threads, reason, started_at, settings=settings)
                  if reason else written[-1])
        if artifacts:
            record["artifacts"] = artifacts
        cells_seconds = executed_cells_seconds(executed)
        if cells_seconds is not None:
            # What the runner adds around the notebook's own cells: interpreter and papermill start,
            # kernel launch and shutdown, writing the executed notebook.
            record["cells_seconds"] = round(cells_seconds, 1)
            record["runner_overhead_seconds"] = round(papermill_seconds - cells_seconds, 1)
        return self.finish_record(record, executed, kernel, began, **finish)

    def output_paths(self, notebook, variant, threads=None, settings=None):
        """(name, executed notebook, log) of one run: beside the others of its hardware and profile;
        a sweep's runs are told apart by their thread count or device setting."""
        profile = self.arguments.profile
        out_dir = self.results / "notebooks" / slug(self.hardware_label) / profile
        out_dir.mkdir(parents=True, exist_ok=True)
        name = notebook.stem if variant == DEFAULT_VARIANT else f"{notebook.stem}.{variant}"
        if threads is not None:
            name += f".{threads}-threads"
        if settings:
            name += "." + settings_slug(settings)
        log_path = self.results / "logs" / f"{name}.{profile}.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        return name, out_dir / f"{name}.ipynb", log_path

    def emulation(self, variant):
        """{harness.EMULATED_BF16: why} for a bf16 variant that --emulate-bf16 lets run where bf16 is
        not native (the notebook then trains a short run for its checks), else {}."""
        from common import harness

        why = bf16_not_native(self.arguments, variant)
        return {harness.EMULATED_BF16: why} if why and self.arguments.emulate_bf16 else {}

    def run_papermill(self, notebook, executed, kernel, parameters, log_path, staging, environment=None):
        """Execute the notebook in its own process group (so that a hang can be killed with its
        kernel); return papermill's outcome ({"ok": …} from runner.execute), {"timeout": True}
        when it had to be stopped, or {"ok": False} when it died without saying."""
        from runner import environments

        status_path = Path(staging) / "status.json"
        command = [sys.executable, "-m", "runner.execute", str(notebook), str(executed),
                   "--kernel", kernel, "--cwd", str(notebook.parent),
                   "--timeout", str(self.arguments.timeout), "--parameters", json.dumps(parameters),
                   "--status", str(status_path)]
        with open(log_path, "w") as log:
            process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=REPOSITORY_ROOT,
                                       start_new_session=True,
                                       env=dict(environments.papermill_environment(), **(environment or {})))
            try:
                process.wait(timeout=self.arguments.timeout + KILL_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                kill_group(process)
                return {"ok": False, "timeout": True,
                        "reason": f"timeout after {self.arguments.timeout} s; papermill did not stop it, "
                                  f"the runner killed it {KILL_GRACE_SECONDS} s later"}
            except KeyboardInterrupt:
                kill_group(process)
                raise
        if status_path.exists():
            return json.loads(status_path.read_text())
        return {"ok": process.returncode == 0}

    def run_nodes(self, notebook, framework, parameters, staging, log_path):
        """A multi-node setting (MultiGPU's nodes): the notebook's closing-section commands as printed,
        once per node on this machine (runner.nodes), the framework's environment first on the PATH
        (its launcher, its python), then the runner's (papermill, jupyter). Returns the outcome, with
        a "reason" when it failed; the nodes' logs go into log_path one after the other."""
        from runner import environments, nodes

        block = nodes.launch_block(notebook)
        if block is None:
            return {"ok": False, "reason": f"{notebook.name} prints no multi-node command that runs as it stands"}
        environment = environments.papermill_environment()
        environment["PATH"] = os.pathsep.join([str(Path(self.pythons[framework.name]).parent),
                                               str(Path(sys.executable).parent), environment.get("PATH", "")])
        # The launcher's environment says the devices and nodes; the rest are the notebook's parameters.
        block = nodes.with_parameters(block, {name: value for name, value in parameters.items()
                                              if name not in ("devices", "nodes")})
        started = nodes.LocalNodes(notebook, block, staging / "nodes", environment)
        try:
            outcome = started.wait(self.arguments.timeout)
            if not outcome["ok"]:
                outcome["reason"] = (f"timeout after {self.arguments.timeout} s; " if outcome["timeout"] else ""
                                     ) + started.failure_reason(outcome)
            return outcome
        except KeyboardInterrupt:
            for rank in range(len(started.processes)):
                started.kill(rank)
            raise
        finally:
            log_path.write_text("".join(f"===== node {rank}\n{started.log_text(rank)}"
                                        for rank in range(len(started.logs))))
            shutil.rmtree(staging / "nodes", ignore_errors=True)

    def failure_reason(self, outcome, written, log_path):
        """Why the run failed, or None when the notebook's own record stands."""
        if outcome.get("reason"):
            return outcome["reason"]
        if outcome.get("timeout"):
            return f"timeout after {self.arguments.timeout} s"
        if not outcome.get("ok"):
            return error_tail(log_path)
        if not written:
            return "the notebook wrote no record"
        return None

    def why_not_here(self, framework, variant):
        """Why this framework's variant cannot run on this host's accelerator, or None: no GPU
        build on a GPU run, or a bf16 variant where bf16 is not computed natively."""
        from runner import environments

        if self.accelerator != "cpu" and framework.environment in environments.NO_GPU_BUILD:
            return environments.NO_GPU_BUILD[framework.environment]
        why = bf16_not_native(self.arguments, variant)
        if why and not self.arguments.emulate_bf16:
            return f"{why}; --emulate-bf16 runs it for its checks"
        return None

    def finish_record(self, record, executed, kernel, began, threads, settings=None, repeat=1):
        from common import records

        record.update({"notebook": relative(executed) if executed and executed.exists() else None,
                       "kernel": kernel, "run_id": self.run_id,
                       "data_choice": self.arguments.data,
                       "repeat": repeat, "repeats": self.arguments.repeat,
                       "wall_seconds": round(time.monotonic() - began, 1)})
        if settings:
            record["settings"] = settings  # what the runner asked for (devices 0: all of them)
        found = self.peaks.get(threads) or {}
        if found.get("fp32") and isinstance(record.get("hardware"), dict):
            record["hardware"].setdefault("fp32_peak_gflops", found["fp32"]["gflops"])
            record["hardware"].setdefault("peak", found)
        return records.append_record(record, self.records_path)
