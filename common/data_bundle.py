"""Data carried to an offline host (run_all.py --bundle, --from-bundle): what a real loader returns,
cut to the examples a profile reads, one xz-compressed .npz per source. Where $ROSETTA_DATA_BUNDLE
names such a folder, common.data reads its real data from there and from nowhere else, and
common.loaders.sources fetches nothing: a source the bundle does not hold is unavailable, so
`data="auto"` falls back to the synthetic stand-in, said loudly as everywhere.

A snapshot holds one of two shapes of a loader's return value: examples, ((x_train, y_train),
(x_test, y_test), source), or texts, (train text, validation text, source); photos and labels of the
Inference and MultiGPU tasks are stored as named arrays (`arrays`)."""
import hashlib
import io
import json
import lzma
import os
from pathlib import Path

import numpy as np

from common.data_choice import DataUnavailable

VARIABLE = "ROSETTA_DATA_BUNDLE"
MANIFEST = "data.json"


def folder():
    """The bundle's data folder, or None where no bundle is in use."""
    configured = os.environ.get(VARIABLE)
    return Path(configured) if configured else None


def file_name(key):
    return f"{key}.npz.xz"


def _cut(array, n):
    return array if n is None else array[:n]


def pack(real, n_first=None, n_second=None):
    """A loader's return value as named arrays, the first n_first training and n_second test (or
    validation) examples or characters kept (None: all)."""
    first, second, source = real
    if isinstance(first, str):
        return {"kind": np.array("texts"), "source": np.array(source),
                "train": np.frombuffer(_cut(first, n_first).encode("ascii"), np.uint8),
                "valid": np.frombuffer(_cut(second, n_second).encode("ascii"), np.uint8)}
    (x_train, y_train), (x_test, y_test) = first, second
    return {"kind": np.array("examples"), "source": np.array(source),
            "x_train": _cut(x_train, n_first), "y_train": _cut(y_train, n_first),
            "x_test": _cut(x_test, n_second), "y_test": _cut(y_test, n_second)}


def unpack(arrays):
    """The loader's return value again."""
    kind = str(arrays["kind"])
    if kind == "texts":
        return (arrays["train"].tobytes().decode("ascii"), arrays["valid"].tobytes().decode("ascii"),
                str(arrays["source"]))
    if kind == "examples":
        return (arrays["x_train"], arrays["y_train"]), (arrays["x_test"], arrays["y_test"]), str(arrays["source"])
    return arrays  # named arrays (photos, labels): they carry no source


def write(directory, key, arrays):
    """Write one snapshot; return (file name, bytes, sha256)."""
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    content = lzma.compress(buffer.getvalue(), preset=6)
    path = Path(directory) / file_name(key)
    path.write_bytes(content)
    return path.name, len(content), hashlib.sha256(content).hexdigest()


def read(key):
    """The snapshot `key` of the bundle in use, checked against the bundle's manifest; DataUnavailable
    when the bundle left it out (saying why) or does not hold it."""
    directory = folder()
    manifest = json.loads((directory / MANIFEST).read_text())
    if key in manifest.get("left_out", {}):
        raise DataUnavailable(f"{key}: left out of the data bundle ({manifest['left_out'][key]})")
    entry = manifest.get("files", {}).get(key)
    if entry is None:
        raise DataUnavailable(f"{key}: not in the data bundle {directory}")
    content = (directory / entry["file"]).read_bytes()
    if hashlib.sha256(content).hexdigest() != entry["sha256"]:
        raise DataUnavailable(f"{key}: {entry['file']} in the data bundle is corrupt (checksum mismatch)")
    with np.load(io.BytesIO(lzma.decompress(content)), allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in archive.files}
    return unpack(arrays)
