"""Hyper-parameters of every task, in one place.

`full` holds the 2018 repository's values (see DESIGN.md); `quick` shrinks the data and epochs so a
notebook takes a few minutes on two CPU cores; `smoke` takes seconds and exists for the tests.
Only the sizes change between profiles (data, steps, widths and depths): the model's kind and the
optimiser are the same in all three.
"""
import copy

PROFILES = ("full", "quick", "smoke")
# Where data comes from (see common.data); here because the runner validates it without numpy.
DATA_CHOICES = ("auto", "real", "synthetic")

_FULL = {
    "CNN": {
        "n_classes": 10,
        "image_shape": (3, 32, 32),
        "n_train": 50000,
        "n_test": 10000,
        "epochs": 10,
        "batch_size": 64,
        "learning_rate": 0.01,
        "momentum": 0.9,
        "warmup_steps": 10,
    },
    "Inference": {
        "image_shape": (3, 224, 224),
        "n_features": 2048,
        "batch_size": 32,
        "n_batches": 40,
        "warmup_batches": 2,
        "bn_epsilon": 1e-3,
    },
    "RNN": {
        "n_classes": 2,
        "vocabulary_size": 30000,
        "sequence_length": 150,
        "embedding_dim": 125,
        "hidden_units": 100,
        "n_train": 25000,
        "n_test": 25000,
        "epochs": 3,
        "batch_size": 64,
        "learning_rate": 1e-3,
        "beta_1": 0.9,
        "beta_2": 0.999,
        "epsilon": 1e-8,
        "warmup_steps": 10,
    },
    # The 2018 DenseNet-121 task. `batch_size` is per device (the global batch is devices × it) and
    # `learning_rate` is one device's, scaled by the device count (linear scaling). A CPU-only host
    # runs data-parallel over `cpu_devices` CPU devices. The equivalence check trains
    # `equivalence_steps` steps of plain SGD at `equivalence_learning_rate` on one fixed batch of
    # `equivalence_batch_size` images per device at `equivalence_image_size`, on 1 and N devices, in
    # every profile: it checks the engine, not the model's size, and larger reductions would raise
    # float32's rounding floor towards the bound (common.densenet). `block_layers`: the dense layers
    # of each of the four blocks, DenseNet-121's (common.densenet.BLOCK_LAYERS).
    "MultiGPU": {
        "block_layers": (6, 12, 24, 16),
        "n_classes": 14,
        "n_train": None,  # None: the whole patient-wise train split
        "n_valid": None,
        "image_size": 224,
        "resize_to": 264,
        "epochs": 5,
        "batch_size": 64,
        "learning_rate": 1e-4,
        "image_mean": (0.485, 0.456, 0.406),
        "image_sd": (0.229, 0.224, 0.225),
        "warmup_steps": 3,
        "loader_workers": 4,
        "cpu_devices": 2,
        "equivalence_steps": 2,
        "equivalence_learning_rate": 0.01,
        "equivalence_batch_size": 2,
        "equivalence_image_size": 32,
    },
    # DLBench's fully connected network, trained as its TensorFlow script trains it
    # (tools/tensorflow/fc: fcn5_mnist.py's MomentumOptimizer(0.05, 0.9) for 40 epochs of batch 1024,
    # models.py's Xavier-uniform weights and zero biases; its Caffe, CNTK and MXNet scripts train
    # otherwise), timed per mini-batch (training, and forward only over `forward_batches` batches)
    # at every thread count.
    "FCN5": {
        "layer_sizes": (784, 2048, 4096, 1024, 10),
        "n_train": 60000,
        "n_test": 10000,
        "epochs": 40,
        "batch_size": 1024,
        "learning_rate": 0.05,
        "momentum": 0.9,
        "warmup_steps": 3,
        "forward_batches": 20,
        # The thread sweep's narrower counts train this many examples and epochs (None: as many as
        # the run on every core); only the run on every core is held to the quality target.
        "sweep_n_train": None,
        "sweep_epochs": None,
    },
    # A small decoder-only Transformer in the shape of nanoGPT's character-level baby GPT
    # (karpathy/nanoGPT, config/train_shakespeare_char.py and model.py), scaled to two CPU cores:
    # pre-LayerNorm blocks of causal multi-head attention and a 4x MLP with exact GELU, learned token
    # and position embeddings, the output head tied to the token embedding, biases on (GPTConfig's
    # default), LayerNorm epsilon 1e-5. Trained as nanoGPT's train.py trains it: AdamW with beta_2
    # 0.99 (its shakespeare-char setting), weight decay on every tensor of two or more dimensions
    # (matrices and embeddings; not biases or LayerNorm), gradient clipping at a global norm of 1.0,
    # a fixed learning rate (nanoGPT decays it with a cosine; fixed here so that every framework's
    # schedule is the same by construction), windows drawn at random offsets (common.batches).
    # The vocabulary: the characters of the text, at most the 96 that common.loaders.imdb_text keeps
    # (printable ASCII and the newline).
    "GPT": {
        "vocabulary_size": 96,
        "block_size": 128,
        "n_layer": 4,
        "n_head": 4,
        "n_embd": 128,
        "dropout": 0.1,
        "layer_norm_epsilon": 1e-5,
        "batch_size": 32,
        "train_steps": 2000,
        "learning_rate": 1e-3,
        "beta_1": 0.9,
        "beta_2": 0.99,
        "epsilon": 1e-8,
        "weight_decay": 0.1,
        "grad_clip": 1.0,
        "warmup_steps": 5,
        "n_train": None,  # None: the whole training text
        "n_valid": 1_000_000,
        "eval_batches": 20,  # validation loss over this many fixed batches of windows
        "prompt": "This movie was",
        "generate_tokens": 300,
    },
}

