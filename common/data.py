"""The one entry point every notebook uses for data: real when it can be had, else synthetic.

`data` is one of:
  auto       real data when a source answers (or the cache holds it), else the synthetic stand-in,
             announced by one line on stdout;
  real       real data or a DataUnavailable error naming every source tried;
  synthetic  the deterministic learnable stand-in, without trying any source.
Every loader returns a DataSet whose `data` field ('real' or 'synthetic') and `source` text go
into the record, so tables never mix real and synthetic rows.
"""
from collections import namedtuple

import numpy as np

from common import synthetic
from common.data_choice import DataUnavailable, check_choice  # noqa: F401 (notebooks catch it here)

DataSet = namedtuple("DataSet", "x_train y_train x_test y_test data source")


def _real_or_fallback(name, data, load_real):
    """Call load_real() per the `data` policy; return its value or None for synthetic."""
    check_choice(data)
    if data == "synthetic":
        return None
    try:
        return load_real()
    except DataUnavailable as error:
        if data == "real":
            raise
        print(f"[data] {name}: no real source available, using SYNTHETIC data instead ({error})")
        return None


def _subset(x, y, n):
    if n is None or n >= len(x):
        return x, y
    return x[:n], y[:n]


def _to_layout(x, layout):
    if layout == "NCHW":
        return np.ascontiguousarray(x)
    if layout == "NHWC":
        return np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    raise ValueError(f"unknown image layout {layout!r}; valid: NCHW, NHWC")


def load_cifar10(n_train=None, n_test=None, layout="NCHW", data="auto"):
    """CIFAR-10 as float32 in [0, 1] in `layout`, int64 labels."""
    from common import cifar10

    real = _real_or_fallback("CIFAR-10", data, cifar10.load_real)
    if real is None:
        n_train = 50000 if n_train is None else n_train
        n_test = 10000 if n_test is None else n_test
        x, y = synthetic.images(n_train + n_test, (3, 32, 32), 10)
        x_train, y_train, x_test, y_test = x[:n_train], y[:n_train], x[n_train:], y[n_train:]
        kind, source = "synthetic", "synthetic CIFAR-10 stand-in"
    else:
        (x_train, y_train), (x_test, y_test), source = real
        x_train, y_train = _subset(x_train, y_train, n_train)
        x_test, y_test = _subset(x_test, y_test, n_test)
        x_train = x_train.astype(np.float32) / 255.0
        x_test = x_test.astype(np.float32) / 255.0
        kind = "real"
    return DataSet(_to_layout(x_train, layout), y_train.astype(np.int64),
                   _to_layout(x_test, layout), y_test.astype(np.int64), kind, source)


def load_imdb(n_train=None, n_test=None, vocabulary_size=30000, sequence_length=150, data="auto"):
    """IMDB as Keras-style int32 sequences (start 1, oov 2, index_from 3, 'pre' padding)."""
    from common import imdb

    real = _real_or_fallback(
        "IMDB", data, lambda: imdb.load_real(vocabulary_size=vocabulary_size,
                                             sequence_length=sequence_length))
    if real is None:
        n_train = 25000 if n_train is None else n_train
        n_test = 25000 if n_test is None else n_test
        x, y = synthetic.sequences(n_train + n_test, sequence_length, vocabulary_size)
        x_train, y_train, x_test, y_test = x[:n_train], y[:n_train], x[n_train:], y[n_train:]
        kind, source = "synthetic", "synthetic IMDB stand-in"
    else:
        (x_train, y_train), (x_test, y_test), source = real
        x_train, y_train = _subset(x_train, y_train, n_train)
        x_test, y_test = _subset(x_test, y_test, n_test)
        kind = "real"
    return DataSet(x_train.astype(np.int32), y_train.astype(np.int64),
                   x_test.astype(np.int32), y_test.astype(np.int64), kind, source)


def load_mnist(n_train=None, n_test=None, data="auto"):
    """MNIST as (N, 784) float32 in [0, 1], int64 labels."""
    from common import mnist

    real = _real_or_fallback("MNIST", data, mnist.load_real)
    if real is None:
        n_train = 60000 if n_train is None else n_train
        n_test = 10000 if n_test is None else n_test
        x, y = synthetic.flat_images(n_train + n_test, 784, 10)
        x_train, y_train, x_test, y_test = x[:n_train], y[:n_train], x[n_train:], y[n_train:]
        kind, source = "synthetic", "synthetic MNIST stand-in"
    else:
        (x_train, y_train), (x_test, y_test), source = real
        x_train, y_train = _subset(x_train, y_train, n_train)
        x_test, y_test = _subset(x_test, y_test, n_test)
        x_train = x_train.reshape(len(x_train), -1).astype(np.float32) / 255.0
        x_test = x_test.reshape(len(x_test), -1).astype(np.float32) / 255.0
        kind = "real"
    return DataSet(x_train, y_train.astype(np.int64), x_test, y_test.astype(np.int64), kind, source)
