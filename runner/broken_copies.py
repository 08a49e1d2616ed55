"""Deliberately broken copies: the evidence on the far side of every check's bound (the README's
margins table).

Two kinds, each held to the check a correct notebook passes:
  numpy copies      the float64 reference with one mistake a notebook could make (a swapped bias row,
                    a missing momentum, Adam replaced, a wrong batch-norm epsilon, a learning rate
                    10 % off); seconds each, computed by the tests and by benchmarks/broken_copies.py;
  broken engines    a MultiGPU notebook whose data-parallel engine is broken in a line or two (the
                    gradient all-reduce removed; a sum where the mean belongs), in the equivalence
                    steps (the equivalence check must catch it) or in the timed loop only (the replica
                    check must), run by the runner at smoke size: its record must be invalid, naming
                    that check.
benchmarks/broken_copies.py runs both and appends what they produced to results/broken_copies.jsonl,
one JSON line per copy, with the machine it ran on.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

# (framework, name, [(text of the notebook, its broken replacement)]): each text occurs once.
BROKEN_ENGINES = [
    ("pytorch", "no gradient all-reduce (no DistributedDataParallel)", [
        ("    if world_size > 1:  # one process with the whole batch runs no engine\n"
         "        model = DistributedDataParallel(model, device_ids=[torch_device] if use_gpu else None)\n"
         "    # Batch norm on its running statistics",
         "    # Batch norm on its running statistics")]),
    ("pytorch", "sum of the devices' gradients (loss × world size)", [
        ("        loss = loss_fn(model(x), y)\n        loss.backward()\n        optimizer.step()\n"
         "        if world_size > 1:",
         "        loss = loss_fn(model(x), y)\n        (loss * world_size).backward()\n        optimizer.step()\n"
         "        if world_size > 1:")]),
    ("paddle", "no gradient all-reduce (no paddle.DataParallel)", [
        ("    model = paddle.DataParallel(layers)\n    # Batch norm on its running statistics",
         "    model = layers\n    # Batch norm on its running statistics")]),
    ("paddle", "sum of the devices' gradients (loss × world size)", [
        ("        loss = loss_fn(model(x), y)\n        loss.backward()\n        optimizer.step()\n"
         "        optimizer.clear_grad()\n        losses.append(",
         "        loss = loss_fn(model(x), y)\n        (loss * world_size).backward()\n        optimizer.step()\n"
         "        optimizer.clear_grad()\n        losses.append(")]),
    ("gluon", "no gradient all-reduce (no kvstore)", [
        ("{\"learning_rate\": params[\"equivalence_learning_rate\"]},\n                              kvstore=\"device\")",
         "{\"learning_rate\": params[\"equivalence_learning_rate\"]},\n                              kvstore=None)")]),
    ("gluon", "sum of the devices' gradients (step scaled by one device's batch)", [
        ("    optimizer.step(len(x))", "    optimizer.step(len(x) // len(contexts))")]),
    # JAX's all-reduce is XLA's, placed by the partitioner: no line of the notebook holds it. What a
    # missing one would leave on device 0 is that device's share trained alone.
    ("jax_flax", "no gradient all-reduce (device 0's share trained alone)", [
        ("    x, y = to_mesh((x.astype(np.float64), y.astype(np.float64)), NamedSharding(mesh_n, P(\"data\")))",
         "    x, y = x[:len(x) // n], y[:len(y) // n]\n"
         "    x, y = jax.device_put((x.astype(np.float64), y.astype(np.float64)), NamedSharding(mesh_n, P()))")]),
    ("keras_jax", "no gradient all-reduce (device 0's share trained alone)", [
        ("        losses = [float(model.train_on_batch(x, y)) for _ in range(params[\"equivalence_steps\"])]",
         "        x, y = x[:len(x) // n], y[:len(y) // n]\n"
         "        losses = [float(model.train_on_batch(x, y)) for _ in range(params[\"equivalence_steps\"])]")]),
    ("tensorflow", "sum of the devices' gradients (each replica's mean loss, summed by the all-reduce)", [
        ("loss = tf.nn.compute_average_loss(per_image, global_batch_size=global_batch)",
         "loss = tf.reduce_mean(per_image)")]),
    # The engine taken out of the timed loop only (TIMED_LOOP): the equivalence steps, a loop of their
    # own, still run through it; the replica check of the timed run must catch these.
    ("pytorch", "timed loop: no gradient all-reduce (no DistributedDataParallel in train_worker)", [
        ("    model = DistributedDataParallel(model, device_ids=[torch_device] if use_gpu else None)\n"
         "    optimizer = create_optimizer(", "    optimizer = create_optimizer("),
        ("torch.save(model.module.state_dict(), checkpoint_path)", "torch.save(model.state_dict(), checkpoint_path)")]),
    ("paddle", "timed loop: no gradient all-reduce (no paddle.DataParallel in train_worker)", [
        ("    model = paddle.DataParallel(layers)\n    optimizer = create_optimizer(",
         "    model = layers\n    optimizer = create_optimizer(")]),
    ("gluon", "timed loop: no gradient all-reduce (the timed Trainer without a kvstore)", [
        ("{\"learning_rate\": learning_rate}, kvstore=\"device\")", "{\"learning_rate\": learning_rate}, kvstore=None)")]),
    ("tensorflow", "timed loop: no gradient all-reduce (the timed optimiser's all-reduce an identity)", [
        ("    optimizer = create_optimizer(model, params[\"learning_rate\"] * n_devices)  # linear scaling\n",
         "    optimizer = create_optimizer(model, params[\"learning_rate\"] * n_devices)  # linear scaling\n"
         "    optimizer._all_reduce_sum_gradients = lambda grads_and_vars: grads_and_vars\n")]),
    ("jax_flax", "timed loop: no data parallelism (every device trains the whole batch)", [
        ("        x, y = to_mesh((x, y), data_sharding)\n", "        x, y = to_mesh((x, y), NamedSharding(mesh, P()))\n")]),
    ("keras_jax", "timed loop: no data parallelism (no distribution set: one device)", [
        ("keras.distribution.set_distribution(data_parallel(n_devices))\n", "")]),
]
TIMED_LOOP = "timed loop: "
# (framework, task, name, changes): a notebook whose fp32 products run in reduced precision, which
# the CPU can do where it computes bf16 (oneDNN's implicit bf16 on AVX512_BF16 or AMX): its record
# must be invalid by its own precision probe (common.precision).
REDUCED_PRECISION_COPIES = [
    ("pytorch", "GPT", "fp32 products in oneDNN's implicit bf16", [
        ('torch.backends.cudnn.rnn.fp32_precision = "ieee"\n',
         'torch.backends.cudnn.rnn.fp32_precision = "ieee"\ntorch.backends.mkldnn.matmul.fp32_precision = "bf16"\n')]),
]

# (framework, task, name, changes): GPT's optimiser changed where the timed train step gets it
# (create_optimizer, train_step), which the parity steps call too: each record must be invalid by
# its training parity. Mistakes the numpy copies (parity_copies) hold at 74× to 5,238× the bound.
OPTIMISER_COPIES = [
    ("pytorch", "GPT", "no gradient clipping", [
        ('    torch.nn.utils.clip_grad_norm_(model.parameters(), params["grad_clip"])\n', "")]),
    ("pytorch", "GPT", "clipping at twice the norm", [
        ('clip_grad_norm_(model.parameters(), params["grad_clip"])', 'clip_grad_norm_(model.parameters(), 2 * params["grad_clip"])')]),
    ("pytorch", "GPT", "AdamW's beta_2 0.999", [
        ('betas=(params["beta_1"], params["beta_2"])', 'betas=(params["beta_1"], 0.999)')]),
    ("pytorch", "GPT", "weight decay on biases and LayerNorm", [
        ('{"params": undecayed, "weight_decay": 0.0}', '{"params": undecayed, "weight_decay": params["weight_decay"]}')]),
    ("jax_flax", "GPT", "no gradient clipping", [
        ('        optax.clip_by_global_norm(params["grad_clip"]),\n', "")]),
    ("jax_flax", "GPT", "clipping at twice the norm", [
        ('optax.clip_by_global_norm(params["grad_clip"])', 'optax.clip_by_global_norm(2 * params["grad_clip"])')]),
    ("jax_flax", "GPT", "AdamW's beta_2 0.999", [('b2=params["beta_2"]', "b2=0.999")]),
    ("jax_flax", "GPT", "weight decay on biases and LayerNorm", [("mask=decayed", "mask=None")]),
]


def caught_by(name):
    """(the margins table's check, the record's check name) that must catch broken engine `name`."""
    if name.startswith(TIMED_LOOP):
        return "MultiGPU replicas", "data_parallel_replica"
    return "MultiGPU equivalence", "data_parallel_update"


def copy_changes(framework, name):
    """(task, [(text, replacement)]) of the broken copy `name` of `framework`'s notebook: a broken
    engine (MultiGPU), a reduced-precision copy or an optimiser copy (GPT)."""
    found = [("MultiGPU", changes) for fw, copy, changes in BROKEN_ENGINES if (fw, copy) == (framework, name)]
    found += [(task, changes) for fw, task, copy, changes in REDUCED_PRECISION_COPIES + OPTIMISER_COPIES
              if (fw, copy) == (framework, name)]
    if not found:
        raise ValueError(f"no broken copy {name!r} of {framework}")
    return found[0]


def broken_notebook(framework, name, folder):
    """Write the broken copy `name` of `framework`'s notebook into `folder` (under the registered
    notebook name) and return its path."""
    from runner.frameworks import FRAMEWORKS, notebook_name

    task, changes = copy_changes(framework, name)
    notebook = notebook_name(FRAMEWORKS[framework], task)
    content = json.loads((ROOT / "notebooks" / notebook).read_text())
    for old, new in changes:
        cells = [cell for cell in content["cells"] if old in "".join(cell["source"])]
        if len(cells) != 1 or "".join(cells[0]["source"]).count(old) != 1:
            raise ValueError(f"{notebook}: the text to break occurs {len(cells)} times: {old[:60]!r}")
        cells[0]["source"] = "".join(cells[0]["source"]).replace(old, new).splitlines(keepends=True)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / notebook).write_text(json.dumps(content, indent=1, ensure_ascii=False) + "\n")
    return folder / notebook


def run_broken_copy(framework, name, folder, python=sys.executable, timeout=1800, threads=None):
    """Run the broken copy through run_all.py (smoke, synthetic; a MultiGPU copy on all devices with
    its images in RAM) and return its record."""
    from common import records
    from runner import report

    broken_notebook(framework, name, folder / "notebooks")
    task, _ = copy_changes(framework, name)
    readme = folder / "README.md"
    readme.write_text(f"{report.BEGIN_MARKER}\n{report.END_MARKER}\n")
    options = ["--devices", "all", "--pipelines", "ram"] if task == "MultiGPU" else ["--variants", "default"]
    options += ["--threads", str(threads)] if threads else []
    subprocess.run([str(python), str(ROOT / "run_all.py"), "--frameworks", framework, "--tasks", task,
                    "--profile", "smoke", "--data", "synthetic", *options,
                    "--notebooks-dir", str(folder / "notebooks"), "--results-dir", str(folder / "results"),
                    "--readme", str(readme), "--timeout", "900"],
                   capture_output=True, text=True, cwd=ROOT, timeout=timeout,
                   env=dict(os.environ, ROSETTA_RUNNER="1"))
    written = records.read_records(folder / "results" / "records.jsonl")
    return written[-1] if written else None


# ---- numpy copies

def _parity_error(task, weights, optimiser=None):
    from common import reference

    return reference.train_parity_error(task, *reference.parity_steps(task, weights, optimiser=optimiser))


def _swapped(task, name):
    from common import reference

    weights = reference.parity_weights(task)
    swapped = weights[name].copy()
    swapped[[0, 1]] = swapped[[1, 0]]
    return dict(weights, **{name: swapped})


def _qkv_columns(reorder):
    """GPT's parity weights with every block's qkv kernel and bias columns rearranged by
    `reorder(q, k, v, heads)` (the mistake a framework's own attention layout invites)."""
    from common import reference

    weights, heads = reference.parity_weights("GPT"), reference.gpt_parity_params()["n_head"]
    for name in [name for name in weights if "/attention/qkv/" in name]:
        weights[name] = np.concatenate(reorder(*np.split(weights[name], 3, axis=-1), heads), axis=-1)
    return weights


def _dimension_major(q, k, v, heads):
    order = np.arange(q.shape[-1]).reshape(heads, -1).T.reshape(-1)
    return q[..., order], k[..., order], v[..., order]


def parity_copies():
    """[(check, copy, error, bound)] of the training-parity check's numpy copies."""
    from common import numpy_models, reference
    from common.params import get_params

    cnn, rnn, fcn5, gpt_params = (get_params(task) for task in ("CNN", "RNN", "FCN5", "GPT"))
    parity = {task: reference.parity_weights(task) for task in reference.TASKS}
    copies = [("CNN", f"{name} rows 0 and 1 swapped", _swapped("CNN", name)) for name in ("conv2/bias", "dense1/bias", "dense2/bias")]
    copies += [("RNN", f"{name} rows 0 and 1 swapped", _swapped("RNN", name)) for name in ("gru/b_z", "gru/c_n", "gru/c_r")]
    copies += [("FCN5", f"{name} rows 0 and 1 swapped", _swapped("FCN5", name)) for name in ("dense2/bias", "dense4/bias")]
    copies += [("GPT", f"{name} rows 0 and 1 swapped", _swapped("GPT", name)) for name in ("block1/mlp/fc/bias", "ln_f/offset")]
    copies += [("GPT", "q and k projections swapped (the qkv split in another order)", _qkv_columns(lambda q, k, v, heads: (k, q, v))),
               ("GPT", "heads cut dimension-major (another head layout)", _qkv_columns(_dimension_major))]
    moved = dict(parity["RNN"], **{"gru/b_n": parity["RNN"]["gru/b_n"] + parity["RNN"]["gru/c_n"],
                                   "gru/c_n": np.zeros_like(parity["RNN"]["gru/c_n"])})
    copies.append(("RNN", "candidate's recurrent bias outside the reset product", moved))
    found = [(task, copy, _parity_error(task, weights)) for task, copy, weights in copies]
    optimisers = [
        ("CNN", "no momentum", lambda w, g, s: numpy_models.sgd(w, g, s, cnn["learning_rate"])),
        ("CNN", "learning rate 10× too high", lambda w, g, s: numpy_models.sgd(w, g, s, 10 * cnn["learning_rate"], cnn["momentum"])),
        ("RNN", "SGD instead of Adam", lambda w, g, s: numpy_models.sgd(w, g, s, rnn["learning_rate"])),
        ("FCN5", "no momentum", lambda w, g, s: numpy_models.sgd(w, g, s, fcn5["learning_rate"])),
    ]
    found += [(task, copy, _parity_error(task, parity[task], optimiser)) for task, copy, optimiser in optimisers]
    # GPT: the defaults frameworks differ in (reference.gpt_parity_steps takes the broken model).
    gpt = [("LayerNorm epsilon 1e-3 instead of 1e-5", {"options": {"layer_norm_epsilon": 1e-3}}),
           ("LayerNorm epsilon 1e-6 instead of 1e-5", {"options": {"layer_norm_epsilon": 1e-6}}),
           ("tanh GELU where the model says exact", {"options": {"gelu": "tanh"}}),
           ("no causal mask (future tokens visible)", {"options": {"causal": False}}),
           ("weight decay on biases and LayerNorm too", {"decayed": lambda name, array: True}),
           ("no gradient clipping", {"hyper": {"grad_clip": 0.0}}),
           ("gradient clipping at twice the norm", {"hyper": {"grad_clip": 2 * gpt_params["grad_clip"]}}),
           (f"AdamW's beta_2 0.999 instead of {gpt_params['beta_2']}", {"hyper": {"beta_2": 0.999}})]
    found += [("GPT", copy, _parity_error("GPT", parity["GPT"], broken)) for copy, broken in gpt]
    return [(f"training parity, {task}", copy, error, reference.TRAIN_PARITY_TOLERANCE[task])
            for task, copy, error in found]


def _reversed_biases(task):
    from common import reference

    return {name: value[::-1].copy() if value.ndim == 1 else value for name, value in reference.parity_weights(task).items()}


# A whole-run copy computed at a profile's length other than smoke's carries it in its name.
PROFILE_SUFFIX = ", the {} run"


def split_profile(copy):
    """(the copy's name without its profile suffix, the profile its run had: smoke when unsaid)."""
    before, after = PROFILE_SUFFIX.split("{}")
    name, _, tail = copy.partition(before)
    return (name, tail.removesuffix(after)) if tail.endswith(after) else (copy, "smoke")


# The fp32 copies that are gross enough for the bf16 bounds as well: a wrong optimiser.
BF16_OPTIMISER_COPIES = ("no momentum", "learning rate 10× too high", "SGD instead of Adam")


def bf16_copies(training):
    """[(check, copy, error, bound)] of the bf16 training parity and trajectory, from `training`,
    the fp32 ones (parity_copies() + trajectory_copies()): the gross mistakes (the optimiser wrong,
    FCN5's run off, and every bias vector reversed, computed here), which bf16's rounding must not
    hide; the subtle ones are the fp32 parity's, which a bf16 variant passes as well."""
    from common import reference

    bounds = reference.BF16_TRAIN_PARITY_TOLERANCE
    found = [(f"training parity (bf16), {task}", "every bias vector reversed", _parity_error(task, _reversed_biases(task)),
              bound) for task, bound in bounds.items()]
    for check, copy, error, _ in training:
        task = check.removeprefix("training parity, ")
        if task in bounds and copy in BF16_OPTIMISER_COPIES:
            found.append((f"training parity (bf16), {task}", copy, error, bounds[task]))
        elif check == "FCN5 trajectory" and split_profile(copy)[0] in BF16_OPTIMISER_COPIES:
            found.append(("FCN5 trajectory (bf16)", copy, error, reference.BF16_TRAIN_TRAJECTORY_TOLERANCE))
    return found


def to_bfloat16(array):
    """float64 values of `array` rounded to bfloat16 (8 significant bits, round to nearest even)."""
    bits = np.asarray(array, dtype=np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16
    return bits.astype(np.uint32).view(np.float32).astype(np.float64)


def reinterpreted_as_bfloat16(array):
    """The low halves of `array`'s float32 bits read as bfloat16: a bit cast where a cast belongs."""
    halves = np.asarray(array, dtype=np.float32).view(np.uint16).reshape(*np.shape(array), 2)
    return (halves[..., 0].astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def feature_copies(size=64):
    """[(check, copy, error, bound)] of the feature checks' numpy copies: ResNet-50 on random weights
    with non-zero biases and batch-norm statistics, two fixed images of `size` pixels. The feature
    parity's copies are wrong models; the bf16 features' are what only a bf16 path can get wrong
    (numpy with every layer rounded to bfloat16, and one mistake of its cast)."""
    from common import numpy_resnet, resnet_weights
    from common.loaders import photos

    arrays = resnet_weights.random_arrays()
    images = photos.preprocess_caffe(photos.fixed_images(2, size=size), size=size)
    expected = numpy_resnet.features(arrays, images)

    def error(weights=arrays, **options):
        return float(np.abs(numpy_resnet.features(weights, images, **options) - expected).max())

    copies = [("feature parity", "batch-norm epsilon 1e-5 instead of 1e-3", error(epsilon=1e-5)),
              ("feature parity", "convolution biases left out",
               error({name: 0 * value if name.endswith("_conv/bias") else value for name, value in arrays.items()})),
              ("feature parity", "first batch norm's offset and mean swapped",
               error(dict(arrays, **{"conv1_bn/beta": arrays["conv1_bn/moving_mean"],
                                     "conv1_bn/moving_mean": arrays["conv1_bn/beta"]})))]
    with np.errstate(all="ignore"):
        reinterpreted = {name: reinterpreted_as_bfloat16(value) if name.endswith("_conv/kernel") else value
                         for name, value in arrays.items()}
        found = numpy_resnet.features(reinterpreted, images, rounding=to_bfloat16)
        relative = numpy_resnet.relative_error(found, expected)
    copies.append(("bf16 features", "kernels bit-cast to bfloat16 instead of rounded",
                   relative if np.isfinite(relative) else float("inf")))
    bounds = {"feature parity": numpy_resnet.FEATURE_TOLERANCE, "bf16 features": numpy_resnet.BF16_FEATURE_TOLERANCE}
    return [(check, copy, value, bounds[check]) for check, copy, value in copies]


def bf16_master_trajectory(params, dataset, stored=to_bfloat16):
    """FCN5's float32 numpy run with one mixed-precision mistake: the weights and the momentum kept
    in bfloat16 after every update (no float32 master copy), so that updates under half a bf16 step
    of a weight are lost. The epoch-mean losses, as reference.training_trajectory's (`stored`: how a
    value is kept; an identity gives that run itself)."""
    from common import reference

    x, y = np.ascontiguousarray(dataset.x_train, np.float32), np.ascontiguousarray(dataset.y_train, np.int64)
    return reference.run_trajectory("FCN5", params, x, y, stored)


def _trajectory_run(profile):
    """(params, dataset, the copies' name suffix, the float32 run's epoch losses) of FCN5's run at
    `profile`'s length. smoke: 2 epochs on 512 synthetic digits, as the tests' runs; quick: the quick
    profile's run (6 epochs of MNIST, through the sigmoid plateau), as the tables' runs, about 4
    minutes a run where it is not cached: how far a mistake moves the epoch losses depends on the
    run's length."""
    from common import data, reference
    from common.params import get_params

    if profile == "smoke":
        dataset = data.load_mnist(512, 64, data="synthetic")
        params, suffix = dict(get_params("FCN5", "smoke"), epochs=2), ""
    else:
        params, suffix = get_params("FCN5", profile), PROFILE_SUFFIX.format(profile)
        dataset = data.load_mnist(params["n_train"], params["n_test"])
    return params, dataset, suffix, reference.training_trajectory("FCN5", params, dataset)


def trajectory_copies(profile="smoke"):
    """[(check, copy, error, bound)] of FCN5's trajectory check: a run with a wrong hyper-parameter
    against the right one (each cached in the data cache, as a notebook's reference trajectory is),
    at `profile`'s length (_trajectory_run)."""
    from common import reference

    params, dataset, suffix, expected = _trajectory_run(profile)
    found = []
    for copy, changed in (("learning rate 10 % off", dict(params, learning_rate=1.1 * params["learning_rate"])),
                          ("no momentum", dict(params, momentum=0.0))):
        losses = reference.training_trajectory("FCN5", changed, dataset)
        found.append(("FCN5 trajectory", copy + suffix, float(np.abs(np.subtract(losses, expected)).max()),
                      reference.TRAIN_TRAJECTORY_TOLERANCE))
    return found


BF16_MASTER_COPY = "weights and momentum kept in bfloat16 (no float32 master copy)"


def bf16_trajectory_copies(profile="smoke"):
    """[(check, copy, error, bound)] of the mistake only a mixed-precision run can make, against
    the bf16 trajectory bound: bf16_master_trajectory against the float32 run."""
    from common import reference

    params, dataset, suffix, expected = _trajectory_run(profile)
    losses = bf16_master_trajectory(params, dataset)
    return [("FCN5 trajectory (bf16)", BF16_MASTER_COPY + suffix, float(np.abs(np.subtract(losses, expected)).max()),
             reference.BF16_TRAIN_TRAJECTORY_TOLERANCE)]


def numpy_copies():
    from common import precision

    training = parity_copies() + trajectory_copies() + trajectory_copies("quick")
    return (training + feature_copies() + bf16_copies(training)
            + bf16_trajectory_copies() + bf16_trajectory_copies("quick") + precision.reduced_copies())
