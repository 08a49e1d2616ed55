"""One start for every framework, and the float64 numpy judge of its training step.

Training: every CNN, RNN and FCN5 notebook loads `initial_weights(task)` into its model before the
first step (kernels glorot-uniform, GRU recurrent kernels orthogonal, biases zero, one seed), so
every framework starts from the same point.

Training parity: a notebook loads `parity_weights(task)` (the same kernels, random non-zero biases,
so a wrong bias mapping shows), builds its model with dropout off, runs PARITY_STEPS steps of its
own training step (its optimiser, its compiled or converted callable) on `parity_batch(task)`, and
hands the step losses and the logits afterwards to `train_parity(task, losses, logits)`, which
compares them with the same steps in float64 numpy (common.numpy_models). GPT takes
parity_steps_of("GPT") steps, each on its own batch of `parity_batches("GPT")`, so that its gradient
clipping acts on some steps and not on others.

Framework-neutral layout (Keras' own, which most frameworks are one transpose away from):
  conv kernels  (kh, kw, in, out)          dense kernels  (in, out)
  biases        (out,)                     embedding      (vocabulary, dim)
  CNN flatten   channel-major: the 6400 inputs of dense1 are ordered (C, H, W), as in an NCHW
                framework; an NHWC framework permutes dense1's rows (or transposes to NCHW).
  GRU           one kernel per gate, gates r (reset), z (update), n (candidate), in the
                cuDNN / PyTorch / Keras `reset_after=True` form, input biases b, recurrent c:
                  r = sigmoid(x W_r + b_r + h U_r + c_r)
                  z = sigmoid(x W_z + b_z + h U_z + c_z)
                  n = tanh(x W_n + b_n + r * (h U_n + c_n))
                  h = (1 - z) * n + z * h
  FCN5          dense1..dense4, sigmoid after the first three.
"""
import functools
import inspect

import numpy as np

from common import numpy_gpt, numpy_models
from common.params import get_params

SEED = 1234
PARITY_BATCH_SIZE = 8
PARITY_STEPS = 3
# GPT's parity steps, each on its own batch: AdamW hardly sees a gradient scaled as a whole (its
# first step is the gradient's sign), so clipping shows only where it scales some steps and not
# others. In a batch of random characters the gradient is small (global norm about 0.4 from the
# parity weights); where a fraction of the characters is one character (as a space is in text) the
# per-position gradients add up (norm 1.3 at a tenth, 2.3 at a fifth). The fractions below put the
# pre-clip norm above the threshold of 1.0 on some steps and below it on the others, each away from
# it by more than a tenth (tests/test_reference.py holds it). The random batch is one and the same,
# the first three steps the check as it was: repeated steps on one batch add up what a subtle
# mistake in the model changes (the LayerNorm epsilon, the tanh GELU: about 20× the bound), where
# twelve batches all different leave them below 10× (runner.margins shows each copy's margin).
GPT_PARITY_FRACTIONS = (0.0, 0.0, 0.0, 0.2, 0.0, 0.1, 0.3, 0.0, 0.2, 0.0, 0.25, 0.0)
# The character that fills a fraction of a GPT parity batch.
GPT_PARITY_CHARACTER = 7
# Max abs difference of the step losses and the final logits against float64. The same steps in
# float32 numpy differ from float64 by 9e-7 (CNN), 2.3e-7 (RNN), 5.7e-6 (FCN5); PyTorch's by 6e-7,
# 1.6e-7 and 1.1e-6. The CNN's bound is wider: float32 rounding can flip a max-pool winner that
# leads by less than a rounding step and send a gradient to another pixel (7e-5 seen with other
# biases). Swapping two rows of one bias vector moves the result by 1e-3 (GRU update gate) to 0.16
# (conv2); dropping the momentum, by 1.4 (tests/test_reference.py holds these above the bounds).
# FCN5's is wider: with DLBench's momentum, MXNet's oneDNN fully connected layers differ from float64
# by 3.5e-5 (1.6e-6 with MXNET_MKLDNN_ENABLED=0, as every other framework), and the nearest broken
# copy (two rows of dense2's bias swapped) by 7.5e-3; runner.margins shows both sides of each bound.
# GPT's: AdamW with clipping from the parity weights, float32 rounding well below it, the mistakes
# of runner.broken_copies above it (runner.margins shows both sides).
TRAIN_PARITY_TOLERANCE = {"CNN": 1e-3, "RNN": 1e-4, "FCN5": 5e-4, "GPT": 1e-5}
# A bf16 training variant's steps (mixed precision: bfloat16 matmuls and convolutions, float32
# weights, optimiser and loss) against the same float64 steps. bf16 keeps 8 significant bits: the six
# frameworks' bf16 steps (emulated, AVX2 EPYC) differ from float64 by 4.5e-2-6.0e-2 (CNN, 2 % of its
# logits' scale), 1.6e-3-7.0e-3 (RNN; PyTorch's autocast leaves nn.GRU in float32) and 2.0e-2-7.7e-2
# (FCN5), while the grossest mistakes move them by 0.47-3.4 (biases reversed, momentum dropped, SGD
# for Adam: runner.broken_copies' bf16 copies). That leaves a few times on each side, not ten
# (runner.margins.BF16_MIN_MARGIN); the subtle mistakes are caught by the same model's fp32 steps,
# which a bf16 variant is held to as well (train_parity).
BF16_TRAIN_PARITY_TOLERANCE = {"CNN": 0.2, "RNN": 0.05, "FCN5": 0.3}
GRU_GATES = ("r", "z", "n")
CNN_LAYERS = ("conv1", "conv2", "conv3", "conv4", "dense1", "dense2")
FCN5_LAYERS = numpy_models.FCN5_LAYERS
TASKS = ("CNN", "RNN", "FCN5", "GPT")
# GPT's parity model: the task's, two blocks of width 32 over 32 positions (seconds in float64 numpy;
# two blocks so that a block's weights mapped to the other show), without dropout.
GPT_PARITY_MODEL = {"n_layer": 2, "n_head": 2, "n_embd": 32, "block_size": 32, "dropout": 0.0}


