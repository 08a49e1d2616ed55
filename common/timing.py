"""Honest timing: warm-up steps counted apart, the device synchronised before the clock is read.

    timer = Timer(warmup_steps=params["warmup_steps"], sync=torch.cuda.synchronize)
    for epoch in range(params["epochs"]):
        with timer.running():            # only what runs inside is timed (not evaluation)
            for x, y in batches:
                train_step(x, y)
                timer.step(len(x))        # counts items; syncs once, at the end of warm-up
    timer.summary()
"""
import contextlib
import statistics
import time


class Timer:
    def __init__(self, warmup_steps=0, sync=None):
        if warmup_steps < 0:
            raise ValueError("warmup_steps must be >= 0")
        self.warmup_steps = warmup_steps
        self.sync = sync or (lambda: None)
        self.steps = 0
        self.items = 0
        self.steady_items = 0
        self.total_seconds = 0.0
        self.warmup_seconds = 0.0
        self.steady_seconds = 0.0
        self._start = None
        self._steady_start = None

    @contextlib.contextmanager
    def running(self):
        """Time the enclosed block; steady-state time starts once warm-up is over."""
        self.sync()
        self._start = time.perf_counter()
        self._steady_start = self._start if self.steps >= self.warmup_steps else None
        try:
            yield self
        finally:
            self.sync()
            end = time.perf_counter()
            self.total_seconds += end - self._start
            if self._steady_start is not None:
                self.steady_seconds += end - self._steady_start
            self._start = None

    def step(self, n_items):
        """Count one step of `n_items` items (images, sequences)."""
        if self._start is None:
            raise RuntimeError("Timer.step() called outside `with timer.running():`")
        self.steps += 1
        self.items += n_items
        if self.steps <= self.warmup_steps:
            if self.steps == self.warmup_steps:
                self.sync()
                now = time.perf_counter()
                self.warmup_seconds += now - self._start
                self._steady_start = now
        else:
            self.steady_items += n_items

    def summary(self, unit="items"):
        """Metrics with units in their names, ready for the record."""
        rate = self.steady_items / self.steady_seconds if self.steady_seconds > 0 else None
        return {
            "total_seconds": self.total_seconds,
            "warmup_seconds": self.warmup_seconds,
            "steady_seconds": self.steady_seconds,
            "steps": self.steps,
            "warmup_steps": min(self.warmup_steps, self.steps),
            f"{unit}_per_second": rate,
        }


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
