"""ResNet-50 forward in float64 numpy: the judge of every Inference notebook's features.

The architecture is Keras-applications' ResNet50 (v1), as the weights of common.resnet_weights
name it: a 7×7 stride-2 convolution after 3 pixels of zero padding, max pool 3×3 stride 2 after
1 pixel of zero padding, four stages of bottleneck blocks (1×1, 3×3 'same', 1×1; the stride on
the first 1×1 and on the projection shortcut of a stage's first block), biases on every
convolution, batch norm in inference form (moving statistics, epsilon = params["bn_epsilon"]),
then the global average pool: 2048 features per image. Images are NHWC, Caffe-preprocessed
(common.loaders.photos.preprocess_caffe). Convolutions are im2col + one matmul each.
"""
import hashlib

import numpy as np

from common.loaders import sources
from common.params import get_params
from common.resnet_weights import FOLDER, STAGES

# Bump when the forward pass changes, so that cached reference features of the old one go unused.
VERSION = 1
N_FEATURES = get_params("Inference")["n_features"]

# Max abs difference of a notebook's 2048 features of the two parity images against float64.
# Measured on the CPU (features up to 9 with the ImageNet weights on the photos, up to 5 with the
# random weights on the synthetic images): the same forward in float32 numpy differs by 4e-6,
# every framework's fp32 by at most 7e-6 (Keras on torch, MXNet). 1e-3 leaves room for other
# convolution algorithms and summation orders (GPU) and still catches a wrong model: a batch-norm
# epsilon of 1e-5 instead of 1e-3 moves the features by 0.02 (random weights) to 0.66 (ImageNet),
# TensorFlow's asymmetric 'SAME' padding of the strided 7×7 by 1.1, dropped conv biases or beta and
# moving mean swapped (random weights) by 1.0 and 4.6.
FEATURE_TOLERANCE = 1e-3

# bfloat16 keeps 8 significant bits and rounds every layer's activations to them: after 53 layers
# its features differ from float64 by as much as a wrong model's do (an epsilon of 1e-5 instead of
# 1e-3 moves the random-weight features by 0.02, bf16 rounding alone by 0.02-0.05; with the ImageNet
# weights 0.66 against 0.10-0.21), so no bound on them can tell the two apart. A reduced-precision
# variant is therefore judged twice. Its model with the reduced precision switched off (the same
# code, only the dtype differs) is held to FEATURE_TOLERANCE, which judges everything the two paths
# share. Its timed bf16 features are held to BF16_FEATURE_TOLERANCE as a relative L2 error
# (||bf16 - float64|| / ||float64||) against what only the reduced-precision path can get wrong, a
# cast that reinterprets bits instead of rounding them, activations that overflow to inf or NaN.
# Correct bf16 paths, ImageNet weights on the photos, Intel Xeon with AMX: PyTorch's autocast 0.0088,
# TensorFlow's bf16 weights and activations 0.017, Flax's bf16 layers 0.017 (numpy with every
# layer's input, kernel and output rounded to bf16: 0.0071); a bound of 0.2 leaves them 11×.
BF16_FEATURE_TOLERANCE = 0.2


def relative_error(found, expected):
    """||found - expected||₂ / ||expected||₂ over every feature."""
    expected = np.asarray(expected, dtype=np.float64)
    return float(np.linalg.norm(np.asarray(found, dtype=np.float64) - expected) / np.linalg.norm(expected))


# ----------------------------------------------------------------------------------------------
# Layers (NHWC)

def conv2d(x, kernel, bias, stride=1, padding=0):
    """Cross-correlation of NHWC x with an HWIO kernel, zero padding on every side."""
    kernel_size, _, n_in, n_out = kernel.shape
    if padding:
        x = np.pad(x, ((0, 0), (padding, padding), (padding, padding), (0, 0)))
    n, height, width, _ = x.shape
    out_height = (height - kernel_size) // stride + 1
    out_width = (width - kernel_size) // stride + 1
    if kernel_size == 1:
        patches = x[:, ::stride, ::stride, :][:, :out_height, :out_width, :]
    else:
        # (n, oh, ow, kh, kw, c) view of the windows, copied once into the matmul's layout.
        s_n, s_h, s_w, s_c = x.strides
        windows = np.lib.stride_tricks.as_strided(
            x, (n, out_height, out_width, kernel_size, kernel_size, n_in),
            (s_n, s_h * stride, s_w * stride, s_h, s_w, s_c), writeable=False)
        patches = windows.reshape(n, out_height, out_width, kernel_size * kernel_size * n_in)
    # One 2-D matmul: a stack of per-row matmuls would not reach the BLAS' speed.
    out = patches.reshape(-1, patches.shape[-1]) @ kernel.reshape(-1, n_out)
    return out.reshape(n, out_height, out_width, n_out) + bias


