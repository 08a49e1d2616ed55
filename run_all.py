#!/usr/bin/env python3
"""Run the Rosetta Stone: every selected framework × task notebook, one at a time, each on its
framework's own kernel; one record per run; the README tables and plots regenerated at the end.

  python run_all.py --list                                   what can run here
  python run_all.py --frameworks pytorch --profile quick     run, record, regenerate README
  python run_all.py --self-test                              the test suite

On first use it makes its own environment (envs/runner.txt) and each framework's (envs/<name>.txt)
in a cache outside the clone ($ROSETTA_CACHE, default ~/.cache/dl-rosetta), reused while the
requirements file is unchanged. On a host whose nvidia-smi lists a GPU (--accelerator auto) it
builds each framework's CUDA environment (envs/<name>.cuda.txt) instead and runs the notebooks on
the GPU. --use-current-python skips all of that and runs every notebook on the interpreter that
runs this script (e.g. a GPU host with its own stack and papermill).
"""
import argparse
import datetime
import os
import subprocess
import sys
from pathlib import Path

from runner.frameworks import DEFAULT_VARIANT, FRAMEWORKS, RUNNABLE, UNAVAILABLE, notebook_name, variants
from common.params import DATA_CHOICES, DEVICE_SWEEP, DEVICE_SWEEP_TASKS, PROFILES, TASKS, THREAD_SWEEP_TASKS

ROOT = Path(__file__).resolve().parent
RUNNER_ENVIRONMENT = "runner"
BOOTSTRAPPED_VARIABLE = "ROSETTA_RUNNER"


# ----------------------------------------------------------------------------- arguments

def comma_list(valid, what):
    """An argparse type: a comma-separated subset of `valid` (case-insensitive), or 'all'."""
    lookup = {value.lower(): value for value in valid}

    def parse(text):
        if text.strip().lower() == "all":
            return list(valid)
        chosen = []
        for item in (part.strip() for part in text.split(",")):
            if item.lower() not in lookup:
                unavailable = FRAMEWORKS.get(item.lower())
                if unavailable is not None and unavailable.reason:
                    raise argparse.ArgumentTypeError(
                        f"{unavailable.title} cannot run here: {unavailable.reason}")
                raise argparse.ArgumentTypeError(
                    f"unknown {what} {item!r}; valid {what}s: {', '.join(valid)} (or 'all')")
            if lookup[item.lower()] not in chosen:
                chosen.append(lookup[item.lower()])
        return chosen

    return parse


def positive_number(unit=None):
    """An argparse type: a whole number of at least 1; `unit` ("seconds") names it in messages."""
    of_unit = f" of {unit}" if unit else ""

    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number{of_unit}")
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be a positive number{of_unit}, not {value}")
        return value

    return parse


