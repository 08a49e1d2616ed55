"""Character-level text for the GPT task: IMDB's reviews cleaned to printable ASCII, one review a
line, with the RNN task's split; a synthetic stand-in; the same windows for every framework."""
import numpy as np
import pytest

from common import batches, data
from common.data_choice import DataUnavailable
from common.loaders import imdb_text


def test_a_review_becomes_one_line_of_printable_ascii():
    assert imdb_text.clean("Café <br />noir\nis <b>great</b> — 10/10") == "Cafe  noir is <b>great</b>  10/10"


def test_the_two_texts_follow_the_rnn_tasks_balanced_split():
    reviews = [f"review {index}" for index in range(8)]
    labels = [0, 1] * 4
    train, valid = imdb_text.texts_of(reviews, labels)
    assert train.endswith("\n") and len(train.splitlines()) == len(valid.splitlines()) == 4
    assert sorted(train.splitlines() + valid.splitlines()) == sorted(reviews)
    assert imdb_text.texts_of(reviews, labels) == (train, valid)


def test_synthetic_text_is_deterministic_and_decodes_back():
    first, second = data.load_characters(5000, 1000, data="synthetic"), data.load_characters(5000, 1000, data="synthetic")
    assert first.data == "synthetic" and "synthetic" in first.source
    assert np.array_equal(first.x_train, second.x_train) and first.vocabulary == second.vocabulary
    assert list(first.vocabulary) == sorted(first.vocabulary) and len(first.x_train) == 5000 and len(first.x_valid) == 1000
    text = data.decode(first.x_train[:200], first.vocabulary)
    assert text.startswith(first.vocabulary[first.x_train[0]]) and "\n" in data.decode(first.x_train, first.vocabulary)
    assert first.x_train.dtype == np.int32 and first.x_train.max() < len(first.vocabulary)


def test_windows_are_the_same_for_every_framework_and_targets_are_the_next_tokens():
    tokens = np.arange(1000, dtype=np.int32)
    offsets = batches.window_offsets(len(tokens), 16, 4, step=3)
    assert np.array_equal(offsets, batches.window_offsets(len(tokens), 16, 4, step=3))
    assert not np.array_equal(offsets, batches.window_offsets(len(tokens), 16, 4, step=4))
    inputs, targets = batches.windows(tokens, offsets, 16)
    assert inputs.shape == targets.shape == (4, 16) and np.array_equal(targets, inputs + 1)
    assert (offsets + 16 < len(tokens)).all()
    with pytest.raises(ValueError, match="block_size"):
        batches.window_offsets(17, 16, 4, step=0)


def test_the_reviews_as_text_when_they_can_be_had():
    try:
        found = data.load_characters(20000, 5000, data="real")
    except DataUnavailable as error:
        pytest.skip(f"IMDB's reviews cannot be had here: {error}")
    assert found.data == "real" and found.source == imdb_text.SOURCE
    assert len(found.vocabulary) <= 96 and "\n" in found.vocabulary and "e" in found.vocabulary
    counts = np.bincount(found.x_train, minlength=len(found.vocabulary))
    frequencies = counts[counts > 0] / counts.sum()
    # English text: a character's unigram entropy near 3 nats, the space and 'e' the commonest.
    assert 2.7 < -(frequencies * np.log(frequencies)).sum() < 3.4
    assert found.vocabulary[np.argmax(counts)] == " "


def test_an_id_past_the_texts_vocabulary_decodes_as_the_replacement_character():
    vocabulary = ["a", "b"]
    assert data.decode([0, 1, 95, 0], vocabulary) == "ab\ufffda"
