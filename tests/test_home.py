"""Nothing is written outside the clone and its cache: a run of notebooks whose frameworks write
under `~` by default (PaddlePaddle's dataset folder, ONNX Runtime's telemetry id, matplotlib's
configuration, read when the runner imports it for the plots) leaves an empty home empty."""
import os
import subprocess
import sys
from pathlib import Path

from common import paths, records
from runner import report

ROOT = Path(__file__).resolve().parent.parent


def test_a_run_leaves_an_empty_home_empty(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    readme = tmp_path / "README.md"
    readme.write_text(f"{report.BEGIN_MARKER}\n{report.END_MARKER}\n")
    env = {name: value for name, value in os.environ.items()
           if not name.startswith(("XDG_", "MPLCONFIGDIR", "JUPYTER_", "IPYTHONDIR", "KERAS_HOME"))}
    # The cache is named, not left to its default under ~: the environments built there are reused.
    env.update(HOME=str(home), ROSETTA_CACHE=str(paths.cache_root()), ROSETTA_RUNNER="1")
    result = subprocess.run(
        [sys.executable, str(ROOT / "run_all.py"), "--frameworks", "paddle,onnxruntime,pytorch",
         "--tasks", "Inference", "--profile", "smoke", "--data", "synthetic", "--variants", "default",
         "--timeout", "900", "--results-dir", str(tmp_path / "results"), "--readme", str(readme)],
        capture_output=True, text=True, cwd=ROOT, timeout=1800, env=env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    statuses = {r["framework"]: r["status"] for r in records.read_records(tmp_path / "results" / "records.jsonl")}
    assert statuses == {"paddle": "ok", "onnxruntime": "ok", "pytorch": "ok"}
    assert sorted(str(path.relative_to(home)) for path in home.rglob("*")) == []