def parse_arguments(argv):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frameworks", type=comma_list(list(RUNNABLE), "framework"),
                        default=list(RUNNABLE),
                        help=f"comma-separated, or 'all' (default). One of: {', '.join(RUNNABLE)}")
    parser.add_argument("--tasks", type=comma_list(TASKS, "task"), default=list(TASKS),
                        help=f"comma-separated, or 'all' (default). One of: {', '.join(TASKS)}")
    parser.add_argument("--profile", choices=PROFILES, default="quick",
                        help="full: the 2018 hyper-parameters; quick (default): minutes per "
                             "notebook on 2 CPU cores; smoke: seconds, for tests (never shown in "
                             "the README)")
    parser.add_argument("--data", choices=DATA_CHOICES, default="auto",
                        help="auto (default): real data when a source answers, else synthetic, "
                             "said loudly; real: fail when no source answers; synthetic: never "
                             "fetch")
    parser.add_argument("--timeout", type=positive_number("seconds"), default=3600,
                        help="seconds one notebook may run before it is stopped and recorded as "
                             "failed (default 3600)")
    extra_variants = sorted({variant for framework in RUNNABLE.values() for task in TASKS
                             for variant in variants(framework, task)} - {DEFAULT_VARIANT})
    parser.add_argument("--variants", choices=("all", DEFAULT_VARIANT, *extra_variants), default="all",
                        help="all (default): also run each notebook's variants (torch.compile, "
                             "XLA, bf16, …) as rows of their own; default: the plain fp32 run only; "
                             "a variant's name: that variant only, in the notebooks that have it")
    parser.add_argument("--repeat", type=positive_number(), default=1, metavar="N",
                        help="run each notebook N times, each in a fresh kernel, the whole "
                             "selection once before the next round; the tables show the median "
                             "and the spread of the N runs (default 1)")
    parser.add_argument("--threads", type=positive_number(), default=None, metavar="N",
                        help="CPU threads every framework may use, pinned before it is imported "
                             "and read back into the record (default: the physical cores this "
                             "process may use; FCN5 runs once per count 1, 2, 4, … up to them)")
    parser.add_argument("--devices", choices=("1", "all", "1,all"), default="1,all",
                        help="MultiGPU: train on 1 device, on all of them (every visible GPU, or 2 CPU "
                             "devices on a CPU-only host), or both (default: 1,all)")
    parser.add_argument("--pipelines", type=comma_list(["ram", "disk"], "pipeline"), default=["ram", "disk"],
                        help="MultiGPU: images held in RAM, decoded from PNG files per batch, or both "
                             "(default: ram,disk)")
    parser.add_argument("--resume", action="store_true",
                        help="skip framework × task pairs that already have an ok record for "
                             "this hardware, profile and data choice")
    parser.add_argument("--list", action="store_true",
                        help="print the framework × task matrix and what can run here, then exit")
    parser.add_argument("--accelerator", choices=("auto", "cpu", "cuda"), default="auto",
                        help="auto (default): cuda when nvidia-smi lists a GPU, else cpu; cpu: the "
                             "CPU builds (envs/<name>.txt), notebooks on the CPU even on a GPU "
                             "host; cuda: the CUDA builds (envs/<name>.cuda.txt), notebooks on "
                             "the GPU, stopping here when there is none")
    parser.add_argument("--use-current-python", action="store_true",
                        help="run every notebook on this interpreter (which needs papermill and "
                             "ipykernel, and the frameworks) instead of building environments")
    parser.add_argument("--docs", action="store_true",
                        help="regenerate the README tables and the side-by-side reader (docs/, "
                             "beside the README) from the records, then exit")
    parser.add_argument("--measure-install", action="store_true",
                        help="build (when missing) and measure the runner's and the selected "
                             "frameworks' environments: build time, size on disk, cold import time "
                             "(run it alone on the machine); then regenerate the tables and exit")
    parser.add_argument("--import-records", type=Path, metavar="PATH",
                        help="add the records of another machine's run (its results folder, or its "
                             "records.jsonl beside a notebooks/ folder) to this one's, with their "
                             "executed notebooks, skipping records already here; then regenerate "
                             "the tables and exit")
    parser.add_argument("--results-dir", type=Path, default=ROOT / "results",
                        help="where records, executed notebooks and plots go (default results/)")
    parser.add_argument("--readme", type=Path, default=ROOT / "README.md",
                        help="README whose results section is regenerated (default README.md)")
    parser.add_argument("--notebooks-dir", type=Path, default=ROOT / "notebooks",
                        help=argparse.SUPPRESS)  # the fault tests point this at made-up notebooks
    parser.add_argument("--self-test", action="store_true",
                        help="run the test suite (pytest) in the runner's environment, then exit")
    arguments = parser.parse_args(argv)
    if arguments.import_records is not None:
        source = arguments.import_records
        if not (source / "records.jsonl" if source.is_dir() else source).is_file():
            parser.error(f"--import-records: no records.jsonl at {source}")
    elif not (arguments.list or arguments.self_test or arguments.docs):
        try:
            arguments.accelerator = resolve_accelerator(arguments.accelerator)
        except ValueError as error:
            parser.error(str(error))
    return arguments


