"""An offline GPU host in one call (issue 26). `run_all.py --bundle DIR` writes what such a host needs
for a selection of frameworks × tasks under one profile: the wheels its Python lacks (papermill,
ipykernel and their needs, keras where a Keras row is selected), fetched here with pip for the host's
Python and platform, and each selected task's data cut to the examples the profile reads
(common.data_bundle), under a size limit. `run_all.py --from-bundle DIR` on the host checks the
bundle, installs the wheels into a private folder, runs the selection on its own interpreter with
the bundle as the only data source, and packs the results into one archive for --import-records."""
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from common import data_bundle
from common.loaders.sources import file_digest
from common.paths import REPOSITORY_ROOT, folder_bytes

MANIFEST = "bundle.json"
WHEELS, DATA = "wheels", "data"
# The lent H200's interpreter is Python 3.12 on x86-64 Linux (the device library's KINDS.md).
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_26_x86_64", "manylinux_2_17_x86_64",
             "manylinux2014_x86_64", "manylinux_2_12_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64",
             "manylinux_2_5_x86_64", "linux_x86_64")
HOST_PACKAGES = REPOSITORY_ROOT / "envs" / "gpu-host.packages"
# What the runner and the kernels need besides the host's stack, pinned as in the runner's
# environment; keras for the Keras rows, pinned as in the framework environments.
RUNNER_NEEDS = ("papermill", "ipykernel", "nbclient", "nbformat", "jupyter_client")
KERAS_FRAMEWORKS = ("keras_tf", "keras_jax", "keras_torch")
MEGABYTE = 1024 * 1024
# The ResNet-50 weights (189 MB converted) fit in no bundle: the Inference task runs on random
# weights there, as on any machine without them, and its record says so.
ALWAYS_LEFT_OUT = {"resnet50-weights": "the converted ResNet-50 weights take 189 MB, over any bundle's "
                                       "limit: the Inference task runs on its random weights there"}


class BundleError(RuntimeError):
    """A bundle that cannot serve the run asked of it, said before any kernel starts."""


def pins(requirements, names):
    """{name: 'name==version'} of `names` as `requirements` (a file of envs/) pins them."""
    wanted = {name.lower().replace("-", "_") for name in names}
    found = {}
    for line in Path(requirements).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            name = line.split("==", 1)[0].strip()
            if name.lower().replace("-", "_") in wanted:
                found[name] = line
    return found


def wheel_project(file_name):
    return file_name.split("-", 1)[0].lower().replace("_", "-").replace(".", "-")


def normalised(name):
    return name.strip().lower().replace("_", "-").replace(".", "-")


def host_packages(path):
    """Project names (normalised) one a line; '#' starts a comment."""
    return {normalised(line.split("#", 1)[0]) for line in Path(path).read_text().splitlines()
            if line.split("#", 1)[0].strip()}


def task_sources(task, params):
    """(data key, first count, second count) of each real source `task` reads under `params`;
    None counts keep everything."""
    from common.data import imdb_key
    from common.loaders import chestxray, photos

    if task == "CNN":
        return [("cnn-images", params["n_train"], params["n_test"])]
    if task == "RNN":
        return [(imdb_key(params["vocabulary_size"], params["sequence_length"]), params["n_train"], params["n_test"])]
    if task == "FCN5":
        counts = [n for n in (params["n_train"], params.get("sweep_n_train")) if n is not None]
        return [("mnist", max(counts) if counts else None, params["n_test"])]
    if task == "GPT":
        return [("imdb-text", params["n_train"], params["n_valid"])]
    if task == "MultiGPU":
        return [(chestxray.BUNDLE_KEY, None, None)]
    if task == "Inference":
        return [(photos.BUNDLE_KEY, None, None), ("resnet50-weights", None, None)]
    raise ValueError(f"unknown task {task!r}")


def snapshot(key, n_first, n_second):
    """The arrays common.data_bundle stores for `key`, fetched here when the cache lacks them."""
    from common import data
    from common.loaders import chestxray, photos

    if key == chestxray.BUNDLE_KEY:
        return chestxray.bundle_arrays()
    if key == photos.BUNDLE_KEY:
        return photos.bundle_arrays()
    return data_bundle.pack(data.load_real(key), n_first, n_second)


