from pathlib import Path

import numpy as np
import pytest

from common import data, synthetic


def test_images_are_deterministic_with_the_right_shapes_and_range():
    x1, y1 = synthetic.images(64, (3, 32, 32), 10)
    x2, y2 = synthetic.images(64, (3, 32, 32), 10)
    assert x1.dtype == np.float32 and x1.shape == (64, 3, 32, 32)
    assert y1.dtype == np.int64 and set(np.unique(y1)) <= set(range(10))
    assert 0.0 <= x1.min() and x1.max() <= 1.0
    np.testing.assert_array_equal(x1, x2)
    np.testing.assert_array_equal(y1, y2)


def linear_accuracy(x_train, y_train, x_test, y_test):
    """Least-squares linear classifier on the raw pixels (one-hot targets)."""
    design = np.c_[x_train.reshape(len(x_train), -1), np.ones(len(x_train))]
    weights = np.linalg.lstsq(design, np.eye(10)[y_train], rcond=None)[0]
    scores = np.c_[x_test.reshape(len(x_test), -1), np.ones(len(x_test))] @ weights
    return (scores.argmax(axis=1) == y_test).mean()


def test_images_defeat_a_linear_classifier_and_the_mean_colour():
    """The class is in the stripes' orientation, not in any pixel's mean: a linear classifier and
    a nearest-mean-colour one stay near chance (the CNN's smoke run, in tests/test_notebooks.py,
    must reach common.params' target on the same images)."""
    x, y = synthetic.images(4000, (3, 32, 32), 10)
    train, test = slice(0, 3000), slice(3000, None)
    assert linear_accuracy(x[train], y[train], x[test], y[test]) < 0.2
    colours = x.mean(axis=(2, 3))
    centroids = np.stack([colours[train][y[train] == c].mean(axis=0) for c in range(10)])
    nearest = ((colours[test][:, None] - centroids[None]) ** 2).sum(axis=2).argmin(axis=1)
    assert (nearest == y[test]).mean() < 0.2


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

    from common.loaders import cifar10
    monkeypatch.setattr(cifar10, "load_real", fail)
    dataset = data.load_cifar10(100, 20, layout="NHWC", data="synthetic")
    assert dataset.data == "synthetic"
    assert dataset.x_train.shape == (100, 32, 32, 3) and dataset.x_test.shape == (20, 32, 32, 3)


def test_auto_falls_back_loudly_and_real_refuses(monkeypatch, capsys):
    from common.loaders import imdb

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


def test_fashion_mnist_in_cifar_shape_pads_and_repeats_the_grey_image():
    grey = np.arange(2 * 28 * 28, dtype=np.uint8).reshape(2, 28, 28)
    shaped = data.fashion_in_cifar_shape(grey)
    assert shaped.shape == (2, 3, 32, 32) and shaped.dtype == np.uint8
    np.testing.assert_array_equal(shaped[:, 1, 2:30, 2:30], grey)
    assert not shaped[:, :, :2].any() and not shaped[:, :, :, 30:].any()
    np.testing.assert_array_equal(shaped[:, 0], shaped[:, 2])


def test_cnn_images_fall_from_cifar_to_fashion_mnist_and_name_it(monkeypatch):
    from common.loaders import cifar10, fashion_mnist

    def no_cifar():
        raise data.DataUnavailable("no CIFAR-10 source")

    labels = np.arange(10, dtype=np.uint8)
    images = np.full((10, 28, 28), 255, np.uint8)
    monkeypatch.setattr(cifar10, "load_real", no_cifar)
    monkeypatch.setattr(fashion_mnist, "load_real",
                        lambda: ((images, labels), (images[:4], labels[:4]), "Fashion-MNIST, test files"))
    dataset = data.load_cnn_images(6, 4, layout="NHWC", data="real")
    assert dataset.data == "real" and dataset.source.startswith("Fashion-MNIST")
    assert "32×32" in dataset.source and dataset.x_train.shape == (6, 32, 32, 3)
    assert dataset.x_train.max() == 1.0 and dataset.x_train[0, 0, 0, 0] == 0.0


def test_fashion_mnist_from_a_folder_is_checked_against_debians_files(tmp_path, monkeypatch):
    from common.loaders import fashion_mnist

    monkeypatch.setenv(fashion_mnist.FOLDER_VARIABLE, str(tmp_path))
    with pytest.raises(data.DataUnavailable, match="apt-get install dataset-fashion-mnist"):
        fashion_mnist.load_real()
    for name in fashion_mnist.FILES_MD5:
        (tmp_path / name).write_bytes(b"not the file")
    with pytest.raises(data.DataUnavailable, match="md5"):
        fashion_mnist.load_real()


@pytest.mark.skipif(not Path("/usr/share/datasets/fashion-mnist").is_dir(), reason="dataset-fashion-mnist not installed")
def test_debians_fashion_mnist_is_the_full_set():
    from common.loaders import fashion_mnist

    (x_train, y_train), (x_test, y_test), source = fashion_mnist.load_real()
    assert x_train.shape == (60000, 28, 28) and x_test.shape == (10000, 28, 28)
    assert (np.bincount(y_train) == 6000).all() and (np.bincount(y_test) == 1000).all()
