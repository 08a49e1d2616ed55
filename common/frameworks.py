"""What a notebook checks about itself at its start (harness.start): its framework's display name and
the variants each of its notebooks runs besides the default, each a row of its own in the tables.
The runner's registry (runner/frameworks.py: environments, notebooks, the frameworks that cannot
run) is built on these."""
DEFAULT_VARIANT = "default"

TITLES = {
    "pytorch": "PyTorch",
    "tensorflow": "TensorFlow",
    "keras_tf": "Keras 3 (TensorFlow)",
    "keras_jax": "Keras 3 (JAX)",
    "keras_torch": "Keras 3 (PyTorch)",
    "jax_flax": "JAX + Flax NNX",
    "onnxruntime": "ONNX Runtime",
    "gluon": "MXNet (Gluon)",
    "mxnet": "MXNet (Module API)",
    "chainer": "Chainer",
    "paddle": "PaddlePaddle",
    "lasagne": "Theano + Lasagne",
    "keras_theano": "Keras 2 (Theano)",
    "keras_r": "R + Python Keras 3 (TF, via reticulate)",
}

# The variants a notebook runs besides the default (its `variant` parameter).
EXTRA_VARIANTS = {
    "pytorch": {"CNN": ("compiled", "bf16"), "Inference": ("compiled", "bf16"), "RNN": ("bf16",), "FCN5": ("bf16",)},
    "tensorflow": {"CNN": ("xla", "bf16"), "Inference": ("xla", "bf16"), "RNN": ("bf16",), "FCN5": ("bf16",)},
    "keras_tf": {"CNN": ("xla", "bf16"), "RNN": ("bf16",), "FCN5": ("bf16",)},
    "keras_jax": {"CNN": ("bf16",), "RNN": ("bf16",), "FCN5": ("bf16",)},
    "keras_torch": {"CNN": ("bf16",), "RNN": ("bf16",), "FCN5": ("bf16",)},
    "jax_flax": {"CNN": ("bf16",), "Inference": ("bf16",), "RNN": ("bf16",), "FCN5": ("bf16",)},
    "paddle": {"CNN": ("to_static",)},
}

# The variants that compute in reduced precision, and in which: their speed is held to that
# precision's peak (runner.report), their features are judged twice (common.inference).
REDUCED_PRECISION_VARIANTS = {"bf16": "bf16"}


def precision(variant):
    """"fp32", or the reduced precision a variant computes in."""
    return REDUCED_PRECISION_VARIANTS.get(variant, "fp32")


def variants(framework, task):
    """The default variant, then the extra ones of `framework`'s (its name) notebook of `task`."""
    if framework not in TITLES:
        raise ValueError(f"unknown framework {framework!r}; valid: {', '.join(TITLES)}")
    return (DEFAULT_VARIANT,) + EXTRA_VARIANTS.get(framework, {}).get(task, ())
