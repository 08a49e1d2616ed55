"""The GPT task's model and optimiser in numpy, forward and backward: the float64 judge every
framework's GPT training step is held against, in the shape of Karpathy's nanoGPT (model.py and
train.py), which decides every choice below that it makes.

Model (nanoGPT's GPT with bias=True): token + position embeddings; n_layer pre-LayerNorm blocks
  x = x + attention(ln_1(x));  x = x + mlp(ln_2(x))
with causal multi-head self-attention (one qkv projection split into q, k, v in that order, as
c_attn; scores scaled by 1/sqrt(head size); future positions set to -inf before the softmax) and a
4x wide MLP with the exact, erf-based GELU (nn.GELU()'s default); a final LayerNorm ln_f; and the
output head tied to the token embedding (logits = x @ token_embedding.T, no bias). LayerNorm's
epsilon is 1e-5 (nanoGPT's LayerNorm passes 1e-5, PyTorch's default). Dropout is not part of the
reference: the parity steps run with dropout off, as every framework's parity run must.

Layout (framework-neutral, as common.reference's): Linear kernels (in, out), so y = x @ kernel +
bias (PyTorch's nn.Linear stores the transpose, (out, in)); embeddings (rows, width); LayerNorm
"scale" (PyTorch's weight, Flax's scale, Keras' gamma) and "offset" (bias, beta). Names:
  token_embedding (V, C)                     position_embedding (block_size, C)
  block{i}/ln_1/scale, block{i}/ln_1/offset  (C,)
  block{i}/attention/qkv/kernel (C, 3C)      block{i}/attention/qkv/bias (3C,)
  block{i}/attention/projection/kernel (C, C) and /bias (C,)
  block{i}/ln_2/scale, block{i}/ln_2/offset  (C,)
  block{i}/mlp/fc/kernel (C, 4C) and /bias   block{i}/mlp/projection/kernel (4C, C) and /bias
  ln_f/scale, ln_f/offset                    (C,)

Every function computes in the dtype of the weights it is given (float64 for the judge, float32 to
measure how far rounding alone moves the same steps); `cast` converts a set of weights.
"""
import math

import numpy as np

LAYER_NORM_EPSILON = 1e-5
# nanoGPT's _init_weights: normal(0, 0.02) for every Linear weight and Embedding; its residual
# projections (c_proj of attention and of the MLP) are drawn again at 0.02 / sqrt(2 n_layer).
INIT_STD = 0.02
GELU_FORMS = ("exact", "tanh")
# What `options` may change, and nothing else: they exist only to build the deliberately broken
# models the parity bound must catch (another LayerNorm epsilon, the tanh GELU, no causal mask).
OPTION_DEFAULTS = {"layer_norm_epsilon": None, "gelu": "exact", "causal": True}


def make_config(vocabulary_size, block_size, n_layer, n_head, n_embd,
                layer_norm_epsilon=LAYER_NORM_EPSILON, bias=True):
    """The model's shape as a plain dict."""
    if n_embd % n_head:
        raise ValueError(f"n_embd {n_embd} is not a multiple of n_head {n_head}")
    if not bias:
        # Only GPTConfig's default, bias=True, so that the parity weights can carry non-zero biases.
        raise ValueError("the reference holds nanoGPT's bias=True model only")
    return {"vocabulary_size": vocabulary_size, "block_size": block_size, "n_layer": n_layer,
            "n_head": n_head, "n_embd": n_embd, "layer_norm_epsilon": layer_norm_epsilon, "bias": bias}


