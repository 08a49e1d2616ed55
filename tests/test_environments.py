import json
import re
from pathlib import Path

from common import environments, paths

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
