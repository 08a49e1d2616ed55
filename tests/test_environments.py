import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from common import paths
from runner import environments

ROOT = Path(__file__).resolve().parent.parent


def pins(lines):
    return {line.strip().lstrip("- ").strip() for line in lines
            if re.match(r"^\s*-?\s*[A-Za-z0-9_.\-\[\]]+==", line)}


def test_environment_yml_is_in_step_with_the_runner_requirements():
    runner = pins((ROOT / "envs" / "runner.txt").read_text().splitlines())
    conda = pins((ROOT / "environment.yml").read_text().split("- pip:")[1].splitlines())
    assert runner and runner == conda


def test_every_requirement_is_pinned():
    for requirements in (ROOT / "envs").glob("*.txt"):
        if requirements.name.endswith(".apt.txt"):  # Debian package names, pinned by the release
            continue
        for line in requirements.read_text().splitlines():
            line = line.split("#")[0].strip()
            if line and not line.startswith("-"):
                assert "==" in line, f"{requirements.name}: {line} is not pinned"


def test_environment_lives_in_the_cache_keyed_by_its_requirements(monkeypatch, tmp_path):
    monkeypatch.setenv(paths.CACHE_VARIABLE, str(tmp_path))
    monkeypatch.setattr(environments, "ENVS_DIR", tmp_path / "envs")
    (tmp_path / "envs").mkdir()
    (tmp_path / "envs" / "demo.txt").write_text("numpy==2.4.6\n")
    first = environments.environment_path("demo")
    assert first.parent == tmp_path.resolve() / "envs" and first.name.startswith("demo-")
    assert first == environments.environment_path("demo")
    (tmp_path / "envs" / "demo.txt").write_text("numpy==2.4.5\n")
    assert environments.environment_path("demo") != first
    assert not environments.is_built("demo")


def test_a_kernel_names_its_python_and_this_clone_and_keeps_home_clean(monkeypatch, tmp_path):
    monkeypatch.setenv(paths.CACHE_VARIABLE, str(tmp_path))
    environments.write_kernel("rosetta-demo", "/some/venv/bin/python", "Demo")
    spec = json.loads((environments.kernels_root() / "kernels" / "rosetta-demo" / "kernel.json").read_text())
    assert spec["argv"][:3] == ["/some/venv/bin/python", "-m", "ipykernel_launcher"]
    assert spec["env"]["PYTHONPATH"] == str(paths.REPOSITORY_ROOT)
    for variable in ("KERAS_HOME", "IPYTHONDIR", "JUPYTER_DATA_DIR", "MPLCONFIGDIR"):
        assert spec["env"][variable].startswith(str(tmp_path.resolve()))
    env = environments.papermill_environment()
    assert env["JUPYTER_PATH"] == str(environments.kernels_root())


def test_build_requirements_and_system_packages_are_part_of_the_key(monkeypatch, tmp_path):
    monkeypatch.setenv(paths.CACHE_VARIABLE, str(tmp_path))
    monkeypatch.setattr(environments, "ENVS_DIR", tmp_path)
    (tmp_path / "old.txt").write_text("chainer==7.8.1\n")
    plain = environments.environment_path("old")
    (tmp_path / "old.pre.txt").write_text("setuptools<81\n")
    with_build = environments.environment_path("old")
    (tmp_path / "old.apt.txt").write_text("libopenblas-dev  # BLAS\n")
    assert len({plain, with_build, environments.environment_path("old")}) == 3
    assert environments._listed(tmp_path / "old.apt.txt") == ["libopenblas-dev"]


