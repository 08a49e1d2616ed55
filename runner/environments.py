"""Per-framework virtual environments and their Jupyter kernels, cached outside the clone.

Each environment has a build per accelerator: `cpu` from envs/<name>.txt, `cuda` from
envs/<name>.cuda.txt (the framework's CUDA wheels). A build lives in <cache>/envs/<name>-<hash>
(CPU) or <cache>/envs/<name>-cuda-<hash>, the hash taken over its requirements files and the Python
version, so a changed requirements file makes a new one and an unchanged one is reused. A marker
file is written last: a build without it (an interrupted one) is rebuilt.
"""
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from common import probe, timing
from common.paths import CACHE_VARIABLE, REPOSITORY_ROOT, cache_root, folder_bytes, write_whole

ENVS_DIR = REPOSITORY_ROOT / "envs"
COMPLETE_MARKER = ".rosetta-complete"
ACCELERATORS = ("cpu", "cuda")

# Environments whose framework has no GPU build in any package registry: on a GPU host their rows
# say so instead of timing the CPU under a GPU column.
NO_GPU_BUILD = {
    "theano": "no GPU build: Theano's GPU backend needs libgpuarray/pygpu, never released for "
              "Python 3.11 (Theano 1.0.5 runs on the CPU only)",
}


def requirements_file(name, accelerator="cpu"):
    """envs/<name>.txt for the CPU build, envs/<name>.<accelerator>.txt for another."""
    return ENVS_DIR / (f"{name}.txt" if accelerator == "cpu" else f"{name}.{accelerator}.txt")


def has_build(name, accelerator):
    return requirements_file(name, accelerator).exists()


def gpu_environments():
    """The environments with a CUDA build: {name: its requirements file}."""
    return {path.name[:-len(".cuda.txt")]: path for path in sorted(ENVS_DIR.glob("*.cuda.txt"))}


def build_requirements_file(name, accelerator="cpu"):
    """envs/<name>.pre.txt (or envs/<name>.<accelerator>.pre.txt when the build needs its own):
    installed first, when a package of the requirements file builds from source against pins of
    its own (old setuptools, numpy); the main install then runs with --no-build-isolation so that
    it builds against them."""
    own = ENVS_DIR / f"{name}.{accelerator}.pre.txt"
    return own if accelerator != "cpu" and own.exists() else ENVS_DIR / f"{name}.pre.txt"


def system_packages_file(name):
    """envs/<name>.apt.txt: Debian packages the environment needs (a BLAS, R), one per line."""
    return ENVS_DIR / f"{name}.apt.txt"


def _listed(path):
    if not path.exists():
        return []
    lines = (line.split("#")[0].strip() for line in path.read_text().splitlines())
    return [line for line in lines if line]


def environment_hash(name, accelerator="cpu"):
    digest = hashlib.sha256()
    for path in (build_requirements_file(name, accelerator), requirements_file(name, accelerator),
                 system_packages_file(name)):
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
    # Another build may hold dpkg's lock (two environments' packages at once): wait for it.
    wait = ["-o", "DPkg::Lock::Timeout=600"]
    install = ["apt-get", *wait, "install", "-y", "--no-install-recommends", *missing]
    prefix = []
    if os.geteuid() != 0:
        if not shutil.which("sudo"):
            raise RuntimeError(f"'{name}' needs the Debian packages {' '.join(missing)}: run "
                               f"`sudo {' '.join(install)}` (this user is not root)")
        prefix = ["sudo", "-n"]
    log(f"[env] installing Debian packages for '{name}': {' '.join(missing)}")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    update = subprocess.run(prefix + ["apt-get", *wait, "update"], env=env, capture_output=True, text=True)
    result = subprocess.run(prefix + install, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"installing {' '.join(missing)} failed (apt-get update said: "
                           f"{update.stderr.strip()[-300:]}):\n{result.stderr.strip()[-1500:]}")


def environment_path(name, accelerator="cpu"):
    build = name if accelerator == "cpu" else f"{name}-{accelerator}"
    return cache_root() / "envs" / f"{build}-{environment_hash(name, accelerator)}"


def environment_python(path):
    return Path(path) / "bin" / "python"


def is_built(name, accelerator="cpu"):
    return (environment_path(name, accelerator) / COMPLETE_MARKER).exists()


def build(name, log=print, accelerator="cpu"):
    """Make the environment's build for `accelerator` when missing; return its path. Two runners
    asking for the same build at once: the second waits for the first's build, then reuses it."""
    if accelerator not in ACCELERATORS:
        raise ValueError(f"unknown accelerator {accelerator!r}; valid: {', '.join(ACCELERATORS)}")
    if not has_build(name, accelerator):
        raise RuntimeError(NO_GPU_BUILD.get(name) or f"'{name}' has no {accelerator} build: "
                           f"{requirements_file(name, accelerator).relative_to(REPOSITORY_ROOT)} "
                           "does not exist")
    path = environment_path(name, accelerator)
    if (path / COMPLETE_MARKER).exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{path}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (path / COMPLETE_MARKER).exists():
            return path
        return _build_locked(name, path, log, accelerator)


