"""Floating-point work per item of each task's model, counted from its layers, so a speed can be
shown as a share of the machine's measured peak. One multiply-add counts as 2 FLOPs; a training
step counts 3× its forward pass (forward, gradient of the inputs, gradient of the weights) less the
first layer's input gradient, which no framework computes (the images need none: for FCN5 that is
11 % of the step); element-wise work (activations, pooling, the optimiser) is left out. The count is
that of direct convolution: a framework that convolves with fewer multiplications (Winograd, as
ONNX Runtime and oneDNN may for 3×3 kernels) can show more than 100 % of the measured peak."""
from common.params import get_params

TRAINING_FACTOR = 3


def _conv(height, width, n_in, n_out, kernel, stride=1):
    """Multiply-adds of a 'same'-padded convolution; returns (multiply-adds, output height, width)."""
    out_h, out_w = -(-height // stride), -(-width // stride)
    return out_h * out_w * n_in * n_out * kernel * kernel, out_h, out_w


def cnn_multiply_adds():
    params = get_params("CNN")
    channels, height, width = params["image_shape"]
    total = 0
    for n_in, n_out, pool in ((channels, 50, False), (50, 50, True), (50, 100, False), (100, 100, True)):
        macs, height, width = _conv(height, width, n_in, n_out, 3)
        total += macs
        if pool:
            height, width = height // 2, width // 2
    return total + 100 * height * width * 512 + 512 * params["n_classes"]


def gru_multiply_adds():
    params = get_params("RNN")
    dim, units = params["embedding_dim"], params["hidden_units"]
    return params["sequence_length"] * 3 * (dim * units + units * units) + units * params["n_classes"]


def resnet50_multiply_adds(size=224):
    """Keras-applications ResNet50 (stride 2 in each stage's first 1×1 convolution), up to the
    global average pool: the 2048 features the Inference task extracts."""
    total, height, width = _conv(size, size, 3, 64, 7, stride=2)
    height, width = -(-height // 2), -(-width // 2)  # 3×3 max pool, stride 2
    n_in = 64
    for blocks, filters, stride in ((3, 64, 1), (4, 128, 2), (6, 256, 2), (3, 512, 2)):
        for block in range(blocks):
            block_stride = stride if block == 0 else 1
            macs, out_h, out_w = _conv(height, width, n_in, filters, 1, block_stride)
            total += macs
            total += _conv(out_h, out_w, filters, filters, 3)[0]
            total += _conv(out_h, out_w, filters, 4 * filters, 1)[0]
            if block == 0:  # the projection shortcut
                total += _conv(height, width, n_in, 4 * filters, 1, block_stride)[0]
            height, width, n_in = out_h, out_w, 4 * filters
    return total


def densenet121_multiply_adds(size=None, block_layers=None):
    """DenseNet-121 (or the depth of a profile's `block_layers`) with the MultiGPU task's head: the
    stem at 1/2 of the input, then each dense block at 1/4, 1/8, 1/16, 1/32 (max pool after the
    stem, 2×2 average pool in each transition)."""
    from common import densenet

    params = get_params("MultiGPU")
    size = size or params["image_size"]
    block_layers = tuple(block_layers or params["block_layers"])
    shapes = densenet.conv_shapes(block_layers)
    side = -(-size // 2)
    total = side * side * _kernel_macs(shapes[0])
    side = -(-side // 2)
    index = 1
    for block, layers in enumerate(block_layers):
        for kernel in shapes[index:index + 2 * layers]:
            total += side * side * _kernel_macs(kernel)
        index += 2 * layers
        if block < len(block_layers) - 1:
            total += side * side * _kernel_macs(shapes[index])
            index += 1
            side //= 2
    return total + densenet.features(block_layers) * params["n_classes"]


def _kernel_macs(shape):
    kh, kw, n_in, n_out = shape
    return kh * kw * n_in * n_out


def fcn5_multiply_adds():
    sizes = get_params("FCN5")["layer_sizes"]
    return sum(n_in * n_out for n_in, n_out in zip(sizes[:-1], sizes[1:]))


def gpt_multiply_adds(params=None):
    """One token through the GPT of `params` (default the full profile's): each block's qkv,
    projection and MLP matrices, its attention over the whole context (q·k and the weighted sum of
    v, counted over every position as nanoGPT's estimate_mfu counts them), and the tied head; the
    embeddings are lookups."""
    params = params or get_params("GPT")
    width, context = params["n_embd"], params["block_size"]
    per_block = width * 3 * width + width * width + 2 * width * 4 * width + 2 * context * width
    return params["n_layer"] * per_block + width * params["vocabulary_size"]


_FORWARD = {"CNN": cnn_multiply_adds, "RNN": gru_multiply_adds, "Inference": resnet50_multiply_adds,
            "FCN5": fcn5_multiply_adds, "MultiGPU": densenet121_multiply_adds, "GPT": gpt_multiply_adds}
_TRAINS = {"CNN": True, "RNN": True, "Inference": False, "FCN5": True, "MultiGPU": True, "GPT": True}


def first_layer_multiply_adds(task, image_size=None):
    """The forward multiply-adds of the layer that reads the data, whose input gradient a training
    step skips: the first convolution or dense layer; the RNN's first layer is the embedding (a
    lookup), so its GRU's input gradient is computed."""
    if task == "CNN":
        channels, height, width = get_params("CNN")["image_shape"]
        return _conv(height, width, channels, 50, 3)[0]
    if task == "FCN5":
        sizes = get_params("FCN5")["layer_sizes"]
        return sizes[0] * sizes[1]
    if task == "MultiGPU":
        from common import densenet

        side = -(-(image_size or get_params("MultiGPU")["image_size"]) // 2)
        return side * side * _kernel_macs(densenet.conv_shapes()[0])
    return 0


def flops_per_item(task, image_size=None, params=None):
    """FLOPs of one image, sequence or token through the task's timed work (training or inference);
    `image_size` (MultiGPU) for a profile that shrinks the images, `params` (GPT, MultiGPU) for the
    profile's model."""
    if task not in _FORWARD:
        raise ValueError(f"no FLOP count for task {task!r}; valid: {', '.join(_FORWARD)}")
    if task == "GPT":
        forward = _FORWARD[task](params)
    elif task == "MultiGPU":
        forward = densenet121_multiply_adds(image_size, (params or {}).get("block_layers"))
    else:
        forward = _FORWARD[task](image_size) if image_size else _FORWARD[task]()
    if not _TRAINS[task]:
        return 2 * forward
    return 2 * (TRAINING_FACTOR * forward - first_layer_multiply_adds(task, image_size))
