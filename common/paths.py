"""Where the project keeps what it downloads or builds: one cache root outside the clone."""
import os
from pathlib import Path

CACHE_VARIABLE = "ROSETTA_CACHE"
REPOSITORY_ROOT = Path(__file__).resolve().parent.parent


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
