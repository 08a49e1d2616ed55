"""DenseNet-121's shared start and the data-parallel equivalence check of the MultiGPU task.

Shared start: no ImageNet DenseNet weights are reachable here, so every framework starts from the
same random weights instead: `initial_weights()` holds DenseNet-121's 120 convolution kernels (20
at the smoke profile's two dense layers per block, params' `block_layers`) in the order the
network uses them (stem, then per dense layer its 1×1 and 3×3 convolutions, then each
transition's 1×1), He-normal, in the Keras layout (kh, kw, in, out), and the 14-way
classifier (glorot-uniform kernel (1024, 14), zero bias). Batch norm starts at its default in
every framework (scale 1, offset 0, mean 0, variance 1), so it needs no mapping. A notebook walks
its framework's convolutions in definition order and copies kernel i into convolution i.

Equivalence: K steps on N devices with global batch B must train the same model as K steps on one
device with batch B, from the same weights, on the same fixed batch, batch norm's statistics
frozen (the running ones, so that each device's share of the batch cannot normalise differently
from the whole batch). The steps are plain SGD (`equivalence_learning_rate`), whose update is the
gradient itself: Adam's first steps move every weight by about lr × sign(gradient), which rounding
can flip where a gradient is nearly zero, and which hides a sum where the mean belongs (Adam is
blind to the gradient's scale). `data_parallel_check` compares the two runs' updates (the weights
after the K steps minus the shared start, every trainable weight) as a relative L2 error. Only a
run on several devices makes the comparison: a 1-device run exercises no engine, and its own
steps on the fixed batch must still lower the loss (`one_device_check`).

Replicas: the equivalence steps run beside the timed loop, so they cannot see an engine taken out of
the timed loop alone. After the timed epochs every device's replica must have made the same update
as the first device's (`replica_check`): with the gradients all-reduced every replica applies the
same update, while replicas trained each on its own share of the batches part at once.
"""
import numpy as np

SEED = 1234
BLOCK_LAYERS = (6, 12, 24, 16)
GROWTH_RATE = 32
BOTTLENECK_WIDTH = 4 * GROWTH_RATE
STEM_CHANNELS = 64
# ||update on N devices - update on 1|| / ||update on 1||, after K SGD steps. The margins on both
# sides (the README's margins table, generated from the records and the broken copies of
# benchmarks/broken_copies.py) must be at least 100x: float rounding of the all-reduce leaves a
# correct engine near float32's resolution, while a missing all-reduce (each replica on its own share)
# or a sum where the mean belongs (twice the step on 2 devices) moves the update by tens of percent.
UPDATE_TOLERANCE = 1e-3
# max over replicas of ||replica's update - first replica's|| / ||first replica's||, after the timed
# epochs: an all-reduce hands every replica the same gradients (the same bits on one host), while
# replicas without one part by tens of percent within a step.
REPLICA_TOLERANCE = 1e-6


def conv_shapes(block_layers=BLOCK_LAYERS):
    """The convolution kernels' shapes (kh, kw, in, out), in the order the network uses them:
    DenseNet-121's 120, or fewer for a profile with fewer dense layers per block (params'
    `block_layers`)."""
    return _layout(block_layers)[0]


def features(block_layers=BLOCK_LAYERS):
    """The channels the last dense block ends with, which the classifier reads: 1024 in DenseNet-121."""
    return _layout(block_layers)[1]


