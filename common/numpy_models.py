"""The tasks' models and optimisers in float64 numpy, forward and backward: the judge every
framework's training step is held against (see common.reference).

Weights use the framework-neutral layout documented in common.reference. Each `*_gradients`
function returns (mean softmax cross-entropy loss, {name: gradient}) for one batch, dropout off.
"""
import numpy as np


def _cast(weights, dtype):
    return {name: np.asarray(value, dtype=dtype) for name, value in weights.items()}


def softmax_cross_entropy(logits, labels):
    """Mean cross-entropy over the batch and its gradient with respect to the logits."""
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probabilities = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    rows = np.arange(len(labels))
    loss = -log_probabilities[rows, labels].mean()
    gradient = np.exp(log_probabilities)
    gradient[rows, labels] -= 1.0
    return loss, gradient / len(labels)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


# ---- CNN: conv-relu, conv-pool-relu, conv-relu, conv-pool-relu, dense-relu, dense ----

def _patches(x, kernel_size):
    """(n, h, w, kh·kw·c) 'same'-padded patches of NCHW x, in the kernel's (kh, kw, c) order."""
    n, channels, height, width = x.shape
    pad = kernel_size // 2
    padded = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    columns = [padded[:, :, i:i + height, j:j + width].transpose(0, 2, 3, 1)
               for i in range(kernel_size) for j in range(kernel_size)]
    return np.concatenate(columns, axis=3)


def conv_forward(x, kernel, bias):
    """3×3 'same' cross-correlation of NCHW x with an HWIO kernel; returns (out, patches)."""
    patches = _patches(x, kernel.shape[0])
    out = patches @ kernel.reshape(-1, kernel.shape[3]) + bias
    return out.transpose(0, 3, 1, 2), patches


def conv_backward(gradient_out, patches, kernel):
    """Gradients of the input, kernel and bias of `conv_forward`."""
    kh, kw, channels, n_out = kernel.shape
    flat = gradient_out.transpose(0, 2, 3, 1)
    gradient_kernel = np.tensordot(patches, flat, axes=([0, 1, 2], [0, 1, 2])).reshape(kernel.shape)
    gradient_patches = flat @ kernel.reshape(-1, n_out).T
    n, height, width, _ = gradient_patches.shape
    pad = kh // 2
    gradient_padded = np.zeros((n, channels, height + 2 * pad, width + 2 * pad), gradient_patches.dtype)
    for index, (i, j) in enumerate((i, j) for i in range(kh) for j in range(kw)):
        block = gradient_patches[..., index * channels:(index + 1) * channels]
        gradient_padded[:, :, i:i + height, j:j + width] += block.transpose(0, 3, 1, 2)
    gradient_x = gradient_padded[:, :, pad:pad + height, pad:pad + width]
    return gradient_x, gradient_kernel, flat.sum(axis=(0, 1, 2))