def folder_megabytes(folder):
    return folder_bytes(folder) / MEGABYTE


# ----------------------------------------------------------------------------------------------
# --bundle DIR

def download_wheels(frameworks, python_version, host_names, directory, log=print):
    """pip download of what the host lacks, for its Python and platform; {file: sha256}."""
    requirements = pins(REPOSITORY_ROOT / "envs" / "runner.txt", RUNNER_NEEDS)
    if any(name in KERAS_FRAMEWORKS for name in frameworks):
        requirements.update(pins(REPOSITORY_ROOT / "envs" / "torch.txt", ("keras",)))
    download = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
                "--only-binary=:all:", "--python-version", python_version, "--implementation", "cp",
                "--dest", str(directory)]
    for tag in PLATFORMS:
        download += ["--platform", tag]
    log(f"[bundle] pip download for Python {python_version}: {' '.join(sorted(requirements.values()))}")
    result = subprocess.run(download + sorted(requirements.values()), capture_output=True, text=True)
    if result.returncode != 0:
        raise BundleError("pip download failed:\n" + "\n".join(result.stderr.splitlines()[-12:]))
    wheels = {}
    for path in sorted(Path(directory).iterdir()):
        # The host's own copy is used where it has one: two versions of a package would clash.
        if wheel_project(path.name) in host_names or not path.name.endswith(".whl"):
            path.unlink()
        else:
            wheels[path.name] = file_digest(path)
    return wheels


