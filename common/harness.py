"""The harness of a notebook run: `harness.start` at the top of every notebook (it pins the threads
before the framework is imported and reads the task's parameters), then the run's GPU choice,
timer and `finish`, which writes the record (common.records: the record format)."""
import os

from common.records import append_record, make_record, now, show

# The environment variable the runner sets, to why bf16 is not native, for a bf16 run it lets the
# framework emulate (run_all.py --emulate-bf16).
EMULATED_BF16 = "ROSETTA_EMULATED_BF16"


class Run:
    """The harness of one notebook run, so that the notebook itself shows only its framework:

        run = harness.start(FRAMEWORK, TASK, profile, variant, threads, record_path)  # first
        params = run.params
        ...
        on_gpu = run.use_gpu(device, framework_sees_a_gpu)
        timer = run.timer(sync=...)
        ...
        run.finish(dataset, metrics, checks, threads=what_the_framework_reports)
    """

    def __init__(self, framework, task, profile, variant="default", threads=0, record_path=None, **settings):
        from common import frameworks, params, probe

        valid = frameworks.variants(framework, task)
        if variant not in valid:
            raise ValueError(f"unknown variant {variant!r} for {framework} {task}; valid: {', '.join(valid)}")
        self.framework, self.task, self.profile, self.variant = framework, task, profile, variant
        self.title = frameworks.TITLES[framework]
        self.record_path = record_path
        # Set by the runner (--emulate-bf16) where the framework only emulates bf16: a short run for the checks.
        self.emulated = os.environ.get(EMULATED_BF16) if frameworks.precision(variant) != "fp32" else None
        cores = probe.physical_cores()  # before pin_threads narrows what this process may use
        self.threads = probe.pin_threads(threads)
        self.params, short = params.run_params(task, profile, variant, self.threads, cores, self.emulated, **settings)
        self.on_gpu = False
        self.started_at = now()
        print(f"{framework} · {task} · {variant} · profile {profile} · {self.threads} thread(s)")
        if self.emulated:
            print(f"{self.emulated}: emulated, a short run for the checks only")
        elif short:
            print(f"smoke run of variant {variant}: a short run for the checks only")
        print(self.params)

    def use_gpu(self, device, gpu_found):
        """Whether to run on the GPU (`probe.use_gpu`: 'cuda' without one stops with a clear message);
        the record then describes the GPU, as nvidia-smi names it."""
        from common import probe

        self.on_gpu = probe.use_gpu(device, gpu_found, self.title)
        return self.on_gpu

    def timer(self, sync=None, **settings):
        """The task's Timer: warm-up steps and total steps from the parameters (an Inference run's
        batches, or every epoch's full batches); `settings` override them (e.g. window_steps=1)."""
        from common.timing import Timer

        params = self.params
        defaults = {"warmup_steps": params.get("warmup_steps", params.get("warmup_batches", 0))}
        if "n_batches" in params:
            defaults["total_steps"] = params["n_batches"]
        elif "train_steps" in params:
            defaults["total_steps"] = params["train_steps"]
        elif {"epochs", "n_train", "batch_size"} <= set(params):
            defaults["total_steps"] = params["epochs"] * (params["n_train"] // params["batch_size"])
        return Timer(sync=sync, **dict(defaults, **settings))

    def time_forward(self, forward, x, sync=None, wait=None):
        """FCN5's forward-only timing, as DLBench timed it: `forward(batch)` on warmup_steps +
        forward_batches consecutive mini-batches of x, one timer window each; `wait(output)` (JAX's
        block_until_ready) or `sync()` (a GPU stream) makes each batch's time its own. Returns the
        record's forward_* metrics."""
        timer = self.timer(sync=sync, window_steps=1)
        batch_size = self.params["batch_size"]
        with timer.running():
            for start in range(0, (self.params["warmup_steps"] + self.params["forward_batches"]) * batch_size, batch_size):
                output = forward(x[start:start + batch_size])
                if wait:
                    wait(output)
                timer.step(batch_size)
        return timer.summary(unit="images", prefix="forward_")

    def finish(self, dataset, metrics, checks=None, threads=None, notes=None, **versions):
        """Write the record and print it: the data kind and source from `dataset`; the hardware from
        the probe (the GPU when `use_gpu` chose one; `threads` as the framework reports them); the
        version of every framework the process has loaded, plus `versions`. The task's quality
        target for this profile and data set goes into the checks beside the accuracy; the epoch losses
        of a task with a reference trajectory (FCN5) are held against the float32 numpy run of the same
        training (`reference.train_trajectory`)."""
        from common import frameworks, params, probe, reference

        checks = dict(checks or {})
        if self.task in reference.TRAJECTORY_TASKS:
            checks.update(reference.train_trajectory(self.task, self.params, dataset, metrics["epoch_losses"],
                                                     frameworks.precision(self.variant)))
        if self.task == "GPT":
            from common import ngrams

            # The yardsticks of its validation loss, on the same validation text.
            metrics = dict(metrics, baseline_losses=ngrams.baselines(dataset.x_train, dataset.x_valid,
                                                                     len(dataset.vocabulary)))
            print("n-gram baselines (nats per character):",
                  ", ".join(f"{name} {loss:.3f}" for name, loss in metrics["baseline_losses"].items()))
        target = params.quality_target(self.task, self.profile, dataset.source)
        if target is not None and self.params.get("accuracy_run", True):
            metric, _ = params.quality_metric(self.task)
            checks["quality_target"] = target
            checks["quality_met"] = bool(params.meets_target(self.task, metrics.get(metric, float("nan")), target))
        hardware = dict(probe.hardware(probe.nvidia_accelerator() if self.on_gpu else None,
                                       threads=self.threads if threads is None else threads),
                        threads_pinned=self.threads)
        if frameworks.precision(self.variant) != "fp32":
            # Where the hardware lacks it the framework emulates bf16: the checks hold, the speed is not
            # the hardware's (runner.verdict shows no figure for it).
            hardware["bf16_native"], _ = probe.bf16_native("cuda" if self.on_gpu else "cpu")
        record = make_record(
            framework=self.framework, task=self.task, variant=self.variant, profile=self.profile,
            data=dataset.data, data_source=dataset.source, hardware=hardware,
            versions=probe.versions(**versions), params=self.params, metrics=metrics, checks=checks,
            started_at=self.started_at, notes=notes)
        if self.record_path:
            append_record(record, self.record_path)
        return show(record)


def start(framework, task, profile, variant="default", threads=0, record_path=None, **settings):
    """Check the variant, read the task's parameters (with `settings` added), pin the threads
    (before the framework is imported) and stamp the start."""
    return Run(framework, task, profile, variant, threads, record_path, **settings)
