"""What every plain loop shares, and nothing more: the task's sizes from `common.params`, threads
pinned the way the notebooks pin them, synthetic tensors, a clock, and one JSON line out.

A plain loop is the yardstick of issue 11: the notebook's model, batch and optimiser, trained (or
run forward) on random tensors of the same shapes by the shortest loop the framework's performance
guide advises, with no timer windows, records, parity or data loading around it. Where the
framework ships the model itself, the loop takes that one rather than a copy of the notebook's, so
that it does not inherit the notebook's choices (issue 25): ResNet-50 from keras.applications, the
Gluon model zoo (exported for the Module API), Chainer's L.ResNet50Layers and paddle.vision. Run as

    python benchmarks/loops/<framework>.py TASK [--profile quick] [--threads N]

it prints {"task": …, "unit": …, "items_per_second": …, "steps": …, "seconds": …} on its last line.
Given several tasks, it runs them one after another in the one process, a line each: the tests'
check that every loop of a framework runs, paying the framework's import once (a measurement names
one task, in a fresh process).
`benchmarks/plain_loops.py` runs every loop in its framework's environment and compares.
"""
import argparse
import json
import sys
import time
from pathlib import Path

LOOPS_DIR = Path(__file__).resolve().parent
# The repository root first, for `common`; this folder out: a loop is named after its framework
# (tensorflow.py), and with its folder on the path `import tensorflow` would import the loop itself.
sys.path[:] = [str(LOOPS_DIR.parents[1])] + [entry for entry in sys.path if Path(entry or ".").resolve() != LOOPS_DIR]

import numpy as np  # noqa: E402

from common import params as task_params  # noqa: E402
from common import probe  # noqa: E402

UNITS = {"CNN": "images", "Inference": "images", "RNN": "sequences", "FCN5": "images", "GPT": "tokens"}
# Distinct synthetic batches a loop cycles through: enough that no cache holds one batch's
# activations from the step before, few enough to build in a moment.
N_BATCHES = 4


