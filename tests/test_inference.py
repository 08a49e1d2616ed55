"""The Inference harness: the float64 numpy ResNet-50 that judges every notebook's features, the
ImageNet photos, and the checks a record carries."""
import sys

import numpy as np
import pytest

from common import inference, numpy_resnet, resnet_weights
from common.loaders import photos, sources
from common.data_choice import DataUnavailable
from common.timing import Timer


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ROSETTA_CACHE", str(tmp_path))
    return tmp_path


@pytest.fixture(scope="module")
def arrays():
    return resnet_weights.random_arrays()


def naive_conv(x, kernel, bias, stride, padding):
    x = np.pad(x, ((0, 0), (padding, padding), (padding, padding), (0, 0)))
    size = kernel.shape[0]
    out_h, out_w = (x.shape[1] - size) // stride + 1, (x.shape[2] - size) // stride + 1
    out = np.zeros((x.shape[0], out_h, out_w, kernel.shape[3]))
    for i in range(out_h):
        for j in range(out_w):
            window = x[:, i * stride:i * stride + size, j * stride:j * stride + size, :]
            out[:, i, j] = np.tensordot(window, kernel, axes=([1, 2, 3], [0, 1, 2])) + bias
    return out


@pytest.mark.parametrize("size, stride, padding", [(1, 1, 0), (1, 2, 0), (3, 1, 1), (7, 2, 3)])
def test_conv2d_is_a_cross_correlation(size, stride, padding):
    rng = np.random.default_rng(size + stride)
    x = rng.normal(size=(2, 11, 10, 3))
    kernel, bias = rng.normal(size=(size, size, 3, 4)), rng.normal(size=4)
    assert np.allclose(numpy_resnet.conv2d(x, kernel, bias, stride, padding),
                       naive_conv(x, kernel, bias, stride, padding))


def test_max_pool_pads_with_zeros_like_keras():
    x = -np.ones((1, 4, 4, 1))  # Keras' ZeroPadding2D: a padded zero wins over negative values
    x[0, 1, 1, 0] = 5.0
    out = numpy_resnet.max_pool(x)
    assert out.shape == (1, 2, 2, 1)
    assert out[0, :, :, 0].tolist() == [[5.0, 5.0], [5.0, 5.0]]
    x = -np.ones((1, 6, 6, 1))
    assert numpy_resnet.max_pool(x)[0, :, :, 0].tolist() == [[0.0, 0.0, 0.0], [0.0, -1.0, -1.0], [0.0, -1.0, -1.0]]


def test_feature_tolerance_separates_rounding_from_a_wrong_model(arrays):
    """Small images keep the test fast: float32 rounding stays far below the fp32 bound, a wrong
    batch-norm epsilon far above it."""
    images = photos.preprocess_caffe(photos.fixed_images(2, size=64), size=64)
    reference = numpy_resnet.features(arrays, images)
    assert reference.shape == (2, 2048) and np.abs(reference).max() > 0.5
    tolerance = numpy_resnet.FEATURE_TOLERANCE

    def error(weights=arrays, **options):
        return np.abs(numpy_resnet.features(weights, images, **options) - reference).max()

    assert error(dtype=np.float32) < tolerance / 50
    assert error(epsilon=1e-5) > 5 * tolerance
    # The random weights have non-zero biases and batch-norm statistics: a wrong mapping shows.
    assert error({name: 0 * value if name.endswith("_conv/bias") else value for name, value in arrays.items()}) > 0.1
    swapped = dict(arrays, **{"conv1_bn/beta": arrays["conv1_bn/moving_mean"],
                              "conv1_bn/moving_mean": arrays["conv1_bn/beta"]})
    assert error(swapped) > 0.1


def test_a_bf16_path_rounds_far_below_the_bf16_bound(arrays):
    """numpy with every layer's input, kernel and output rounded to bfloat16 (as a correct bf16 path
    rounds) against float64: at least 10× below the bound on its relative error."""
    from runner.broken_copies import to_bfloat16

    images = photos.preprocess_caffe(photos.fixed_images(2, size=32), size=32)
    error = numpy_resnet.relative_error(numpy_resnet.features(arrays, images, rounding=to_bfloat16),
                                        numpy_resnet.features(arrays, images))
    assert 0 < error <= numpy_resnet.BF16_FEATURE_TOLERANCE / 10
    assert to_bfloat16(np.float32(1 + 2 ** -8)) == 1.0 and to_bfloat16(np.float32(1 + 3 * 2 ** -9)) == 1 + 2 ** -7


def test_reference_features_are_cached_by_weights_and_images(cache, arrays, monkeypatch):
    images = photos.preprocess_caffe(photos.fixed_images(2, size=32), size=32)
    computed = []
    real_features = numpy_resnet.features
    monkeypatch.setattr(numpy_resnet, "features", lambda *a, **k: computed.append(1) or real_features(*a, **k))
    first = numpy_resnet.reference_features(arrays, images)
    again = numpy_resnet.reference_features(arrays, images)
    assert len(computed) == 1 and np.array_equal(first, again)
    numpy_resnet.reference_features(arrays, images[::-1])
    other = dict(arrays, **{"conv1_bn/beta": arrays["conv1_bn/beta"] + 1})
    numpy_resnet.reference_features(other, images)
    assert len(computed) == 3
    assert len(list((cache / "data" / resnet_weights.FOLDER).glob("reference_features_*.npy"))) == 3