def build_in_background(names, log_path):
    """Start one process, at low priority and in its own process group, that runs build_then_resolve
    on the CPU builds of `names` still missing, writing what it does to `log_path`; the Popen. A
    caller that needs one of those builds meanwhile waits on its lock, as for any other build."""
    missing = [name for name in names if not is_built(name)]
    log_path = Path(log_path)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    script = "import sys\nfrom runner import environments\nenvironments.build_then_resolve(sys.argv[1:])"
    with open(log_path, "w") as log:
        return subprocess.Popen([sys.executable, "-c", script, *missing], cwd=REPOSITORY_ROOT, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=lambda: os.nice(10))


# Builds run side by side behind the tests: a build is mostly downloads and unpacking, which leave
# a core idle (nine one after another took 10 min 43 s on a 2-core EPYC).
BUILDS_AT_ONCE = 2


def build_then_resolve(names):
    """Build the CPU builds of `names`, BUILDS_AT_ONCE at a time in their order, then resolve every
    GPU build's requirements (kept in the cache): build_in_background's work."""
    with ThreadPoolExecutor(BUILDS_AT_ONCE) as pool:
        list(pool.map(lambda name: build(name, log=lambda line: print(line, flush=True)), names))
    print("[env] GPU builds resolved:", ", ".join(resolve_gpu_requirements()), flush=True)


def resolve_gpu_requirements():
    """{environment: its CUDA build's resolution (resolve_requirements)} for every GPU build, resolved
    side by side (the registry queries are network-bound)."""
    names = sorted(gpu_environments())
    with ThreadPoolExecutor(len(names)) as pool:
        return dict(zip(names, pool.map(resolve_requirements, names)))


