"""The Inference notebooks' harness: the images they time, and the checks that prove them right.

    dataset = inference.load_data(data, params["batch_size"], layout="NCHW")
    x_test = <to the framework>(dataset.x_test)      # the timed batch
    ... time predict(model, x_test) ...
    checks = inference.checks(dataset, lambda images: <numpy features of predict(model, images)>, variant,
                              fp32_features_of=<the same in fp32>)   # reduced-precision variants
    run.finish(dataset, inference.metrics(timer), checks)

Images: the 20 labelled ImageNet photos of common.loaders.photos, Caffe-preprocessed, cycled to fill the
batch; where they cannot be had (or with data="synthetic"), fixed synthetic images, and the record
says `data: synthetic`. The record's data is "real" only when weights and photos both are.

Checks:
- feature parity: the notebook's 2048 features of the first two images (PARITY_IMAGES) against
  common.numpy_resnet's float64 forward, within numpy_resnet.FEATURE_TOLERANCE. A bf16 variant's
  rounding would hide a wrong model, so there it is the notebook's model with the reduced precision
  switched off (`fp32_features_of`) that is held to that bound, and the timed bf16 features to
  numpy_resnet.BF16_FEATURE_TOLERANCE as a relative L2 error (`bf16_feature_relative_error`);
- known photos (real weights and photos only): the classifier (applied here, in float64, to the
  notebook's features) must put every photo's class in its top 5; the top-1 count is recorded.
  With random weights or synthetic images the classes mean nothing: `known_photos_correct` is
  None and `known_photos_skipped` says why.
"""
from collections import namedtuple

import numpy as np

from common import numpy_resnet, resnet_weights
from common.frameworks import precision
from common.loaders import photos
from common.data_choice import DataUnavailable, check_choice

PARITY_IMAGES = 2
TOP_K = 5
LAYOUTS = ("NHWC", "NCHW")
SYNTHETIC_IMAGES_SOURCE = "synthetic images (smooth random colour fields of common.loaders.photos.fixed_images)"

InferenceData = namedtuple(
    "InferenceData", "x_test images names classes weights layout batch_size data source skipped")
InferenceData.__doc__ = """x_test: the timed batch in `layout`; images: every image (NHWC, Caffe-
preprocessed); names, classes: per image (classes None for synthetic images); weights: the
resnet_weights.Weights; data, source: what the record says; skipped: why the known-photo check
cannot run (None when it can)."""


def load_data(data, batch_size, layout="NHWC"):
    """Weights and images per the data choice (see resnet_weights.load), and the timed batch."""
    check_choice(data)
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}; valid: {', '.join(LAYOUTS)}")
    weights = resnet_weights.load(data)
    known, skipped = [], None
    if data != "synthetic":
        try:
            known = photos.known_photos()
        except DataUnavailable as error:
            if data == "real":
                raise
            print(f"[data] ImageNet photos unavailable: timing SYNTHETIC images instead ({error})")
            skipped = f"no ImageNet photos ({error})"
    if known:
        names, raw, classes = zip(*known)
        images, images_source = photos.preprocess_caffe(raw), photos.PHOTOS_SOURCE
    else:
        images = photos.preprocess_caffe(photos.fixed_images(max(batch_size, PARITY_IMAGES)))
        names, classes = tuple(f"synthetic_{index:02d}" for index in range(len(images))), None
        images_source = SYNTHETIC_IMAGES_SOURCE
        skipped = skipped or "synthetic images"
    if weights.data != "real":
        skipped = "random weights" + (f", {skipped}" if skipped else "")
    real = skipped is None
    source = f"{images_source}; ResNet-50 weights: {weights.source}"
    if not real and known:
        source = f"synthetic weights on real photos: {source}"
    x_test = _to_layout(images[np.arange(batch_size) % len(images)], layout)
    print(f"[data] {'real' if real else 'synthetic'} | {source} | timed batch {x_test.shape} {layout}")
    return InferenceData(x_test, images, names, classes, weights, layout, batch_size,
                         "real" if real else "synthetic", source, skipped)