def weight_shapes(config):
    """{name: shape} of every weight, in the order the initial weights are drawn."""
    width, vocabulary = config["n_embd"], config["vocabulary_size"]
    shapes = {"token_embedding": (vocabulary, width), "position_embedding": (config["block_size"], width)}
    for index in range(config["n_layer"]):
        prefix = f"block{index}"
        for name, n_in, n_out in ((f"{prefix}/attention/qkv", width, 3 * width),
                                  (f"{prefix}/attention/projection", width, width),
                                  (f"{prefix}/mlp/fc", width, 4 * width),
                                  (f"{prefix}/mlp/projection", 4 * width, width)):
            shapes[f"{name}/kernel"], shapes[f"{name}/bias"] = (n_in, n_out), (n_out,)
        for norm in ("ln_1", "ln_2"):
            shapes[f"{prefix}/{norm}/scale"] = shapes[f"{prefix}/{norm}/offset"] = (width,)
    shapes["ln_f/scale"] = shapes["ln_f/offset"] = (width,)
    return shapes


def _is_residual_projection(name):
    return name.endswith("/projection/kernel")


def initial_weights(config, seed):
    """nanoGPT's initialisation from a numpy Generator: Linear kernels and both embeddings
    normal(0, 0.02), the two residual projections normal(0, 0.02 / sqrt(2 n_layer)), biases and
    LayerNorm offsets 0, LayerNorm scales 1. Float32, the dtype every framework trains in; their
    float64 values are the float64 judge's start exactly."""
    rng = np.random.default_rng(seed)
    residual_std = INIT_STD / math.sqrt(2 * config["n_layer"])
    weights = {}
    for name, shape in weight_shapes(config).items():
        if name.endswith("/scale"):
            value = np.ones(shape)
        elif name.endswith(("/bias", "/offset")):
            value = np.zeros(shape)
        else:
            value = rng.normal(0.0, residual_std if _is_residual_projection(name) else INIT_STD, shape)
        weights[name] = value.astype(np.float32)
    return weights


def parity_weights(config, seed):
    """The initial weights with every bias and LayerNorm offset drawn non-zero and every LayerNorm
    scale moved away from 1 (a second stream of the same seed), as common.reference does for the
    other tasks: a bias left out, swapped, or mapped to the wrong layer then changes the result.
    Biases and offsets are of the size of the activations they join (uniform ±0.1), except that
    the MLP's GELU is moved to inputs of order 1 (fc biases uniform ±2, ln_2 scales 4 to 8): at
    nanoGPT's initialisation its inputs are about 0.1, where the exact and the tanh GELU differ by
    less than 1e-7 and no three steps could tell them apart (they differ by up to 4.7e-4 near 2.7)."""
    weights = initial_weights(config, seed)
    rng = np.random.default_rng(seed + 1)
    for name, value in weights.items():
        if name.endswith("/ln_2/scale"):
            weights[name] = rng.uniform(4.0, 8.0, value.shape).astype(np.float32)
        elif name.endswith("/scale"):
            weights[name] = rng.uniform(0.8, 1.2, value.shape).astype(np.float32)
        elif name.endswith("/mlp/fc/bias"):
            weights[name] = rng.uniform(-2.0, 2.0, value.shape).astype(np.float32)
        elif name.endswith(("/bias", "/offset")):
            weights[name] = rng.uniform(-0.1, 0.1, value.shape).astype(np.float32)
    return weights


def cast(weights, dtype):
    return {name: np.asarray(value, dtype=dtype) for name, value in weights.items()}


def _options(config, options):
    unknown = set(options or {}) - set(OPTION_DEFAULTS)
    if unknown:
        raise ValueError(f"unknown options {sorted(unknown)}; valid: {', '.join(OPTION_DEFAULTS)}")
    resolved = dict(OPTION_DEFAULTS, **(options or {}))
    if resolved["layer_norm_epsilon"] is None:
        resolved["layer_norm_epsilon"] = config["layer_norm_epsilon"]
    if resolved["gelu"] not in GELU_FORMS:
        raise ValueError(f"unknown GELU {resolved['gelu']!r}; valid: {', '.join(GELU_FORMS)}")
    return resolved


# ---- pieces: Linear, LayerNorm, GELU, softmax ----

def linear_forward(x, kernel, bias):
    return x @ kernel + bias