def _build_locked(name, path, log, accelerator):
    if path.exists():
        log(f"[env] {path} is incomplete (an interrupted build): rebuilding it")
        shutil.rmtree(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    requirements, build_requirements = requirements_file(name, accelerator), build_requirements_file(name, accelerator)
    log(f"[env] building '{name}' ({accelerator}) from {requirements.relative_to(REPOSITORY_ROOT)} "
        f"into {path} (minutes; pip's log: {path}.log)")
    started = time.monotonic()
    ensure_system_packages(name, log)
    # Without bytecode: compiling every module of a wheel is most of an install (32 of torch's 52
    # CPU-seconds), and a kernel imports a fraction of them; the environment's processes write the
    # bytecode of what they import on first use instead (bytecode_variables).
    pip = [str(environment_python(path)), "-m", "pip", "install", "--no-input", "--no-compile"]
    steps = [[sys.executable, "-m", "venv", str(path)]]
    if build_requirements.exists():
        steps.append(pip + ["-r", str(build_requirements)])
        steps.append(pip + ["--no-build-isolation", "-r", str(requirements)])
    else:
        steps.append(pip + ["-r", str(requirements)])
    with open(f"{path}.log", "w") as pip_log:
        for command in steps:
            pip_log.write(f"$ {' '.join(command)}\n")
            pip_log.flush()
            result = subprocess.run(command, stdout=pip_log, stderr=subprocess.STDOUT)
            if result.returncode != 0:
                tail = Path(f"{path}.log").read_text().splitlines()[-15:]
                raise RuntimeError(f"building environment '{name}' failed:\n" + "\n".join(tail))
    write_whole(path / COMPLETE_MARKER, json.dumps({
        "requirements": requirements.read_text(),
        "accelerator": accelerator,
        "seconds": round(time.monotonic() - started, 1),
    }))
    log(f"[env] '{name}' built in {time.monotonic() - started:.0f} s")
    return path


def bytecode_variables(python):
    """The variables under which a built environment's `python` (and every process it starts) writes
    the bytecode of the modules it imports, once, into one folder of the cache, whatever the
    machine's PYTHONDONTWRITEBYTECODE says (an empty value unsets it): its environment was installed
    without bytecode (pip --no-compile), and without them every kernel would compile every module it
    imports afresh. Nothing for another interpreter (--use-current-python): its bytecode is its own."""
    if not str(python).startswith(str(cache_root() / "envs") + os.sep):
        return {}
    return {"PYTHONPYCACHEPREFIX": str(cache_root() / "bytecode"), "PYTHONDONTWRITEBYTECODE": ""}


def compile_cache_variables():
    """Where JAX keeps the programs XLA compiled, so that a later kernel on this machine loads them
    instead of compiling them again (the variants of one task share most of theirs; a repeat
    shares all): one folder of the cache per CPU, since XLA compiles for the host's own
    instruction set and the cache outlives a change of machine. Every program is kept, however
    quick its compile (JAX keeps only those over a second by default). Compiling happens in the
    warm-up steps, which no figure includes."""
    fields = probe.cpu_info()
    cpu = "|".join(fields.get(key, "") for key in ("model name", "cpu family", "model", "flags", "Features"))
    return {"JAX_COMPILATION_CACHE_DIR": str(cache_root() / "xla" / hashlib.sha256(cpu.encode()).hexdigest()[:12]),
            "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0", "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0"}


def home_redirects():
    """Variables that keep the notebooks' kernels and papermill out of the user's home: Jupyter,
    IPython, Keras and matplotlib by their own variables, the rest by a home of their own in the
    cache (PaddlePaddle's dataset folder and ONNX Runtime's telemetry id are written under `~`
    whatever else is set). The cache root is pinned first, since it defaults to one under `~`."""
    root = cache_root()
    home = root / "home"
    return {
        CACHE_VARIABLE: str(root),
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "JUPYTER_CONFIG_DIR": str(root / "jupyter" / "config"),
        "JUPYTER_DATA_DIR": str(root / "jupyter" / "data"),
        "JUPYTER_RUNTIME_DIR": str(root / "jupyter" / "runtime"),
        "IPYTHONDIR": str(root / "ipython"),
        "KERAS_HOME": str(root / "keras"),
        "MPLCONFIGDIR": str(root / "matplotlib"),
        "JUPYTER_PLATFORM_DIRS": "1",
    }


def runner_redirects():
    """What the runner's own process (and the tests it starts) needs to stay out of the user's
    home: matplotlib's font cache. Its home itself stays the user's, so that pip keeps the
    user's configuration when it builds environments."""
    return {"MPLCONFIGDIR": home_redirects()["MPLCONFIGDIR"]}


def kernels_root():
    """Kernel specs of this clone: one folder per clone, since each names its clone's `common`."""
    clone = hashlib.sha256(str(REPOSITORY_ROOT).encode()).hexdigest()[:10]
    return cache_root() / "kernels" / clone


# A folder of packages installed beside the interpreter's own (run_all.py --from-bundle's wheels):
# on the Python path of the papermill process and of every kernel, after this clone.
EXTRA_SITE_VARIABLE = "ROSETTA_EXTRA_SITE"


def python_path():
    extra = os.environ.get(EXTRA_SITE_VARIABLE)
    return os.pathsep.join([str(REPOSITORY_ROOT)] + ([extra] if extra else []))


def write_kernel(kernel_name, python, display_name, language="python"):
    """Register a Jupyter kernel `kernel_name` with this clone's `common` on its Python path:
    `python` itself, or for language "r" IRkernel, whose reticulate is pointed at `python`.
    Written on every run: cheap, and never stale."""
    folder = kernels_root() / "kernels" / kernel_name
    folder.mkdir(parents=True, exist_ok=True)
    env = {"PYTHONPATH": python_path(), **home_redirects(), **bytecode_variables(python), **compile_cache_variables()}
    if language == "r":
        argv = ["R", "--slave", "-e", "IRkernel::main()", "--args", "{connection_file}"]
        env["RETICULATE_PYTHON"] = str(python)
        language = "R"
    else:
        argv = [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    spec = {"argv": argv, "display_name": display_name, "language": language, "env": env}
    write_whole(folder / "kernel.json", json.dumps(spec, indent=1))
    return kernel_name


def papermill_environment():
    """Environment for the papermill process: finds this clone's kernels, writes nothing home."""
    env = dict(os.environ)
    env.update(home_redirects())
    env.update(bytecode_variables(sys.executable))
    env.update(compile_cache_variables())  # for the processes the runs across nodes start
    env["JUPYTER_PATH"] = str(kernels_root())
    env["PYTHONPATH"] = python_path()
    env.setdefault("PYTHONUNBUFFERED", "1")
    for variable in ("HOME", "JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR", "IPYTHONDIR",
                     "KERAS_HOME", "MPLCONFIGDIR"):
        Path(env[variable]).mkdir(parents=True, exist_ok=True)
    return env


# Linux x86_64 wheel tags pip should accept when it resolves for a GPU host instead of this one
# (pip 23 does not widen a manylinux_2_N tag to the older ones by itself).
MANYLINUX_X86_64 = (("manylinux1_x86_64", "manylinux2010_x86_64", "manylinux2014_x86_64")
                    + tuple(f"manylinux_2_{minor}_x86_64" for minor in range(5, 36)))
# Pinned packages that ship only a source distribution: pip cannot resolve them for another
# platform without building them, so only their pinned release is looked up.
SOURCE_ONLY = ("chainer", "theano", "lasagne")


def _requirement_name(line):
    return re.split(r"[=<>\[; ]", line, maxsplit=1)[0].strip().lower()


def resolve_requirements(name, accelerator="cuda", python=sys.executable):
    """Resolve a build's requirements as pip would on a Linux x86_64 host with this Python, without
    installing or downloading any package (pip reads the wheels' metadata files only, and ignores
    this machine's pip configuration). Returns {package: version}; raises RuntimeError with pip's
    words when something does not resolve. A resolution is kept in the cache under the environment's
    own hash (environment_hash: its requirement files and the Python version): minutes of registry
    queries a second time otherwise."""
    kept = cache_root() / "resolutions" / f"{name}.{accelerator}-{environment_hash(name, accelerator)}.json"
    if kept.exists():
        return json.loads(kept.read_text())
    resolved = _resolve(requirements_file(name, accelerator), python)
    kept.parent.mkdir(parents=True, exist_ok=True)
    write_whole(kept, json.dumps(resolved, sort_keys=True))
    return resolved


def _resolve(path, python):
    requirements = _listed(path)
    binary = [line for line in requirements if _requirement_name(line) not in SOURCE_ONLY]
    resolved = {}
    with tempfile.TemporaryDirectory(prefix="rosetta-resolve-") as folder:
        pip = [str(python), "-m", "pip", "--isolated", "--disable-pip-version-check"]
        command = pip + ["install", "--dry-run", "--ignore-installed", "--quiet",
                         "--report", f"{folder}/report.json", "--target", f"{folder}/target",
                         "--only-binary=:all:", "--python-version",
                         f"{sys.version_info.major}.{sys.version_info.minor}"]
        for platform_tag in MANYLINUX_X86_64:
            command += ["--platform", platform_tag]
        result = subprocess.run(command + binary, capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"{path.name} does not resolve:\n"
                               + result.stderr.strip()[-1500:])
        for item in json.loads(Path(f"{folder}/report.json").read_text())["install"]:
            resolved[item["metadata"]["name"].lower()] = item["metadata"]["version"]
        for line in requirements:
            package = _requirement_name(line)
            if package in SOURCE_ONLY:
                version = line.split("==", 1)[1].strip()
                listing = subprocess.run(pip + ["index", "versions", package], capture_output=True, text=True)
                available = re.search(r"Available versions: (.*)", listing.stdout)
                if not available or version not in [v.strip() for v in available.group(1).split(",")]:
                    raise RuntimeError(f"{package}=={version} is not in the package registry:\n"
                                       + (listing.stdout + listing.stderr).strip()[-500:])
                resolved[package] = version
    return resolved


# What a user of each environment imports first: its cold import time is part of what a framework
# costs (the interpreter's own start-up is measured apart and left out).
FRAMEWORK_IMPORTS = {"torch": "import torch", "tensorflow": "import tensorflow",
                     "jax": "import jax, flax.nnx", "onnxruntime": "import onnxruntime",
                     "mxnet": "import mxnet", "chainer": "import chainer", "paddle": "import paddle",
                     "theano": "import theano", "runner": "import papermill"}


def folder_megabytes(path):
    return round(folder_bytes(path) / 1e6, 1)


def import_seconds(python, statement, repeats=3):
    """Median wall time of `statement` in `repeats` fresh interpreters, less an empty one's."""
    env = dict(os.environ, PYTHONPATH=str(REPOSITORY_ROOT), **home_redirects(), **bytecode_variables(python),
               TF_CPP_MIN_LOG_LEVEL="2",
               # as the Theano notebooks set it: compiled ops in the cache
               THEANO_FLAGS=f"floatX=float32,blas.ldflags=-lopenblas,base_compiledir={cache_root() / 'theano'}")

    def median_run(code):
        return timing.median_seconds(
            lambda: subprocess.run([str(python), "-c", code], check=True, capture_output=True, env=env),
            repeats=repeats)

    baseline = median_run("pass")
    return round(median_run(statement) - baseline, 2)


def install_cost(name, accelerator="cpu", remeasure=False):
    """{build_seconds, size_mb, import_seconds} of a built environment, measured once (or again,
    with `remeasure`) and kept in its marker file; None when the environment is not built."""
    marker = environment_path(name, accelerator) / COMPLETE_MARKER
    if not marker.exists():
        return None
    info = json.loads(marker.read_text() or "{}")
    if remeasure or "size_mb" not in info or "import_seconds" not in info:
        path = environment_path(name, accelerator)
        info["size_mb"] = folder_megabytes(path)
        statement = FRAMEWORK_IMPORTS.get(name)
        info["import_seconds"] = import_seconds(environment_python(path), statement) if statement else None
        write_whole(marker, json.dumps(info))
    return {"build_seconds": info.get("seconds"), "size_mb": info["size_mb"],
            "import_seconds": info["import_seconds"]}
