"""An offline host in one call (runner/bundle.py): a bundle of the smoke selection, made here, runs
inside a network namespace with no route out (`unshare -rn`, loopback up for the kernel's sockets)
on a framework environment that lacks papermill, with the bundle's data as the only source; and a
bundle that cannot serve a run says why before any kernel starts."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from common import data_bundle, records
from common.data_choice import DataUnavailable
from common.loaders import photos
from runner import bundle, environments

ROOT = Path(__file__).resolve().parent.parent
HERE = f"{sys.version_info.major}.{sys.version_info.minor}"


def offline_namespace_works():
    if not shutil.which("unshare") or not shutil.which("ip"):
        return False
    return subprocess.run(["unshare", "-rn", "sh", "-c", "ip link set lo up"], capture_output=True).returncode == 0


@pytest.fixture(scope="module")
def torch_python():
    return environments.environment_python(environments.build("torch"))


@pytest.fixture(scope="module")
def smoke_bundle(tmp_path_factory, torch_python):
    """PyTorch × GPT, smoke: the wheels the torch environment lacks (papermill), IMDB's text cut to
    the smoke profile's characters."""
    folder = tmp_path_factory.mktemp("bundle")
    listed = subprocess.run([str(torch_python), "-m", "pip", "list", "--format=freeze"],
                            capture_output=True, text=True, check=True).stdout
    host = folder / "host.packages"
    host.write_text("\n".join(line.split("==")[0] for line in listed.splitlines()) + "\n")
    result = subprocess.run([sys.executable, str(ROOT / "run_all.py"), "--bundle", str(folder / "b"),
                             "--frameworks", "pytorch", "--tasks", "GPT", "--profile", "smoke",
                             "--bundle-python", HERE, "--bundle-host-packages", str(host)],
                            capture_output=True, text=True, cwd=ROOT, env={**os.environ, "ROSETTA_RUNNER": "1"})
    print(result.stdout[-3000:], result.stderr[-3000:])
    assert result.returncode == 0
    return folder / "b"


def from_bundle(python, folder, *extra, offline=False):
    command = [str(python), str(ROOT / "run_all.py"), "--from-bundle", str(folder), *extra]
    if offline:
        command = ["unshare", "-rn", "sh", "-c", "ip link set lo up && exec \"$0\" \"$@\"", *command]
    environment = {key: value for key, value in os.environ.items() if key not in ("ROSETTA_RUNNER", "PYTHONPATH")}
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=environment, timeout=1800)


def test_the_bundle_holds_the_missing_wheels_and_the_profiles_data(smoke_bundle):
    manifest = json.loads((smoke_bundle / bundle.MANIFEST).read_text())
    projects = {bundle.wheel_project(name) for name in manifest["wheels"]}
    assert "papermill" in projects and "torch" not in projects and "numpy" not in projects
    data = json.loads((smoke_bundle / "data" / data_bundle.MANIFEST).read_text())
    assert data["files"]["imdb-text"]["counts"] == [200_000, 20_000]  # the smoke profile's characters
    assert manifest["megabytes"]["wheels"] + manifest["megabytes"]["data"] < manifest["limit_mb"]


@pytest.mark.skipif(not offline_namespace_works(), reason="unshare -rn (a user and network namespace) is refused here")
def test_an_offline_run_from_the_bundle_records_real_data_and_packs_its_results(smoke_bundle, torch_python, tmp_path):
    results = tmp_path / "gpu-results"
    result = from_bundle(torch_python, smoke_bundle, "--results-dir", str(results), "--variants", "default", offline=True)
    print(result.stdout[-4000:], result.stderr[-3000:])
    assert result.returncode == 0
    (record,) = records.read_records(results / "records.jsonl")
    assert (record["framework"], record["task"], record["status"]) == ("pytorch", "GPT", "ok")
    # IMDB's text came from the bundle: nothing could be fetched in the namespace.
    assert record["data"] == "real" and record["data_source"].startswith("IMDB")
    assert "papermill" not in subprocess.run([str(torch_python), "-m", "pip", "list"], capture_output=True, text=True).stdout
    archive = Path(f"{results}.tar.gz")
    home = tmp_path / "home"
    readme = tmp_path / "README.md"
    from runner.report import BEGIN_MARKER, END_MARKER

    readme.write_text(f"{BEGIN_MARKER}\n{END_MARKER}\n")
    imported = subprocess.run([sys.executable, str(ROOT / "run_all.py"), "--import-records", str(archive),
                               "--results-dir", str(home), "--readme", str(readme)],
                              capture_output=True, text=True, cwd=ROOT, env={**os.environ, "ROSETTA_RUNNER": "1"})
    assert imported.returncode == 0, imported.stderr[-2000:]
    (copied,) = records.read_records(home / "records.jsonl")
    assert copied["run_id"] == record["run_id"] and (ROOT / copied["notebook"]).exists()