def linear_backward(gradient_out, x, kernel):
    """Gradients of the input, kernel and bias of `linear_forward` over any leading axes."""
    flat_x = x.reshape(-1, x.shape[-1])
    flat_gradient = gradient_out.reshape(-1, gradient_out.shape[-1])
    return gradient_out @ kernel.T, flat_x.T @ flat_gradient, flat_gradient.sum(axis=0)


def layer_norm_forward(x, scale, offset, epsilon):
    """PyTorch's LayerNorm over the last axis: biased variance, epsilon inside the square root."""
    centred = x - x.mean(axis=-1, keepdims=True)
    inverse_std = 1.0 / np.sqrt((centred * centred).mean(axis=-1, keepdims=True) + epsilon)
    normalised = centred * inverse_std
    return normalised * scale + offset, (normalised, inverse_std)


def layer_norm_backward(gradient_out, cache, scale):
    """Gradients of the input, scale and offset of `layer_norm_forward`."""
    normalised, inverse_std = cache
    axes = tuple(range(gradient_out.ndim - 1))
    gradient_normalised = gradient_out * scale
    gradient_x = inverse_std * (gradient_normalised
                                - gradient_normalised.mean(axis=-1, keepdims=True)
                                - normalised * (gradient_normalised * normalised).mean(axis=-1, keepdims=True))
    return gradient_x, (gradient_out * normalised).sum(axis=axes), gradient_out.sum(axis=axes)


# numpy has no erf. math.erf is the C library's erf, accurate to about one unit in the last place
# of a float64; applied element by element through a ufunc made with frompyfunc. Float32 inputs
# are widened to float64 for it and the result rounded back to float32.
_MATH_ERF = np.frompyfunc(math.erf, 1, 1)


def erf(x):
    return _MATH_ERF(x).astype(x.dtype)


_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_TANH_CUBIC = 0.044715


def gelu_forward(x, form="exact"):
    """nn.GELU(): exact, x·Φ(x) = x/2·(1 + erf(x/√2)); `form="tanh"` is the approximation
    nn.GELU(approximate="tanh") computes, here only as a broken model."""
    if form == "exact":
        return 0.5 * x * (1.0 + erf(x * (1.0 / math.sqrt(2.0))))
    return 0.5 * x * (1.0 + np.tanh(_SQRT_2_OVER_PI * (x + _TANH_CUBIC * x * x * x)))


def gelu_derivative(x, form="exact"):
    if form == "exact":
        cdf = 0.5 * (1.0 + erf(x * (1.0 / math.sqrt(2.0))))
        density = np.exp(-0.5 * x * x) * (1.0 / math.sqrt(2.0 * math.pi))
        return cdf + x * density
    inner = _SQRT_2_OVER_PI * (x + _TANH_CUBIC * x * x * x)
    tanh = np.tanh(inner)
    return 0.5 * (1.0 + tanh) + 0.5 * x * (1.0 - tanh * tanh) * _SQRT_2_OVER_PI * (1.0 + 3.0 * _TANH_CUBIC * x * x)


