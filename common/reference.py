"""Shared initial weights and a numpy reference forward pass: how every framework proves it
builds the same CNN and GRU model.

A notebook loads `cnn_weights()` / `gru_weights()` into its own model, runs `parity_batch(task)`
in inference mode, and records the max abs difference of its logits against `reference_logits`.

Framework-neutral layout (Keras' own, which most frameworks are one transpose away from):
  conv kernels  (kh, kw, in, out)          dense kernels  (in, out)
  biases        (out,)                     embedding      (vocabulary, dim)
  CNN flatten   channel-major: the 6400 inputs of dense1 are ordered (C, H, W), as in an NCHW
                framework; an NHWC framework transposes to NCHW before flattening.
  GRU           one kernel per gate, gates r (reset), z (update), n (candidate), in the
                cuDNN / PyTorch / Keras `reset_after=True` form:
                  r = sigmoid(x W_r + b_r + h U_r + c_r)
                  z = sigmoid(x W_z + b_z + h U_z + c_z)
                  n = tanh(x W_n + b_n + r * (h U_n + c_n))
                  h = (1 - z) * n + z * h
Kernels are glorot-uniform and biases zero, from a fixed seed, like the tasks' initialisation.
"""
import numpy as np

from common.params import get_params

SEED = 1234
PARITY_BATCH_SIZE = 8
# Max abs logit difference allowed against the numpy reference (fp32 against float64).
PARITY_TOLERANCE = {"CNN": 1e-4, "RNN": 1e-4}
# Max abs difference allowed between two frameworks' ResNet-50 features.
FEATURE_TOLERANCE = 1e-3
GRU_GATES = ("r", "z", "n")


def glorot_uniform(rng, shape, fan_in, fan_out):
    limit = np.sqrt(6.0 / (fan_in + fan_out))
    return rng.uniform(-limit, limit, size=shape).astype(np.float32)


def _conv(rng, kernel_size, n_in, n_out):
    receptive = kernel_size * kernel_size
    return glorot_uniform(rng, (kernel_size, kernel_size, n_in, n_out),
                          receptive * n_in, receptive * n_out)


CNN_LAYERS = ("conv1", "conv2", "conv3", "conv4", "dense1", "dense2")


def cnn_weights(seed=SEED):
    """{layer/kernel, layer/bias} for the CNN task's model."""
    params = get_params("CNN")
    rng = np.random.default_rng(seed)
    channels = params["image_shape"][0]
    shapes = {"conv1": (channels, 50), "conv2": (50, 50), "conv3": (50, 100), "conv4": (100, 100)}
    weights = {}
    for name, (n_in, n_out) in shapes.items():
        weights[f"{name}/kernel"] = _conv(rng, 3, n_in, n_out)
        weights[f"{name}/bias"] = np.zeros(n_out, np.float32)
    for name, (n_in, n_out) in {"dense1": (6400, 512), "dense2": (512, params["n_classes"])}.items():
        weights[f"{name}/kernel"] = glorot_uniform(rng, (n_in, n_out), n_in, n_out)
        weights[f"{name}/bias"] = np.zeros(n_out, np.float32)
    return weights


def gru_weights(seed=SEED):
    """embedding, per-gate GRU kernels and biases, dense: the RNN task's model."""
    params = get_params("RNN")
    rng = np.random.default_rng(seed + 1)
    vocabulary, dim = params["vocabulary_size"], params["embedding_dim"]
    units, n_classes = params["hidden_units"], params["n_classes"]
    weights = {"embedding/embeddings": rng.uniform(-0.05, 0.05, (vocabulary, dim)).astype(np.float32)}
    for gate in GRU_GATES:
        weights[f"gru/W_{gate}"] = glorot_uniform(rng, (dim, units), dim, units)
        weights[f"gru/U_{gate}"] = glorot_uniform(rng, (units, units), units, units)
        weights[f"gru/b_{gate}"] = np.zeros(units, np.float32)
        weights[f"gru/c_{gate}"] = np.zeros(units, np.float32)
    weights["dense/kernel"] = glorot_uniform(rng, (units, n_classes), units, n_classes)
    weights["dense/bias"] = np.zeros(n_classes, np.float32)
    return weights