def batch_norm(x, gamma, beta, mean, variance, epsilon):
    return (x - mean) * (gamma / np.sqrt(variance + epsilon)) + beta


def max_pool(x, size=3, stride=2, padding=1):
    """Keras' ZeroPadding2D(padding) then MaxPooling2D(size, stride): zeros take part in the max."""
    x = np.pad(x, ((0, 0), (padding, padding), (padding, padding), (0, 0)))
    n, height, width, channels = x.shape
    out_height, out_width = (height - size) // stride + 1, (width - size) // stride + 1
    out = np.full((n, out_height, out_width, channels), -np.inf, dtype=x.dtype)
    for i in range(size):
        for j in range(size):
            out = np.maximum(out, x[:, i:i + stride * out_height:stride, j:j + stride * out_width:stride])
    return out


# ----------------------------------------------------------------------------------------------
# The network

def _conv_bn(arrays, layer, x, stride, padding, epsilon, dtype, rounding):
    def get(name):
        return np.asarray(arrays[f"{layer}_{name}"], dtype=dtype)

    x = conv2d(rounding(x), rounding(get("conv/kernel")), get("conv/bias"), stride, padding)
    return rounding(batch_norm(x, get("bn/gamma"), get("bn/beta"), get("bn/moving_mean"),
                               get("bn/moving_variance"), epsilon))


def features(arrays, images, epsilon=None, dtype=np.float64, rounding=None):
    """(N, 2048) features of NHWC Caffe-preprocessed `images`, computed in `dtype`; `rounding`, if
    given, is applied to every convolution's input, kernel and batch-normed output (a reduced-
    precision path, for runner.broken_copies)."""
    epsilon = get_params("Inference")["bn_epsilon"] if epsilon is None else epsilon
    rounding = rounding or (lambda array: array)
    x = np.asarray(images, dtype=dtype)

    def conv_bn(layer, x, stride, padding):
        return _conv_bn(arrays, layer, x, stride, padding, epsilon, dtype, rounding)

    x = np.maximum(conv_bn("conv1", x, 2, 3), 0)
    x = max_pool(x)
    n_in = x.shape[-1]
    for stage, n_blocks, filters in STAGES:
        for block in range(1, n_blocks + 1):
            prefix = f"conv{stage}_block{block}"
            stride = 2 if block == 1 and stage > 2 else 1
            if stride != 1 or n_in != 4 * filters:
                shortcut = conv_bn(f"{prefix}_0", x, stride, 0)
            else:
                shortcut = x
            out = np.maximum(conv_bn(f"{prefix}_1", x, stride, 0), 0)
            out = np.maximum(conv_bn(f"{prefix}_2", out, 1, 1), 0)
            out = conv_bn(f"{prefix}_3", out, 1, 0)
            x = np.maximum(out + shortcut, 0)
            n_in = 4 * filters
    return x.mean(axis=(1, 2))


def logits(arrays, feature_rows):
    """ImageNet logits of (N, 2048) features: the classifier every notebook leaves out."""
    kernel = np.asarray(arrays["predictions/kernel"], dtype=np.float64)
    return np.asarray(feature_rows, dtype=np.float64) @ kernel + np.asarray(arrays["predictions/bias"], np.float64)


# ----------------------------------------------------------------------------------------------
# Cached reference

def identity(arrays, images, epsilon):
    """Hex digest of everything the reference features depend on."""
    digest = hashlib.sha256(f"numpy_resnet v{VERSION} epsilon {epsilon!r}".encode())
    for name in sorted(arrays):
        array = np.ascontiguousarray(arrays[name])
        digest.update(f"{name} {array.dtype.str} {array.shape}".encode())
        digest.update(array.data)
    images = np.ascontiguousarray(images)
    digest.update(f"images {images.dtype.str} {images.shape}".encode())
    digest.update(images.data)
    return digest.hexdigest()


def reference_features(arrays, images, epsilon=None):
    """float64 features of `images`, cached in the data cache under the digest of the weights, the
    images and epsilon (a few seconds to compute on two busy cores, milliseconds to read)."""
    epsilon = get_params("Inference")["bn_epsilon"] if epsilon is None else epsilon

    def build(temporary):
        with open(temporary, "wb") as handle:
            np.save(handle, features(arrays, images, epsilon))

    name = f"reference_features_{identity(arrays, images, epsilon)[:24]}.npy"
    return np.load(sources.derived(name, build, folder=FOLDER))
