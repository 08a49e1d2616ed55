"""Install cost: what the runner measures of a built environment, and the README table it makes."""
import json
import os
import sys

from common import paths
from runner import environments
from runner import install_costs


def built_environment(tmp_path, monkeypatch, name="demo"):
    """A made-up built environment: its requirements file, a venv folder whose python is this one,
    and the marker a finished build writes."""
    monkeypatch.setenv(paths.CACHE_VARIABLE, str(tmp_path / "cache"))
    monkeypatch.setattr(environments, "ENVS_DIR", tmp_path / "envs")
    (tmp_path / "envs").mkdir()
    (tmp_path / "envs" / f"{name}.txt").write_text("numpy==2.4.6\n")
    folder = environments.environment_path(name)
    (folder / "bin").mkdir(parents=True)
    os.symlink(sys.executable, folder / "bin" / "python")
    (folder / "lib.bin").write_bytes(b"x" * 3_000_000)
    (folder / environments.COMPLETE_MARKER).write_text(json.dumps({"seconds": 41.5}))
    monkeypatch.setitem(environments.FRAMEWORK_IMPORTS, name, "import json, decimal")
    return folder


def test_a_built_environment_is_measured_once_and_the_figures_kept(tmp_path, monkeypatch):
    folder = built_environment(tmp_path, monkeypatch)
    cost = environments.install_cost("demo")
    assert cost["build_seconds"] == 41.5
    assert 3.0 <= cost["size_mb"] < 4.0  # the 3 MB file, the link and the marker
    assert isinstance(cost["import_seconds"], float)
    marker = json.loads((folder / environments.COMPLETE_MARKER).read_text())
    assert marker["size_mb"] == cost["size_mb"] and marker["seconds"] == 41.5
    (folder / "more.bin").write_bytes(b"x" * 2_000_000)
    assert environments.install_cost("demo") == cost  # kept, not measured again
    assert environments.install_cost("demo", remeasure=True)["size_mb"] >= 5.0
    assert environments.install_cost("absent") is None


def test_the_results_keep_one_entry_per_environment_and_the_readme_lists_them(tmp_path, monkeypatch):
    built_environment(tmp_path, monkeypatch)
    results = tmp_path / "results"
    entry = install_costs.note(results, "demo", "cpu", "AMD EPYC (2 cores)")
    install_costs.note(results, "demo", "cpu", "AMD EPYC (2 cores)")
    costs = install_costs.read(results)
    assert list(costs) == ["demo (cpu)"] and costs["demo (cpu)"] == entry
    assert entry["requirements"] == "demo.txt" and entry["machine"] == "AMD EPYC (2 cores)"
    table = install_costs.markdown(costs)
    row = next(line for line in table.splitlines() if line.startswith("| demo (cpu)"))
    assert f"| `envs/demo.txt` | 42 s | 3 MB | {entry['import_seconds']:.1f} s | AMD EPYC (2 cores) |" in row
    assert install_costs.size_text(1617.6) == "1.62 GB"
    assert install_costs.markdown({}) == ""