# Only what differs from `full`.
_OVERRIDES = {
    "quick": {
        "CNN": {"n_train": 3200, "n_test": 2000, "epochs": 2},
        "Inference": {"n_batches": 6},
        "RNN": {"n_train": 3200, "n_test": 2000, "epochs": 2},
        "MultiGPU": {"n_train": 128, "n_valid": 64, "epochs": 1, "batch_size": 8, "warmup_steps": 2,
                     "loader_workers": 2},
        # The run on every core trains 6 epochs, past the sigmoid plateau (test accuracy 0.12 after 4
        # epochs, 0.43 after 6, 0.73 after 8 in float32 numpy from the shared start); the sweep's
        # narrower counts time the first 24 mini-batches only (common.records).
        "FCN5": {"epochs": 6, "sweep_n_train": 24576, "sweep_epochs": 1},
        # Half the width, depth and context: 1000 steps in seconds on two cores, where the full model's
        # 300 steps take a minute and end higher (validation loss 2.42 against 2.31, PyTorch).
        "GPT": {"n_layer": 2, "n_embd": 64, "block_size": 64, "batch_size": 16, "train_steps": 1000,
                "n_valid": 200_000, "eval_batches": 10, "generate_tokens": 200},
    },
    "smoke": {
        "CNN": {"n_train": 1024, "n_test": 256, "epochs": 2, "batch_size": 32, "warmup_steps": 2},
        "Inference": {"batch_size": 4, "n_batches": 2, "warmup_batches": 1},
        "RNN": {"n_train": 1024, "n_test": 256, "epochs": 2, "warmup_steps": 2},
        # Two dense layers per block, not DenseNet-121's 58: the smoke runs check the engine (the
        # equivalence of one and N devices, the runs across two nodes), not the depth, and the XLA
        # and TensorFlow graphs of 120 convolutions took minutes to compile per run on two cores.
        "MultiGPU": {"block_layers": (2, 2, 2, 2), "n_train": 16, "n_valid": 8, "epochs": 1, "batch_size": 2,
                     "image_size": 32, "resize_to": 40, "warmup_steps": 1, "loader_workers": 1},
        "FCN5": {"n_train": 1024, "n_test": 512, "epochs": 1, "batch_size": 64, "warmup_steps": 2,
                 "forward_batches": 4},
        "GPT": {"n_layer": 1, "n_head": 2, "n_embd": 32, "block_size": 32, "batch_size": 8, "train_steps": 30,
                "warmup_steps": 2, "n_train": 200_000, "n_valid": 20_000, "eval_batches": 2, "generate_tokens": 40},
    },
}

