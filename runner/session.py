"""One session of run_all.py: the plan run in rounds (--repeat), the machine's peak measured once
per thread count, Debian's data sets installed when a CNN may use them, one summary line per run,
the runner's own overhead, and the tables regenerated at the end, even after a Ctrl-C. Also
--measure-install, which builds and measures environments instead of running notebooks."""
import datetime

from common.params import THREAD_SWEEP_TASKS
from runner.bootstrap import RUNNER_ENVIRONMENT
from runner.frameworks import DEFAULT_VARIANT, RUNNABLE
from runner.notebook_run import NotebookRunner
from runner.plan import plan_runs, settings_text
from runner.regenerate import regenerate, relative


class Session:
    def __init__(self, arguments):
        from common import probe

        self.arguments = arguments
        self.results = arguments.results_dir.resolve()
        self.records_path = self.results / "records.jsonl"
        self.accelerator = arguments.accelerator
        self.threads = arguments.threads or probe.physical_cores()
        hardware = probe.hardware(probe.nvidia_accelerator() if self.accelerator == "cuda" else None)
        self.hardware_label = probe.hardware_label(hardware)
        self.run_id = datetime.datetime.now().strftime("%Y%m%dT%H%M%S")
        self.notebooks = NotebookRunner(arguments, self.results, hardware, self.hardware_label, self.run_id)

    def regenerate(self):
        regenerate(self.results, self.arguments.readme, self.arguments.notebooks_dir)

    # -- before the notebooks

    def measure_peak(self, threads, frameworks):
        """The machine's peaks on `threads` pinned threads (common.peak: numpy's and the selected
        frameworks' own GEMMs over common.peak.GEMM_SIZES, and the theoretical peak), measured once
        per run and thread count (or shared with the runs of the test suite: runner.peaks.
        SHARED_VARIABLE), each in a fresh interpreter (the thread pools of this one are already
        sized). Smoke runs, never shown, take numpy's smallest product only. None on a GPU
        run: its speeds are held to no peak (runner.report.held_peak), and the GEMMs here would
        mix the host's CPU with the GPU (JAX's land on the GPU, in TF32)."""
        from common import peak
        from runner import peaks

        if self.accelerator == "cuda":
            self.notebooks.peaks[threads] = {}
            print("[run] no peak measured: the notebooks run on the GPU, whose speeds are held to none")
            return

        pythons = []
        if self.arguments.profile != "smoke":
            for framework in frameworks:
                try:
                    self.notebooks.kernel_for(framework)  # builds its environment when missing
                except Exception as error:  # its notebooks will record the failure
                    print(f"[run] {framework.title}'s GEMMs not measured: {error}")
                    continue
                if self.notebooks.pythons[framework.name] not in pythons:
                    pythons.append(self.notebooks.pythons[framework.name])
        found = peaks.shared_machine_peak(threads, pythons, peak.GEMM_SIZES[:1] if self.arguments.profile == "smoke" else None)
        self.notebooks.peaks[threads] = found
        for precision in ("fp32", "bf16"):
            if found.get(precision):
                print(f"[run] {precision} peak on {threads} thread(s): {found[precision]['gflops']} GFLOP/s "
                      f"({found[precision]['source']})")

    def ensure_datasets(self, planned):
        """Debian's data sets (envs/datasets.apt.txt: Fashion-MNIST, the CNN's stand-in for
        CIFAR-10) when a CNN notebook may use real data; without them the notebooks fall back."""
        from runner import environments

        if self.arguments.data == "synthetic" or not any(run.task == "CNN" for run in planned):
            return
        try:
            environments.ensure_system_packages("datasets")
        except RuntimeError as error:
            print(f"[data] Debian data sets not installed, CNN notebooks fall back: {error}")

    # -- the whole run

    def run(self):
        from tqdm import tqdm

        planned, already_recorded = plan_runs(self.arguments, self.threads, self.records_path, self.hardware_label)
        print(f"[run] {len(planned)} notebook(s), profile {self.arguments.profile}, data "
              f"{self.arguments.data}, on {self.hardware_label} ({self.accelerator}, "
              f"{self.threads} thread(s)); records: {relative(self.records_path)}")
        self.ensure_datasets(planned)
        selected = list({run.framework.name: run.framework for run in planned}.values())
        for threads in sorted({run.threads for run in planned}):
            self.measure_peak(threads, selected)
        if not planned:
            if already_recorded:
                print("[run] everything selected is already recorded (--resume): nothing to run")
                self.regenerate()
                return 0
            print("[run] no notebook matches the selection: nothing ran")
            return 1
        interrupted = False
        failures = []
        # Rounds: every selected notebook once, then again, so that a drift of the machine spreads
        # over all frameworks instead of landing on the last ones.
        # A run that cannot run here (runner.notebook_run's why_not_here: bf16 not native, no GPU
        # build) is recorded as skipped once, not once per round.
        rounds = [(repeat, run) for repeat in range(1, self.arguments.repeat + 1) for run in planned
                  if repeat == 1 or not self.notebooks.why_not_here(run.framework, run.variant)]
        bar = tqdm(rounds, unit="notebook", dynamic_ncols=True)
        try:
            for repeat, run in bar:
                shown = "" if run.variant == DEFAULT_VARIANT else f" ({run.variant})"
                if run.task in THREAD_SWEEP_TASKS:
                    shown += f" · {run.threads} thread(s)"
                if run.settings:
                    shown += " · " + settings_text(run.settings)
                if self.arguments.repeat > 1:
                    shown += f" [{repeat}/{self.arguments.repeat}]"
                bar.set_description(f"{run.framework.title} {run.task}{shown}")
                record = self.notebooks.execute(run, repeat)
                line = summary_line(record)
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

    # -- --measure-install

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
            self.notebooks.note_install_cost(environment, remeasure=True)
        self.regenerate()
        return 1 if failures else 0


def summary_line(record):
    """'[run] pytorch CNN: ok · 332 img/s', or the reason it does not count."""
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
