"""Run one notebook with papermill, in a process of its own, and write how it ended as JSON:
{"ok": true} or {"ok": false, "exception": <class name>, "timeout": <bool>, "message": …}, so that
the runner reads the outcome from papermill's own exception rather than from the log's text.

  python -m runner.execute NOTEBOOK OUTPUT --kernel K --cwd DIR --timeout S --parameters JSON --status PATH
"""
import argparse
import json
import os
import sys
from pathlib import Path

from common.paths import REPOSITORY_ROOT


def shown_path(path):
    """`path` relative to the repository where it lies inside it, else its name: what an executed
    notebook's metadata keeps of where it was run (no machine's own folders in committed results)."""
    resolved = Path(path).resolve()
    return str(resolved.relative_to(REPOSITORY_ROOT)) if resolved.is_relative_to(REPOSITORY_ROOT) else resolved.name


def relativise_metadata(output):
    """Rewrite papermill's absolute input_path and output_path in the executed notebook `output`."""
    import nbformat

    if not os.path.exists(output):
        return
    notebook = nbformat.read(output, as_version=4)
    metadata = notebook.metadata.get("papermill", {})
    for key in ("input_path", "output_path"):
        if metadata.get(key):
            metadata[key] = shown_path(metadata[key])
    nbformat.write(notebook, output)


def kernel_config():
    """The kernel's channels over IPC (Unix sockets in Jupyter's runtime folder, named for this
    process alone) rather than TCP: jupyter_client picks free TCP ports and the kernel binds them a
    moment later, and another process (the test suite's other worker, a second run) can take one
    in between: "Address already in use", and the kernel dies before it replies. TCP where a
    socket's path would pass the 107 bytes a Unix socket's name may have."""
    import uuid

    from jupyter_core.paths import jupyter_runtime_dir
    from traitlets.config import Config

    config = Config()
    # jupyter_client's default IPC name, "kernel-ipc" in the working folder, is shared by every
    # kernel started there at once.
    prefix = os.path.join(jupyter_runtime_dir(), f"ipc-{uuid.uuid4().hex}")
    if len(f"{prefix}-99999".encode()) <= 107:
        os.makedirs(os.path.dirname(prefix), exist_ok=True)
        config.KernelManager.transport = "ipc"
        config.KernelManager.ip = prefix
    return config


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebook")
    parser.add_argument("output")
    parser.add_argument("--kernel", required=True)
    parser.add_argument("--cwd", required=True)
    parser.add_argument("--timeout", type=int, required=True)
    parser.add_argument("--parameters", type=json.loads, default={})
    parser.add_argument("--status", required=True)
    arguments = parser.parse_args(argv)

    import logging

    # jsonschema (under nbformat) imports the optional IRI format checker rfc3987-syntax when it is
    # installed (the `jupyter` metapackage brings it), and that builds a Lark grammar at import: 1.0 s
    # of every notebook's start, for a format no notebook schema uses. Marked absent, it is skipped.
    sys.modules.setdefault("rfc3987_syntax", None)
    import papermill
    from nbclient.exceptions import CellTimeoutError

    # As papermill's command line does: the cells' output goes to this process's log.
    logging.basicConfig(level=logging.INFO, format="%(message)s")

    try:
        papermill.execute_notebook(arguments.notebook, arguments.output, parameters=arguments.parameters,
                                   kernel_name=arguments.kernel, cwd=arguments.cwd, log_output=True,
                                   progress_bar=False, execution_timeout=arguments.timeout,
                                   config=kernel_config())
        status = {"ok": True}
    except Exception as error:  # every way a notebook can end badly is reported, then re-raised
        status = {"ok": False, "exception": type(error).__name__,
                  "timeout": isinstance(error, CellTimeoutError), "message": str(error)[-3000:]}
        with open(arguments.status, "w") as handle:
            json.dump(status, handle)
        relativise_metadata(arguments.output)
        raise
    with open(arguments.status, "w") as handle:
        json.dump(status, handle)
    relativise_metadata(arguments.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