def parity_batch(task, seed=SEED):
    """The fixed inputs of the parity check: NCHW images for CNN, token ids for RNN."""
    rng = np.random.default_rng(seed + 2)
    if task == "CNN":
        shape = (PARITY_BATCH_SIZE,) + tuple(get_params("CNN")["image_shape"])
        return rng.uniform(0.0, 1.0, size=shape).astype(np.float32)
    if task == "RNN":
        params = get_params("RNN")
        tokens = rng.integers(1, params["vocabulary_size"],
                              size=(PARITY_BATCH_SIZE, params["sequence_length"]))
        # Keras-style 'pre' padding of different lengths, so padding is part of what is compared.
        for row, pad in enumerate(np.linspace(0, params["sequence_length"] // 2, PARITY_BATCH_SIZE)):
            tokens[row, : int(pad)] = 0
        return tokens.astype(np.int32)
    raise ValueError(f"no parity check for task {task!r}; valid: CNN, RNN")


def _conv_same(x, kernel, bias):
    """3×3 'same' convolution of NCHW x with an HWIO kernel (cross-correlation, like every
    framework)."""
    kh, kw, _, n_out = kernel.shape
    padded = np.pad(x, ((0, 0), (0, 0), (kh // 2, kh // 2), (kw // 2, kw // 2)))
    n, _, height, width = x.shape
    out = np.zeros((n, n_out, height, width))
    for i in range(kh):
        for j in range(kw):
            patch = padded[:, :, i:i + height, j:j + width]
            out += np.einsum("nchw,co->nohw", patch, kernel[i, j])
    return out + bias[None, :, None, None]


def _max_pool2(x):
    n, c, h, w = x.shape
    return x.reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))


def _relu(x):
    return np.maximum(x, 0.0)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def cnn_forward(weights, x):
    """Logits of the CNN in inference mode (dropout off), in float64."""
    w = {name: value.astype(np.float64) for name, value in weights.items()}
    h = _relu(_conv_same(x.astype(np.float64), w["conv1/kernel"], w["conv1/bias"]))
    h = _relu(_max_pool2(_conv_same(h, w["conv2/kernel"], w["conv2/bias"])))
    h = _relu(_conv_same(h, w["conv3/kernel"], w["conv3/bias"]))
    h = _relu(_max_pool2(_conv_same(h, w["conv4/kernel"], w["conv4/bias"])))
    h = h.reshape(len(h), -1)
    h = _relu(h @ w["dense1/kernel"] + w["dense1/bias"])
    return h @ w["dense2/kernel"] + w["dense2/bias"]


def gru_forward(weights, tokens):
    """Logits of the embedding · GRU (last output) · dense model, in float64."""
    w = {name: value.astype(np.float64) for name, value in weights.items()}
    embedded = w["embedding/embeddings"][tokens]
    h = np.zeros((tokens.shape[0], w["gru/U_r"].shape[0]))
    for t in range(tokens.shape[1]):
        x = embedded[:, t]
        r = _sigmoid(x @ w["gru/W_r"] + w["gru/b_r"] + h @ w["gru/U_r"] + w["gru/c_r"])
        z = _sigmoid(x @ w["gru/W_z"] + w["gru/b_z"] + h @ w["gru/U_z"] + w["gru/c_z"])
        n = np.tanh(x @ w["gru/W_n"] + w["gru/b_n"] + r * (h @ w["gru/U_n"] + w["gru/c_n"]))
        h = (1.0 - z) * n + z * h
    return h @ w["dense/kernel"] + w["dense/bias"]


def shared_weights(task):
    if task == "CNN":
        return cnn_weights()
    if task == "RNN":
        return gru_weights()
    raise ValueError(f"no shared weights for task {task!r}; valid: CNN, RNN")


def reference_logits(task):
    """The numpy reference logits of `parity_batch(task)` on `shared_weights(task)`."""
    forward = {"CNN": cnn_forward, "RNN": gru_forward}[task]
    return forward(shared_weights(task), parity_batch(task))


def parity_error(task, logits):
    """Max abs difference between a framework's logits and the numpy reference."""
    logits = np.asarray(logits, dtype=np.float64)
    expected = reference_logits(task)
    if logits.shape != expected.shape:
        raise ValueError(f"logits of shape {logits.shape}, expected {expected.shape}")
    return float(np.max(np.abs(logits - expected)))