def test_missing_system_packages_are_named(monkeypatch, tmp_path):
    monkeypatch.setattr(environments, "ENVS_DIR", tmp_path)
    (tmp_path / "demo.apt.txt").write_text("surely-not-a-debian-package-xyz\n")
    monkeypatch.setattr(environments.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(environments.shutil, "which", lambda tool: "/usr/bin/dpkg-query" if tool == "dpkg-query" else None)
    with pytest.raises(RuntimeError, match="surely-not-a-debian-package-xyz.*not root"):
        environments.ensure_system_packages("demo")


def test_the_background_builds_run_side_by_side_in_the_tests_order(monkeypatch, capsys):
    """build_then_resolve starts the builds in the order given, at most BUILDS_AT_ONCE at once, and
    builds every one of them before resolving the GPU builds."""
    import threading
    import time

    lock, running, started, peak = threading.Lock(), [], [], [0]

    def build(name, log=print):
        with lock:
            started.append(name)
            running.append(name)
            peak[0] = max(peak[0], len(running))
        time.sleep(0.05)
        with lock:
            running.remove(name)

    monkeypatch.setattr(environments, "build", build)
    monkeypatch.setattr(environments, "resolve_gpu_requirements", lambda: {"torch": "resolved"} if not running else {})
    names = ["torch", "tensorflow", "jax", "mxnet", "theano"]
    environments.build_then_resolve(names)
    assert sorted(started) == sorted(names) and set(started[:2]) == {"torch", "tensorflow"}
    assert started.index("jax") < started.index("theano")
    assert peak[0] == environments.BUILDS_AT_ONCE == 2
    assert "GPU builds resolved: torch" in capsys.readouterr().out


def test_a_built_environment_writes_the_bytecode_it_imports_into_the_cache_only(monkeypatch, tmp_path):
    """Environments install without bytecode: their processes compile what they import once, into
    the cache, even on a machine that sets PYTHONDONTWRITEBYTECODE, and leave the sources' folders
    alone; another interpreter keeps its own settings."""
    monkeypatch.setenv(paths.CACHE_VARIABLE, str(tmp_path / "cache"))
    python = tmp_path / "cache" / "envs" / "demo-0" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.symlink_to(sys.executable)
    sources = tmp_path / "sources"
    sources.mkdir()
    (sources / "demo_module.py").write_text("VALUE = 42\n")
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", PYTHONPATH=str(sources))
    env.update(environments.bytecode_variables(python))
    subprocess.run([str(python), "-c", "import demo_module; assert demo_module.VALUE == 42"], env=env, check=True)
    written = list((tmp_path / "cache" / "bytecode").rglob("demo_module.*.pyc"))
    assert len(written) == 1 and written[0].parent.name == "sources"
    assert not (sources / "__pycache__").exists()
    assert environments.bytecode_variables(sys.executable) == {}


def test_jax_loads_in_a_second_kernel_what_xla_compiled_in_the_first(monkeypatch, tmp_path):
    """JAX's compiled programs persist in the cache, one folder per CPU: a second process on this
    machine loads the program the first compiled (JAX reports the hit) and compiles nothing anew."""
    monkeypatch.setenv(paths.CACHE_VARIABLE, str(tmp_path / "cache"))
    variables = environments.compile_cache_variables()
    folder = Path(variables["JAX_COMPILATION_CACHE_DIR"])
    assert folder.parent == tmp_path / "cache" / "xla"
    monkeypatch.setattr(environments.probe, "cpu_info", lambda: {"model name": "another CPU", "flags": "avx2"})
    assert environments.compile_cache_variables()["JAX_COMPILATION_CACHE_DIR"] != str(folder)
    python = environments.environment_python(environments.build("jax"))
    program = ("import jax, jax.numpy as jnp\n"
               "hits = []\n"
               "jax.monitoring.register_event_listener(lambda event, **_: hits.append(event))\n"
               "print(float(jax.jit(lambda x: jnp.tanh(x) @ x.T)(jnp.ones((8, 8))).sum()))\n"
               "print(hits.count('/jax/compilation_cache/cache_hits'))\n")
    env = dict(os.environ, **variables)
    first = subprocess.run([str(python), "-c", program], env=env, capture_output=True, text=True, check=True)
    kept = sorted(path.name for path in folder.iterdir())
    second = subprocess.run([str(python), "-c", program], env=env, capture_output=True, text=True, check=True)
    assert first.stdout.split()[0] == second.stdout.split()[0]
    assert kept and int(first.stdout.split()[1]) == 0 and int(second.stdout.split()[1]) >= 1
    assert sorted(path.name for path in folder.iterdir()) == kept
