"""Notebook against plain loop (issue 11): which loop is each framework's yardstick, where its
results are kept (results/plain_loops.jsonl, one JSON object per loop run, appended by
`benchmarks/plain_loops.py`), and the ratio table the README shows."""
import os
import statistics
from pathlib import Path

from runner.frameworks import RUNNABLE
from common.paths import REPOSITORY_ROOT
from common.probe import hardware_label
from common.records import append_record, read_records
from runner import environments, report

FILE_NAME = "plain_loops.jsonl"
LOOPS_DIR = Path(__file__).resolve().parent.parent / "benchmarks" / "loops"
# framework: (loop script under benchmarks/loops, environment variables it runs with).
LOOPS = {
    "pytorch": ("pytorch.py", {}),
    "tensorflow": ("tensorflow.py", {}),
    "keras_tf": ("keras.py", {"KERAS_BACKEND": "tensorflow"}),
    "keras_jax": ("keras.py", {"KERAS_BACKEND": "jax"}),
    "keras_torch": ("keras.py", {"KERAS_BACKEND": "torch"}),
    "jax_flax": ("jax_flax.py", {}),
    "onnxruntime": ("onnxruntime.py", {}),
    "gluon": ("gluon.py", {}),
    "mxnet": ("mxnet_module.py", {}),
    "chainer": ("chainer.py", {}),
    "paddle": ("paddle.py", {}),
    "lasagne": ("lasagne.py", {}),
    "keras_theano": ("keras_theano.py", {}),
}
# Frameworks measured against another's loop: R's Keras runs Python Keras 3 on TensorFlow.
SAME_LOOP_AS = {"keras_r": "keras_tf"}
# Tasks no plain loop stands for, and why.
NO_LOOP_TASKS = {
    "MultiGPU": "its timed loop is the input pipeline (PNG decoding, crops) and DenseNet-121 together, "
                "by design of the 2018 task; the devices table compares each framework with itself",
}
UNIT_RATES = {"CNN": "images_per_second", "Inference": "images_per_second",
              "RNN": "sequences_per_second", "FCN5": "images_per_second", "GPT": "tokens_per_second"}
# Below this share of its plain loop a notebook's row in the lessons must say why (issue 11).
TARGET_RATIO = 0.9


def planned(frameworks=None, tasks=None):
    """(framework, task) pairs that have a loop of their own, in registry order."""
    pairs = []
    for name, framework in RUNNABLE.items():
        if name not in LOOPS or (frameworks and name not in frameworks):
            continue
        pairs += [(name, task) for task in framework.tasks
                  if task not in NO_LOOP_TASKS and (not tasks or task in tasks)]
    return pairs


def loop_command(framework, task, python, profile, threads, steps=None):
    """(command, environment) that run one plain loop from the repository root (`task`: a task, or
    a list of them run one after another in one process); `steps` times that many steps after one
    warm-up step (the tests' check that a loop runs, not a measurement)."""
    script, variables = LOOPS[framework]
    tasks = [task] if isinstance(task, str) else list(task)
    command = [str(python), str(LOOPS_DIR / script), *tasks, "--profile", profile, "--threads", str(threads)]
    if steps:
        command += ["--steps", str(steps)]
    env = dict(os.environ, **environments.home_redirects(), **environments.bytecode_variables(python),
               **environments.compile_cache_variables(), **variables,
               PYTHONPATH=str(REPOSITORY_ROOT))
    return command, env


def read(results):
    return read_records(Path(results) / FILE_NAME)


def append(results, entry):
    append_record(entry, Path(results) / FILE_NAME)


def loop_key(entry):
    return (entry["framework"], entry["task"], entry["profile"], hardware_label(entry["hardware"]),
            entry["hardware"].get("threads_pinned"))


def latest_loops(entries):
    """{loop_key: (median items/s, [rates])} over the newest sitting (`sitting` id) of each key."""
    newest = {}
    for entry in entries:
        if entry.get("status") != "ok":
            continue
        key = loop_key(entry)
        if key not in newest or entry["sitting"] > newest[key][0]:
            newest[key] = (entry["sitting"], [])
        if entry["sitting"] == newest[key][0]:
            newest[key][1].append(entry["items_per_second"])
    return {key: (statistics.median(rates), rates) for key, (_, rates) in newest.items()}


def notebook_rate(record):
    """The notebook's steady rate (median of its run's repeats, as the tables show it)."""
    metrics = record.get("metrics", {})
    if record["task"] == "FCN5":  # the table's figure is the median mini-batch; as a rate
        seconds = report._number(metrics.get("seconds_per_step"))
        return record["params"]["batch_size"] / seconds if seconds else None
    return report._number(metrics.get(UNIT_RATES[record["task"]]))


def ratio_rows(records, entries):
    """One row per default-variant notebook cell that has a plain loop on the same machine,
    threads and profile: (framework, task, machine label, notebook rate, loop rate, ratio, valid)."""
    loops = latest_loops(entries)
    rows = []
    for task, task_cells in report.latest_by_cell(records).items():
        for record in task_cells.values():
            if not report.is_default_variant(record) or task not in UNIT_RATES:
                continue
            framework = record["framework"]
            hardware = record.get("hardware", {})
            key = (SAME_LOOP_AS.get(framework, framework), task, record["profile"], hardware_label(hardware),
                   hardware.get("threads_pinned"))
            if key not in loops:
                continue
            rate, loop = notebook_rate(record), loops[key][0]
            rows.append({"framework": framework, "task": task, "machine": key[3], "threads": key[4],
                         "profile": key[2], "notebook": rate, "loop": loop,
                         "ratio": rate / loop if rate and loop else None, "valid": report.validity(record)[0]})
    order = {name: index for index, name in enumerate(RUNNABLE)}
    tasks = list(UNIT_RATES)
    return sorted(rows, key=lambda row: (row["machine"], tasks.index(row["task"]), row["threads"] or 0,
                                         order.get(row["framework"], 99)))


def markdown(records, entries):
    rows = ratio_rows(records, entries)
    if not rows:
        return ""
    lines = ["### Each notebook against its framework's plain loop",
             "",
             "The notebook's steady rate divided by that of a plain loop of the same model, batch and "
             "optimiser in the same framework and environment (`benchmarks/loops/`: random tensors, "
             "the framework's documented fast path, no harness), run by `python3 benchmarks/plain_loops.py` "
             f"on the same machine, threads and profile. Below {TARGET_RATIO:.0%} the lessons say why. "
             "R's Keras is held against Python Keras on TensorFlow, which it drives.",
             "",
             "| task | framework | threads | notebook | plain loop | notebook / loop | machine |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for row in rows:
        unit = {"RNN": "seq/s", "GPT": "tok/s"}.get(row["task"], "img/s")
        ratio = "—" if row["ratio"] is None else f"{row['ratio']:.2f}" + ("" if row["ratio"] >= TARGET_RATIO else " ⚠")
        notebook = "—" if row["notebook"] is None else f"{row['notebook']:.4g} {unit}"
        if not row["valid"]:
            notebook += " (invalid run)"
        lines.append(f"| {row['task']} | {RUNNABLE[row['framework']].title} | {row['threads']} | {notebook} | "
                     f"{row['loop']:.4g} {unit} | {ratio} | {row['machine']} |")
    return "\n".join(lines)