def make(arguments, log=print):
    """Write the bundle of `arguments`' selection into arguments.bundle; return its manifest."""
    from common.params import get_params

    directory = Path(arguments.bundle)
    if directory.exists() and any(directory.iterdir()):
        raise BundleError(f"--bundle {directory}: the folder is not empty (a bundle is written into a new one)")
    host_file = arguments.bundle_host_packages or HOST_PACKAGES
    if not Path(host_file).is_file():
        raise BundleError(f"--bundle-host-packages: no such file {host_file}")
    frameworks, tasks, profile = list(arguments.frameworks), list(arguments.tasks), arguments.profile
    started = time.monotonic()
    if "CNN" in tasks:  # Fashion-MNIST, the CNN's real images where no CIFAR-10 source answers
        from runner import environments

        try:
            environments.ensure_system_packages("datasets", log)
        except RuntimeError as error:
            log(f"[bundle] {error}")
    (directory / WHEELS).mkdir(parents=True)
    (directory / DATA).mkdir()
    wheels = download_wheels(frameworks, arguments.bundle_python, host_packages(host_file), directory / WHEELS, log)
    limit = arguments.bundle_limit_mb * MEGABYTE
    used = sum((directory / WHEELS / name).stat().st_size for name in wheels)
    if used > limit:
        raise BundleError(f"the wheels alone take {used / MEGABYTE:.1f} MiB, over the limit of "
                          f"{arguments.bundle_limit_mb} MiB")
    # One snapshot per source, the largest count any selected task reads.
    wanted = {}
    for task in tasks:
        for key, n_first, n_second in task_sources(task, get_params(task, profile)):
            entry = wanted.setdefault(key, {"counts": [n_first, n_second], "tasks": []})
            entry["tasks"].append(task)
            entry["counts"] = [None if None in (old, new) else max(old, new) for old, new in zip(entry["counts"], (n_first, n_second))]
    files, left_out, written = {}, {}, []
    for key, entry in wanted.items():
        if key in ALWAYS_LEFT_OUT:
            left_out[key] = ALWAYS_LEFT_OUT[key]
            continue
        log(f"[bundle] data {key} for {', '.join(entry['tasks'])}")
        try:
            name, size, digest = data_bundle.write(directory / DATA, key, snapshot(key, *entry["counts"]))
        except Exception as error:  # noqa: BLE001 (a source that cannot be had is said, not fatal)
            left_out[key] = f"not available here: {error}"
            continue
        written.append((size, key, {"file": name, "bytes": size, "sha256": digest, "counts": entry["counts"],
                                    "tasks": entry["tasks"]}))
    for size, key, entry in sorted(written):  # the smallest first: as many tasks on real data as fit
        if used + size <= limit:
            files[key], used = entry, used + size
        else:
            (directory / DATA / entry["file"]).unlink()
            left_out[key] = (f"{size / MEGABYTE:.1f} MiB would take the bundle past its limit of "
                             f"{arguments.bundle_limit_mb} MiB: {', '.join(entry['tasks'])} runs on its synthetic stand-in there")
    (directory / DATA / data_bundle.MANIFEST).write_text(json.dumps({"files": files, "left_out": left_out}, indent=1) + "\n")
    manifest = {
        "python": arguments.bundle_python, "platforms": list(PLATFORMS), "machine": "x86_64",
        "frameworks": frameworks, "tasks": tasks, "profile": profile,
        "wheels": wheels, "limit_mb": arguments.bundle_limit_mb,
        "megabytes": {"wheels": round(sum((directory / WHEELS / n).stat().st_size for n in wheels) / MEGABYTE, 2),
                      "data": round(sum(entry["bytes"] for entry in files.values()) / MEGABYTE, 2)},
        "data_manifest_sha256": file_digest(directory / DATA / data_bundle.MANIFEST),
        "made_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    (directory / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    log(f"[bundle] {directory}: {folder_megabytes(directory):.1f} MiB (wheels {manifest['megabytes']['wheels']} MiB, "
        f"data {manifest['megabytes']['data']} MiB) in {time.monotonic() - started:.0f} s")
    for key, reason in left_out.items():
        log(f"[bundle] left out {key}: {reason}")
    return manifest


# ----------------------------------------------------------------------------------------------
# --from-bundle DIR

def check(directory, frameworks=None, tasks=None, profile=None):
    """The bundle's manifest, after checking that it serves this interpreter and the selection and
    that every file is whole; BundleError otherwise."""
    directory = Path(directory)
    if not (directory / MANIFEST).is_file():
        raise BundleError(f"--from-bundle {directory}: no {MANIFEST} there (made by run_all.py --bundle)")
    try:
        manifest = json.loads((directory / MANIFEST).read_text())
    except json.JSONDecodeError as error:
        raise BundleError(f"--from-bundle: {directory / MANIFEST} is not valid JSON ({error})") from None
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    if manifest["python"] != here:
        raise BundleError(f"the bundle was made for Python {manifest['python']}, this interpreter is Python {here} "
                          f"(run_all.py --bundle ... --bundle-python {here})")
    if platform.machine() != manifest["machine"] or not sys.platform.startswith("linux"):
        raise BundleError(f"the bundle was made for Linux on {manifest['machine']}, this is {sys.platform} on {platform.machine()}")
    damaged = [name for name, digest in manifest["wheels"].items()
               if not (directory / WHEELS / name).is_file() or file_digest(directory / WHEELS / name) != digest]
    data_manifest = directory / DATA / data_bundle.MANIFEST
    if not data_manifest.is_file() or file_digest(data_manifest) != manifest["data_manifest_sha256"]:
        damaged.append(f"{DATA}/{data_bundle.MANIFEST}")
    else:
        for entry in json.loads(data_manifest.read_text())["files"].values():
            path = directory / DATA / entry["file"]
            if not path.is_file() or file_digest(path) != entry["sha256"]:
                damaged.append(f"{DATA}/{entry['file']}")
    if damaged:
        raise BundleError(f"the bundle {directory} is damaged: missing or corrupt {', '.join(damaged)}")
    for asked, held, what in ((frameworks, manifest["frameworks"], "frameworks"), (tasks, manifest["tasks"], "tasks")):
        missing = sorted(set(asked or ()) - set(held))
        if missing:
            raise BundleError(f"the bundle does not cover the {what} {', '.join(missing)} "
                              f"(it was made for {', '.join(held)})")
    if profile and profile != manifest["profile"]:
        raise BundleError(f"the bundle holds the data of the {manifest['profile']} profile, not {profile}")
    return manifest


def install(directory, manifest, site):
    """pip install of the bundle's wheels into `site`, no index, no dependencies resolved anew."""
    wheels = [str(Path(directory) / WHEELS / name) for name in manifest["wheels"]]
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-index",
               "--no-deps", "--no-compile", "--target", str(site)] + wheels
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise BundleError("installing the bundle's wheels failed:\n" + "\n".join(result.stderr.splitlines()[-12:]))
    from runner.environments import EXTRA_SITE_VARIABLE

    environment = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPOSITORY_ROOT), str(site)]),
                       **{EXTRA_SITE_VARIABLE: str(site)})
    probe = subprocess.run([sys.executable, "-c", "import papermill, ipykernel, tqdm, numpy"],
                           capture_output=True, text=True, env=environment)
    if probe.returncode != 0:
        raise BundleError("the runner cannot import its needs from the bundle on this interpreter:\n"
                          + probe.stderr.strip().splitlines()[-1])
    return environment


