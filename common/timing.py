"""Honest timing, one protocol for every notebook.

- Data sits in memory; batches are gathered by index (common.batches); nothing inside the timed
  steps waits for the host (no `.item()`, no per-step metric, no syncing callback).
- The first `warmup_steps` steps (compilation, autotuning, first-touch allocation) are timed apart
  from the steady state.
- The steady steps are cut into windows of (steady steps) / (WINDOWS + 1) steps, so that at least
  WINDOWS of them close even when steps are counted several at a time and an epoch's last batch of
  steps falls short (Keras' `steps_per_execution`); the device is synchronised at each window's end
  (a handful of syncs a run) and each window's rate is kept, so a record carries its own spread.

    timer = Timer(warmup_steps=params["warmup_steps"], total_steps=epochs * n_batches,
                  sync=torch.cuda.synchronize)
    for epoch in range(params["epochs"]):
        with timer.running():            # only what runs inside is timed (not evaluation)
            for index in batches:
                train_step(x[index], y[index])
                timer.step(len(index))    # counts items; syncs at window ends only
    timer.summary("images")

Where every step is long enough that one sync per step costs nothing (FCN5: a mini-batch of about
90 GFLOP), `Timer(warmup_steps=3, window_steps=1)` keeps one window per step, and the summary's
`seconds_per_step` is then the median mini-batch time.
"""
import contextlib
import statistics
import time

WINDOWS = 5


class Timer:
    def __init__(self, warmup_steps=0, sync=None, total_steps=None, windows=WINDOWS, window_steps=None):
        if warmup_steps < 0:
            raise ValueError("warmup_steps must be >= 0")
        if window_steps is not None and window_steps < 1:
            raise ValueError("window_steps must be >= 1")
        self.warmup_steps = warmup_steps
        self.sync = sync or (lambda: None)
        steady = None if total_steps is None else max(1, total_steps - warmup_steps)
        self.window_steps = window_steps or (None if steady is None else max(1, steady // (windows + 1)))
        self.steps = 0
        self.items = 0
        self.steady_items = 0
        self.total_seconds = 0.0
        self.cpu_seconds = 0.0  # CPU time of every thread of this process while timed
        self.warmup_seconds = 0.0
        self.steady_seconds = 0.0
        self.window_rates = []
        self.window_step_seconds = []  # each window's seconds per step
        self.warmup_steps_done = 0  # warm-up ends after the call that reaches warmup_steps
        self.call_overhead_seconds = 0.0  # see enclosing_call
        self._window = [0, 0, 0.0]  # steps, items, seconds of the open window
        self._start = None
        self._steady_start = None
        self._window_start = None
        self._cpu_start = None

    @contextlib.contextmanager
    def running(self):
        """Time the enclosed block; steady-state time starts once warm-up is over."""
        self.start()
        try:
            yield self
        finally:
            self.stop()

    def start(self):
        """Start timing: `running()`'s entry, for a framework that runs the loop itself and calls
        back when its first step begins (Keras' on_train_begin)."""
        self.sync()
        self._cpu_start = time.process_time()
        self._start = time.perf_counter()
        steady = self.steps >= self.warmup_steps
        self._steady_start = self._window_start = self._start if steady else None

    def stop(self):
        """Stop timing: `running()`'s exit (Keras' on_train_end)."""
        self.sync()
        end = time.perf_counter()
        self.cpu_seconds += time.process_time() - self._cpu_start
        self.total_seconds += end - self._start
        if self._steady_start is not None:
            self.steady_seconds += end - self._steady_start
            self._window[2] += end - self._window_start
        self._start = None

    @contextlib.contextmanager
    def enclosing_call(self):
        """Around a call that starts and stops the timer itself (Keras' `fit` with a callback):
        whatever the call does before its first step and after its last (building and tearing
        down its input pipeline) is kept apart, in the summary's `call_overhead_seconds`."""
        timed_before, started = self.total_seconds, time.perf_counter()
        try:
            yield self
        finally:
            self.call_overhead_seconds += time.perf_counter() - started - (self.total_seconds - timed_before)

    def step(self, n_items, n_steps=1):
        """Count `n_steps` finished steps of `n_items` items in all (images, sequences)."""
        if self._start is None:
            raise RuntimeError("Timer.step() called outside `with timer.running():`")
        in_warmup = self.steps < self.warmup_steps
        self.steps += n_steps
        self.items += n_items
        if in_warmup:
            if self.steps >= self.warmup_steps:
                self.warmup_steps_done = self.steps
                self.sync()
                now = time.perf_counter()
                self.warmup_seconds += now - self._start
                self._steady_start = self._window_start = now
            return
        self.steady_items += n_items
        window = self._window
        window[0] += n_steps
        window[1] += n_items
        if self.window_steps and window[0] >= self.window_steps:
            self.sync()
            now = time.perf_counter()
            seconds = window[2] + now - self._window_start
            self.window_rates.append(window[1] / seconds)
            self.window_step_seconds.append(seconds / window[0])
            self._window = [0, 0, 0.0]
            self._window_start = now

    def summary(self, unit="items", prefix=""):
        """Metrics with units in their names, ready for the record: the steady rate over all
        steady steps, the rate of each window, and the median of the windows' seconds per step.
        `prefix` names a second timer's metrics apart (e.g. "forward_")."""
        rate = self.steady_items / self.steady_seconds if self.steady_seconds > 0 else None
        metrics = {
            "timed_seconds": self.total_seconds,
            "warmup_seconds": self.warmup_seconds,
            "steady_seconds": self.steady_seconds,
            "steps": self.steps,
            "warmup_steps": self.warmup_steps_done if self.warmup_steps_done else min(self.warmup_steps, self.steps),
            f"{unit}_per_second": rate,
            f"{unit}_per_second_windows": list(self.window_rates),
            "seconds_per_step": statistics.median(self.window_step_seconds) if self.window_step_seconds else None,
            "seconds_per_step_windows": list(self.window_step_seconds),
            # Cores kept busy on average: above the pinned threads, the pinning did not hold.
            "cpus_busy": self.cpu_seconds / self.total_seconds if self.total_seconds > 0 else None,
        }
        if self.call_overhead_seconds:
            metrics["call_overhead_seconds"] = self.call_overhead_seconds
        return {prefix + name: value for name, value in metrics.items()}


def median_seconds(function, repeats=3, sync=None):
    """Median wall time of `function()` over `repeats` calls, device synchronised each time."""
    sync = sync or (lambda: None)
    durations = []
    for _ in range(repeats):
        sync()
        start = time.perf_counter()
        function()
        sync()
        durations.append(time.perf_counter() - start)
    return statistics.median(durations)
