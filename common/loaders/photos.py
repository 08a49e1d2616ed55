"""ImageNet photos for the Inference task, Caffe-style preprocessing and fixed test images.

The photos are the 20 labelled ImageNet photos that the Foolbox library ships in its wheel
(`foolbox/data/imagenet_{i:02d}_{class index}.jpg`: progressive JPEGs, all 512×512 but one; MIT
licence), fetched from the Python package index. They are decoded and resized with Pillow: a JPEG
decoder and a resampling filter are not worth writing again, and every framework environment
installs Pillow.
"""
import io
import re

import numpy as np

from common import data_bundle
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


def _pillow_image():
    """PIL.Image, imported here (only the images need it); DataUnavailable when Pillow is missing."""
    try:
        from PIL import Image
    except ImportError as error:
        raise DataUnavailable("Pillow is not installed in this environment: the photos are JPEGs, "
                              "decoded and resized by Pillow (add pillow to the environment's "
                              "requirements)") from error
    return Image


BUNDLE_KEY = "photos"


def bundle_arrays():
    """The photos' JPEG files as common.data_bundle stores them (their bytes, not decoded pixels)."""
    members = sources.read_members_under(sources.fetch(FOOLBOX_WHEEL), "foolbox/data/imagenet_")
    return {"kind": np.array("arrays"), "members": np.array(sorted(members)),
            **{f"file_{index}": np.frombuffer(members[member], np.uint8) for index, member in enumerate(sorted(members))}}


def _bundled_photos():
    arrays = data_bundle.read(BUNDLE_KEY)
    return {str(member): arrays[f"file_{index}"].tobytes() for index, member in enumerate(arrays["members"])}


def decode_jpeg(content):
    """uint8 (H, W, 3) RGB array of a JPEG's bytes."""
    with _pillow_image().open(io.BytesIO(content)) as image:
        return np.asarray(image.convert("RGB"), dtype=np.uint8)


def known_photos():
    """[(name, uint8 (H, W, 3) RGB image, ImageNet class)] of the 20 photos, in file order;
    DataUnavailable when the wheel cannot be had or Pillow is missing."""
    members = _bundled_photos() if data_bundle.folder() else sources.read_members_under(
        sources.fetch(FOOLBOX_WHEEL), "foolbox/data/imagenet_")
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

def resize_bilinear(image, height, width):
    """float32 (height, width, C) from (H, W, C): Pillow's BILINEAR resampling (a triangle filter,
    pixel centres aligned, widened by the reduction factor when shrinking, so antialiased), run
    per channel on float32 ("F" mode) so that the values are not rounded to uint8 on the way."""
    Image = _pillow_image()
    image = np.asarray(image, dtype=np.float32)
    channels = [Image.fromarray(np.ascontiguousarray(image[..., channel]))
                .resize((width, height), Image.Resampling.BILINEAR)
                for channel in range(image.shape[2])]
    return np.stack([np.asarray(channel, dtype=np.float32) for channel in channels], axis=-1)


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
