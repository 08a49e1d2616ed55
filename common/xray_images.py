"""The MultiGPU task's images, the same in every framework: decoding (Pillow), the 2018
augmentation (resize to `resize_to`, random crop to `image_size`, random horizontal flip), ImageNet
normalisation of a greyscale X-ray repeated on 3 channels, the validation mean AUC, and the fixed
batch of the data-parallel equivalence check.

Each framework's own input pipeline (DataLoader workers, tf.data, Gluon's DataLoader) calls these
per image, so the two pipelines differ only in where the decoded pixels come from:

    pipeline "disk": decode(path, resize_to) per image and epoch, in the framework's loader
    pipeline "ram":  decode_all(paths, resize_to) once, then views of the array in memory

A training image's crop and flip depend only on (epoch, image index), never on which worker or
device handles it, so 1 and N devices see the same pixels.
"""
import numpy as np

SEED = 2018


def decode(path, size):
    """(size, size) uint8 greyscale pixels of the image file at `path`, resized (bilinear)."""
    from PIL import Image

    with Image.open(path) as image:
        return np.asarray(image.convert("L").resize((size, size), Image.BILINEAR))


def decode_all(paths, size):
    """(N, size, size) uint8: every image decoded once, for the in-memory pipeline."""
    images = np.empty((len(paths), size, size), dtype=np.uint8)
    for index, path in enumerate(paths):
        images[index] = decode(path, size)
        if (index + 1) % 1000 == 0 or index + 1 == len(paths):
            print(f"[data] decoded into RAM: {index + 1}/{len(paths)} images", flush=True)
    return images


def train_view(image, size, epoch, index):
    """Image number `index` of the train split as seen in `epoch`: a random size×size crop of the
    resized image, flipped left-right with probability 1/2."""
    rng = np.random.default_rng([SEED, epoch, index])
    top, left = rng.integers(0, image.shape[0] - size + 1, 2)
    view = image[top:top + size, left:left + size]
    return view[:, ::-1] if rng.random() < 0.5 else view


def valid_view(image, size):
    """The centre size×size crop, for validation."""
    top = (image.shape[0] - size) // 2
    left = (image.shape[1] - size) // 2
    return image[top:top + size, left:left + size]


def normalise(images, mean, sd, layout="NCHW"):
    """(B, H, W) uint8 greyscale → (B, 3, H, W) or (B, H, W, 3) float32, ImageNet-normalised per
    channel (DenseNet's 3 input channels see the same grey)."""
    grey = np.asarray(images, dtype=np.float32) / 255.0
    mean, sd = np.asarray(mean, np.float32), np.asarray(sd, np.float32)
    if layout == "NCHW":
        return np.ascontiguousarray((grey[:, None] - mean[:, None, None]) / sd[:, None, None])
    if layout == "NHWC":
        return np.ascontiguousarray((grey[..., None] - mean) / sd)
    raise ValueError(f"unknown image layout {layout!r}; valid: NCHW, NHWC")


def train_batch(images, indices, epoch, params, layout="NCHW"):
    """The normalised training batch of the in-memory pipeline: train views of images[indices]."""
    views = [train_view(images[index], params["image_size"], epoch, index) for index in indices]
    return normalise(np.stack(views), params["image_mean"], params["image_sd"], layout)


def valid_batch(images, params, layout="NCHW"):
    views = [valid_view(image, params["image_size"]) for image in images]
    return normalise(np.stack(views), params["image_mean"], params["image_sd"], layout)


def rank_batches(epoch_batches, rank, world_size):
    """The part of each global batch that device `rank` of `world_size` trains on: contiguous
    equal slices, so that the devices' mean gradient is the global batch's."""
    per_device = epoch_batches.shape[1] // world_size
    return epoch_batches[:, rank * per_device:(rank + 1) * per_device]


def equivalence_batch(params, global_batch, layout="NCHW", seed=SEED):
    """(x float32, y float32) of the equivalence check: one fixed batch of `global_batch` random
    normalised images at `equivalence_image_size` with random 14-way labels."""
    rng = np.random.default_rng([seed, global_batch])
    size = params["equivalence_image_size"]
    images = rng.integers(0, 256, (global_batch, size, size), dtype=np.uint8)
    labels = (rng.random((global_batch, params["n_classes"])) < 0.3).astype(np.float32)
    return normalise(images, params["image_mean"], params["image_sd"], layout), labels


def auc(labels, scores):
    """Area under the ROC curve of one label (Mann-Whitney, ties counted half), or None when
    the labels hold one class only."""
    labels = np.asarray(labels).astype(bool)
    positives, negatives = labels.sum(), (~labels).sum()
    if positives == 0 or negatives == 0:
        return None
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores), dtype=np.float64)
    sorted_scores = np.asarray(scores)[order]
    # Average ranks over ties.
    _, starts, counts = np.unique(sorted_scores, return_index=True, return_counts=True)
    for start, count in zip(starts, counts):
        ranks[order[start:start + count]] = start + (count + 1) / 2
    return float((ranks[labels].sum() - positives * (positives + 1) / 2) / (positives * negatives))


def mean_auc(labels, scores):
    """Mean AUC over the labels (columns) that hold both classes, or NaN when none does."""
    values = [auc(labels[:, column], scores[:, column]) for column in range(labels.shape[1])]
    values = [value for value in values if value is not None]
    return float(np.mean(values)) if values else float("nan")
