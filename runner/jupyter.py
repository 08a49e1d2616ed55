"""`run_all.py --jupyter`: JupyterLab from the runner's environment, opening in notebooks/, with the
kernel of every framework environment built in the cache (the kernels the runner itself uses,
registered under runner.environments.kernels_root(), which JUPYTER_PATH names) and the clone
importable as `common`; and the two lines that run one notebook with papermill's own command line
on the same kernels. The server listens on localhost only and opens no browser (its HOME is the
cache's, like the kernels'): it prints its URL."""
import os
import secrets
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.request

from common.paths import REPOSITORY_ROOT
from runner.frameworks import RUNNABLE, notebook_name
from runner.notebook_run import kernel_name

HOST = "127.0.0.1"
FIRST_PORT = 8888


def register_built_kernels():
    """Write the kernel spec of every framework environment built in the cache, for each
    accelerator built (the R kernel where R and IRkernel are installed); return {kernel name:
    [the frameworks that run on it]}."""
    from runner import environments

    kernels = {}
    for framework in RUNNABLE.values():
        for accelerator in environments.ACCELERATORS:
            if not (environments.has_build(framework.environment, accelerator)
                    and environments.is_built(framework.environment, accelerator)):
                continue
            if framework.language == "r" and not r_kernel_installed():
                continue
            name = kernel_name(framework.environment, accelerator, framework.language)
            if name not in kernels:
                python = environments.environment_python(environments.environment_path(framework.environment, accelerator))
                environments.write_kernel(name, python, f"Rosetta {name[len('rosetta-'):]}", framework.language)
                kernels[name] = []
            kernels[name].append(framework)
    return kernels


def r_kernel_installed():
    """R and IRkernel present (envs/r.apt.txt's Debian packages): --jupyter installs nothing."""
    import shutil

    from runner import environments

    packages = environments._listed(environments.system_packages_file("r"))
    return bool(shutil.which("dpkg-query")) and not environments.missing_system_packages(packages)


def free_port(start=FIRST_PORT, tries=100):
    """The first port from `start` that nothing listens on at HOST."""
    for port in range(start, start + tries):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            try:
                probe.bind((HOST, port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port on {HOST} from {start} to {start + tries - 1}")


def example_notebook(kernels):
    """(kernel, notebook stem) the printed papermill line shows: PyTorch's CNN when its kernel is
    built (the docs' example), else the first built kernel's first notebook."""
    pytorch = RUNNABLE["pytorch"]
    kernel, frameworks = next((item for item in kernels.items() if pytorch in item[1]),
                              next(iter(kernels.items()), (kernel_name(pytorch.environment, "cpu"), [pytorch])))
    framework = pytorch if pytorch in frameworks else frameworks[0]
    task = next((task for task in ("CNN", *framework.tasks)
                 if (REPOSITORY_ROOT / "notebooks" / notebook_name(framework, task)).exists()), framework.tasks[0])
    return kernel, notebook_name(framework, task)[:-len(".ipynb")]


def papermill_lines(kernel, stem, folder="/tmp", parameters=(("profile", "smoke"),)):
    """The two lines a user copies to run notebooks/<stem>.ipynb with papermill's own command line
    on `kernel`: first the runner environment's papermill on PATH and this clone's kernels on
    JUPYTER_PATH, then papermill, its executed notebook and record (out of results/) in `folder`."""
    from runner import bootstrap, environments

    runner_bin = environments.environment_python(environments.environment_path(bootstrap.RUNNER_ENVIRONMENT)).parent
    setup = (f"cd {shlex.quote(str(REPOSITORY_ROOT))} && export PATH={shlex.quote(str(runner_bin))}:\"$PATH\" "
             f"JUPYTER_PATH={shlex.quote(str(environments.kernels_root()))}")
    options = "".join(f" -p {name} {shlex.quote(str(value))}" for name, value in dict(parameters).items())
    run = (f"papermill notebooks/{stem}.ipynb {folder}/{stem}.ipynb -k {kernel} --cwd notebooks{options} "
           f"-p record_path {folder}/{stem}.record.jsonl")
    return [setup, run]


def answers(url, token, timeout=2):
    request = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status == 200
    except OSError:
        return False


def interrupt(signal_number, frame):
    raise KeyboardInterrupt


def stop(server):
    """Ask the server to shut down (SIGTERM: it stops its kernels first), then make sure."""
    try:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()
    except ProcessLookupError:
        pass


def serve(port=None, startup_seconds=180):
    """Start JupyterLab on `port` (None or 0: the first free one from 8888), print its URL, the
    kernels and the papermill lines once it answers, and serve until Ctrl-C (or SIGTERM)."""
    from runner import environments

    kernels = register_built_kernels()
    port = port or free_port()
    token = secrets.token_hex(24)
    root = REPOSITORY_ROOT
    command = [sys.executable, "-m", "jupyterlab", "--no-browser", f"--ServerApp.ip={HOST}",
               f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--ServerApp.root_dir={root}",
               f"--IdentityProvider.token={token}", "--LabApp.default_url=/lab/tree/notebooks"]
    if os.geteuid() == 0:  # a container's or a VM's root: Jupyter refuses it unless told
        command.append("--allow-root")
    # As for papermill: this clone's kernels on JUPYTER_PATH, `common` on PYTHONPATH, Jupyter's
    # own files in the cache rather than in the user's home.
    env = environments.papermill_environment()
    # SIGTERM (a test, a service manager) or a closed terminal (SIGHUP) ends this process as Ctrl-C
    # does, stopping the server rather than leaving it behind.
    signal.signal(signal.SIGTERM, interrupt)
    signal.signal(signal.SIGHUP, interrupt)
    # A session of its own: a Ctrl-C in the terminal reaches this process only, which stops the
    # server without Jupyter's "Shutdown this Jupyter server (y/[n])?" question.
    server = subprocess.Popen(command, cwd=root, env=env, start_new_session=True)
    base = f"http://{HOST}:{port}"
    try:
        deadline = time.monotonic() + startup_seconds
        while not answers(f"{base}/api/status", token):
            if server.poll() is not None:
                print(f"[jupyter] JupyterLab exited with status {server.returncode} before it answered "
                      f"(is port {port} taken?)", flush=True)
                return 1
            if time.monotonic() > deadline:
                print(f"[jupyter] JupyterLab did not answer on {base} within {startup_seconds} s", flush=True)
                stop(server)
                return 1
            time.sleep(0.5)
        print(f"[jupyter] JupyterLab (the runner's environment, {sys.executable}) serves {root}; open:\n"
              f"[jupyter]   {base}/lab/tree/notebooks?token={token}", flush=True)
        if kernels:
            for name, frameworks in kernels.items():
                print(f"[jupyter] kernel {name}: {', '.join(framework.title for framework in frameworks)}", flush=True)
        else:
            print("[jupyter] no framework environment is built yet: `python3 run_all.py --frameworks pytorch "
                  "--profile smoke` builds PyTorch's (then restart this)", flush=True)
        print("[jupyter] one notebook with papermill, from any shell (the two lines):", flush=True)
        for line in papermill_lines(*example_notebook(kernels)):
            print(f"  {line}", flush=True)
        print("[jupyter] Ctrl-C stops the server", flush=True)
        server.wait()
        return server.returncode
    except KeyboardInterrupt:
        print("[jupyter] stopping JupyterLab", flush=True)
        stop(server)
        return 0