def softmax(x):
    """Softmax over the last axis; rows of -inf beside finite values give exact zeros there."""
    shifted = np.exp(x - x.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


# ---- causal multi-head self-attention ----

def _split_heads(x, n_head):
    """(B, T, C) -> (B, n_head, T, C / n_head), as nanoGPT's view(B, T, nh, hs).transpose(1, 2)."""
    batch, length, width = x.shape
    return x.reshape(batch, length, n_head, width // n_head).transpose(0, 2, 1, 3)


def _merge_heads(x):
    """(B, n_head, T, hs) -> (B, T, n_head·hs): the heads' outputs side by side."""
    batch, n_head, length, head_size = x.shape
    return x.transpose(0, 2, 1, 3).reshape(batch, length, n_head * head_size)


def causal_mask(length):
    """True where a query position (row) may see a key position (column): itself and the past."""
    return np.tril(np.ones((length, length), dtype=bool))


def attention_forward(weights, prefix, x, n_head, causal=True):
    qkv = linear_forward(x, weights[prefix + "/qkv/kernel"], weights[prefix + "/qkv/bias"])
    # q, k, v in that order along the 3C outputs, as nanoGPT's c_attn(x).split(n_embd, dim=2).
    query, key, value = (_split_heads(part, n_head) for part in np.split(qkv, 3, axis=-1))
    scale = 1.0 / math.sqrt(query.shape[-1])
    scores = (query @ key.swapaxes(-1, -2)) * scale
    if causal:
        scores = np.where(causal_mask(x.shape[1]), scores, -np.inf)
    probabilities = softmax(scores)
    merged = _merge_heads(probabilities @ value)
    out = linear_forward(merged, weights[prefix + "/projection/kernel"], weights[prefix + "/projection/bias"])
    cache = {"x": x, "query": query, "key": key, "value": value, "scale": scale,
             "probabilities": probabilities, "merged": merged}
    return out, cache


def attention_backward(weights, prefix, gradient_out, cache):
    """(gradient of the input, {name: gradient}) of `attention_forward`. Masked positions have
    probability exactly 0, so the softmax's backward sends them no gradient: no mask needed here."""
    gradients = {}
    gradient_merged, gradients[prefix + "/projection/kernel"], gradients[prefix + "/projection/bias"] = \
        linear_backward(gradient_out, cache["merged"], weights[prefix + "/projection/kernel"])
    probabilities, n_head = cache["probabilities"], cache["query"].shape[1]
    gradient_heads = _split_heads(gradient_merged, n_head)
    gradient_probabilities = gradient_heads @ cache["value"].swapaxes(-1, -2)
    gradient_value = probabilities.swapaxes(-1, -2) @ gradient_heads
    gradient_scores = probabilities * (gradient_probabilities
                                       - (gradient_probabilities * probabilities).sum(axis=-1, keepdims=True))
    gradient_scores = gradient_scores * cache["scale"]
    gradient_query = gradient_scores @ cache["key"]
    gradient_key = gradient_scores.swapaxes(-1, -2) @ cache["query"]
    gradient_qkv = np.concatenate([_merge_heads(part) for part in (gradient_query, gradient_key, gradient_value)],
                                  axis=-1)
    gradient_x, gradients[prefix + "/qkv/kernel"], gradients[prefix + "/qkv/bias"] = \
        linear_backward(gradient_qkv, cache["x"], weights[prefix + "/qkv/kernel"])
    return gradient_x, gradients


# ---- MLP: fc (4x wide), GELU, projection ----

def mlp_forward(weights, prefix, x, gelu="exact"):
    hidden = linear_forward(x, weights[prefix + "/fc/kernel"], weights[prefix + "/fc/bias"])
    activated = gelu_forward(hidden, gelu)
    out = linear_forward(activated, weights[prefix + "/projection/kernel"], weights[prefix + "/projection/bias"])
    return out, {"x": x, "hidden": hidden, "activated": activated, "gelu": gelu}


def mlp_backward(weights, prefix, gradient_out, cache):
    gradients = {}
    gradient_activated, gradients[prefix + "/projection/kernel"], gradients[prefix + "/projection/bias"] = \
        linear_backward(gradient_out, cache["activated"], weights[prefix + "/projection/kernel"])
    gradient_hidden = gradient_activated * gelu_derivative(cache["hidden"], cache["gelu"])
    gradient_x, gradients[prefix + "/fc/kernel"], gradients[prefix + "/fc/bias"] = \
        linear_backward(gradient_hidden, cache["x"], weights[prefix + "/fc/kernel"])
    return gradient_x, gradients


# ---- the pre-LayerNorm block and the whole model ----

def _layer_norm(weights, name, x, epsilon):
    return layer_norm_forward(x, weights[name + "/scale"], weights[name + "/offset"], epsilon)


def _layer_norm_backward(weights, name, gradient_out, cache):
    gradient_x, gradient_scale, gradient_offset = layer_norm_backward(gradient_out, cache, weights[name + "/scale"])
    return gradient_x, {name + "/scale": gradient_scale, name + "/offset": gradient_offset}


def block_forward(weights, prefix, x, config, options):
    epsilon = options["layer_norm_epsilon"]
    cache = {}
    normed, cache["ln_1"] = _layer_norm(weights, prefix + "/ln_1", x, epsilon)
    attended, cache["attention"] = attention_forward(weights, prefix + "/attention", normed,
                                                     config["n_head"], options["causal"])
    x = x + attended
    normed, cache["ln_2"] = _layer_norm(weights, prefix + "/ln_2", x, epsilon)
    transformed, cache["mlp"] = mlp_forward(weights, prefix + "/mlp", normed, options["gelu"])
    return x + transformed, cache


def block_backward(weights, prefix, gradient_out, cache):
    """The residual connections pass the gradient through unchanged beside each branch's."""
    gradients = {}
    gradient_normed, branch = mlp_backward(weights, prefix + "/mlp", gradient_out, cache["mlp"])
    gradients.update(branch)
    gradient_branch, branch = _layer_norm_backward(weights, prefix + "/ln_2", gradient_normed, cache["ln_2"])
    gradients.update(branch)
    gradient_x = gradient_out + gradient_branch
    gradient_normed, branch = attention_backward(weights, prefix + "/attention", gradient_x, cache["attention"])
    gradients.update(branch)
    gradient_branch, branch = _layer_norm_backward(weights, prefix + "/ln_1", gradient_normed, cache["ln_1"])
    gradients.update(branch)
    return gradient_x + gradient_branch, gradients


def forward(weights, tokens, config, options=None):
    """(logits (B, T, V), cache for `backward`) for (B, T) token ids, T <= block_size.
    `options` only for the broken models (OPTION_DEFAULTS)."""
    options = _options(config, options)
    tokens = np.asarray(tokens)
    length = tokens.shape[1]
    if length > config["block_size"]:
        raise ValueError(f"sequence of length {length}, block size is only {config['block_size']}")
    x = weights["token_embedding"][tokens] + weights["position_embedding"][:length]
    cache = {"tokens": tokens, "blocks": []}
    for index in range(config["n_layer"]):
        x, block_cache = block_forward(weights, f"block{index}", x, config, options)
        cache["blocks"].append(block_cache)
    cache["final"], cache["ln_f"] = _layer_norm(weights, "ln_f", x, options["layer_norm_epsilon"])
    # The head is the token embedding itself (nanoGPT ties wte.weight to lm_head.weight; no bias).
    cache["logits"] = logits = cache["final"] @ weights["token_embedding"].T
    return logits, cache


def _log_softmax(logits):
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def loss(logits, targets):
    """Mean cross-entropy over every position of the batch, in nats per token (F.cross_entropy
    over logits.view(-1, V), as nanoGPT; its ignore_index=-1 never occurs in the parity batch)."""
    log_probabilities = _log_softmax(logits).reshape(-1, logits.shape[-1])
    return -log_probabilities[np.arange(len(log_probabilities)), np.asarray(targets).reshape(-1)].mean()


def loss_gradient(logits, targets):
    """Gradient of `loss` with respect to the logits: (softmax - one-hot) / positions."""
    flat = np.exp(_log_softmax(logits)).reshape(-1, logits.shape[-1])
    flat[np.arange(len(flat)), np.asarray(targets).reshape(-1)] -= 1.0
    return (flat / len(flat)).reshape(logits.shape)


def backward(weights, cache, targets, config):
    """{name: gradient of the mean loss} for every weight, from `forward`'s cache."""
    gradient_logits = loss_gradient(cache["logits"], targets)
    vocabulary, width = weights["token_embedding"].shape
    # The tied token embedding's gradient is the sum of its two uses: the output head's here, the
    # input lookup's at the end.
    gradients = {"token_embedding": gradient_logits.reshape(-1, vocabulary).T @ cache["final"].reshape(-1, width)}
    gradient_x, branch = _layer_norm_backward(weights, "ln_f", gradient_logits @ weights["token_embedding"],
                                              cache["ln_f"])
    gradients.update(branch)
    for index in reversed(range(config["n_layer"])):
        gradient_x, branch = block_backward(weights, f"block{index}", gradient_x, cache["blocks"][index])
        gradients.update(branch)
    gradients["position_embedding"] = np.zeros_like(weights["position_embedding"])
    gradients["position_embedding"][:gradient_x.shape[1]] = gradient_x.sum(axis=0)
    np.add.at(gradients["token_embedding"], cache["tokens"], gradient_x)
    return gradients


# ---- clipping and AdamW, as nanoGPT's train.py steps them ----

def global_norm(gradients):
    """The L2 norm of all gradients together."""
    return np.sqrt(sum(np.sum(gradient * gradient) for gradient in gradients.values()))


def clip_by_global_norm(gradients, max_norm):
    """torch.nn.utils.clip_grad_norm_: the L2 norm of all gradients together (the norm of the
    tensors' norms); every gradient scaled by min(1, max_norm / (norm + 1e-6)), which PyTorch
    applies even when it is 1. Returns (clipped gradients, total norm before clipping)."""
    total_norm = global_norm(gradients)
    coefficient = min(1.0, max_norm / (float(total_norm) + 1e-6))
    return {name: gradient * coefficient for name, gradient in gradients.items()}, total_norm


def nanogpt_decayed(name, array):
    """nanoGPT's configure_optimizers: "Any parameters that is 2D will be weight decayed,
    otherwise no", i.e. every weight with 2 or more dimensions is decayed (the Linear kernels
    and both embeddings, the tied token embedding once), the biases and LayerNorm scales and
    offsets (1-D) are not."""
    return np.ndim(array) >= 2


def adamw(weights, gradients, state, learning_rate, beta_1, beta_2, epsilon, weight_decay, decayed):
    """torch.optim.AdamW (amsgrad off): the decoupled decay p = p·(1 - lr·wd) for the weights
    `decayed(name, array)` selects, before the Adam step p -= lr/(1-β1^t) · m / (√v/√(1-β2^t) + ε),
    written in PyTorch's order of operations. Returns (new weights, new state); state holds
    "step" and each weight's moments "m/name", "v/name" (zero before the first step)."""
    step = state.get("step", 0) + 1
    bias_correction_1, bias_correction_2 = 1.0 - beta_1 ** step, 1.0 - beta_2 ** step
    new_weights, new_state = {}, {"step": step}
    for name, value in weights.items():
        gradient = gradients[name]
        if decayed(name, value):
            value = value * (1.0 - learning_rate * weight_decay)
        m = beta_1 * state.get("m/" + name, 0.0) + (1.0 - beta_1) * gradient
        v = beta_2 * state.get("v/" + name, 0.0) + (1.0 - beta_2) * gradient * gradient
        denominator = np.sqrt(v) / math.sqrt(bias_correction_2) + epsilon
        new_weights[name] = value - (learning_rate / bias_correction_1) * (m / denominator)
        new_state["m/" + name], new_state["v/" + name] = m, v
    return new_weights, new_state


def train_step(weights, state, tokens, targets, config, hyper, options=None, decayed=nanogpt_decayed):
    """One nanoGPT training step: forward, backward, clip (hyper["grad_clip"]; 0 switches it off,
    as train.py), AdamW (hyper: learning_rate, beta_1, beta_2, epsilon, weight_decay). Returns
    (new weights, new state, the step's loss, the global gradient norm before clipping). `options`
    and `decayed` only for broken models."""
    logits, cache = forward(weights, tokens, config, options)
    step_loss = loss(logits, targets)
    gradients = backward(weights, cache, targets, config)
    if hyper["grad_clip"] != 0.0:
        gradients, norm = clip_by_global_norm(gradients, hyper["grad_clip"])
    else:
        norm = global_norm(gradients)
    new_weights, new_state = adamw(weights, gradients, state, hyper["learning_rate"], hyper["beta_1"],
                                   hyper["beta_2"], hyper["epsilon"], hyper["weight_decay"], decayed)
    return new_weights, new_state, step_loss, float(norm)