TASKS = tuple(_FULL)
# A short run, enough for the timer's windows and the checks (training parity on the variant's own
# callable, FCN5's trajectory), whose accuracy is not judged: (1) a bf16 variant where bf16 is not
# native (no AVX512_BF16, AMX or Arm BF16: run_all.py --emulate-bf16), in any profile: it runs on the
# framework's software emulation, one step 6.6× (PyTorch's CNN) to 42× (its FCN5) slower than fp32 on
# an AVX2 EPYC, and its speed is not shown; (2) in the smoke profile (the tests), every variant but
# the default, whose run there is held to the accuracy target (a variant's accuracy is judged in the
# quick and full runs): the tests then do the same work on every CPU, bf16 native or not.
SHORT_RUN = {
    "CNN": {"n_train": 128, "n_test": 64, "epochs": 1, "batch_size": 16, "warmup_steps": 1},
    "RNN": {"n_train": 128, "n_test": 64, "epochs": 1, "batch_size": 16, "warmup_steps": 1},
    "FCN5": {"n_train": 56, "n_test": 64, "epochs": 1, "batch_size": 8, "warmup_steps": 1, "forward_batches": 5},
}
# Tasks the runner times at every thread count of probe.thread_sweep() (each run in a fresh kernel).
THREAD_SWEEP_TASKS = ("FCN5",)
# Tasks the runner runs once per (devices, pipeline): on 1 device and on all of them ("all": every
# visible GPU, or params' cpu_devices on a CPU-only host), images read from disk and held in RAM.
DEVICE_SWEEP_TASKS = ("MultiGPU",)
DEVICE_SWEEP = tuple((devices, pipeline) for devices in (1, 0) for pipeline in ("ram", "disk"))


def get_params(task, profile="full"):
    """Return a fresh dict of `task`'s hyper-parameters under `profile`."""
    if task not in _FULL:
        raise ValueError(f"unknown task {task!r}; valid tasks: {', '.join(TASKS)}")
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}; valid profiles: {', '.join(PROFILES)}")
    params = copy.deepcopy(_FULL[task])
    params.update(_OVERRIDES.get(profile, {}).get(task, {}))
    return params


def run_params(task, profile, variant, threads, cores, emulated=False, **settings):
    """(parameters, short) of one run, decided here once for the notebook's harness and for the
    runner's records of a run that failed or was skipped: the profile's parameters with the settings
    the runner sweeps besides threads (MultiGPU's pipeline); a short run (SHORT_RUN, accuracy not
    judged) for an emulated bf16 run or a variant's smoke run; and a THREAD_SWEEP_TASKS run below
    every core (`threads` < `cores`) on the sweep's sizes, not held to the accuracy target."""
    from common.frameworks import DEFAULT_VARIANT

    chosen = dict(get_params(task, profile), **settings)
    short = bool(emulated) or (profile == "smoke" and variant != DEFAULT_VARIANT)
    if short and task in SHORT_RUN:
        chosen.update(SHORT_RUN[task], accuracy_run=False)
    if task in THREAD_SWEEP_TASKS:
        sweep = {name: chosen.pop(f"sweep_{name}", None) for name in ("n_train", "epochs")}
        chosen["accuracy_run"] = threads >= cores and chosen.get("accuracy_run", True)
        if not chosen["accuracy_run"] and not short:
            chosen.update({name: value for name, value in sweep.items() if value is not None})
    return chosen, short


