"""`run_all.py --jupyter` and the papermill line it prints: JupyterLab serves every framework kernel
built in the cache, and one notebook runs from a shell with papermill's own command line."""
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from common import records
from runner import environments, jupyter
from runner.frameworks import RUNNABLE, notebook_name
from runner.notebook_run import kernel_name

ROOT = Path(__file__).resolve().parent.parent
RUN_ALL = str(ROOT / "run_all.py")


def unused_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def built_kernels():
    """The kernels of the framework environments built in this cache, named as the runner names them."""
    return {kernel_name(framework.environment, accelerator, framework.language)
            for framework in RUNNABLE.values() for accelerator in environments.ACCELERATORS
            if environments.has_build(framework.environment, accelerator)
            and environments.is_built(framework.environment, accelerator)
            and (framework.language != "r" or jupyter.r_kernel_installed())}


def get(url, token):
    request = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status, response.read()


def test_jupyter_serves_every_built_kernel_and_stops_on_ctrl_c(tmp_path):
    port = unused_port()
    with open(tmp_path / "server.log", "w") as log:
        # SIGINT back to its default in the child, as in test_runner's Ctrl-C test.
        process = subprocess.Popen([sys.executable, RUN_ALL, "--jupyter", str(port)], cwd=ROOT,
                                   stdout=subprocess.PIPE, stderr=log, text=True,
                                   env=dict(os.environ, PYTHONUNBUFFERED="1"),
                                   preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        lines = queue.Queue()
        threading.Thread(target=lambda: [lines.put(line) for line in process.stdout], daemon=True).start()
        printed = []
        try:
            deadline = time.monotonic() + 150
            while not any("Ctrl-C stops the server" in line for line in printed):
                assert time.monotonic() < deadline and process.poll() is None, (
                    "".join(printed) + (tmp_path / "server.log").read_text()[-3000:])
                try:
                    printed.append(lines.get(timeout=1))
                except queue.Empty:
                    pass
            url = next(line.split()[-1] for line in printed if "/lab/tree/notebooks?token=" in line)
            assert url.startswith(f"http://127.0.0.1:{port}/lab/tree/notebooks?token=")
            token = url.split("token=", 1)[1]
            status, body = get(f"http://127.0.0.1:{port}/api/kernelspecs", token)
            specs = json.loads(body)["kernelspecs"]
            expected = built_kernels()
            assert expected <= specs.keys(), f"missing: {expected - specs.keys()}"
            for name in expected:  # `common` importable from every notebook on them
                assert specs[name]["spec"]["env"]["PYTHONPATH"] == str(ROOT)
            # Each built kernel is announced with the frameworks that run on it.
            assert all(any(f"kernel {name}:" in line for line in printed) for name in expected)
            assert get(url, token)[0] == 200  # the page that opens in notebooks/
            with pytest.raises(OSError):  # and nothing without the token
                urllib.request.urlopen(f"http://127.0.0.1:{port}/api/kernelspecs", timeout=10)
        finally:
            process.send_signal(signal.SIGINT)
            process.wait(timeout=60)
    assert process.returncode == 0
    with pytest.raises(OSError):  # the server is gone with it
        socket.create_connection(("127.0.0.1", port), timeout=2).close()


def smoke_notebook():
    """(kernel, notebook stem) of the first built framework environment with an FCN5 notebook (seconds
    in the smoke profile)."""
    for framework in RUNNABLE.values():
        if (framework.language == "python" and environments.is_built(framework.environment, "cpu")
                and (ROOT / "notebooks" / notebook_name(framework, "FCN5")).exists()):
            return kernel_name(framework.environment, "cpu"), notebook_name(framework, "FCN5")[:-len(".ipynb")]
    pytest.skip("no framework environment with an FCN5 notebook is built in this cache")


def test_the_printed_papermill_lines_run_one_notebook_from_a_plain_shell(tmp_path):
    kernel, stem = smoke_notebook()
    assert kernel in jupyter.register_built_kernels()  # its kernel spec written, as --jupyter does
    setup, run = jupyter.papermill_lines(kernel, stem, tmp_path, {"profile": "smoke", "data": "synthetic"})
    assert run.startswith(f"papermill notebooks/{stem}.ipynb {tmp_path}/{stem}.ipynb -k {kernel} --cwd notebooks ")
    # A shell that has neither the runner's environment nor the kernels: the first line gives both.
    shell_env = {key: value for key, value in os.environ.items()
                 if key not in ("JUPYTER_PATH", "PYTHONPATH", "VIRTUAL_ENV", "ROSETTA_RUNNER")}
    shell_env["PATH"] = os.pathsep.join(folder for folder in shell_env["PATH"].split(os.pathsep)
                                        if Path(folder).resolve() != Path(sys.executable).parent.resolve())
    result = subprocess.run(["bash", "-c", f"{setup}\n{run}"], cwd=tmp_path, env=shell_env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    executed = nbformat.read(tmp_path / f"{stem}.ipynb", as_version=4)
    assert executed.metadata.papermill.parameters["profile"] == "smoke"
    assert not any(output.get("output_type") == "error" for cell in executed.cells for output in cell.get("outputs", []))
    written = records.read_records(tmp_path / f"{stem}.record.jsonl")
    assert [(r["task"], r["profile"], r["status"]) for r in written] == [("FCN5", "smoke", "ok")]


def test_the_page_on_opening_a_notebook_shows_the_line_the_runner_prints():
    page = (ROOT / "docs" / "open-a-notebook.md").read_text()
    assert "python3 run_all.py --jupyter" in page
    assert jupyter.papermill_lines("rosetta-torch-cpu", "PyTorch_CNN")[1] in page
