import pytest

from common import timing


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_warmup_is_excluded_from_the_steady_state(monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(timing.time, "perf_counter", clock)
    syncs = []
    timer = timing.Timer(warmup_steps=2, sync=lambda: syncs.append(clock.now))
    for epoch in range(2):
        with timer.running():
            for step in range(4):
                # The first two steps are slow (compilation, autotuning), the rest take 1 s.
                clock.now += 5.0 if timer.steps < 2 else 1.0
                timer.step(10)
        clock.now += 100.0  # evaluation between epochs is not timed
    summary = timer.summary(unit="images")
    assert summary["timed_seconds"] == 16.0
    assert summary["warmup_seconds"] == 10.0
    assert summary["steady_seconds"] == 6.0
    assert summary["images_per_second"] == 60 / 6.0
    assert summary["steps"] == 8 and summary["warmup_steps"] == 2
    # Synchronised when each epoch starts and ends, and once at the end of warm-up.
    assert len(syncs) == 5


def test_steady_steps_are_cut_into_windows_with_their_own_rates(monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(timing.time, "perf_counter", clock)
    syncs = []
    # 2 warm-up steps, 10 of the 12 steady steps planned, over two epochs (5 and 7 steps):
    # windows of 12 // 6 = 2 steps.
    timer = timing.Timer(warmup_steps=2, total_steps=14, sync=lambda: syncs.append(clock.now))
    durations = iter([5.0, 5.0, 1.0, 1.0, 1.0, 2.0, 1.0, 1.0, 2.0, 2.0, 1.0, 1.0])
    for steps in (5, 7):
        with timer.running():
            for step in range(steps):
                clock.now += next(durations)
                timer.step(10)
        clock.now += 100.0  # evaluation: outside every window
    summary = timer.summary(unit="images")
    assert timer.window_steps == 2
    # The second window straddles the two epochs (1 s before, 2 s after the evaluation).
    assert summary["images_per_second_windows"] == [10.0, 20 / 3.0, 10.0, 5.0, 10.0]
    assert summary["images_per_second"] == 100 / 13.0
    # Two syncs per epoch, one at the end of warm-up, one per window end.
    assert len(syncs) == 4 + 1 + 5


def test_several_steps_counted_at_once_end_the_warm_up_and_the_windows():
    timer = timing.Timer(warmup_steps=3, total_steps=27)
    with timer.running():
        timer.step(40, n_steps=4)      # one execution of 4 steps ends the warm-up
        for _ in range(5):
            timer.step(40, n_steps=4)  # each execution closes a window of 24 // 6 = 4 steps
    assert timer.window_steps == 4 and len(timer.window_rates) == 5
    assert timer.summary()["warmup_steps"] == 4 and timer.steady_items == 200


def test_no_steady_state_when_everything_was_warm_up():
    timer = timing.Timer(warmup_steps=5)
    with timer.running():
        timer.step(1)
    assert timer.summary()["items_per_second"] is None


def test_step_outside_running_is_an_error():
    with pytest.raises(RuntimeError, match="outside"):
        timing.Timer().step(1)


def test_median_seconds_synchronises_every_repeat(monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(timing.time, "perf_counter", clock)
    durations = iter([3.0, 1.0, 2.0])
    syncs = []

    def work():
        clock.now += next(durations)

    assert timing.median_seconds(work, repeats=3, sync=lambda: syncs.append(1)) == 2.0
    assert len(syncs) == 6


def test_one_window_per_step_keeps_every_step_and_their_median(monkeypatch):
    """FCN5's timer: window_steps=1 keeps each steady step's seconds; the summary's
    seconds_per_step is their median (a slow outlier does not move it), and a prefix keeps a second
    timer's metrics apart."""
    clock = FakeClock()
    monkeypatch.setattr(timing.time, "perf_counter", clock)
    timer = timing.Timer(warmup_steps=1, window_steps=1)
    with timer.running():
        for seconds in (9.0, 1.0, 1.2, 5.0, 1.1):
            clock.now += seconds
            timer.step(4)
    summary = timer.summary(unit="images", prefix="forward_")
    assert summary["forward_seconds_per_step_windows"] == pytest.approx([1.0, 1.2, 5.0, 1.1])
    assert summary["forward_seconds_per_step"] == pytest.approx(1.15)
    assert summary["forward_images_per_second"] == pytest.approx(16 / 8.3)
    assert summary["forward_warmup_seconds"] == 9.0
    with pytest.raises(ValueError):
        timing.Timer(window_steps=0)


def test_the_cores_a_run_kept_busy_are_measured(monkeypatch):
    """CPU time of the whole process over wall time while timed: 2 cores busy for 3 s reads 2.0."""
    clock, cpu = FakeClock(), FakeClock()
    monkeypatch.setattr(timing.time, "perf_counter", clock)
    monkeypatch.setattr(timing.time, "process_time", cpu)
    timer = timing.Timer(warmup_steps=0, window_steps=1)
    with timer.running():
        for _ in range(3):
            clock.now += 1.0
            cpu.now += 2.0
            timer.step(1)
    cpu.now += 50.0  # not timed
    assert timer.summary()["cpus_busy"] == pytest.approx(2.0)


def test_a_call_that_runs_the_loop_itself_keeps_its_set_up_and_teardown_apart(monkeypatch):
    """Keras' fit: the callback starts the timer at the first step and stops it after the last;
    the 2 s before and 3 s after (input pipeline built and torn down) are call overhead, never
    steady time."""
    clock = FakeClock()
    monkeypatch.setattr(timing.time, "perf_counter", clock)
    timer = timing.Timer(warmup_steps=1, window_steps=1)
    for _ in range(2):  # two fit calls, one per epoch
        with timer.enclosing_call():
            clock.now += 2.0
            timer.start()
            for _ in range(2):
                clock.now += 1.0
                timer.step(8)
            timer.stop()
            clock.now += 3.0
    summary = timer.summary(unit="images")
    assert summary["timed_seconds"] == pytest.approx(4.0)
    assert summary["call_overhead_seconds"] == pytest.approx(10.0)
    assert summary["images_per_second"] == pytest.approx(24 / 3.0)
    assert "call_overhead_seconds" not in timing.Timer().summary()
