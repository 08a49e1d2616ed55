"""The framework side of common.precision: each framework's own matrix product and convolution of
the probe's fixed inputs, run in the notebook's process once its set-up has set every precision
switch, on the device the run chose. A notebook calls `precision_probes.measure(run)` (the harness's
Run) in its Evaluate section and records what it returns with its other checks."""
import importlib

# The module that speaks each framework: Keras 3 is measured through its own ops on whichever
# engine it runs, Theano once for Lasagne and Keras 2, MXNet once for Gluon and the Module API.
MODULES = {"pytorch": "pytorch", "tensorflow": "tensorflow", "jax_flax": "jax",
           "keras_tf": "keras", "keras_jax": "keras", "keras_torch": "keras", "keras_r": "keras",
           "gluon": "mxnet", "mxnet": "mxnet", "chainer": "chainer", "paddle": "paddle",
           "lasagne": "theano", "keras_theano": "theano", "onnxruntime": "onnxruntime"}


def measure(run, **options):
    """common.precision's checks of `run`'s framework, on its device (`options`: what a framework's
    module needs besides, e.g. ONNX Runtime's providers)."""
    if run.framework not in MODULES:
        raise ValueError(f"no precision probe for {run.framework!r}; known: {', '.join(MODULES)}")
    module = importlib.import_module(f"{__name__}.{MODULES[run.framework]}")
    return module.measure(run, **options)