# Quality targets, MLPerf-style: the test accuracy a run must reach for its speed to count, per
# task × profile × data set (the first words of the record's `data_source`). Each sits below what
# every correct framework reaches from the shared start (the records hold what each reached) and
# well above what a run that does not learn gets (chance: 0.10 and 0.50; a linear classifier on the
# synthetic stripes: 0.10, tests/test_synthetic.py).
QUALITY_TARGETS = {
    "CNN": {
        "CIFAR-10": {"full": 0.70, "quick": 0.30, "smoke": 0.15},
        "Fashion-MNIST": {"full": 0.88, "quick": 0.65, "smoke": 0.50},
        "synthetic": {"full": 0.90, "quick": 0.60, "smoke": 0.35},
    },
    "RNN": {
        "IMDB": {"full": 0.80, "quick": 0.65, "smoke": 0.55},
        "synthetic": {"full": 0.90, "quick": 0.75, "smoke": 0.60},
    },
    # FCN5 leaves the sigmoid plateau only after about 300 mini-batches of 1024 (common.params' quick
    # profile): the smoke run (16 small steps) stays at chance, and its quality is its whole run held
    # to float32 numpy's (common.reference.TRAJECTORY_TASKS), as every FCN5 run's is. Only the run on
    # every core is held to the target (the narrower counts of the thread sweep time a few steps).
    # None: no target; the synthetic digits' runs are not measured yet.
    "FCN5": {
        "MNIST": {"full": 0.90, "quick": 0.30, "smoke": None},
        "synthetic": {"full": None, "quick": None, "smoke": None},
    },
    # GPT's is the validation loss (QUALITY_METRICS), in nats per character, at most the target. A
    # model that does not learn stays at ln 96 = 4.56 (uniform) or at best the characters' unigram
    # entropy, 3.09 (IMDB) and 3.04 (synthetic). Measured with PyTorch from the shared start: IMDB
    # quick 2.31, smoke 3.59; synthetic quick 0.69 after 300 steps, smoke 3.55. The smoke run (30
    # steps) learns the characters' frequencies only; the full run (not measured yet) trains the
    # larger model longer, whose first 300 steps already reach 2.42 on IMDB.
    "GPT": {
        "IMDB": {"full": 2.4, "quick": 2.6, "smoke": 3.9},
        "synthetic": {"full": 1.0, "quick": 1.5, "smoke": 3.9},
    },
}


# What a quality target holds, and which way: test accuracy at least the target, except where a
# task names another measure (GPT: the validation loss in nats per character, at most the target).
QUALITY_METRICS = {"GPT": ("validation_loss", "at most")}


def quality_metric(task):
    """(metric, "at least" or "at most") of the task's quality target."""
    return QUALITY_METRICS.get(task, ("test_accuracy", "at least"))


def meets_target(task, value, target):
    """Whether `value` of the task's quality metric meets `target` (at least it, or at most)."""
    _, direction = quality_metric(task)
    return value >= target if direction == "at least" else value <= target


def data_set_name(data_source):
    """'Fashion-MNIST' from 'Fashion-MNIST, Debian …'; every synthetic stand-in is 'synthetic'."""
    name = (data_source or "").split(",")[0].strip()
    return "synthetic" if name.lower().startswith("synthetic") else name


def quality_target(task, profile, data_source):
    """The test accuracy `task` must reach under `profile` on that data, or None when the task
    has no accuracy target (Inference: its checks are the known photos and feature parity) or none
    for that profile and data (FCN5's smoke run)."""
    targets = QUALITY_TARGETS.get(task)
    if targets is None:
        return None
    name = data_set_name(data_source)
    if name not in targets:
        raise ValueError(f"no {task} quality target for data {name!r}; known: {', '.join(targets)}")
    return targets[name][profile]
