"""Known photos for the ImageNet top-1 check, Caffe-style preprocessing and fixed test images.

The photos are scikit-image's bundled `chelsea.png` (a cat) and `coffee.png` (an espresso), read
from the scikit-image wheel in a package registry; no imaging library is needed: PNG decoding is
done here with numpy and zlib.
"""
import struct
import zlib

import numpy as np

from common import sources

# A binary wheel: the platform is pinned so that every interpreter fetches the same file.
_WHEEL_NAME = "scikit_image-0.25.2-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
SCIKIT_IMAGE_WHEEL = sources.RemoteFile(
    _WHEEL_NAME,
    [sources.pypi_file("scikit-image", "0.25.2", _WHEEL_NAME,
                       pip_options=("--only-binary=:all:", "--platform", "manylinux_2_17_x86_64",
                                    "--python-version", "3.11", "--implementation", "cp",
                                    "--abi", "cp311"))],
    sha256="24cc986e1f4187a12aa319f777b36008764e856e5013666a4a83f8df083c2641", size=14785376,
    folder="photos")
# (name, member of the wheel, expected ImageNet class index)
KNOWN_PHOTOS = (("chelsea", "skimage/data/chelsea.png", 285),   # Egyptian cat
                ("coffee", "skimage/data/coffee.png", 967))     # espresso
CAFFE_BGR_MEAN = np.array([103.939, 116.779, 123.68], dtype=np.float32)
IMAGE_SIZE = 224


# ----------------------------------------------------------------------------------------------
# PNG

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}  # colour type -> samples per pixel (8-bit, no palette)


def decode_png(content):
    """uint8 (H, W, C) array from an 8-bit, non-interlaced grey/RGB(A) PNG's bytes."""
    if not content.startswith(PNG_SIGNATURE):
        raise ValueError("not a PNG file")
    position = len(PNG_SIGNATURE)
    header, compressed = None, []
    while position < len(content):
        length, kind = struct.unpack(">I4s", content[position:position + 8])
        data = content[position + 8:position + 8 + length]
        position += 12 + length  # length, type, data, CRC
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", data)
        elif kind == b"IDAT":
            compressed.append(data)
        elif kind == b"IEND":
            break
    if header is None:
        raise ValueError("PNG without IHDR chunk")
    width, height, bit_depth, colour_type, _, _, interlace = header
    if bit_depth != 8 or colour_type not in _CHANNELS or interlace != 0:
        raise ValueError(f"unsupported PNG: bit depth {bit_depth}, colour type {colour_type}, "
                         f"interlace {interlace} (only 8-bit non-interlaced grey/RGB(A))")
    channels = _CHANNELS[colour_type]
    raw = np.frombuffer(zlib.decompress(b"".join(compressed)), dtype=np.uint8)
    stride = width * channels
    if raw.size != height * (stride + 1):
        raise ValueError(f"PNG data holds {raw.size} bytes, expected {height * (stride + 1)}")
    rows = raw.reshape(height, stride + 1)
    image = np.zeros((height, stride), dtype=np.uint8)
    previous = np.zeros(stride, dtype=np.uint8)
    for y in range(height):
        image[y] = _unfilter(rows[y, 0], rows[y, 1:], previous, channels)
        previous = image[y]
    return image.reshape(height, width, channels)


def _unfilter(filter_type, line, previous, bpp):
    """One scanline reconstructed from its filtered bytes and the previous reconstructed line."""
    if filter_type == 0:
        return line
    if filter_type == 2:
        return line + previous  # uint8 arithmetic wraps modulo 256, as the PNG filters do
    if filter_type == 1:
        # Sub adds the reconstructed byte one pixel left: a running sum per channel.
        return np.cumsum(line.reshape(-1, bpp), axis=0, dtype=np.uint8).reshape(-1)
    if filter_type not in (3, 4):
        raise ValueError(f"unknown PNG filter type {filter_type}")
    # Average and Paeth depend on the reconstructed left neighbour non-linearly: byte by byte.
    out = bytearray(line.tobytes())
    above = previous.tobytes()
    for i in range(len(out)):
        left = out[i - bpp] if i >= bpp else 0
        up = above[i]
        if filter_type == 3:
            predictor = (left + up) >> 1
        else:
            upper_left = above[i - bpp] if i >= bpp else 0
            estimate = left + up - upper_left
            distance_left, distance_up = abs(estimate - left), abs(estimate - up)
            distance_upper_left = abs(estimate - upper_left)
            if distance_left <= distance_up and distance_left <= distance_upper_left:
                predictor = left
            elif distance_up <= distance_upper_left:
                predictor = up
            else:
                predictor = upper_left
        out[i] = (out[i] + predictor) & 0xFF
    return np.frombuffer(bytes(out), dtype=np.uint8)


def to_rgb(image):
    """uint8 (H, W, 3) from a decoded grey, grey+alpha, RGB or RGBA image (alpha dropped)."""
    if image.shape[2] in (1, 2):
        return np.repeat(image[:, :, :1], 3, axis=2)
    return np.ascontiguousarray(image[:, :, :3])


# ----------------------------------------------------------------------------------------------
# Photos and preprocessing

def known_photos():
    """[(name, uint8 (H, W, 3) RGB image, expected ImageNet class)]; DataUnavailable if none."""
    wheel = sources.fetch(SCIKIT_IMAGE_WHEEL)
    members = sources.read_members(wheel, [member for _, member, _ in KNOWN_PHOTOS])
    return [(name, to_rgb(decode_png(members[member])), class_index)
            for name, member, class_index in KNOWN_PHOTOS]


def resize_bilinear(image, height, width):
    """float32 (height, width, C) from (H, W, C): bilinear, pixel centres aligned (no antialias)."""
    source_height, source_width = image.shape[:2]
    image = image.astype(np.float32)

    def sample_positions(n_out, n_in):
        positions = (np.arange(n_out, dtype=np.float64) + 0.5) * n_in / n_out - 0.5
        positions = np.clip(positions, 0, n_in - 1)
        low = np.floor(positions).astype(np.int64)
        high = np.minimum(low + 1, n_in - 1)
        return low, high, (positions - low).astype(np.float32)

    top, bottom, vertical = sample_positions(height, source_height)
    left, right, horizontal = sample_positions(width, source_width)
    rows = image[top] * (1 - vertical)[:, None, None] + image[bottom] * vertical[:, None, None]
    return (rows[:, left] * (1 - horizontal)[None, :, None]
            + rows[:, right] * horizontal[None, :, None])


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