def resolve_accelerator(requested):
    """'auto' becomes cuda or cpu by what nvidia-smi lists; cuda without a GPU is refused before
    anything is built or run, rather than timing the CPU under a GPU's name."""
    from common import probe

    found = probe.nvidia_smi_gpus()
    if requested == "auto":
        return "cuda" if found else "cpu"
    if requested == "cuda" and not found:
        raise ValueError("--accelerator cuda: nvidia-smi lists no GPU on this machine (is the "
                         "NVIDIA driver installed?); use --accelerator cpu to run on the CPU")
    return requested


# ----------------------------------------------------------------------------- bootstrap

def in_runner_environment():
    try:
        import papermill  # noqa: F401
        import tqdm  # noqa: F401
        import numpy  # noqa: F401
    except ImportError:
        return False
    return True


def ensure_runner_environment(arguments):
    """Re-execute this script inside the runner's environment, building it when missing."""
    if os.environ.get(BOOTSTRAPPED_VARIABLE) or arguments.use_current_python:
        if not in_runner_environment():
            sys.exit("this interpreter lacks papermill/tqdm/numpy: "
                     f"pip install -r {ROOT / 'envs' / 'runner.txt'}")
        return
    from runner import environments

    try:
        path = environments.build(RUNNER_ENVIRONMENT)
    except RuntimeError as error:
        sys.exit(str(error))
    python = environments.environment_python(path)
    env = dict(os.environ, **{BOOTSTRAPPED_VARIABLE: "1"})
    env["PYTHONPATH"] = str(ROOT)
    os.execve(str(python), [str(python), str(Path(__file__).resolve())] + sys.argv[1:], env)


# ----------------------------------------------------------------------------- listing

def matrix_rows(notebooks_dir, accelerator="cpu"):
    """(framework title, environment, {task: status text}) for every framework we know."""
    from runner import environments

    rows = []
    for framework in RUNNABLE.values():
        available = environments.has_build(framework.environment, accelerator)
        built = available and environments.is_built(framework.environment, accelerator)
        statuses = {}
        for task in TASKS:
            if not (notebooks_dir / notebook_name(framework, task)).exists():
                statuses[task] = "no notebook"
            elif not available:
                statuses[task] = f"no {accelerator} build"
            else:
                statuses[task] = "ready" if built else "ready (env to build)"
        rows.append((framework.title, framework.environment, statuses))
    for framework in UNAVAILABLE:
        rows.append((framework.title, "—", {task: "unavailable" if task in framework.tasks else "—"
                                             for task in TASKS}))
    return rows


def print_matrix(notebooks_dir, accelerator="auto"):
    from runner import environments

    if accelerator == "auto":
        accelerator = resolve_accelerator("auto")
    print(f"accelerator: {accelerator} (environments from envs/<name>"
          f"{'' if accelerator == 'cpu' else '.' + accelerator}.txt)\n")
    rows = [("framework", "env", {task: task for task in TASKS})] + matrix_rows(notebooks_dir, accelerator)
    title_width = max(len(title) for title, _, _ in rows) + 2
    env_width = max(len(environment) for _, environment, _ in rows) + 2
    widths = {task: max(len(statuses[task]) for _, _, statuses in rows) + 2 for task in TASKS}
    for title, environment, statuses in rows:
        print((title.ljust(title_width) + environment.ljust(env_width)
               + "".join(statuses[task].ljust(widths[task]) for task in TASKS)).rstrip())
    print()
    for framework in UNAVAILABLE:
        print(f"{framework.title}: cannot run here: {framework.reason}")
    if accelerator != "cpu":
        for name, reason in environments.NO_GPU_BUILD.items():
            print(f"environment '{name}': {reason}")


# ----------------------------------------------------------------------------- running

def slug(text):
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-").replace("--", "-")


def relative(path):
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(Path(path).resolve())


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


def settings_text(settings):
    """'1 device · ram', 'all devices · disk'."""
    devices = settings.get("devices")
    shown = [] if devices is None else ["1 device" if devices == 1 else ("all devices" if devices == 0 else f"{devices} devices")]
    return " · ".join(shown + [str(value) for key, value in sorted(settings.items()) if key != "devices"])


