"""Deterministic, learnable synthetic data with the shapes and dtypes of the real data sets.

Same seed, same arrays, everywhere. The image stand-in is built so that only a model that sees
shapes can learn it: a class is an oriented stripe pattern whose phase, contrast and colour change
from image to image, so the class leaves no trace in any pixel's mean and a linear classifier stays
near chance (tests/test_synthetic.py shows both that and the CNN learning it).
"""
import numpy as np

SEED = 20180314


def images(n, shape, n_classes, seed=SEED, noise=0.1, chunk=4096):
    """(n, channels, height, width) float32 in [0, 1] and int64 labels in [0, n_classes).

    Class k is a sinusoidal grating at orientation k·180°/n_classes (two stripe widths alternate
    between neighbouring classes), with a random phase, contrast and colour tint per image, plus
    gaussian noise.
    """
    channels, height, width = shape
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, n_classes, size=n)
    angles = np.pi * np.arange(n_classes) / n_classes
    cycles_per_pixel = np.where(np.arange(n_classes) % 2 == 0, 1 / 4, 1 / 7)
    rows, columns = np.mgrid[0:height, 0:width].astype(np.float32)
    x = np.empty((n, channels, height, width), np.float32)
    for begin in range(0, n, chunk):
        k = labels[begin:begin + chunk]
        m = len(k)
        along = (columns[None] * np.cos(angles[k])[:, None, None] + rows[None] * np.sin(angles[k])[:, None, None])
        phase = rng.uniform(0, 2 * np.pi, size=(m, 1, 1))
        grating = np.sin(2 * np.pi * cycles_per_pixel[k][:, None, None] * along + phase)
        contrast = rng.uniform(0.25, 0.45, size=(m, 1, 1, 1))
        tint = rng.uniform(0.3, 0.7, size=(m, channels, 1, 1))
        block = tint + contrast * grating[:, None] + rng.normal(0.0, noise, size=(m, channels, height, width))
        x[begin:begin + m] = np.clip(block, 0.0, 1.0)
    return x, labels.astype(np.int64)


def _template_vectors(n, n_features, n_classes, seed, noise=0.2):
    """(n, n_features): a fixed random template per class plus noise (linearly separable)."""
    rng = np.random.default_rng(seed)
    templates = rng.uniform(0.25, 0.75, size=(n_classes, n_features)) + rng.uniform(-0.2, 0.2, size=(n_classes, n_features))
    labels = rng.integers(0, n_classes, size=n)
    x = templates[labels] + rng.normal(0.0, noise, size=(n, n_features))
    return np.clip(x, 0.0, 1.0).astype(np.float32), labels.astype(np.int64)


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
    return _template_vectors(n, n_features, n_classes, seed)


# The synthetic stand-in for character-level text: sentences of a small grammar, so that a language
# model can learn its words, their agreement and its punctuation, and one that does not learn stays
# at the characters' unigram entropy.
_SUBJECTS = ("the film", "this movie", "the actor", "the plot", "every scene", "the music", "my friend",
             "the director", "the ending", "a critic")
_VERBS = ("was", "seemed", "felt", "looked", "became")
_ADVERBS = ("very", "rather", "truly", "quite", "never", "always")
_ADJECTIVES = ("good", "bad", "boring", "brilliant", "funny", "slow", "beautiful", "awful", "clever", "long")
_ENDINGS = (".", "!", ", and i laughed.", ", but i stayed.", ", so we left.")


def text(n_characters, seed=SEED):
    """At least `n_characters` of deterministic review-like text, one review a line."""
    rng = np.random.default_rng(seed)
    lines, length = [], 0
    while length < n_characters:
        sentences = []
        for _ in range(rng.integers(1, 5)):
            sentence = (f"{_SUBJECTS[rng.integers(len(_SUBJECTS))]} {_VERBS[rng.integers(len(_VERBS))]} "
                        f"{_ADVERBS[rng.integers(len(_ADVERBS))]} {_ADJECTIVES[rng.integers(len(_ADJECTIVES))]}"
                        f"{_ENDINGS[rng.integers(len(_ENDINGS))]}")
            sentences.append(sentence[0].upper() + sentence[1:])
        lines.append(" ".join(sentences))
        length += len(lines[-1]) + 1
    return "\n".join(lines) + "\n"