def pack(results):
    """results/ as one .tar.gz beside it (what --import-records reads); its path."""
    archive = Path(f"{results}.tar.gz")
    with tarfile.open(archive, "w:gz") as handle:
        handle.add(results, arcname="results")
    return archive


def run(arguments, argv, log=print):
    """--from-bundle: check, install, run the selection on this interpreter, pack; the run's exit code."""
    from runner.frameworks import RUNNABLE
    from common.params import TASKS

    directory = Path(arguments.from_bundle).resolve()
    # Options left at their defaults take the bundle's selection.
    frameworks = None if list(arguments.frameworks) == list(RUNNABLE) else arguments.frameworks
    tasks = None if list(arguments.tasks) == list(TASKS) else arguments.tasks
    given_profile = "--profile" in argv or any(item.startswith("--profile=") for item in argv)
    manifest = check(directory, frameworks, tasks, arguments.profile if given_profile else None)
    results = arguments.results_dir.resolve()
    if results == (REPOSITORY_ROOT / "results").resolve():
        results = directory.parent / f"{directory.name}-results"
    if results.exists() and any(results.iterdir()):
        raise BundleError(f"--results-dir {results} is not empty: a bundle's run writes into a new folder")
    results.mkdir(parents=True, exist_ok=True)
    site = Path(tempfile.mkdtemp(prefix="rosetta-bundle-site-"))
    log(f"[bundle] installing {len(manifest['wheels'])} wheels into {site}")
    environment = install(directory, manifest, site)
    environment[data_bundle.VARIABLE] = str(directory / DATA)
    readme = results / "README.md"
    from runner.report import BEGIN_MARKER, END_MARKER

    readme.write_text(f"{BEGIN_MARKER}\n{END_MARKER}\n")
    passed = strip_options(argv, ("--from-bundle", "--frameworks", "--tasks", "--profile", "--results-dir",
                                  "--readme", "--accelerator"))
    command = [sys.executable, str(REPOSITORY_ROOT / "run_all.py"), "--use-current-python",
               "--frameworks", ",".join(frameworks or manifest["frameworks"]),
               "--tasks", ",".join(tasks or manifest["tasks"]), "--profile", manifest["profile"],
               "--accelerator", arguments.accelerator,
               "--results-dir", str(results), "--readme", str(readme)] + passed
    log(f"[bundle] {' '.join(command[1:])}")
    child = subprocess.Popen(command, env=environment, cwd=REPOSITORY_ROOT)
    try:
        code = child.wait()
    except KeyboardInterrupt:  # a deadline (timeout -s INT): the run records what ran, then we pack
        child.send_signal(signal.SIGINT)
        code = child.wait()
    shutil.rmtree(site, ignore_errors=True)
    archive = pack(results)
    log(f"[bundle] results packed into {archive} ({archive.stat().st_size / MEGABYTE:.1f} MiB): "
        f"python3 run_all.py --import-records {archive.name} at home")
    return code


def strip_options(argv, names):
    """argv without the options `names` and their values."""
    kept, skip = [], False
    for item in argv:
        if skip:
            skip = False
            continue
        name = item.split("=", 1)[0]
        if name in names:
            skip = "=" not in item
            continue
        kept.append(item)
    return kept