def glorot_uniform(rng, shape, fan_in, fan_out):
    limit = np.sqrt(6.0 / (fan_in + fan_out))
    return rng.uniform(-limit, limit, size=shape).astype(np.float32)


def orthogonal(rng, size):
    """A random orthogonal (size, size) matrix, Keras' default recurrent initialisation."""
    q, r = np.linalg.qr(rng.normal(size=(size, size)))
    return (q * np.sign(np.diag(r))).astype(np.float32)


def _dense(weights, rng, name, n_in, n_out):
    weights[f"{name}/kernel"] = glorot_uniform(rng, (n_in, n_out), n_in, n_out)
    weights[f"{name}/bias"] = np.zeros(n_out, np.float32)


def cnn_weights(seed=SEED):
    """{layer/kernel, layer/bias} for the CNN task's model."""
    params = get_params("CNN")
    rng = np.random.default_rng(seed)
    channels = params["image_shape"][0]
    shapes = {"conv1": (channels, 50), "conv2": (50, 50), "conv3": (50, 100), "conv4": (100, 100)}
    weights = {}
    for name, (n_in, n_out) in shapes.items():
        weights[f"{name}/kernel"] = glorot_uniform(rng, (3, 3, n_in, n_out), 9 * n_in, 9 * n_out)
        weights[f"{name}/bias"] = np.zeros(n_out, np.float32)
    _dense(weights, rng, "dense1", 6400, 512)
    _dense(weights, rng, "dense2", 512, params["n_classes"])
    return weights


def gru_weights(seed=SEED):
    """embedding, per-gate GRU kernels and biases, dense: the RNN task's model."""
    params = get_params("RNN")
    rng = np.random.default_rng(seed + 1)
    vocabulary, dim = params["vocabulary_size"], params["embedding_dim"]
    units = params["hidden_units"]
    weights = {"embedding/embeddings": rng.uniform(-0.05, 0.05, (vocabulary, dim)).astype(np.float32)}
    for gate in GRU_GATES:
        weights[f"gru/W_{gate}"] = glorot_uniform(rng, (dim, units), dim, units)
        weights[f"gru/U_{gate}"] = orthogonal(rng, units)
        weights[f"gru/b_{gate}"] = np.zeros(units, np.float32)
        weights[f"gru/c_{gate}"] = np.zeros(units, np.float32)
    _dense(weights, rng, "dense", units, params["n_classes"])
    return weights


