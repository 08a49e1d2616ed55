"""Several machines on one: a MultiGPU notebook's closing section ("Beyond one machine") prints the
commands that start it on each of several machines under its engine's own launcher. This module runs
that block as printed, once per "node" on localhost, each node in a folder of its own, with the only
things a user changes between machines set: `HEAD_NODE`/`HEAD_PORT` and `SECOND_NODE`/`SECOND_PORT`
(the two machines' addresses and free ports: a launcher needs the first, TensorFlow's cluster both),
`NODE_RANK`, and the parameters of the block's `papermill … --prepare-only` line. How the nodes ended
becomes one outcome: a node that fails makes the others stop, by their own error within `grace`
seconds, or killed after it."""
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

HEADING = "## Beyond one machine"
NODES = 2  # the printed commands' --nnodes / cluster size
_BLOCK = re.compile(r"```bash\n(.*?)```", re.DOTALL)
_PAPERMILL_PARAMETERS = re.compile(r"((?:^|\n)papermill [^\n]*?--prepare-only)((?: -p \S+ \S+)*)")


def launch_block(notebook):
    """The bash block of the notebook's closing section, or None when it prints no command that
    runs as it stands (a block without the papermill line that sets its parameters)."""
    for cell in json.loads(Path(notebook).read_text())["cells"]:
        text = "".join(cell["source"])
        if cell["cell_type"] == "markdown" and text.startswith(HEADING):
            found = _BLOCK.search(text)
            if found and _PAPERMILL_PARAMETERS.search(found.group(1)):
                return found.group(1)
    return None


def with_parameters(block, parameters):
    """The block with its papermill line's `-p name value` pairs replaced by `parameters`."""
    pairs = "".join(f" -p {name} {shlex.quote(str(value))}" for name, value in parameters.items())
    return _PAPERMILL_PARAMETERS.sub(lambda found: found.group(1) + pairs, block, count=1)


def free_ports(count):
    """`count` distinct ports free on localhost (held together while they are chosen)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for probe_socket in sockets:
            probe_socket.bind(("127.0.0.1", 0))
        return [probe_socket.getsockname()[1] for probe_socket in sockets]
    finally:
        for probe_socket in sockets:
            probe_socket.close()


class LocalNodes:
    """The block running as `nodes` nodes on this machine, each `bash -e` in a session of its own
    (so that a node is stopped with everything it started), logging to `folder/node-K.log`."""

    def __init__(self, notebook, block, folder, environment, nodes=NODES):
        self.folder = Path(folder)
        port, second_port = free_ports(2)
        self.processes, self.logs = [], []
        for rank in range(nodes):
            node_folder = self.folder / f"node-{rank}"
            node_folder.mkdir(parents=True, exist_ok=True)
            shutil.copy(notebook, node_folder / Path(notebook).name)
            log_path = self.folder / f"node-{rank}.log"
            with open(log_path, "w") as log:
                self.processes.append(subprocess.Popen(
                    ["bash", "-e", "-c", block], cwd=node_folder, stdout=log, stderr=subprocess.STDOUT,
                    start_new_session=True,
                    env=dict(environment, HEAD_NODE="127.0.0.1", HEAD_PORT=str(port), SECOND_NODE="127.0.0.1",
                             SECOND_PORT=str(second_port), NODE_RANK=str(rank))))
            self.logs.append(log_path)

    def log_text(self, rank):
        return self.logs[rank].read_text(errors="replace")

    def kill(self, rank, how=signal.SIGKILL):
        """Stop node `rank` and everything it started, as a machine going down would: its process
        group, and the descendants that left it (torchrun starts each worker in a session of its own)."""
        root = self.processes[rank].pid
        for pid in [root, *descendants(root)]:
            try:
                os.kill(pid, how)
            except ProcessLookupError:
                pass
        try:
            os.killpg(root, how)
        except ProcessLookupError:
            pass

    def wait(self, timeout, grace=60):
        """Wait for every node; once one has failed, the others get `grace` seconds to stop by
        themselves before they are killed. Returns {"ok", "timeout", "returncodes", "killed"
        (the nodes stopped from here), "seconds_after_failure" (until the last node stopped)}."""
        began, failed_at, killed = time.monotonic(), None, []
        while True:
            codes = [process.poll() for process in self.processes]
            if all(code is not None for code in codes):
                break
            now = time.monotonic()
            if failed_at is None and any(code not in (None, 0) for code in codes):
                failed_at = now
            if now - began > timeout or (failed_at is not None and now - failed_at > grace):
                for rank, code in enumerate(codes):
                    if code is None:
                        self.kill(rank)
                        killed.append(rank)
                for process in self.processes:
                    process.wait()
                codes = [process.returncode for process in self.processes]
                break
            time.sleep(0.2)
        return {"ok": all(code == 0 for code in codes) and not killed,
                "timeout": time.monotonic() - began > timeout, "returncodes": codes, "killed": killed,
                "seconds_after_failure": None if failed_at is None else round(time.monotonic() - failed_at, 1)}

    def failure_reason(self, outcome, lines=8):
        """Which node ended how, with the end of the first failed node's log (its error)."""
        codes = outcome["returncodes"]
        parts = [f"node {rank}: " + ("killed by the runner" if rank in outcome["killed"]
                                      else f"killed by signal {-code}" if code < 0 else f"exit {code}")
                 for rank, code in enumerate(codes)]
        failed = [rank for rank, code in enumerate(codes) if code != 0 and rank not in outcome["killed"]]
        tail = ""
        if failed:
            text = [line for line in self.log_text(failed[0]).splitlines() if line.strip()]
            # The workers' own errors, not the launcher's report that they failed.
            errors = [line for line in text if re.search(r"\b\w*(Error|Exception)\b|\berror\b", line)
                      and not re.search(r"ChildFailedError|elastic|^\s+File ", line)]
            tail = "\n".join((errors or text)[-lines:])
        return "; ".join(parts) + (f"\n{tail}" if tail else "")



def descendants(pid):
    """The processes below `pid` (from /proc), children first."""
    children = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parent = int(stat[stat.rindex(")") + 2:].split()[1])
            children.setdefault(parent, []).append(int(entry.name))
    found, frontier = [], [pid]
    while frontier:
        below = [child for parent in frontier for child in children.get(parent, [])]
        found += below
        frontier = below
    return found