class Loop:
    def __init__(self, tasks, profile, threads, steps=None, bf16=False):
        self.tasks, self.profile, self.steps, self.bf16 = tuple(tasks), profile, steps, bf16
        # One dict for the whole process: a loop script binds it once (`params = loop.params`).
        self.params = {}
        self.threads = threads
        self.select(self.tasks[0])

    def select(self, task):
        """Make `task` the current one: its name, unit and parameters."""
        self.task, self.unit = task, UNITS[task]
        self.params.clear()
        self.params.update(task_params.get_params(task, self.profile))

    def run(self, loops):
        """Run each asked task's loop, `loops[task]()`, one after another."""
        for task in self.tasks:
            self.select(task)
            loops[task]()

    @property
    def warmup_steps(self):
        if self.steps:
            return 1
        return self.params["warmup_batches" if self.task == "Inference" else "warmup_steps"]

    @property
    def timed_steps(self):
        """As many steady steps as the notebook times under the same profile."""
        if self.steps:
            return self.steps
        if self.task == "Inference":
            return self.params["n_batches"]
        if self.task == "GPT":
            return self.params["train_steps"] - self.params["warmup_steps"]
        per_epoch = self.params["n_train"] // self.params["batch_size"]
        return self.params["epochs"] * per_epoch - self.params["warmup_steps"]

    @property
    def batch_size(self):
        return self.params["batch_size"]

    @property
    def items_per_step(self):
        """What a step's rate counts: its examples, or GPT's tokens (batch × context)."""
        return self.batch_size * (self.params["block_size"] if self.task == "GPT" else 1)

    def windows(self, dtype=np.int64):
        """GPT: N_BATCHES batches of random token windows and their next tokens, two arrays."""
        shape = (N_BATCHES * self.batch_size, self.params["block_size"] + 1)
        tokens = np.random.default_rng(3).integers(0, self.params["vocabulary_size"], shape).astype(dtype)
        return tokens[:, :-1].copy(), tokens[:, 1:].copy()

    def images(self, layout="NCHW", dtype=np.float32):
        """N_BATCHES batches of random images (CNN, Inference) or flat vectors (FCN5), one array."""
        shape = (self.params["layer_sizes"][0],) if self.task == "FCN5" else self.params["image_shape"]
        if layout == "NHWC" and len(shape) == 3:
            shape = (shape[1], shape[2], shape[0])
        rng = np.random.default_rng(0)
        return rng.random((N_BATCHES * self.batch_size, *shape), dtype=np.float32).astype(dtype)

    def labels(self, dtype=np.int64):
        n_classes = self.params["layer_sizes"][-1] if self.task == "FCN5" else self.params["n_classes"]
        return np.random.default_rng(1).integers(0, n_classes, N_BATCHES * self.batch_size).astype(dtype)

    def tokens(self, dtype=np.int32):
        shape = (N_BATCHES * self.batch_size, self.params["sequence_length"])
        return np.random.default_rng(2).integers(0, self.params["vocabulary_size"], shape).astype(dtype)

    def batch(self, step, *arrays):
        """Batch `step` (cycling) of each array."""
        start = (step % N_BATCHES) * self.batch_size
        chosen = tuple(array[start:start + self.batch_size] for array in arrays)
        return chosen if len(chosen) > 1 else chosen[0]

    def measure(self, step, sync=None):
        """Run `step(i)` for the warm-up steps, then time the steady ones; `sync(result)` waits
        for an asynchronous framework to finish the last step (JAX, TensorFlow, MXNet)."""
        sync = sync or (lambda result: None)
        result = None
        for index in range(self.warmup_steps):
            result = step(index)
        sync(result)
        start = time.perf_counter()
        for index in range(self.warmup_steps, self.warmup_steps + self.timed_steps):
            result = step(index)
        sync(result)
        return self.report(self.timed_steps * self.items_per_step, time.perf_counter() - start)

    def measure_call(self, warm_up, timed):
        """For loops the framework runs itself (Keras `fit`, MXNet Module `fit`): `warm_up()` runs
        the warm-up steps, `timed()` the steady ones."""
        warm_up()
        start = time.perf_counter()
        timed()
        return self.report(self.timed_steps * self.items_per_step, time.perf_counter() - start)

    def report(self, items, seconds):
        result = {"task": self.task, "profile": self.profile, "threads": self.threads, "unit": self.unit,
                  **({"variant": "bf16"} if self.bf16 else {}),
                  "items_per_second": items / seconds, "steps": self.timed_steps, "seconds": seconds}
        print(json.dumps(result), flush=True)
        return result


def start(tasks, bf16_tasks=()):
    """Parse the command line, pin the threads (before the framework is imported, as
    `harness.start` does in the notebooks) and return the Loop. `bf16_tasks`: the tasks whose loop
    also runs in the framework's bf16 idiom (--bf16), beside a notebook's bf16 variant."""
    parser = argparse.ArgumentParser(description="One plain loop of a framework (see benchmarks/loops/clock.py).")
    parser.add_argument("task", nargs="+", choices=tasks, help="one task, or several run one after another")
    parser.add_argument("--profile", default="quick", choices=task_params.PROFILES)
    parser.add_argument("--threads", type=int, default=0, help="CPU threads; 0: every core this process may use")
    parser.add_argument("--steps", type=int, help="time this many steps after one warm-up step (the tests' check "
                        "that the loop runs; not a measurement)")
    parser.add_argument("--bf16", action="store_true",
                        help=f"the framework's bf16 idiom (for {', '.join(bf16_tasks) or 'no task'} of this loop)")
    arguments = parser.parse_args()
    for task in arguments.task if arguments.bf16 else ():
        if task not in bf16_tasks:
            parser.error(f"--bf16: this framework's {task} loop has no bf16 form")
    return Loop(arguments.task, arguments.profile, probe.pin_threads(arguments.threads), arguments.steps,
                arguments.bf16)