def fcn5_weights(seed=SEED):
    """dense1..dense4 of FCN5 (784 → 2048 → 4096 → 1024 → 10)."""
    sizes = get_params("FCN5")["layer_sizes"]
    rng = np.random.default_rng(seed + 3)
    weights = {}
    for name, n_in, n_out in zip(FCN5_LAYERS, sizes[:-1], sizes[1:]):
        _dense(weights, rng, name, n_in, n_out)
    return weights


def gpt_config(params):
    """numpy_gpt's model config of a GPT parameter set (common.params, or gpt_parity_params())."""
    return numpy_gpt.make_config(params["vocabulary_size"], params["block_size"], params["n_layer"],
                                 params["n_head"], params["n_embd"], params["layer_norm_epsilon"])


def gpt_parity_params():
    """The GPT parameters of the parity model: the task's, with GPT_PARITY_MODEL's sizes."""
    return dict(get_params("GPT"), **GPT_PARITY_MODEL)


def gpt_weights(params=None, seed=SEED):
    """nanoGPT's initialisation of the GPT model of `params` (default: the full profile's)."""
    return numpy_gpt.initial_weights(gpt_config(params or get_params("GPT")), seed + 5)


_WEIGHTS = {"CNN": cnn_weights, "RNN": gru_weights, "FCN5": fcn5_weights, "GPT": gpt_weights}


def _check_task(task):
    if task not in TASKS:
        raise ValueError(f"no shared weights or parity check for task {task!r}; valid: {', '.join(TASKS)}")


def initial_weights(task, params=None):
    """The weights every framework trains the task from; GPT's model depends on its profile's
    parameters (`params`, default the full profile's)."""
    _check_task(task)
    return _WEIGHTS[task](params) if task == "GPT" else _WEIGHTS[task]()


def parity_weights(task):
    """The initial kernels with random non-zero biases (input and recurrent ones for the GRU; for
    GPT numpy_gpt.parity_weights, LayerNorm scales and offsets too, of gpt_parity_params' model)."""
    if task == "GPT":
        return numpy_gpt.parity_weights(gpt_config(gpt_parity_params()), SEED + 4)
    weights = initial_weights(task)
    rng = np.random.default_rng(SEED + 4)
    for name in sorted(weights):
        if name.split("/")[1][:2] in ("bi", "b_", "c_"):
            weights[name] = rng.uniform(-0.5, 0.5, size=weights[name].shape).astype(np.float32)
    return weights


def parity_steps_of(task):
    """How many training steps the parity check of `task` takes."""
    return len(GPT_PARITY_FRACTIONS) if task == "GPT" else PARITY_STEPS


def parity_batches(task, seed=SEED):
    """GPT's parity batches, one per step: token windows and their next tokens ((PARITY_BATCH_SIZE,
    block_size) int32 and int64 each), GPT_PARITY_FRACTIONS of them one character, the random ones
    the first batch. The other tasks repeat parity_batch(task)."""
    if task != "GPT":
        raise ValueError(f"{task} repeats one parity batch (parity_batch); GPT's alone are several")
    params = gpt_parity_params()
    rng = np.random.default_rng(seed + 2)
    found = []
    for fraction in GPT_PARITY_FRACTIONS:
        tokens = rng.integers(0, params["vocabulary_size"], size=(PARITY_BATCH_SIZE, params["block_size"] + 1))
        tokens[rng.random(tokens.shape) < fraction] = GPT_PARITY_CHARACTER
        batch = np.ascontiguousarray(tokens[:, :-1], np.int32), np.ascontiguousarray(tokens[:, 1:], np.int64)
        found.append(found[0] if fraction == 0 and found else batch)
    return found