def _layout(block_layers):
    shapes = [(7, 7, 3, STEM_CHANNELS)]
    channels = STEM_CHANNELS
    for block, layers in enumerate(block_layers):
        for _ in range(layers):
            shapes.append((1, 1, channels, BOTTLENECK_WIDTH))
            shapes.append((3, 3, BOTTLENECK_WIDTH, GROWTH_RATE))
            channels += GROWTH_RATE
        if block < len(block_layers) - 1:
            shapes.append((1, 1, channels, channels // 2))
            channels //= 2
    return shapes, channels


def initial_weights(n_classes=14, block_layers=BLOCK_LAYERS, seed=SEED):
    """{"convs": [float32 kernels (kh, kw, in, out)], "dense/kernel": (features, n_classes),
    "dense/bias": (n_classes,)}."""
    rng = np.random.default_rng(seed)
    convs = [(rng.standard_normal(shape, dtype=np.float32) * np.sqrt(2.0 / np.prod(shape[:3]))).astype(np.float32)
             for shape in conv_shapes(block_layers)]
    n_features = features(block_layers)
    limit = np.sqrt(6.0 / (n_features + n_classes))
    kernel = rng.uniform(-limit, limit, (n_features, n_classes)).astype(np.float32)
    return {"convs": convs, "dense/kernel": kernel, "dense/bias": np.zeros(n_classes, np.float32)}


def weights_update(before, after):
    """The update a run made: every trainable weight after its steps minus before them, flattened in
    float64 (`before` and `after`: the same arrays, in the same order, any layout)."""
    before, after = list(before), list(after)
    if len(before) != len(after):
        raise ValueError(f"{len(after)} weights after the steps, {len(before)} before")
    return np.concatenate([(np.asarray(end, np.float64) - np.asarray(start, np.float64)).ravel()
                           for start, end in zip(before, after)])


def update_relative_error(one_device, n_devices):
    """||n_devices - one_device|| / ||one_device|| of two updates (weights_update)."""
    one_device, n_devices = np.asarray(one_device, np.float64), np.asarray(n_devices, np.float64)
    if one_device.shape != n_devices.shape:
        raise ValueError(f"an update of {n_devices.size} weights on N devices, {one_device.size} on one")
    scale = np.linalg.norm(one_device)
    if scale == 0:
        raise ValueError("the one-device run did not move its weights: nothing to compare")
    return float(np.linalg.norm(n_devices - one_device) / scale)  # NaN when a run diverged: invalid


def data_parallel_check(one_device, n_devices, devices):
    """The record's equivalence checks from two runs of the same K SGD steps: `one_device` and
    `n_devices` are (step losses, weights_update) on 1 device and on `devices` devices."""
    (losses_1, update_1), (losses_n, update_n) = one_device, n_devices
    losses_1, losses_n = np.asarray(losses_1, np.float64), np.asarray(losses_n, np.float64)
    if losses_1.shape != losses_n.shape:
        raise ValueError(f"{losses_n.size} losses on {devices} devices, {losses_1.size} on one")
    checks = {"data_parallel_update_relative_error": update_relative_error(update_1, update_n),
              "data_parallel_update_tolerance": UPDATE_TOLERANCE,
              "data_parallel_devices": devices, "data_parallel_losses": losses_n.tolist(),
              "data_parallel_loss_difference": float(np.abs(losses_1 - losses_n).max()),
              # Training one fixed batch: the losses must fall, or the steps taught nothing.
              "data_parallel_loss_fell": bool(losses_n[-1] < losses_n[0])}
    print("data-parallel equivalence:", checks)
    return checks


def one_device_check(one_device):
    """The record's checks of a 1-device run, the scaling column's baseline with no engine to check,
    from its K SGD steps on the fixed batch ((step losses, weights_update), as data_parallel_check
    takes it): the losses must fall, or the steps taught nothing."""
    losses = np.asarray(one_device[0], np.float64)
    checks = {"data_parallel_devices": 1, "data_parallel_losses": losses.tolist(),
              "data_parallel_loss_fell": bool(losses.size > 1 and losses[-1] < losses[0])}
    print("one device's steps:", checks)
    return checks


def replica_check(updates, devices, batch_shards=None):
    """The record's replica checks after the timed epochs: `updates` holds the update of the trainable
    weights (weights_update, or any flat array of it) of each copy found, one per device, the first
    device's first; `devices` the devices the run trained on; `batch_shards`, where the engine is the
    batch's sharding (JAX), how many slices the timed batches were cut into. Fewer copies than two
    give an infinite error: there was nothing to agree."""
    updates = [np.asarray(update, np.float64).ravel() for update in updates]
    errors = [update_relative_error(updates[0], update) for update in updates[1:]]
    checks = {"data_parallel_replica_relative_error": max(errors) if errors else float("inf"),
              "data_parallel_replica_tolerance": REPLICA_TOLERANCE, "data_parallel_replicas": len(updates),
              "data_parallel_replica_devices": devices}
    if batch_shards is not None:
        checks["data_parallel_batch_shards"] = int(batch_shards)
    print("replicas after the timed epochs:", checks)
    return checks