def copy_of(folder, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    return copy


@pytest.mark.parametrize("damage, message", [
    ("python", "made for Python 2.7"),
    ("corrupt wheel", "damaged: missing or corrupt papermill"),
    ("missing data", "damaged: missing or corrupt data/imdb-text.npz.xz"),
    ("tasks", "does not cover the tasks CNN"),
    ("profile", "holds the data of the smoke profile, not quick"),
    ("no manifest", "no bundle.json there"),
])
def test_a_bundle_that_cannot_serve_the_run_says_why_before_any_kernel(smoke_bundle, torch_python, tmp_path, damage, message):
    folder, extra = copy_of(smoke_bundle, tmp_path), []
    manifest = json.loads((folder / bundle.MANIFEST).read_text())
    if damage == "python":
        manifest["python"] = "2.7"
        (folder / bundle.MANIFEST).write_text(json.dumps(manifest))
    elif damage == "corrupt wheel":
        wheel = next(name for name in manifest["wheels"] if name.startswith("papermill"))
        (folder / "wheels" / wheel).write_bytes(b"not a wheel")
    elif damage == "missing data":
        (folder / "data" / "imdb-text.npz.xz").unlink()
    elif damage == "tasks":
        extra = ["--tasks", "GPT,CNN"]
    elif damage == "profile":
        extra = ["--profile", "quick"]
    else:
        (folder / bundle.MANIFEST).unlink()
    result = from_bundle(torch_python, folder, "--results-dir", str(tmp_path / "results"), *extra)
    assert result.returncode != 0 and message in result.stderr, result.stderr
    assert not (tmp_path / "results").exists()  # refused before anything ran


def test_a_snapshot_round_trips_and_a_left_out_source_is_unavailable(tmp_path, monkeypatch):
    real = ((np.array([[1, 2], [3, 4], [5, 6]]), np.array([0, 1, 0])), (np.array([[7, 8]]), np.array([1])), "a source")
    name, size, digest = data_bundle.write(tmp_path, "demo", data_bundle.pack(real, 2, None))
    texts = data_bundle.pack(("training text", "validation", "texts"), 5, None)
    text_name, _, text_digest = data_bundle.write(tmp_path, "words", texts)
    # Named arrays, as the photos are carried (their JPEG bytes): no source, no train/test split.
    jpeg = b"\xff\xd8 not really a photo \xff\xd9"
    photo_arrays = {"kind": np.array("arrays"), "members": np.array(["imagenet_00_cat.jpg"]),
                    "file_0": np.frombuffer(jpeg, np.uint8)}
    photo_name, _, photo_digest = data_bundle.write(tmp_path, photos.BUNDLE_KEY, photo_arrays)
    (tmp_path / data_bundle.MANIFEST).write_text(json.dumps({
        "files": {"demo": {"file": name, "sha256": digest}, "words": {"file": text_name, "sha256": text_digest},
                  photos.BUNDLE_KEY: {"file": photo_name, "sha256": photo_digest}},
        "left_out": {"mnist": "too large"}}))
    monkeypatch.setenv(data_bundle.VARIABLE, str(tmp_path))
    (x_train, y_train), (x_test, y_test), source = data_bundle.read("demo")
    assert x_train.tolist() == [[1, 2], [3, 4]] and y_test.tolist() == [1] and source == "a source"
    assert data_bundle.read("words") == ("train", "validation", "texts")
    assert photos._bundled_photos() == {"imagenet_00_cat.jpg": jpeg}
    with pytest.raises(DataUnavailable, match="left out of the data bundle \\(too large\\)"):
        data_bundle.read("mnist")
    with pytest.raises(DataUnavailable, match="not in the data bundle"):
        data_bundle.read("imdb-text")
    from common import data

    # Under "auto" a source the bundle lacks is the synthetic stand-in, said; nothing is fetched.
    assert data.load_mnist(8, 4, data="auto").data == "synthetic"