def max_pool2_forward(x):
    """2×2 max pooling; the mask marks one winner per window, the first in row-major order, as the
    frameworks' kernels do: ties are common (windows of all-zero patches give the bias)."""
    n, c, h, w = x.shape
    windows = x.reshape(n, c, h // 2, 2, w // 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(n, c, h // 2, w // 2, 4)
    winner = windows.argmax(axis=-1)
    out = np.take_along_axis(windows, winner[..., None], axis=-1)[..., 0]
    return out, winner


def max_pool2_backward(gradient_out, winner):
    n, c, h, w = winner.shape
    windows = np.zeros((n, c, h, w, 4), gradient_out.dtype)
    np.put_along_axis(windows, winner[..., None], gradient_out[..., None], axis=-1)
    return windows.reshape(n, c, h, w, 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(n, c, 2 * h, 2 * w)


def cnn_forward(weights, x, keep=None, dtype=np.float64):
    """Logits of the CNN (dropout off) for NCHW x; `keep`, a dict, receives what backward needs."""
    w = _cast(weights, dtype)
    keep = {} if keep is None else keep
    h = np.asarray(x, dtype=dtype)
    for conv, pool in (("conv1", False), ("conv2", True), ("conv3", False), ("conv4", True)):
        keep[conv + "/input_shape"] = h.shape
        h, keep[conv + "/patches"] = conv_forward(h, w[conv + "/kernel"], w[conv + "/bias"])
        if pool:
            h, keep[conv + "/pool_mask"] = max_pool2_forward(h)
        h = np.maximum(h, 0.0)
        keep[conv + "/output"] = h
    keep["flat"] = flat = h.reshape(len(h), -1)
    keep["dense1/output"] = hidden = np.maximum(flat @ w["dense1/kernel"] + w["dense1/bias"], 0.0)
    return hidden @ w["dense2/kernel"] + w["dense2/bias"]


def cnn_gradients(weights, x, labels, dtype=np.float64):
    w = _cast(weights, dtype)
    keep = {}
    logits = cnn_forward(w, x, keep, dtype)
    loss, gradient = softmax_cross_entropy(logits, labels)
    grads = {"dense2/kernel": keep["dense1/output"].T @ gradient, "dense2/bias": gradient.sum(0)}
    gradient = (gradient @ w["dense2/kernel"].T) * (keep["dense1/output"] > 0)
    grads["dense1/kernel"], grads["dense1/bias"] = keep["flat"].T @ gradient, gradient.sum(0)
    gradient = (gradient @ w["dense1/kernel"].T).reshape(keep["conv4/output"].shape)
    for conv in ("conv4", "conv3", "conv2", "conv1"):
        gradient = gradient * (keep[conv + "/output"] > 0)
        if conv + "/pool_mask" in keep:
            gradient = max_pool2_backward(gradient, keep[conv + "/pool_mask"])
        gradient, grads[conv + "/kernel"], grads[conv + "/bias"] = conv_backward(
            gradient, keep[conv + "/patches"], w[conv + "/kernel"])
    return loss, grads


# ---- GRU: embedding, GRU (reset_after form, last state), dense ----

def gru_forward(weights, tokens, keep=None, dtype=np.float64):
    """Logits of embedding · GRU (last state) · dense for (n, T) token ids."""
    w = _cast(weights, dtype)
    steps = [] if keep is None else keep.setdefault("steps", [])
    embedded = w["embedding/embeddings"][tokens]
    h = np.zeros((tokens.shape[0], w["gru/U_r"].shape[0]), dtype)
    for t in range(tokens.shape[1]):
        x = embedded[:, t]
        r = _sigmoid(x @ w["gru/W_r"] + w["gru/b_r"] + h @ w["gru/U_r"] + w["gru/c_r"])
        z = _sigmoid(x @ w["gru/W_z"] + w["gru/b_z"] + h @ w["gru/U_z"] + w["gru/c_z"])
        recurrent_n = h @ w["gru/U_n"] + w["gru/c_n"]
        n = np.tanh(x @ w["gru/W_n"] + w["gru/b_n"] + r * recurrent_n)
        steps.append((x, h, r, z, recurrent_n, n))
        h = (1.0 - z) * n + z * h
    if keep is not None:
        keep["last"] = h
    return h @ w["dense/kernel"] + w["dense/bias"]


def gru_gradients(weights, tokens, labels, dtype=np.float64):
    w = _cast(weights, dtype)
    keep = {}
    logits = gru_forward(w, tokens, keep, dtype)
    loss, gradient = softmax_cross_entropy(logits, labels)
    grads = {name: np.zeros_like(value) for name, value in w.items()}
    grads["dense/kernel"], grads["dense/bias"] = keep["last"].T @ gradient, gradient.sum(0)
    gradient_h = gradient @ w["dense/kernel"].T
    for t in reversed(range(tokens.shape[1])):
        x, h, r, z, recurrent_n, n = keep["steps"][t]
        gradient_n = gradient_h * (1.0 - z)
        gradient_z = gradient_h * (h - n)
        gradient_h = gradient_h * z
        pre = {"n": gradient_n * (1.0 - n * n), "z": gradient_z * z * (1.0 - z)}
        gradient_recurrent = {"n": pre["n"] * r}
        pre["r"] = pre["n"] * recurrent_n * r * (1.0 - r)
        gradient_recurrent["z"], gradient_recurrent["r"] = pre["z"], pre["r"]
        gradient_x = 0.0
        for gate in ("r", "z", "n"):
            grads[f"gru/W_{gate}"] += x.T @ pre[gate]
            grads[f"gru/b_{gate}"] += pre[gate].sum(0)
            grads[f"gru/U_{gate}"] += h.T @ gradient_recurrent[gate]
            grads[f"gru/c_{gate}"] += gradient_recurrent[gate].sum(0)
            gradient_x = gradient_x + pre[gate] @ w[f"gru/W_{gate}"].T
            gradient_h = gradient_h + gradient_recurrent[gate] @ w[f"gru/U_{gate}"].T
        np.add.at(grads["embedding/embeddings"], tokens[:, t], gradient_x)
    return loss, grads


# ---- FCN5: four dense layers, sigmoid hidden activations ----

FCN5_LAYERS = ("dense1", "dense2", "dense3", "dense4")


def fcn5_forward(weights, x, keep=None, dtype=np.float64):
    w = _cast(weights, dtype)
    activations = [np.asarray(x, dtype=dtype)]
    for name in FCN5_LAYERS[:-1]:
        activations.append(_sigmoid(activations[-1] @ w[name + "/kernel"] + w[name + "/bias"]))
    if keep is not None:
        keep["activations"] = activations
    last = FCN5_LAYERS[-1]
    return activations[-1] @ w[last + "/kernel"] + w[last + "/bias"]


def fcn5_gradients(weights, x, labels, dtype=np.float64):
    w = _cast(weights, dtype)
    keep = {}
    loss, gradient = softmax_cross_entropy(fcn5_forward(w, x, keep, dtype), labels)
    grads = {}
    for index in reversed(range(len(FCN5_LAYERS))):
        name, inputs = FCN5_LAYERS[index], keep["activations"][index]
        grads[name + "/kernel"], grads[name + "/bias"] = inputs.T @ gradient, gradient.sum(0)
        if index:
            gradient = (gradient @ w[name + "/kernel"].T) * inputs * (1.0 - inputs)
    return loss, grads


# ---- optimisers. SGD: PyTorch's formulation; Keras' and MXNet's (v = m·v − lr·g; w += v) are the
# same for a constant learning rate. Adam comes in the two forms of Kingma & Ba: Algorithm 1
# (PyTorch, optax, PaddlePaddle) adds epsilon to sqrt(v̂); the "efficient" form of their section 2
# (TensorFlow/Keras, MXNet, Chainer, Lasagne) folds both bias corrections into the step size and
# adds epsilon to sqrt(v), in effect a smaller epsilon. They differ only where a gradient is far
# below epsilon — as in the embedding rows a GRU's padded early steps barely reach ----

ADAM_FORMS = ("paper", "efficient")


def sgd(weights, grads, state, learning_rate, momentum=0.0):
    """SGD with (heavy-ball) momentum: v = momentum·v + g; w -= learning_rate·v."""
    for name, gradient in grads.items():
        velocity = state.get(name, 0.0) * momentum + gradient
        state[name] = velocity
        weights[name] = weights[name] - learning_rate * velocity


def adam(weights, grads, state, learning_rate, beta_1, beta_2, epsilon, form="paper"):
    if form not in ADAM_FORMS:
        raise ValueError(f"unknown Adam form {form!r}; valid: {', '.join(ADAM_FORMS)}")
    state["step"] = step = state.get("step", 0) + 1
    for name, gradient in grads.items():
        m = beta_1 * state.get("m/" + name, 0.0) + (1 - beta_1) * gradient
        v = beta_2 * state.get("v/" + name, 0.0) + (1 - beta_2) * gradient * gradient
        state["m/" + name], state["v/" + name] = m, v
        if form == "paper":
            m_hat, v_hat = m / (1 - beta_1 ** step), v / (1 - beta_2 ** step)
            weights[name] = weights[name] - learning_rate * m_hat / (np.sqrt(v_hat) + epsilon)
        else:
            step_size = learning_rate * np.sqrt(1 - beta_2 ** step) / (1 - beta_1 ** step)
            weights[name] = weights[name] - step_size * m / (np.sqrt(v) + epsilon)
