"""Deterministic, learnable synthetic data with the shapes and dtypes of the real data sets.

Each class has its own fixed pattern, so a model that learns reaches well above chance: accuracy
still proves the training works when no real data can be had. Same seed, same arrays, everywhere.
"""
import numpy as np

SEED = 20180314


def images(n, shape, n_classes, seed=SEED, noise=0.2):
    """(n, *shape) float32 in [0, 1] (channels first) and int64 labels in [0, n_classes).

    A class is a colour (one level per channel) plus a coarse spatial pattern; a small model
    separates the classes within a few hundred images, a well-trained one almost perfectly.
    """
    rng = np.random.default_rng(seed)
    shape = tuple(shape)
    colours = rng.uniform(0.25, 0.75, size=(n_classes, shape[0]) + (1,) * (len(shape) - 1))
    coarse_shape = (n_classes, shape[0]) + tuple(max(1, size // 8) for size in shape[1:])
    coarse = rng.uniform(-0.2, 0.2, size=coarse_shape)
    for axis, size in enumerate(shape[1:], start=2):
        coarse = np.repeat(coarse, -(-size // coarse.shape[axis]), axis=axis)
    pattern = coarse[(slice(None), slice(None)) + tuple(slice(0, size) for size in shape[1:])]
    templates = (colours + pattern).astype(np.float32)
    labels = rng.integers(0, n_classes, size=n)
    x = templates[labels]
    x += rng.normal(0.0, noise, size=x.shape).astype(np.float32)
    np.clip(x, 0.0, 1.0, out=x)
    return x, labels.astype(np.int64)


def sequences(n, length, vocabulary_size, n_classes=2, seed=SEED + 1, marker_rate=0.08):
    """(n, length) int32 token ids, Keras-style ('pre' zero padding, start token 1) and labels.

    Ordinary tokens follow a Zipf-like law; each class adds its own marker words at `marker_rate`.
    """
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, n_classes, size=n)
    lengths = rng.integers(length // 3, length + 1, size=n)
    ranks = np.arange(3, vocabulary_size)
    weights = 1.0 / (ranks - 2.0)
    weights /= weights.sum()
    tokens = rng.choice(ranks, size=(n, length), p=weights)
    markers = rng.choice(np.arange(10, 200), size=(n_classes, 20), replace=False)
    is_marker = rng.random((n, length)) < marker_rate
    marker_choice = markers[labels[:, None], rng.integers(0, 20, size=(n, length))]
    tokens = np.where(is_marker, marker_choice, tokens)
    positions = np.arange(length)[None, :]
    start = length - lengths[:, None]
    tokens = np.where(positions < start, 0, tokens)
    tokens[np.arange(n), start[:, 0]] = 1
    return tokens.astype(np.int32), labels.astype(np.int64)


def flat_images(n, n_features, n_classes, seed=SEED + 2):
    """(n, n_features) float32 in [0, 1], for MNIST-shaped data."""
    x, y = images(n, (n_features,), n_classes, seed=seed)
    return x, y
