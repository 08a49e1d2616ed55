"""Real CIFAR-10 from the python-pickle batches: a user folder, a cache folder or the tarball.

No package registry ships the images, so the canonical tarball (or a copy the user already has,
named by $ROSETTA_CIFAR10_DIR) is the only real source.
"""
import io
import os
import pickle
from pathlib import Path

import numpy as np

from common.loaders import sources
from common.data_choice import DataUnavailable
from common.paths import data_cache

FOLDER_VARIABLE = "ROSETTA_CIFAR10_DIR"
BATCH_FOLDER = "cifar-10-batches-py"
TRAIN_BATCHES = tuple(f"data_batch_{number}" for number in range(1, 6))
TEST_BATCH = "test_batch"
TARBALL_NAME = "cifar-10-python.tar.gz"
_TARBALL_MD5 = "c58f30108f718f92721af3b95e74349a"

TARBALL = sources.RemoteFile(
    TARBALL_NAME, [sources.url("https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz")],
    md5=_TARBALL_MD5, size=170498071, folder="cifar10")


class _BatchUnpickler(pickle.Unpickler):
    """Unpickles the batches' dicts, lists and numpy arrays and refuses any other class."""

    _allowed = {("numpy.core.multiarray", "_reconstruct"),
                ("numpy._core.multiarray", "_reconstruct"),
                ("numpy", "ndarray"), ("numpy", "dtype"), ("_codecs", "encode")}

    def find_class(self, module, name):
        if (module, name) not in self._allowed:
            raise pickle.UnpicklingError(f"CIFAR-10 batch refers to {module}.{name}")
        return super().find_class(module, name)


def read_batch(content):
    """A batch's bytes as (images uint8 (N,3,32,32), labels int64 (N,))."""
    # The batches were pickled by Python 2: keys and strings come back as bytes.
    batch = _BatchUnpickler(io.BytesIO(content), encoding="bytes").load()
    images = np.asarray(batch[b"data"], dtype=np.uint8).reshape(-1, 3, 32, 32)
    labels = np.asarray(batch[b"labels"], dtype=np.int64)
    if len(images) != len(labels):
        raise ValueError(f"batch holds {len(images)} images but {len(labels)} labels")
    return images, labels


def _assemble(contents, source):
    """(train, test, source) from {batch name: bytes}."""
    train = [read_batch(contents[name]) for name in TRAIN_BATCHES]
    test_images, test_labels = read_batch(contents[TEST_BATCH])
    train_images = np.concatenate([images for images, _ in train])
    train_labels = np.concatenate([labels for _, labels in train])
    return (train_images, train_labels), (test_images, test_labels), source


def batch_folder(folder):
    """The folder holding the batches: `folder` itself or its `cifar-10-batches-py`, else None."""
    folder = Path(folder).expanduser()
    for candidate in (folder, folder / BATCH_FOLDER):
        if all((candidate / name).is_file() for name in TRAIN_BATCHES + (TEST_BATCH,)):
            return candidate
    return None


def read_folder(folder):
    """(train, test, source) from a folder of extracted batches."""
    found = batch_folder(folder)
    if found is None:
        raise DataUnavailable(f"{folder} holds no {BATCH_FOLDER} batches")
    contents = {name: (found / name).read_bytes() for name in TRAIN_BATCHES + (TEST_BATCH,)}
    return _assemble(contents, f"CIFAR-10, python batches in {found}")


def read_tarball(path):
    """(train, test, source) from the canonical tarball, without extracting it."""
    names = [f"{BATCH_FOLDER}/{name}" for name in TRAIN_BATCHES + (TEST_BATCH,)]
    contents = sources.read_members(path, names)
    contents = {name.split("/", 1)[1]: content for name, content in contents.items()}
    return _assemble(contents, f"CIFAR-10, canonical tarball {Path(path).name}")


def load_real():
    """((x_train uint8 (50000,3,32,32), y_train), (x_test, y_test), source) or DataUnavailable."""
    tried = []
    user_folder = os.environ.get(FOLDER_VARIABLE)
    if user_folder:
        if batch_folder(user_folder) is not None:
            return read_folder(user_folder)
        user_tarball = Path(user_folder).expanduser() / TARBALL_NAME
        if user_tarball.is_file():
            reason = sources.mismatch(TARBALL, user_tarball)
            if reason is None:
                return read_tarball(user_tarball)
            raise DataUnavailable(f"{user_tarball} is corrupt ({reason})")
        tried.append(f"${FOLDER_VARIABLE}={user_folder}: no batches and no {TARBALL_NAME} there")
    if batch_folder(data_cache() / "cifar10") is not None:
        return read_folder(data_cache() / "cifar10")
    try:
        return read_tarball(sources.fetch(TARBALL))
    except DataUnavailable as error:
        tried.append(str(error))
    raise DataUnavailable("CIFAR-10 images are in no package registry; " + "; ".join(tried)
                          + f"; or set ${FOLDER_VARIABLE} to a folder holding {BATCH_FOLDER}")

