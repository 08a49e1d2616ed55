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

from common import data_bundle, synthetic
from common.data_choice import DataUnavailable, check_choice  # noqa: F401 (notebooks catch it here)

DataSet = namedtuple("DataSet", "x_train y_train x_test y_test data source")
TextSet = namedtuple("TextSet", "x_train x_valid vocabulary data source")
TextSet.__doc__ = """x_train, x_valid: int32 token ids of the training and validation texts;
vocabulary: the characters, token i being vocabulary[i]; data, source: what the record says."""
SYNTHETIC_TEXT_CHARACTERS = 2_000_000


def _real_or_fallback(name, data, key):
    """The real source `key`'s data per the `data` policy (from the data bundle where one is in
    use, common.data_bundle), or None for synthetic."""
    check_choice(data)
    if data == "synthetic":
        return None
    try:
        return data_bundle.read(key) if data_bundle.folder() else load_real(key)
    except DataUnavailable as error:
        if data == "real":
            raise
        print(f"[data] {name}: no real source available, using SYNTHETIC data instead ({error})")
        return None


def load_real(key):
    """What the real source `key` gives (a loader's load_real), or DataUnavailable."""
    from common.loaders import chestxray, cifar10, imdb, imdb_text, mnist

    if key.startswith("imdb-") and key != "imdb-text":
        vocabulary_size, sequence_length = map(int, key.split("-")[1:])
        return imdb.load_real(vocabulary_size=vocabulary_size, sequence_length=sequence_length)
    sources = {"cifar-10": cifar10.load_real, "cnn-images": _real_cnn_images, "mnist": mnist.load_real,
               "imdb-text": imdb_text.load_real, "chestxray-images": chestxray.image_paths}
    if key not in sources:
        raise ValueError(f"unknown data source {key!r}")
    return sources[key]()


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
    return _images("cifar-10", "CIFAR-10", n_train, n_test, layout, data)


def _images(key, name, n_train, n_test, layout, data):
    real = _real_or_fallback(name, data, key)
    if real is None:
        n_train = 50000 if n_train is None else n_train
        n_test = 10000 if n_test is None else n_test
        x, y = synthetic.images(n_train + n_test, (3, 32, 32), 10)
        x_train, y_train, x_test, y_test = x[:n_train], y[:n_train], x[n_train:], y[n_train:]
        kind, source = "synthetic", "synthetic stand-in (oriented stripes, 10 classes, 3×32×32)"
    else:
        (x_train, y_train), (x_test, y_test), source = real
        x_train, y_train = _subset(x_train, y_train, n_train)
        x_test, y_test = _subset(x_test, y_test, n_test)
        x_train = x_train.astype(np.float32) / 255.0
        x_test = x_test.astype(np.float32) / 255.0
        kind = "real"
    return DataSet(_to_layout(x_train, layout), y_train.astype(np.int64),
                   _to_layout(x_test, layout), y_test.astype(np.int64), kind, source)


CNN_FALLBACK_SHAPE = "28×28 grey padded to 32×32, repeated on 3 channels"


def fashion_in_cifar_shape(images):
    """(n, 28, 28) uint8 → (n, 3, 32, 32) uint8: zero padding of 2 pixels, grey on 3 channels."""
    padded = np.pad(images, ((0, 0), (2, 2), (2, 2)))
    return np.repeat(padded[:, None], 3, axis=1)


def _real_cnn_images():
    """CIFAR-10, else real Fashion-MNIST in CIFAR shape (uint8, NCHW), or DataUnavailable."""
    from common.loaders import cifar10, fashion_mnist

    try:
        return cifar10.load_real()
    except DataUnavailable as cifar_error:
        try:
            (x_train, y_train), (x_test, y_test), source = fashion_mnist.load_real()
        except DataUnavailable as fashion_error:
            raise DataUnavailable(f"{cifar_error}; {fashion_error}") from None
        print(f"[data] CIFAR-10 unavailable, using real Fashion-MNIST in CIFAR shape ({cifar_error})")
        return ((fashion_in_cifar_shape(x_train), y_train), (fashion_in_cifar_shape(x_test), y_test),
                f"{source}, {CNN_FALLBACK_SHAPE}")


