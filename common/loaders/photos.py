"""ImageNet photos for the Inference task, Caffe-style preprocessing and fixed test images.

The photos are the 20 labelled ImageNet photos that the Foolbox library ships in its wheel
(`foolbox/data/imagenet_{i:02d}_{class index}.jpg`: progressive JPEGs, all 512×512 but one; MIT
licence), fetched from the Python package index. They are decoded with Pillow: a JPEG decoder is
not worth writing again, and every framework environment installs Pillow.
"""
import io
import re

import numpy as np

from common.loaders import sources
from common.data_choice import DataUnavailable

FOOLBOX_WHEEL = sources.RemoteFile(
    "foolbox-3.3.4-py3-none-any.whl",
    [sources.pypi_file("foolbox", "3.3.4", "foolbox-3.3.4-py3-none-any.whl")],
    sha256="11049d515d38e765e206a73ace9cc648b81a0d6d1da9ad9057e149ee117989cb", size=1677112,
    folder="photos")
PHOTO_MEMBER = re.compile(r"^foolbox/data/imagenet_(\d{2})_(\d+)\.jpg$")
N_PHOTOS = 20
PHOTOS_SOURCE = "ImageNet photos, the 20 labelled JPEGs of the foolbox 3.3.4 wheel (PyPI)"
CAFFE_BGR_MEAN = np.array([103.939, 116.779, 123.68], dtype=np.float32)
IMAGE_SIZE = 224


def decode_jpeg(content):
    """uint8 (H, W, 3) RGB array of a JPEG's bytes (Pillow, imported here: only the photos need it)."""
    try:
        from PIL import Image
    except ImportError as error:
        raise DataUnavailable("Pillow is not installed in this environment: the photos are JPEGs "
                              "(add pillow to the environment's requirements)") from error
    with Image.open(io.BytesIO(content)) as image:
        return np.asarray(image.convert("RGB"), dtype=np.uint8)


def known_photos():
    """[(name, uint8 (H, W, 3) RGB image, ImageNet class)] of the 20 photos, in file order;
    DataUnavailable when the wheel cannot be had or Pillow is missing."""
    members = sources.read_members_under(sources.fetch(FOOLBOX_WHEEL), "foolbox/data/imagenet_")
    photos = []
    for member in sorted(members):
        match = PHOTO_MEMBER.match(member)
        if match:
            name = member.rsplit("/", 1)[1].removesuffix(".jpg")
            photos.append((name, decode_jpeg(members[member]), int(match.group(2))))
    if len(photos) != N_PHOTOS:
        raise DataUnavailable(f"{FOOLBOX_WHEEL.name} holds {len(photos)} ImageNet photos, expected {N_PHOTOS}")
    return photos


# ----------------------------------------------------------------------------------------------
# Preprocessing

def _bilinear_weights(n_out, n_in):
    """(n_out, n_in) weights of the triangle (bilinear) filter: pixel centres aligned; when
    shrinking, the triangle is widened by the reduction factor, so that every input pixel counts
    (antialiasing, as Pillow's BILINEAR does). Rows sum to 1, edges renormalised."""
    scale = n_in / n_out
    centres = (np.arange(n_out) + 0.5) * scale
    distance = np.abs((np.arange(n_in) + 0.5)[None, :] - centres[:, None]) / max(scale, 1.0)
    weights = np.clip(1.0 - distance, 0.0, None)
    return weights / weights.sum(axis=1, keepdims=True)


def resize_bilinear(image, height, width):
    """float32 (height, width, C) from (H, W, C): separable bilinear filter, antialiased when shrinking."""
    image = np.asarray(image, dtype=np.float64)
    rows = np.tensordot(_bilinear_weights(height, image.shape[0]), image, axes=(1, 0))
    resized = np.tensordot(_bilinear_weights(width, image.shape[1]), rows, axes=(1, 1))
    return resized.transpose(1, 0, 2).astype(np.float32)


def resize_and_crop(image, size=IMAGE_SIZE):
    """float32 (size, size, C): shorter side scaled to `size`, then the centre cropped."""
    height, width = image.shape[:2]
    scale = size / min(height, width)
    new_height, new_width = max(size, round(height * scale)), max(size, round(width * scale))
    resized = resize_bilinear(image, new_height, new_width)
    top, left = (new_height - size) // 2, (new_width - size) // 2
    return resized[top:top + size, left:left + size]


def preprocess_caffe(images, size=IMAGE_SIZE):
    """float32 (N, size, size, 3) NHWC as Keras-applications' 'caffe' mode wants: BGR minus means.

    `images` are uint8 RGB arrays of any size; each is resized and centre-cropped first.
    """
    batch = np.stack([resize_and_crop(np.asarray(image), size) for image in images])
    return (batch[..., ::-1] - CAFFE_BGR_MEAN).astype(np.float32)


def fixed_images(n, seed=0, size=IMAGE_SIZE):
    """Deterministic uint8 (n, size, size, 3) images for comparing features across frameworks.

    Smooth random colour fields plus a little noise, so activations resemble those of photos more
    than pure noise would.
    """
    rng = np.random.default_rng(seed)
    coarse = rng.uniform(0, 255, size=(n, 8, 8, 3)).astype(np.float32)
    smooth = np.stack([resize_bilinear(field, size, size) for field in coarse])
    noisy = smooth + rng.normal(0, 12, size=smooth.shape).astype(np.float32)
    return np.clip(np.rint(noisy), 0, 255).astype(np.uint8)
