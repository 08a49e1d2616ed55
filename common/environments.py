"""Per-framework virtual environments and their Jupyter kernels, cached outside the clone.

An environment lives in <cache>/envs/<name>-<hash>, the hash taken over envs/<name>.txt and the
Python version, so a changed requirements file makes a new one and an unchanged one is reused. A
marker file is written last: an environment without it (an interrupted build) is rebuilt.
"""
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from common.paths import REPOSITORY_ROOT, cache_root

ENVS_DIR = REPOSITORY_ROOT / "envs"
COMPLETE_MARKER = ".rosetta-complete"


def requirements_file(name):
    return ENVS_DIR / f"{name}.txt"


def build_requirements_file(name):
    """envs/<name>.pre.txt: installed first, when a package of envs/<name>.txt builds from source
    against pins of its own (old setuptools, numpy); the main install then runs with
    --no-build-isolation so that it builds against them."""
    return ENVS_DIR / f"{name}.pre.txt"


def system_packages_file(name):
    """envs/<name>.apt.txt: Debian packages the environment needs (a BLAS, R), one per line."""
    return ENVS_DIR / f"{name}.apt.txt"


def _listed(path):
    if not path.exists():
        return []
    lines = (line.split("#")[0].strip() for line in path.read_text().splitlines())
    return [line for line in lines if line]


def environment_hash(name):
    digest = hashlib.sha256()
    for path in (build_requirements_file(name), requirements_file(name), system_packages_file(name)):
        if path.exists():
            digest.update(path.name.encode() + path.read_bytes())
    digest.update(f"{sys.version_info.major}.{sys.version_info.minor}".encode())
    return digest.hexdigest()[:12]


def missing_system_packages(packages):
    return [package for package in packages
            if subprocess.run(["dpkg-query", "-W", "-f=${Status}", package], capture_output=True,
                              text=True).stdout.strip() != "install ok installed"]


def ensure_system_packages(name, log=print):
    """Install envs/<name>.apt.txt's Debian packages when missing; say clearly when we cannot."""
    packages = _listed(system_packages_file(name))
    if not packages:
        return
    if not shutil.which("dpkg-query"):
        raise RuntimeError(f"'{name}' needs the Debian packages {' '.join(packages)}, and this "
                           "system has no dpkg: install their equivalents by hand")
    missing = missing_system_packages(packages)
    if not missing:
        return
    install = ["apt-get", "install", "-y", "--no-install-recommends", *missing]
    prefix = []
    if os.geteuid() != 0:
        if not shutil.which("sudo"):
            raise RuntimeError(f"'{name}' needs the Debian packages {' '.join(missing)}: run "
                               f"`sudo {' '.join(install)}` (this user is not root)")
        prefix = ["sudo", "-n"]
    log(f"[env] installing Debian packages for '{name}': {' '.join(missing)}")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    update = subprocess.run(prefix + ["apt-get", "update"], env=env, capture_output=True, text=True)
    result = subprocess.run(prefix + install, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"installing {' '.join(missing)} failed (apt-get update said: "
                           f"{update.stderr.strip()[-300:]}):\n{result.stderr.strip()[-1500:]}")


def environment_path(name):
    return cache_root() / "envs" / f"{name}-{environment_hash(name)}"


def environment_python(path):
    return Path(path) / "bin" / "python"


def is_built(name):
    return (environment_path(name) / COMPLETE_MARKER).exists()


def build(name, log=print):
    """Make envs/<name>.txt's environment when missing; return its path. Two runners asking for
    the same environment at once: the second waits for the first's build, then reuses it."""
    path = environment_path(name)
    if (path / COMPLETE_MARKER).exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{path}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (path / COMPLETE_MARKER).exists():
            return path
        return _build_locked(name, path, log)


def _build_locked(name, path, log):
    if path.exists():
        log(f"[env] {path} is incomplete (an interrupted build): rebuilding it")
        shutil.rmtree(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    log(f"[env] building '{name}' from {requirements_file(name).relative_to(REPOSITORY_ROOT)} "
        f"into {path} (minutes; pip's log: {path}.log)")
    started = time.monotonic()
    ensure_system_packages(name, log)
    pip = [str(environment_python(path)), "-m", "pip", "install", "--no-input"]
    steps = [[sys.executable, "-m", "venv", str(path)]]
    if build_requirements_file(name).exists():
        steps.append(pip + ["-r", str(build_requirements_file(name))])
        steps.append(pip + ["--no-build-isolation", "-r", str(requirements_file(name))])
    else:
        steps.append(pip + ["-r", str(requirements_file(name))])
    with open(f"{path}.log", "w") as pip_log:
        for command in steps:
            pip_log.write(f"$ {' '.join(command)}\n")
            pip_log.flush()
            result = subprocess.run(command, stdout=pip_log, stderr=subprocess.STDOUT)
            if result.returncode != 0:
                tail = Path(f"{path}.log").read_text().splitlines()[-15:]
                raise RuntimeError(f"building environment '{name}' failed:\n" + "\n".join(tail))
    (path / COMPLETE_MARKER).write_text(json.dumps({
        "requirements": requirements_file(name).read_text(),
        "seconds": round(time.monotonic() - started, 1),
    }))
    log(f"[env] '{name}' built in {time.monotonic() - started:.0f} s")
    return path


def home_redirects():
    """Variables that keep Jupyter, IPython, Keras and matplotlib out of the user's home."""
    root = cache_root()
    return {
        "JUPYTER_CONFIG_DIR": str(root / "jupyter" / "config"),
        "JUPYTER_DATA_DIR": str(root / "jupyter" / "data"),
        "JUPYTER_RUNTIME_DIR": str(root / "jupyter" / "runtime"),
        "IPYTHONDIR": str(root / "ipython"),
        "KERAS_HOME": str(root / "keras"),
        "MPLCONFIGDIR": str(root / "matplotlib"),
        "JUPYTER_PLATFORM_DIRS": "1",
    }


def kernels_root():
    """Kernel specs of this clone: one folder per clone, since each names its clone's `common`."""
    clone = hashlib.sha256(str(REPOSITORY_ROOT).encode()).hexdigest()[:10]
    return cache_root() / "kernels" / clone


def write_kernel(kernel_name, python, display_name, language="python"):
    """Register a Jupyter kernel `kernel_name` with this clone's `common` on its Python path:
    `python` itself, or for language "r" IRkernel, whose reticulate is pointed at `python`.
    Written on every run: cheap, and never stale."""
    folder = kernels_root() / "kernels" / kernel_name
    folder.mkdir(parents=True, exist_ok=True)
    env = {"PYTHONPATH": str(REPOSITORY_ROOT), **home_redirects()}
    if language == "r":
        argv = ["R", "--slave", "-e", "IRkernel::main()", "--args", "{connection_file}"]
        env["RETICULATE_PYTHON"] = str(python)
        language = "R"
    else:
        argv = [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    spec = {"argv": argv, "display_name": display_name, "language": language, "env": env}
    (folder / "kernel.json").write_text(json.dumps(spec, indent=1))
    return kernel_name


def papermill_environment():
    """Environment for the papermill process: finds this clone's kernels, writes nothing home."""
    env = dict(os.environ)
    env.update(home_redirects())
    env["JUPYTER_PATH"] = str(kernels_root())
    env["PYTHONPATH"] = str(REPOSITORY_ROOT)
    env.setdefault("PYTHONUNBUFFERED", "1")
    for variable in ("JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR", "IPYTHONDIR",
                     "KERAS_HOME", "MPLCONFIGDIR"):
        Path(env[variable]).mkdir(parents=True, exist_ok=True)
    return env
