import numpy as np

from common import data, synthetic


def test_images_are_deterministic_with_the_right_shapes_and_range():
    x1, y1 = synthetic.images(64, (3, 32, 32), 10)
    x2, y2 = synthetic.images(64, (3, 32, 32), 10)
    assert x1.dtype == np.float32 and x1.shape == (64, 3, 32, 32)
    assert y1.dtype == np.int64 and set(np.unique(y1)) <= set(range(10))
    assert 0.0 <= x1.min() and x1.max() <= 1.0
    np.testing.assert_array_equal(x1, x2)
    np.testing.assert_array_equal(y1, y2)


def test_images_are_learnable_by_a_nearest_centroid_classifier():
    x, y = synthetic.images(1200, (3, 32, 32), 10)
    train, test = slice(0, 1000), slice(1000, None)
    centroids = np.stack([x[train][y[train] == c].mean(axis=0) for c in range(10)])
    distances = ((x[test][:, None] - centroids[None]) ** 2).sum(axis=(2, 3, 4))
    assert (distances.argmin(axis=1) == y[test]).mean() > 0.9


def test_sequences_look_like_keras_imdb():
    x, y = synthetic.sequences(200, 150, 30000)
    assert x.dtype == np.int32 and x.shape == (200, 150)
    assert x.min() == 0 and x.max() < 30000
    for row in x:
        start = np.flatnonzero(row)[0]
        assert row[start] == 1 and (row[:start] == 0).all()  # 'pre' padding, then the start token
    assert set(np.unique(y)) == {0, 1}


def test_sequences_are_learnable_from_word_counts():
    x, y = synthetic.sequences(2000, 150, 30000)
    counts = np.zeros((len(x), 200))
    for row, tokens in enumerate(x):
        small = tokens[(tokens >= 10) & (tokens < 200)]
        np.add.at(counts[row], small, 1)
    train, test = slice(0, 1500), slice(1500, None)
    profile = counts[train][y[train] == 1].mean(0) - counts[train][y[train] == 0].mean(0)
    predicted = (counts[test] @ profile > 0).astype(int)
    assert (predicted == y[test]).mean() > 0.8


def test_synthetic_choice_never_fetches_and_says_so_in_the_data_set(monkeypatch):
    def fail():
        raise AssertionError("a real source was asked")

    from common import cifar10
    monkeypatch.setattr(cifar10, "load_real", fail)
    dataset = data.load_cifar10(100, 20, layout="NHWC", data="synthetic")
    assert dataset.data == "synthetic"
    assert dataset.x_train.shape == (100, 32, 32, 3) and dataset.x_test.shape == (20, 32, 32, 3)


def test_auto_falls_back_loudly_and_real_refuses(monkeypatch, capsys):
    from common import imdb

    def unavailable(**_):
        raise data.DataUnavailable("tried: source A (refused); source B (refused)")

    monkeypatch.setattr(imdb, "load_real", unavailable)
    dataset = data.load_imdb(50, 10, data="auto")
    assert dataset.data == "synthetic" and dataset.x_train.shape == (50, 150)
    assert "SYNTHETIC" in capsys.readouterr().out
    try:
        data.load_imdb(50, 10, data="real")
    except data.DataUnavailable as error:
        assert "source A" in str(error) and "source B" in str(error)
    else:
        raise AssertionError("data='real' fell back")


def test_unknown_choice_and_layout_are_rejected():
    import pytest

    with pytest.raises(ValueError, match="valid"):
        data.load_cifar10(10, 10, data="maybe")
    with pytest.raises(ValueError, match="NCHW"):
        data.load_cifar10(10, 10, layout="CHWN", data="synthetic")
