"""Beyond one machine, as printed: the multi-node commands of the MultiGPU notebooks' closing
sections run through run_all.py --nodes 2, as two nodes on localhost (runner.nodes), smoke sizes:
the run across nodes trains the same model as one process (the data-parallel check spans every
process of both nodes), and a node killed mid-run stops the other with a clear error."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from common import records
from runner import nodes, report
from runner.frameworks import notebook_name, RUNNABLE

from test_notebooks import UNOPTIMISED_XLA

ROOT = Path(__file__).resolve().parent.parent
# The frameworks whose closing section prints commands that run as they stand.
MULTI_NODE = ("pytorch", "tensorflow", "jax_flax")
# A line of node 0's log printed when training has begun (and its collectives not yet ended), for
# the framework whose run is killed: PyTorch's, the quickest (TensorFlow's and JAX's spend minutes
# compiling DenseNet-121 at smoke size on two cores).
TRAINING_BEGUN = {"pytorch": "parameters:"}
# JAX's nodes compile DenseNet-121 unoptimised, as its smoke runs on one machine do.
NODE_ENVIRONMENT = {"jax_flax": UNOPTIMISED_XLA}


def multigpu_notebooks():
    return {name: ROOT / "notebooks" / notebook_name(framework, "MultiGPU")
            for name, framework in RUNNABLE.items() if "MultiGPU" in framework.tasks}


def run_nodes(folder, framework, **popen):
    """run_all.py --nodes 2 for one framework's MultiGPU notebook, smoke sizes, synthetic images."""
    readme = folder / "README.md"
    readme.write_text(f"{report.BEGIN_MARKER}\n{report.END_MARKER}\n")
    command = [sys.executable, str(ROOT / "run_all.py"), "--frameworks", framework, "--tasks", "MultiGPU",
               "--profile", "smoke", "--data", "synthetic", "--nodes", "2", "--pipelines", "ram",
               "--timeout", "600", "--results-dir", str(folder / "results"), "--readme", str(readme)]
    return subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=dict(os.environ, ROSETTA_RUNNER="1", **popen.pop("env", {})), **popen)


def test_every_closing_section_prints_a_command_that_runs_or_says_why_not():
    for name, notebook in multigpu_notebooks().items():
        block = nodes.launch_block(notebook)
        cells = json.loads(notebook.read_text())["cells"]
        closing = "".join(cells[-1]["source"])
        assert closing.startswith(nodes.HEADING), name
        if name in MULTI_NODE:
            assert block is not None, name
            assert "$HEAD_NODE" in block and "$NODE_RANK" in block, block
            assert f"papermill {notebook.name} " in block, block
        else:  # the section says why it prints nothing to run
            assert block is None and "prints no command to run" in closing, name


def test_the_parameters_of_the_printed_papermill_line_are_the_runs_own():
    block = ("papermill A.ipynb run.ipynb --prepare-only -p profile quick\n"
             "jupyter nbconvert --to python run.ipynb\ntorchrun --node-rank=$NODE_RANK run.py\n")
    changed = nodes.with_parameters(block, {"profile": "smoke", "record_path": "/tmp/a b/r.jsonl", "threads": 2})
    assert changed.splitlines()[0] == ("papermill A.ipynb run.ipynb --prepare-only -p profile smoke "
                                       "-p record_path '/tmp/a b/r.jsonl' -p threads 2")
    assert changed.splitlines()[1:] == block.splitlines()[1:]


@pytest.mark.parametrize("framework", MULTI_NODE)
def test_two_nodes_on_localhost_train_the_same_model_as_one_process(framework, tmp_path):
    began = time.monotonic()
    process = run_nodes(tmp_path, framework, env=NODE_ENVIRONMENT.get(framework, {}))
    output, _ = process.communicate(timeout=900)
    print(output[-3000:], f"\n{framework}: two nodes in {time.monotonic() - began:.0f} s")
    assert process.returncode == 0, output[-3000:]
    record, = records.read_records(tmp_path / "results" / "records.jsonl")
    assert record["status"] == "ok", record.get("reason")
    assert record["settings"] == {"devices": 0, "nodes": 2, "pipeline": "ram"}
    metrics, checks = record["metrics"], record["checks"]
    assert metrics["nodes"] == 2 and metrics["processes_per_node"] >= 1
    # Each process drives one device (PyTorch, TensorFlow) or several (JAX): devices across both nodes.
    assert metrics["devices"] >= 2 * metrics["processes_per_node"] and metrics["devices"] % 2 == 0
    assert checks["data_parallel_devices"] == metrics["devices"]
    # The whole batch in one process against its shares on every process of both nodes, with the
    # margin the bound was chosen for (tests/test_notebooks.py holds the runs on one machine to it).
    assert checks["data_parallel_update_relative_error"] <= checks["data_parallel_update_tolerance"] / 100
    assert checks["data_parallel_loss_fell"]
    assert metrics["images_per_second"] > 0
    assert report.device_setting(record) == (0, "ram", 2)


def node_processes(staging_root, rank):
    """The pids of node `rank` (runner.nodes runs each node's block in a folder node-K): the
    processes working in that folder."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            folder = os.readlink(entry / "cwd") if entry.name.isdigit() else ""
        except OSError:
            continue
        if folder.startswith(str(staging_root)) and folder.endswith(f"/nodes/node-{rank}"):
            found.append(int(entry.name))
    return found


@pytest.mark.parametrize("framework", tuple(TRAINING_BEGUN))
def test_a_node_killed_mid_run_stops_the_other_with_a_clear_error(framework, tmp_path):
    staging_root = tmp_path / "tmp"
    staging_root.mkdir()
    process = run_nodes(tmp_path, framework, env={"TMPDIR": str(staging_root)})
    deadline = time.monotonic() + 600
    node_0_log = None
    while time.monotonic() < deadline and process.poll() is None:
        found = sorted(staging_root.glob("rosetta-record-*/nodes/node-0.log"))
        if found and TRAINING_BEGUN[framework] in found[0].read_text(errors="replace"):
            node_0_log = found[0]
            break
        time.sleep(0.1)
    assert node_0_log is not None, "training never began on node 0"
    node_1 = node_processes(staging_root, 1)
    assert node_1
    for pid in {*node_1, *(child for pid in node_1 for child in nodes.descendants(pid))}:
        os.kill(pid, signal.SIGKILL)  # node 1 goes down with everything it started
    killed_at = time.monotonic()
    output, _ = process.communicate(timeout=300)
    stopped_after = time.monotonic() - killed_at
    print(output[-3000:], f"\nthe run ended {stopped_after:.0f} s after node 1 was killed")
    record, = records.read_records(tmp_path / "results" / "records.jsonl")
    assert record["status"] == "failed"
    reason = record["reason"]
    # Node 0 stopped by itself, on its own error, well before the runner's grace of 60 s ran out.
    assert "node 0: exit" in reason and "node 1: killed by signal 9" in reason, reason
    assert "Connection closed by peer" in reason or "Connection reset" in reason, reason
