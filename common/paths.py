"""Where the project keeps what it downloads or builds: one cache root outside the clone; a small
file there replaced whole; and the path helpers the runner's two sides share (a path relative to
the repository, a folder's size, a label made a file name)."""
import os
import re
import socket
from pathlib import Path

CACHE_VARIABLE = "ROSETTA_CACHE"
REPOSITORY_ROOT = Path(__file__).resolve().parent.parent


def relative(path):
    """`path` relative to the repository where it lies inside it, else absolute."""
    try:
        return str(Path(path).resolve().relative_to(REPOSITORY_ROOT))
    except ValueError:
        return str(Path(path).resolve())


def slug(label):
    """A label as a file name: lower case, every run of other characters one dash."""
    return re.sub(r"-+", "-", "".join(c if c.isalnum() else "-" for c in label.lower())).strip("-")


def folder_bytes(folder):
    """The bytes of the files under `folder`, links not followed (an unreadable file counts none)."""
    total = 0
    for directory, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(directory, name)).st_size
            except OSError:
                pass
    return total


def cache_root():
    """The cache root: $ROSETTA_CACHE, else ~/.cache/dl-rosetta."""
    configured = os.environ.get(CACHE_VARIABLE)
    root = Path(configured).expanduser() if configured else Path.home() / ".cache" / "dl-rosetta"
    return root.resolve()


def data_cache():
    """Folder for data sets and converted weights (checksummed files)."""
    path = cache_root() / "data"
    path.mkdir(parents=True, exist_ok=True)
    return path


def results_dir():
    return REPOSITORY_ROOT / "results"


def staging_path(path):
    """Where one process writes `path` before os.replace moves it into place in one step: a name of
    this host's and process's own, since several processes may fill the same cache file at once
    (the test suite's two workers, the nodes of a run across machines on a shared home)."""
    return path.with_name(f".{path.name}.{socket.gethostname()}.{os.getpid()}.part")


def write_whole(path, text):
    """Replace `path` with `text` in one step: two runs may write or read the same small file at once
    (a checksum sidecar, a kernel spec, an environment's marker: the test suite's two workers), and
    neither may see it half-written."""
    temporary = staging_path(path)
    temporary.write_text(text)
    os.replace(temporary, path)
