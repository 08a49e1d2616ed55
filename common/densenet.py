"""DenseNet-121's shared start and the data-parallel equivalence check of the MultiGPU task.

Shared start: no ImageNet DenseNet weights are reachable here, so every framework starts from the
same random weights instead: `initial_weights()` holds DenseNet-121's 120 convolution kernels in
the order the network uses them (stem, then per dense layer its 1×1 and 3×3 convolutions, then
each transition's 1×1), He-normal, in the Keras layout (kh, kw, in, out), and the 14-way
classifier (glorot-uniform kernel (1024, 14), zero bias). Batch norm starts at its default in
every framework (scale 1, offset 0, mean 0, variance 1), so it needs no mapping. A notebook walks
its framework's convolutions in definition order and copies kernel i into convolution i.

Equivalence: K steps on N devices with global batch B must train the same model as K steps on one
device with batch B, from the same weights, on the same fixed batch, batch norm's statistics
frozen (the running ones, so that each device's half-batch statistics cannot differ from the whole
batch's). `data_parallel_check` compares the K losses and a weight checksum (the float64 sum of
every trainable weight afterwards), each against its own bound. Only a run on several devices makes
the check: a 1-device run exercises no engine.
"""
import numpy as np

SEED = 1234
BLOCK_LAYERS = (6, 12, 24, 16)
GROWTH_RATE = 32
BOTTLENECK_WIDTH = 4 * GROWTH_RATE
STEM_CHANNELS = 64
FEATURES = 1024
# Max abs difference of the K losses, and of the weight checksum, between 1 and N devices. Synchronised
# (smoke and quick profiles): the losses agree to 1e-6 in every framework; the checksum to 2e-6
# (PyTorch) up to 1e-2 (JAX), because Adam's first steps move each weight by about lr × sign(gradient):
# where a gradient is nearly zero, float rounding of the all-reduce can flip its sign and move that
# weight by 2 × lr = 2e-4. Two replicas that never synchronise (each on its half of the batch;
# measured as one device on half the batch, quick profile) differ by 0.07 on the losses and by 18 on
# the checksum of the 7 million weights.
DATA_PARALLEL_TOLERANCE = 1e-3
CHECKSUM_TOLERANCE = 0.1


def conv_shapes():
    """The 120 convolution kernels' shapes (kh, kw, in, out), in the order the network uses them."""
    shapes = [(7, 7, 3, STEM_CHANNELS)]
    channels = STEM_CHANNELS
    for block, layers in enumerate(BLOCK_LAYERS):
        for _ in range(layers):
            shapes.append((1, 1, channels, BOTTLENECK_WIDTH))
            shapes.append((3, 3, BOTTLENECK_WIDTH, GROWTH_RATE))
            channels += GROWTH_RATE
        if block < len(BLOCK_LAYERS) - 1:
            shapes.append((1, 1, channels, channels // 2))
            channels //= 2
    assert channels == FEATURES
    return shapes


def initial_weights(n_classes=14, seed=SEED):
    """{"convs": [120 float32 kernels (kh, kw, in, out)], "dense/kernel": (1024, n_classes),
    "dense/bias": (n_classes,)}."""
    rng = np.random.default_rng(seed)
    convs = [(rng.standard_normal(shape, dtype=np.float32) * np.sqrt(2.0 / np.prod(shape[:3]))).astype(np.float32)
             for shape in conv_shapes()]
    limit = np.sqrt(6.0 / (FEATURES + n_classes))
    kernel = rng.uniform(-limit, limit, (FEATURES, n_classes)).astype(np.float32)
    return {"convs": convs, "dense/kernel": kernel, "dense/bias": np.zeros(n_classes, np.float32)}


def weights_checksum(arrays):
    """The float64 sum of every element of `arrays` (a model's trainable weights, any layout)."""
    return float(sum(np.asarray(array, dtype=np.float64).sum() for array in arrays))


def data_parallel_check(one_device, n_devices, devices):
    """The record's equivalence checks from two runs of the same K steps: `one_device` and
    `n_devices` are (losses, weights checksum) on 1 device and on `devices` devices."""
    (losses_1, checksum_1), (losses_n, checksum_n) = one_device, n_devices
    losses_1, losses_n = np.asarray(losses_1, np.float64), np.asarray(losses_n, np.float64)
    if losses_1.shape != losses_n.shape:
        raise ValueError(f"{losses_n.size} losses on {devices} devices, {losses_1.size} on one")
    checks = {"data_parallel_max_abs_error": float(np.abs(losses_1 - losses_n).max()),
              "data_parallel_tolerance": DATA_PARALLEL_TOLERANCE,
              "data_parallel_checksum_max_abs_error": abs(checksum_1 - checksum_n),
              "data_parallel_checksum_tolerance": CHECKSUM_TOLERANCE,
              "data_parallel_devices": devices, "data_parallel_losses": losses_n.tolist(),
              # Training one fixed batch: the losses must fall, or the steps taught nothing.
              "data_parallel_loss_fell": bool(losses_n[-1] < losses_n[0])}
    print("data-parallel equivalence:", checks)
    return checks