def load_cnn_images(n_train=None, n_test=None, layout="NCHW", data="auto"):
    """The CNN task's images: CIFAR-10 where a source answers, else real Fashion-MNIST in CIFAR
    shape, else (data="auto") the synthetic stand-in. float32 in [0, 1] in `layout`, int64
    labels; `source` names the data set exactly."""
    return _images("cnn-images", "CIFAR-10 or Fashion-MNIST", n_train, n_test, layout, data)


def imdb_key(vocabulary_size, sequence_length):
    return f"imdb-{vocabulary_size}-{sequence_length}"


def load_imdb(n_train=None, n_test=None, vocabulary_size=30000, sequence_length=150, data="auto"):
    """IMDB as Keras-style int32 sequences (start 1, oov 2, index_from 3, 'pre' padding)."""
    real = _real_or_fallback("IMDB", data, imdb_key(vocabulary_size, sequence_length))
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
    real = _real_or_fallback("MNIST", data, "mnist")
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


XrayData = namedtuple("XrayData", "train_paths y_train valid_paths y_valid data source")


def load_chestxray(n_train=None, n_valid=None, data="auto"):
    """ChestX-ray14's patient-wise train and validation splits: PNG paths and (N, 14) float32
    labels. The labels are always the real ones; the images are the NIH files under
    $ROSETTA_CHESTXRAY_DIR, else (data="auto") deterministic synthetic 1024×1024 PNGs written once
    into the cache, said loudly."""
    from common.loaders import chestxray

    names, labels, patients = chestxray.load_labels()
    train, valid, _ = chestxray.patient_split(patients)
    train, valid = train[:n_train], valid[:n_valid]
    found = _real_or_fallback("ChestX-ray14 images", data, "chestxray-images")
    if found is None:
        limit = chestxray.SYNTHETIC_LIMIT
        if len(train) > limit or len(valid) > limit // 4:
            print(f"[data] synthetic stand-in: at most {limit} train and {limit // 4} validation images")
            train, valid = train[:limit], valid[:limit // 4]
        wanted = np.concatenate([train, valid])
        paths = dict(zip(wanted, chestxray.synthetic_pngs([names[i] for i in wanted])))
        kind = "synthetic"
        source = ("synthetic 1024×1024 greyscale PNGs with the real ChestX-ray14 labels "
                  "(torchxrayvision's Data_Entry_2017_v2020.csv)")
    else:
        wanted = np.concatenate([train, valid])
        missing = [names[i] for i in wanted if names[i] not in found]
        if missing:
            raise DataUnavailable(f"{len(missing)} ChestX-ray14 images missing under "
                                  f"${chestxray.FOLDER_VARIABLE}, e.g. {missing[0]}")
        paths = {index: found[names[index]] for index in wanted}
        kind, source = "real", "ChestX-ray14 (NIH), patient-wise split"
    return XrayData([str(paths[i]) for i in train], labels[train], [str(paths[i]) for i in valid],
                    labels[valid], kind, source)


def load_characters(n_train=None, n_valid=None, data="auto"):
    """Character-level text for the GPT task: IMDB's reviews (common.loaders.imdb_text) or a
    synthetic review-like text, as token ids over the characters present (sorted by code point, so
    the vocabulary is the same in every framework and profile), the first `n_train` and `n_valid`
    characters of the training and validation texts."""
    real = _real_or_fallback("IMDB text", data, "imdb-text")
    if real is None:
        whole = synthetic.text(SYNTHETIC_TEXT_CHARACTERS)
        cut = int(0.9 * len(whole))
        train, valid, kind, source = whole[:cut], whole[cut:], "synthetic", "synthetic review-like text"
    else:
        train, valid, source = real
        kind = "real"
    vocabulary = "".join(sorted(set(train) | set(valid)))
    lookup = np.zeros(128, np.int32)
    lookup[[ord(character) for character in vocabulary]] = np.arange(len(vocabulary))

    def encode(text, n):
        return lookup[np.frombuffer(text[:n].encode("ascii"), np.uint8)]

    return TextSet(encode(train, n_train), encode(valid, n_valid), vocabulary, kind, source)


UNKNOWN_CHARACTER = "\ufffd"


def decode(tokens, vocabulary):
    """The text of a sequence of token ids; an id past the text's vocabulary (the model's output
    layer is wider, params' vocabulary_size, and an untrained model may pick one) reads as U+FFFD."""
    return "".join(vocabulary[int(token)] if int(token) < len(vocabulary) else UNKNOWN_CHARACTER
                   for token in tokens)