def test_synthetic_data_fetches_nothing_and_cycles_the_images(cache, monkeypatch):
    monkeypatch.setattr(sources, "fetch", lambda remote: pytest.fail(f"fetched {remote.name}"))
    dataset = inference.load_data("synthetic", 5, layout="NCHW")
    assert dataset.data == "synthetic" and dataset.source.startswith("synthetic")
    assert dataset.x_test.shape == (5, 3, 224, 224) and dataset.x_test.dtype == np.float32
    assert np.array_equal(dataset.x_test, dataset.images.transpose(0, 3, 1, 2))
    assert dataset.classes is None and dataset.skipped == "random weights, synthetic images"
    small = inference.load_data("synthetic", 1)
    assert len(small.images) == inference.PARITY_IMAGES and small.x_test.shape == (1, 224, 224, 3)


def test_auto_falls_back_loudly_when_the_photos_cannot_be_had(cache, monkeypatch, capsys):
    monkeypatch.setattr(resnet_weights, "load", lambda data: resnet_weights.random_weights())

    def unavailable():
        raise DataUnavailable("no wheel")

    monkeypatch.setattr(photos, "known_photos", unavailable)
    dataset = inference.load_data("auto", 4)
    assert dataset.data == "synthetic" and "no ImageNet photos (no wheel)" in dataset.skipped
    assert "SYNTHETIC images" in capsys.readouterr().out
    with pytest.raises(DataUnavailable):
        inference.load_data("real", 4)


def test_real_weights_on_real_photos_make_real_data(cache, monkeypatch):
    real = resnet_weights.Weights(resnet_weights.random_arrays(), [f"c{i}" for i in range(1000)], "real", "test")
    monkeypatch.setattr(resnet_weights, "load", lambda data: real)
    image = np.full((300, 400, 3), 128, np.uint8)
    monkeypatch.setattr(photos, "known_photos", lambda: [(f"p{i}", image, i) for i in range(3)])
    dataset = inference.load_data("auto", 4)
    assert dataset.data == "real" and dataset.skipped is None
    assert dataset.source.startswith(photos.PHOTOS_SOURCE)
    assert dataset.names == ("p0", "p1", "p2") and dataset.x_test.shape == (4, 224, 224, 3)
    monkeypatch.setattr(resnet_weights, "load", lambda data: resnet_weights.random_weights())
    mixed = inference.load_data("auto", 4)
    assert mixed.data == "synthetic" and mixed.source.startswith("synthetic") and mixed.skipped == "random weights"


def fake_dataset(classes, batch_size=3):
    """Photos whose features are one-hot rows and a classifier that reads class c from feature c."""
    n = len(classes)
    arrays = {"predictions/kernel": np.eye(numpy_resnet.N_FEATURES, 1000, dtype=np.float32),
              "predictions/bias": np.zeros(1000, np.float32)}
    weights = resnet_weights.Weights(arrays, [f"c{i}" for i in range(1000)], "real", "test")
    images = np.arange(n, dtype=np.float32)[:, None, None, None] * np.ones((1, 2, 2, 3), np.float32)
    return inference.InferenceData(images[:batch_size], images, tuple(f"p{i}" for i in range(n)), tuple(classes),
                                   weights, "NHWC", batch_size, "real", "test", None)


def test_known_photos_count_top1_and_top5():
    dataset = fake_dataset([0, 1, 7, 3])
    features = np.zeros((4, numpy_resnet.N_FEATURES))
    features[0, 0] = features[3, 3] = 1  # right
    features[1, 11], features[1, 1] = 2, 1  # right class second: top-5 only
    features[2, 2], features[2, 7] = 1, -1  # right class last
    found = inference.known_photos_checks(dataset, features)
    assert (found["known_photos"], found["known_photos_top1"], found["known_photos_top5"]) == (4, 2, 3)
    assert found["known_photos_correct"] is False
    assert found["known_photos_top1_misses"] == {"p1": "c1 → c11", "p2": "c7 → c2"}


def test_checks_evaluate_full_batches_and_judge_against_the_reference(monkeypatch):
    dataset = fake_dataset(list(range(5)), batch_size=3)
    reference = np.full((2, numpy_resnet.N_FEATURES), 0.5)
    monkeypatch.setattr(numpy_resnet, "reference_features", lambda arrays, images: reference)
    shapes = []

    def features_of(images):
        shapes.append(images.shape)
        out = np.full((len(images), numpy_resnet.N_FEATURES), 0.5)
        out[np.arange(len(images)), images[:, 0, 0, 0].astype(int)] = 10.0
        return out.astype(np.float32)

    found = inference.checks(dataset, features_of)
    assert shapes == [(3, 2, 2, 3)] * 2  # 5 photos in two full batches, the last one cycled
    assert found["feature_max_abs_error"] == pytest.approx(9.5)  # the one-hot entries differ
    assert found["feature_tolerance"] == numpy_resnet.FEATURE_TOLERANCE
    assert found["known_photos_correct"] is True and found["known_photos_top1"] == 5
    assert "bf16_feature_relative_error" not in found