def settings_slug(settings):
    return settings_text(settings).replace(" · ", ".").replace(" ", "-")


def record_identity(record):
    """What tells one run's record from every other's, on any machine."""
    return tuple(str(record.get(key)) for key in
                 ("run_id", "framework", "task", "variant", "profile", "started_at", "finished_at"))


def executed_cells_seconds(executed):
    """Seconds the executed notebook's cells ran (papermill's per-cell durations), or None."""
    import json

    try:
        cells = json.loads(Path(executed).read_text())["cells"]
    except (OSError, ValueError, KeyError):
        return None
    durations = [cell.get("metadata", {}).get("papermill", {}).get("duration") for cell in cells]
    durations = [duration for duration in durations if isinstance(duration, (int, float))]
    return sum(durations) if durations else None


class Runner:
    def __init__(self, arguments):
        from common import probe

        self.arguments = arguments
        self.results = arguments.results_dir.resolve()
        self.records_path = self.results / "records.jsonl"
        self.accelerator = arguments.accelerator
        self.threads = arguments.threads or probe.physical_cores()
        self.peaks = {}  # threads: common.peak.combine's peaks
        self.hardware = probe.hardware(probe.nvidia_accelerator() if self.accelerator == "cuda" else None)
        self.hardware_label = probe.hardware_label(self.hardware)
        self.run_id = datetime.datetime.now().strftime("%Y%m%dT%H%M%S")
        self.kernels = {}
        self.pythons = {}  # framework name: the interpreter its kernel runs
        self.already_recorded = 0
        self.repeat = 1

    # -- planning

    def thread_counts(self, task):
        """A THREAD_SWEEP_TASKS task (FCN5) runs at 1, 2, 4, … threads up to the physical cores, each
        in a fresh kernel (most frameworks size their pools at import), unless --threads names one
        count; every other task runs on self.threads."""
        from common import probe

        if task in THREAD_SWEEP_TASKS and not self.arguments.threads:
            return probe.thread_sweep()
        return [self.threads]

    def settings(self, task):
        """The notebook parameters a task is swept over besides threads, one dict per run: a
        DEVICE_SWEEP_TASKS task (MultiGPU) runs on 1 and on all devices (devices 0), from RAM and
        from disk, as far as --devices and --pipelines keep them."""
        if task in DEVICE_SWEEP_TASKS:
            wanted = {1 if name == "1" else 0 for name in self.arguments.devices.split(",")}
            return [{"devices": devices, "pipeline": pipeline} for devices, pipeline in DEVICE_SWEEP
                    if devices in wanted and pipeline in self.arguments.pipelines]
        return [{}]

    def plan(self):
        """(framework, task, variant, notebook, threads, settings) of every run, in order."""
        from common import records

        arguments = self.arguments
        planned = []
        for name in arguments.frameworks:
            framework = RUNNABLE[name]
            for task in arguments.tasks:
                notebook = arguments.notebooks_dir / notebook_name(framework, task)
                if notebook.exists():
                    chosen = variants(framework, task) if arguments.variants == "all" else tuple(
                        variant for variant in variants(framework, task) if variant == arguments.variants)
                    planned.extend((framework, task, variant, notebook, threads, settings)
                                   for variant in chosen for threads in self.thread_counts(task)
                                   for settings in self.settings(task))
                elif len(arguments.tasks) < len(TASKS) or task in framework.tasks:
                    print(f"[run] {framework.title} {task}: no notebook {notebook.name}, skipped")
        if arguments.resume:
            from common.probe import hardware_label

            def key(framework_name, task, variant, threads, settings):
                # A sweep's runs count apart, one per thread count or device setting.
                return (framework_name, task, variant, threads if task in THREAD_SWEEP_TASKS else None,
                        tuple(sorted((settings or {}).items())))

            done = {key(r["framework"], r["task"], r.get("variant", DEFAULT_VARIANT),
                        r.get("hardware", {}).get("threads_pinned"), r.get("settings"))
                    for r in records.read_records(self.records_path)
                    if r.get("status") == "ok" and r.get("profile") == arguments.profile
                    and r.get("data_choice") == arguments.data
                    and hardware_label(r.get("hardware", {})) == self.hardware_label}
            kept = [item for item in planned if key(item[0].name, *item[1:3], *item[4:]) not in done]
            if len(kept) < len(planned):
                print(f"[run] --resume: {len(planned) - len(kept)} already recorded, skipped")
            self.already_recorded = len(planned) - len(kept)
            planned = kept
        return planned

    # -- kernels

    def kernel_for(self, framework):
        """The framework's kernel name, named after its environment and the accelerator, building
        the environment the first time."""
        from runner import environments

        if framework.name in self.kernels:
            return self.kernels[framework.name]
        if self.arguments.use_current_python:
            python, name = sys.executable, f"current-{self.accelerator}"
        else:
            python = environments.environment_python(
                environments.build(framework.environment, accelerator=self.accelerator))
            name = f"{framework.environment}-{self.accelerator}"
            self.note_install_cost(framework.environment)
        if framework.language == "r":
            environments.ensure_system_packages("r")
            name = f"r-{name}"
        kernel = environments.write_kernel(f"rosetta-{name}", python, f"Rosetta {name}",
                                           framework.language)
        self.kernels[framework.name], self.pythons[framework.name] = kernel, python
        return kernel

    def note_install_cost(self, environment, remeasure=False):
        from runner import install_costs

        entry = install_costs.note(self.results, environment, self.accelerator, self.hardware_label, remeasure)
        if entry:
            print(f"[env] {environment} ({self.accelerator}): {install_costs.size_text(entry['size_mb'])}, built in "
                  f"{entry['build_seconds']} s, cold import {entry['import_seconds']} s")

    def measure_install(self):
        """Build when missing and measure every selected framework's environment; no notebook runs."""
        from runner import environments

        failures = 0
        selected = [RUNNABLE[name].environment for name in self.arguments.frameworks]
        if self.accelerator == "cpu":  # the runner's own environment is always a CPU build
            selected.insert(0, RUNNER_ENVIRONMENT)
        for environment in dict.fromkeys(selected):
            if self.accelerator != "cpu" and environment in environments.NO_GPU_BUILD:
                print(f"[env] {environment}: {environments.NO_GPU_BUILD[environment]}")
                continue
            try:
                environments.build(environment, accelerator=self.accelerator)
            except RuntimeError as error:
                print(f"[env] {environment}: {error}")
                failures += 1
                continue
            self.note_install_cost(environment, remeasure=True)
        self.regenerate()
        return 1 if failures else 0

    # -- one notebook

    def failed_record(self, framework, task, variant, threads, reason, started_at, status="failed", settings=None):
        from common import params, records

        return records.make_record(
            framework=framework.name, task=task, variant=variant, profile=self.arguments.profile,
            data=None, hardware=dict(self.hardware, threads_pinned=threads), versions={}, metrics={},
            params=dict(params.get_params(task, self.arguments.profile), **(settings or {})),
            status=status, reason=reason, started_at=started_at)

    def execute(self, framework, task, variant, notebook, threads, settings=None):
        """Run one notebook; return its record (ok from the notebook, or skipped/failed from here)."""
        import tempfile
        import time

        from common import records

        started_at = records.now()
        settings = settings or {}
        name, executed, log_path = self.output_paths(notebook, variant, threads if task in THREAD_SWEEP_TASKS else None,
                                                     settings)
        why_not = self.why_not_here(framework, variant)
        if why_not:
            record = self.failed_record(framework, task, variant, threads, why_not, started_at, "skipped", settings)
            return self.finish_record(record, None, None, time.monotonic(), threads, settings)
        began = time.monotonic()
        try:
            kernel = self.kernel_for(framework)
        except RuntimeError as error:
            record = self.failed_record(framework, task, variant, threads, f"environment: {error}", started_at,
                                        settings=settings)
            return self.finish_record(record, None, None, began, threads, settings)
        with tempfile.TemporaryDirectory(prefix="rosetta-record-") as staging:
            record_path = Path(staging) / "record.jsonl"
            parameters = {"profile": self.arguments.profile, "data": self.arguments.data,
                          "device": self.accelerator, "threads": threads,
                          "record_path": str(record_path), **settings}
            if variant != DEFAULT_VARIANT:
                parameters["variant"] = variant
            papermill_began = time.monotonic()
            try:
                outcome = self.run_papermill(notebook, executed, kernel, parameters, log_path, staging)
            except KeyboardInterrupt:
                record = self.failed_record(framework, task, variant, threads, "interrupted (Ctrl-C)", started_at,
                                            settings=settings)
                self.finish_record(record, executed, kernel, began, threads, settings)
                raise
            written = records.read_records(record_path)
            artifacts = self.keep_artifacts(Path(staging), {record_path, Path(staging) / "status.json"},
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
        return self.finish_record(record, executed, kernel, began, threads, settings)

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

    def run_papermill(self, notebook, executed, kernel, parameters, log_path, staging):
        """Execute the notebook in its own process group (so that a hang can be killed with its
        kernel); return papermill's outcome ({"ok": …} from runner.execute), {"timeout": True}
        when it had to be stopped, or {"ok": False} when it died without saying."""
        import json

        from runner import environments

        status_path = Path(staging) / "status.json"
        command = [sys.executable, "-m", "runner.execute", str(notebook), str(executed),
                   "--kernel", kernel, "--cwd", str(notebook.parent),
                   "--timeout", str(self.arguments.timeout), "--parameters", json.dumps(parameters),
                   "--status", str(status_path)]
        with open(log_path, "w") as log:
            process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT,
                                       start_new_session=True, env=environments.papermill_environment())
            try:
                process.wait(timeout=self.arguments.timeout + 60)
            except subprocess.TimeoutExpired:
                kill_group(process)
                return {"ok": False, "timeout": True}
            except KeyboardInterrupt:
                kill_group(process)
                raise
        if status_path.exists():
            return json.loads(status_path.read_text())
        return {"ok": process.returncode == 0}

    def failure_reason(self, outcome, written, log_path):
        """Why the run failed, or None when the notebook's own record stands."""
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
        from common import probe
        from runner import environments

        if self.accelerator != "cpu" and framework.environment in environments.NO_GPU_BUILD:
            return environments.NO_GPU_BUILD[framework.environment]
        if variant == "bf16":
            native, why = probe.bf16_native(self.accelerator)
            return None if native else why
        return None

    @staticmethod
    def keep_artifacts(staging, runner_files, out_dir, name):
        """Move what the notebook wrote beside its record (records.artifact_path) next to the
        executed notebook, prefixed with its name; return {file name: path from the root}."""
        import shutil

        kept = {}
        for path in sorted(staging.iterdir()):
            if path not in runner_files and path.is_file():
                destination = out_dir / f"{name}.{path.name}"
                shutil.move(str(path), destination)
                kept[path.name] = relative(destination)
        return kept

    def finish_record(self, record, executed, kernel, began, threads, settings=None):
        import time

        from common import records

        record.update({"notebook": relative(executed) if executed and executed.exists() else None,
                       "kernel": kernel, "run_id": self.run_id,
                       "data_choice": self.arguments.data,
                       "repeat": self.repeat, "repeats": self.arguments.repeat,
                       "wall_seconds": round(time.monotonic() - began, 1)})
        if settings:
            record["settings"] = settings  # what the runner asked for (devices 0: all of them)
        found = self.peaks.get(threads) or {}
        if found.get("fp32") and isinstance(record.get("hardware"), dict):
            record["hardware"].setdefault("fp32_peak_gflops", found["fp32"]["gflops"])
            record["hardware"].setdefault("peak", found)
        return records.append_record(record, self.records_path)

    def measure_peak(self, threads, frameworks):
        """The machine's peaks on `threads` pinned threads (common.peak: numpy's and the selected
        frameworks' own GEMMs over common.peak.GEMM_SIZES, and the theoretical peak), measured once
        per run and thread count, each in a fresh interpreter (the thread pools of this one are
        already sized). Smoke runs, never shown, take numpy's smallest product only."""
        from common import peak
        from runner import peaks

        pythons = []
        if self.arguments.profile != "smoke":
            for framework in frameworks:
                try:
                    self.kernel_for(framework)  # builds its environment when missing
                except Exception as error:  # its notebooks will record the failure
                    print(f"[run] {framework.title}'s GEMMs not measured: {error}")
                    continue
                if self.pythons[framework.name] not in pythons:
                    pythons.append(self.pythons[framework.name])
        found = peaks.machine_peak(threads, pythons, peak.GEMM_SIZES[:1] if self.arguments.profile == "smoke" else None)
        self.peaks[threads] = found
        for precision in ("fp32", "bf16"):
            if found.get(precision):
                print(f"[run] {precision} peak on {threads} thread(s): {found[precision]['gflops']} GFLOP/s "
                      f"({found[precision]['source']})")

    # -- the whole run

    def ensure_datasets(self, planned):
        """Debian's data sets (envs/datasets.apt.txt: Fashion-MNIST, the CNN's stand-in for
        CIFAR-10) when a CNN notebook may use real data; without them the notebooks fall back."""
        from runner import environments

        if self.arguments.data == "synthetic" or not any(item[1] == "CNN" for item in planned):
            return
        try:
            environments.ensure_system_packages("datasets")
        except RuntimeError as error:
            print(f"[data] Debian data sets not installed, CNN notebooks fall back: {error}")

    def run(self):
        from tqdm import tqdm

        planned = self.plan()
        print(f"[run] {len(planned)} notebook(s), profile {self.arguments.profile}, data "
              f"{self.arguments.data}, on {self.hardware_label} ({self.accelerator}, "
              f"{self.threads} thread(s)); records: {relative(self.records_path)}")
        self.ensure_datasets(planned)
        selected = list({item[0].name: item[0] for item in planned}.values())
        for threads in sorted({item[4] for item in planned}):
            self.measure_peak(threads, selected)
        if not planned:
            if self.already_recorded:
                print("[run] everything selected is already recorded (--resume): nothing to run")
                self.regenerate()
                return 0
            print("[run] no notebook matches the selection: nothing ran")
            return 1
        interrupted = False
        failures = []
        # Rounds: every selected notebook once, then again, so that a drift of the machine spreads
        # over all frameworks instead of landing on the last ones.
        rounds = [(repeat, item) for repeat in range(1, self.arguments.repeat + 1) for item in planned]
        bar = tqdm(rounds, unit="notebook", dynamic_ncols=True)
        try:
            for repeat, (framework, task, variant, notebook, threads, settings) in bar:
                shown = "" if variant == DEFAULT_VARIANT else f" ({variant})"
                if task in THREAD_SWEEP_TASKS:
                    shown += f" · {threads} thread(s)"
                if settings:
                    shown += " · " + settings_text(settings)
                if self.arguments.repeat > 1:
                    shown += f" [{repeat}/{self.arguments.repeat}]"
                bar.set_description(f"{framework.title} {task}{shown}")
                self.repeat = repeat
                record = self.execute(framework, task, variant, notebook, threads, settings)
                line = self.summary_line(record)
                if record["status"] == "failed":
                    failures.append(line)
                tqdm.write(line)
        except KeyboardInterrupt:
            interrupted = True
            tqdm.write("[run] interrupted: finished records are kept")
        finally:
            bar.close()
            self.regenerate()
        self.print_overhead()
        if interrupted:
            return 130
        if failures:
            print(f"[run] {len(failures)} of {len(rounds)} notebook run(s) failed:")
            for line in failures:
                print("  " + line.replace("[run] ", "", 1))
            return 1
        return 0

    def print_overhead(self):
        """The runner's share of this run's wall time: what it spent around the notebooks' cells."""
        from common import records

        mine = [r for r in records.read_records(self.records_path) if r.get("run_id") == self.run_id]
        overhead = sum(r.get("runner_overhead_seconds") or 0 for r in mine)
        wall = sum(r.get("wall_seconds") or 0 for r in mine)
        if wall:
            print(f"[run] runner overhead: {overhead:.0f} s of {wall:.0f} s notebook wall time "
                  f"({100 * overhead / wall:.1f} %: interpreter, papermill and kernel start-up around the cells)")

    def import_records(self, source):
        """Append another machine's records that are not here yet, copying the executed notebooks
        and artifacts they name into this results folder, then regenerate the tables."""
        from common import records

        source = Path(source)
        records_file = source / "records.jsonl" if source.is_dir() else source
        known = {record_identity(record) for record in records.read_records(self.records_path)}
        added = 0
        for record in records.read_records(records_file):
            if record_identity(record) in known:
                continue
            record = dict(record)
            if record.get("notebook"):
                record["notebook"] = self.copy_result_file(records_file.parent, record["notebook"])
            if record.get("artifacts"):
                record["artifacts"] = {name: self.copy_result_file(records_file.parent, path)
                                       for name, path in record["artifacts"].items()}
            records.append_record(record, self.records_path)
            known.add(record_identity(record))
            added += 1
        print(f"[run] imported {added} record(s) from {records_file}")
        self.regenerate()
        return 0

    def copy_result_file(self, source_results, stored_path):
        """A path a record stores (…/notebooks/<hardware>/<profile>/<file>) is looked up under the
        other machine's results folder and copied to the same place under this one."""
        import shutil

        parts = Path(stored_path).parts
        if "notebooks" not in parts:
            return stored_path
        inner = Path(*parts[len(parts) - 1 - parts[::-1].index("notebooks"):])
        source, destination = Path(source_results) / inner, self.results / inner
        if not source.exists():
            return stored_path
        destination.parent.mkdir(parents=True, exist_ok=True)
        if source.resolve() != destination.resolve():
            shutil.copy2(source, destination)
        return relative(destination)

    def summary_line(self, record):
        from runner import report

        valid, why = report.validity(record)
        shown = report.cell_text(record).split(" [nb]")[0].replace("**", "")
        name = f"{record['framework']} {record['task']}"
        if record.get("variant", DEFAULT_VARIANT) != DEFAULT_VARIANT:
            name += f" ({record['variant']})"
        if record["task"] in THREAD_SWEEP_TASKS:
            name += f" on {record.get('hardware', {}).get('threads_pinned')} thread(s)"
        if record.get("settings"):
            name += " · " + settings_text(record["settings"])
        return f"[run] {name}: {record['status']}" + (f" · {shown}" if valid else f" · {why}")

    def regenerate(self):
        from runner.regenerate import regenerate

        regenerate(self.results, self.arguments.readme, self.arguments.notebooks_dir)


def main(argv=None):
    arguments = parse_arguments(sys.argv[1:] if argv is None else argv)
    if arguments.list:
        print_matrix(arguments.notebooks_dir, arguments.accelerator)
        return 0
    ensure_runner_environment(arguments)
    from runner import environments

    for variable, value in environments.runner_redirects().items():
        os.environ.setdefault(variable, value)
        Path(value).mkdir(parents=True, exist_ok=True)
    if arguments.self_test:
        return subprocess.call([sys.executable, "-m", "pytest", "-q", str(ROOT / "tests")],
                               cwd=ROOT)
    if arguments.import_records is not None or arguments.docs:
        arguments.accelerator = "cpu"  # nothing runs: the records carry their hardware
        runner = Runner(arguments)
        if arguments.docs:
            runner.regenerate()
            return 0
        return runner.import_records(arguments.import_records)
    if arguments.measure_install:
        return Runner(arguments).measure_install()
    return Runner(arguments).run()


if __name__ == "__main__":
    sys.exit(main())