def _to_layout(images, layout):
    return np.ascontiguousarray(images.transpose(0, 3, 1, 2) if layout == "NCHW" else images)


def evaluated_features(dataset, features_of, n_images=None):
    """float64 features of the first `n_images` images (default: those the checks need, all photos
    or the parity pair), computed by the notebook's `features_of` a full batch at a time (the images
    cycled to fill the last one), so that a compiled model sees only the batch shape it was timed on."""
    if n_images is None:
        n_images = len(dataset.images) if dataset.skipped is None else PARITY_IMAGES
    batch_size = dataset.batch_size
    n_batches = -(-n_images // batch_size)
    order = np.arange(n_batches * batch_size) % len(dataset.images)
    rows = [np.asarray(features_of(_to_layout(dataset.images[index], dataset.layout)), dtype=np.float64)
            for index in order.reshape(n_batches, batch_size)]
    features = np.concatenate(rows)[:n_images]
    if features.shape != (n_images, numpy_resnet.N_FEATURES):
        raise ValueError(f"features of shape {features.shape}, expected ({n_images}, {numpy_resnet.N_FEATURES})")
    return features


def checks(dataset, features_of, variant="default", fp32_features_of=None):
    """The record's checks (printed as well); `features_of(images)` returns the notebook's numpy
    features of a batch of images in the dataset's layout, `fp32_features_of` the same with the
    variant's reduced precision switched off (required for a reduced-precision variant)."""
    features = evaluated_features(dataset, features_of)
    reference = numpy_resnet.reference_features(dataset.weights.arrays, dataset.images[:PARITY_IMAGES])
    model_features = features[:PARITY_IMAGES]
    found = {}
    if precision(variant) != "fp32":
        if fp32_features_of is None:
            raise ValueError(f"variant {variant!r} computes in reduced precision: pass fp32_features_of, "
                             "its model with the reduced precision switched off, for the feature parity")
        found.update(bf16_feature_relative_error=numpy_resnet.relative_error(model_features, reference),
                     bf16_feature_tolerance=numpy_resnet.BF16_FEATURE_TOLERANCE)
        model_features = evaluated_features(dataset, fp32_features_of, PARITY_IMAGES)
    found.update(feature_max_abs_error=float(np.abs(model_features - reference).max()),
                 feature_tolerance=numpy_resnet.FEATURE_TOLERANCE,
                 features_finite=bool(np.isfinite(features).all()))
    if dataset.skipped is None:
        found.update(known_photos_checks(dataset, features))
    else:
        found.update(known_photos_correct=None, known_photos_skipped=dataset.skipped)
    print("checks:", found)
    return found


def known_photos_checks(dataset, features):
    """Top-1 and top-5 of the ImageNet classifier on the photos' features."""
    logits = numpy_resnet.logits(dataset.weights.arrays, features)
    top = np.argsort(-logits, axis=1)[:, :TOP_K]
    expected = np.asarray(dataset.classes)
    top1, top5 = top[:, 0] == expected, (top == expected[:, None]).any(axis=1)
    labels = dataset.weights.labels
    return {"known_photos": len(expected), "known_photos_top1": int(top1.sum()),
            "known_photos_top5": int(top5.sum()), "known_photos_correct": bool(top5.all()),
            # Each photo whose top-1 class is wrong: expected → predicted.
            "known_photos_top1_misses": {name: f"{labels[want]} → {labels[got]}" for name, want, got, ok
                                         in zip(dataset.names, expected, top[:, 0], top1) if not ok}}


def metrics(timer):
    """The record's metrics: the timer's, and the time per 1000 images the README shows."""
    summary = timer.summary(unit="images")
    rate = summary["images_per_second"]
    return {**summary, "seconds_per_1000_images": 1000.0 / rate if rate else None}