def test_a_bf16_variant_is_judged_by_its_model_in_fp32_and_by_its_rounding(monkeypatch):
    dataset = fake_dataset(list(range(5)), batch_size=3)._replace(skipped="random weights", data="synthetic")
    reference = np.full((2, numpy_resnet.N_FEATURES), 0.5)
    monkeypatch.setattr(numpy_resnet, "reference_features", lambda arrays, images: reference)
    calls = []

    def features_of(scale):
        def compute(images):
            calls.append((scale, images.shape))
            return np.full((len(images), numpy_resnet.N_FEATURES), 0.5 * scale, dtype=np.float32)
        return compute

    with pytest.raises(ValueError, match="fp32_features_of"):
        inference.checks(dataset, features_of(1.01), "bf16")
    calls.clear()
    found = inference.checks(dataset, features_of(1.01), "bf16", fp32_features_of=features_of(1.0))
    # Only the parity pair, once by each path, in a full batch.
    assert calls == [(1.01, (3, 2, 2, 3)), (1.0, (3, 2, 2, 3))]
    assert found["feature_max_abs_error"] == 0 and found["feature_tolerance"] == numpy_resnet.FEATURE_TOLERANCE
    assert found["bf16_feature_relative_error"] == pytest.approx(0.01, rel=1e-4)
    assert found["bf16_feature_tolerance"] == numpy_resnet.BF16_FEATURE_TOLERANCE
    assert found["known_photos_correct"] is None and found["known_photos_skipped"] == "random weights"
    # A wrong model shows in fp32, however well its bf16 path rounds.
    found = inference.checks(dataset, features_of(1.0), "bf16", fp32_features_of=features_of(1.1))
    assert found["bf16_feature_relative_error"] == 0 and found["feature_max_abs_error"] == pytest.approx(0.05)


def test_metrics_add_the_time_per_1000_images():
    timer = Timer(warmup_steps=1, total_steps=3)
    with timer.running():
        for _ in range(3):
            timer.step(4)
    found = inference.metrics(timer)
    assert found["seconds_per_1000_images"] == pytest.approx(1000 / found["images_per_second"])


def test_shrinking_is_antialiased_and_enlarging_interpolates():
    checkerboard = (np.indices((64, 64)).sum(axis=0) % 2 * 255).astype(np.uint8)[..., None]
    assert np.allclose(photos.resize_bilinear(checkerboard, 16, 16)[1:-1, 1:-1], 127.5, atol=0.01)
    ramp = np.arange(4, dtype=np.float32)[None, :, None] * np.ones((2, 1, 1), np.float32)
    enlarged = photos.resize_bilinear(ramp, 2, 8)[0, :, 0]
    assert np.allclose(enlarged, [0, 0.25, 0.75, 1.25, 1.75, 2.25, 2.75, 3], atol=1e-6)
    assert np.array_equal(photos.resize_bilinear(ramp, 2, 4), ramp)


def test_resizing_is_pillows_bilinear_without_rounding():
    from PIL import Image
    image = np.random.default_rng(0).integers(0, 256, size=(50, 37, 3), dtype=np.uint8)
    for height, width in ((30, 22), (80, 61)):
        resized = photos.resize_bilinear(image, height, width)
        assert resized.dtype == np.float32 and resized.shape == (height, width, 3)
        # Pillow's own uint8 RGB resampling is the same filter, rounded to integers after each pass.
        rounded = np.asarray(Image.fromarray(image).resize((width, height), Image.Resampling.BILINEAR))
        assert np.abs(resized - rounded).max() <= 1
        assert not np.array_equal(resized, np.rint(resized))


def test_decoding_and_resizing_need_pillow(monkeypatch):
    monkeypatch.setitem(sys.modules, "PIL", None)
    with pytest.raises(DataUnavailable, match="Pillow"):
        photos.decode_jpeg(b"\xff\xd8")
    with pytest.raises(DataUnavailable, match="Pillow"):
        photos.resize_bilinear(np.zeros((4, 4, 3), np.uint8), 2, 2)


def test_the_twenty_photos_when_they_can_be_had():
    pytest.importorskip("PIL")
    try:
        known = photos.known_photos()
    except DataUnavailable as error:
        pytest.skip(f"photos unavailable: {error}")
    assert len(known) == photos.N_PHOTOS
    assert [name for name, _, _ in known][:2] == ["imagenet_00_243", "imagenet_01_559"]
    assert all(image.ndim == 3 and image.shape[2] == 3 and min(image.shape[:2]) >= 224 and image.dtype == np.uint8
               for _, image, _ in known)
    assert [label for _, _, label in known][:3] == [243, 559, 438]