def parity_batch(task, seed=SEED, layout="NCHW"):
    """The fixed (inputs, labels) of the parity check: images for CNN (NCHW, or NHWC for a
    channels-last framework, as `data.load_cnn_images`' layout), token ids for RNN, flat images for
    FCN5; int64 labels. GPT's: the first of its parity_batches, on which its logits are compared."""
    _check_task(task)
    if layout not in ("NCHW", "NHWC"):
        raise ValueError(f"unknown layout {layout!r}; valid: NCHW, NHWC")
    if task == "GPT":
        return parity_batches(task, seed)[0]
    rng = np.random.default_rng(seed + 2)
    params = get_params(task)
    if task == "CNN":
        x = rng.uniform(0.0, 1.0, size=(PARITY_BATCH_SIZE,) + tuple(params["image_shape"]))
    elif task == "FCN5":
        x = rng.uniform(0.0, 1.0, size=(PARITY_BATCH_SIZE, params["layer_sizes"][0]))
    else:
        x = rng.integers(1, params["vocabulary_size"], size=(PARITY_BATCH_SIZE, params["sequence_length"]))
        # Keras-style 'pre' padding of different lengths, so padding is part of what is compared.
        for row, pad in enumerate(np.linspace(0, params["sequence_length"] // 2, PARITY_BATCH_SIZE)):
            x[row, : int(pad)] = 0
    n_classes = params["layer_sizes"][-1] if task == "FCN5" else params["n_classes"]
    labels = np.arange(PARITY_BATCH_SIZE) % n_classes
    if task == "CNN" and layout == "NHWC":
        x = x.transpose(0, 2, 3, 1)
    return np.ascontiguousarray(x, dtype=np.int32 if task == "RNN" else np.float32), labels.astype(np.int64)


_GRADIENTS = {"CNN": numpy_models.cnn_gradients, "RNN": numpy_models.gru_gradients,
              "FCN5": numpy_models.fcn5_gradients}
_FORWARD = {"CNN": numpy_models.cnn_forward, "RNN": numpy_models.gru_forward,
            "FCN5": numpy_models.fcn5_forward}


def optimiser_step(task, weights, grads, state, adam_form="paper"):
    """The task's optimiser (common.params) on float64 weights, in place."""
    params = get_params(task)
    if task == "RNN":
        numpy_models.adam(weights, grads, state, params["learning_rate"], params["beta_1"],
                          params["beta_2"], params["epsilon"], adam_form)
    else:
        numpy_models.sgd(weights, grads, state, params["learning_rate"], params.get("momentum", 0.0))


def parity_steps(task, weights, dtype=np.float64, optimiser=None, adam_form="paper"):
    """(losses, logits after them) of PARITY_STEPS numpy steps on parity_batch(task) from `weights`,
    in `dtype` (GPT: gpt_parity_steps); `optimiser(weights, grads, state)` replaces the task's own (a
    broken copy's; for GPT, gpt_parity_steps' options)."""
    dtype = np.dtype(dtype)
    weights = {name: value.astype(dtype) for name, value in weights.items()}
    if task == "GPT":
        return gpt_parity_steps(weights, **(optimiser or {}))[:2]
    x, labels = parity_batch(task)
    state, losses = {}, []
    for _ in range(PARITY_STEPS):
        loss, grads = _GRADIENTS[task](weights, x, labels, dtype)
        losses.append(loss)
        if optimiser:
            optimiser(weights, grads, state)
        else:
            optimiser_step(task, weights, grads, state, adam_form)
    return np.array(losses), _FORWARD[task](weights, x, None, dtype)


def gpt_parity_steps(weights, options=None, decayed=numpy_gpt.nanogpt_decayed, hyper=None):
    """GPT's parity steps (AdamW with clipping, common.params' settings), one on each of
    parity_batches("GPT"): (their losses, the logits after them on the first batch, their pre-clip
    global gradient norms). `options`, `decayed` and `hyper` (settings that replace common.params')
    build a broken model or step (numpy_gpt.OPTION_DEFAULTS)."""
    params = gpt_parity_params()
    config, state, losses, norms = gpt_config(params), {}, [], []
    settings = {name: params[name] for name in ("learning_rate", "beta_1", "beta_2", "epsilon", "weight_decay", "grad_clip")}
    settings.update(hyper or {})
    batches = parity_batches("GPT")
    for tokens, targets in batches:
        weights, state, loss, norm = numpy_gpt.train_step(weights, state, tokens, targets, config, settings, options,
                                                          decayed)
        losses.append(loss)
        norms.append(norm)
    logits, _ = numpy_gpt.forward(weights, batches[0][0], config, options)
    return np.array(losses), logits, np.array(norms)


@functools.lru_cache(maxsize=None)
def _reference_training(task, dtype_name, adam_form="paper"):
    """parity_steps from parity_weights, cached in the data cache under a digest of the code they
    are computed by (numpy's CNN takes seconds, and every CNN notebook and variant asks for it)."""
    import hashlib

    from common import params as params_module
    from common.paths import data_cache

    digest = hashlib.sha256(repr((task, dtype_name, adam_form, SEED, PARITY_STEPS)).encode())
    digest.update(trajectory_code())
    digest.update(inspect.getsource(numpy_gpt).encode() + inspect.getsource(params_module).encode())
    path = data_cache() / "parity" / f"parity-{task}-{dtype_name}-{adam_form}-{digest.hexdigest()[:16]}.json"

    def compute():
        losses, logits = parity_steps(task, parity_weights(task), dtype_name, adam_form=adam_form)
        return {"losses": np.asarray(losses, np.float64).tolist(), "logits": np.asarray(logits, np.float64).tolist()}

    stored = _cached_json(path, compute)
    return np.array(stored["losses"]), np.array(stored["logits"])


def _cached_json(path, compute):
    """The JSON object kept at `path`, or `compute()`'s, written there first (two notebooks may
    compute it at once: each writes the whole file in one step)."""
    import json

    from common.paths import write_whole

    if path.exists():
        return json.loads(path.read_text())
    value = compute()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_whole(path, json.dumps(value))
    return value


def reference_training(task, adam_form="paper"):
    """(losses of the PARITY_STEPS steps, logits after them) in float64, from the parity start."""
    _check_task(task)
    losses, logits = _reference_training(task, "float64", adam_form)
    return losses.copy(), logits.copy()


def train_parity_error(task, losses, logits, adam_form="paper"):
    """Max abs difference of a framework's step losses and final logits against float64."""
    expected_losses, expected_logits = reference_training(task, adam_form)
    losses = np.asarray(losses, dtype=np.float64).reshape(-1)
    logits = np.asarray(logits, dtype=np.float64)
    if losses.shape != expected_losses.shape:
        raise ValueError(f"{losses.size} step losses, expected {expected_losses.size}")
    if logits.shape != expected_logits.shape:
        raise ValueError(f"logits of shape {logits.shape}, expected {expected_logits.shape}")
    return float(max(np.abs(losses - expected_losses).max(), np.abs(logits - expected_logits).max()))


def train_parity(task, losses, logits, bf16=None):
    """The record's training-parity checks, printed as well. For Adam (RNN) the framework's steps
    are held to whichever of Adam's two published forms it implements (common.numpy_models: the
    paper's Algorithm 1 or its "efficient" form), recorded as `adam_form`. On the parity batch the two
    differ by 1.8e-4 (the embedding rows the padded steps barely reach): beyond the bound.

    A bf16 variant passes the same steps of its model with mixed precision off as `losses` and
    `logits` (held to the fp32 bound, which the subtle mistakes cross), and its bf16 steps as `bf16`,
    (losses, logits), held to BF16_TRAIN_PARITY_TOLERANCE: bf16's rounding, which only the gross
    mistakes and the bf16 path's own (weights or loss kept in bf16) cross."""
    forms = numpy_models.ADAM_FORMS if task == "RNN" else ("paper",)
    errors = {form: train_parity_error(task, losses, logits, form) for form in forms}
    form = min(errors, key=errors.get)
    checks = {"train_parity_max_abs_error": errors[form],
              "train_parity_tolerance": TRAIN_PARITY_TOLERANCE[task],
              "train_parity_steps": parity_steps_of(task)}
    if task == "RNN":
        checks["adam_form"] = form
    if bf16 is not None:
        checks["bf16_train_parity_max_abs_error"] = train_parity_error(task, *bf16, form)
        checks["bf16_train_parity_tolerance"] = BF16_TRAIN_PARITY_TOLERANCE[task]
    print("training parity:", checks)
    return checks


def parity_checks(task, variant, parity_steps, layout="NCHW"):
    """train_parity's checks of a notebook's `parity_steps(x, y, bf16)`: PARITY_STEPS steps of its
    own training step from parity_weights on the parity batch (x, y, numpy, in `layout`), returning
    (losses, logits). Run in fp32 and, for a bf16 variant, in bf16 too."""
    from common.frameworks import precision

    x, y = parity_batch(task, layout=layout)
    bf16 = parity_steps(x, y, bf16=True) if precision(variant) == "bf16" else None
    return train_parity(task, *parity_steps(x, y, bf16=False), bf16=bf16)


# ---- FCN5's whole training run. FCN5 has no dropout: from initial_weights, in common.batches'
# order, every framework's run is one and the same up to float rounding, so its epoch-mean losses
# are held to the same run in float32 numpy, beside its accuracy target (common.params). ----

TRAJECTORY_TASKS = ("FCN5",)
# Max abs difference of the epoch-mean training losses against the float32 numpy run: 3e-8 to
# 9e-7 in every framework's smoke run (32 steps); a learning rate off by 10 % moves them by more
# than the bound (tests/test_reference.py).
TRAIN_TRAJECTORY_TOLERANCE = 1e-4
# A bf16 variant's whole run (mixed precision) against the same float32 numpy run: 4.1e-3 (PyTorch)
# to 3.2e-2 (TensorFlow, Keras on TF) in the emulated short runs, 1.0e-3 to 3.8e-2 in the quick runs
# with native bf16. Held to gross mistakes only (runner.broken_copies): no momentum moves the quick
# run by 0.25, weights kept in bfloat16 without a float32 master copy by 0.27; both also miss the
# accuracy target.
BF16_TRAIN_TRAJECTORY_TOLERANCE = 0.1


def trajectory_code():
    """The code a training trajectory is computed by (numpy_models and this module), so that a cached
    trajectory is not read back after that code changed."""
    import sys

    return "".join(inspect.getsource(module) for module in (numpy_models, sys.modules[__name__])).encode()


def training_trajectory(task, params, dataset):
    """The epoch-mean training losses of the whole run in float32 numpy, from initial_weights over
    common.batches' order on `dataset`'s training set; cached in the data cache under a digest of
    everything they depend on, the code included (the first notebook of a run computes them, the
    others read them)."""
    import hashlib

    from common import batches
    from common.paths import data_cache

    if task not in TRAJECTORY_TASKS:
        raise ValueError(f"no training trajectory for {task!r}; valid: {', '.join(TRAJECTORY_TASKS)}")
    x, y = np.ascontiguousarray(dataset.x_train, np.float32), np.ascontiguousarray(dataset.y_train, np.int64)
    digest = hashlib.sha256(repr((task, SEED, batches.SEED, params["epochs"], params["batch_size"],
                                  params["learning_rate"], params["momentum"], params["layer_sizes"])).encode())
    digest.update(trajectory_code())
    digest.update(x.tobytes())
    digest.update(y.tobytes())
    path = data_cache() / "trajectories" / f"{task}-{digest.hexdigest()[:20]}.json"
    return _cached_json(path, lambda: {"epoch_losses": run_trajectory(task, params, x, y)})["epoch_losses"]


def run_trajectory(task, params, x, y, stored=None):
    """training_trajectory's run itself, uncached: float32 SGD from initial_weights over
    common.batches' order; `stored(array)`, where given, is how the weights and the optimiser's
    state are kept after each update (runner.broken_copies keeps them in bfloat16)."""
    from common import batches

    keep = stored or (lambda array: array)
    weights = {name: keep(value).astype(np.float32) for name, value in initial_weights(task).items()}
    state, epoch_losses = {}, []
    for epoch in range(params["epochs"]):
        losses = []
        for index in batches.epoch_batches(len(x), params["batch_size"], epoch):
            loss, grads = _GRADIENTS[task](weights, x[index], y[index], np.float32)
            numpy_models.sgd(weights, grads, state, params["learning_rate"], params["momentum"])
            if stored:
                for values in (weights, state):
                    for name in values:
                        values[name] = stored(values[name]).astype(np.float32)
            losses.append(float(loss))
        epoch_losses.append(float(np.mean(losses)))
    return epoch_losses


def train_trajectory(task, params, dataset, epoch_losses, precision="fp32"):
    """The record's trajectory checks, printed as well: the notebook's epoch-mean training losses
    against the float32 numpy run of the same training (a bf16 variant's within bf16's rounding)."""
    expected = training_trajectory(task, params, dataset)
    if len(epoch_losses) != len(expected):
        raise ValueError(f"{len(epoch_losses)} epoch losses, expected {len(expected)}")
    error = float(np.abs(np.asarray(epoch_losses, dtype=np.float64) - np.asarray(expected)).max())
    tolerance = TRAIN_TRAJECTORY_TOLERANCE if precision == "fp32" else BF16_TRAIN_TRAJECTORY_TOLERANCE
    checks = {"train_trajectory_max_abs_error": error, "train_trajectory_tolerance": tolerance,
              "reference_epoch_losses": expected}
    print("training trajectory:", checks)
    return checks
