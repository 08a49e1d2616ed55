"""The runner's registry of frameworks: its notebooks' name prefix, its environment, the tasks it has
notebooks for, and, for the ones that cannot run on today's stack, why. Display names and variants
come from common.frameworks, which the notebooks read themselves."""
from collections import namedtuple

from common.frameworks import DEFAULT_VARIANT, TITLES  # DEFAULT_VARIANT: for the runner's modules too
from common.frameworks import variants as notebook_variants

Framework = namedtuple("Framework", "name title prefix environment tasks reason language")
Framework.__new__.__defaults__ = ((), None, "python")


def _runnable(name, prefix, environment, tasks, language="python"):
    return Framework(name, TITLES[name], prefix, environment, tasks, None, language)


# Runnable frameworks. `environment` names envs/<environment>.txt; `tasks` are the notebooks that
# exist (notebooks/<prefix>_<task>.ipynb), checked against the folder by a test; `language` is the
# notebooks' kernel language: an R notebook runs on IRkernel and reaches its environment's Python
# through reticulate. Their variants are common.frameworks', which the notebooks check themselves.
_RUNNABLE = (
    _runnable("pytorch", "PyTorch", "torch", ("CNN", "Inference", "RNN", "FCN5", "MultiGPU", "GPT")),
    _runnable("tensorflow", "Tensorflow", "tensorflow", ("CNN", "Inference", "RNN", "FCN5", "MultiGPU", "GPT")),
    _runnable("keras_tf", "Keras_TF", "tensorflow", ("CNN", "Inference", "RNN", "FCN5", "GPT")),
    _runnable("keras_jax", "Keras_JAX", "jax", ("CNN", "Inference", "RNN", "FCN5", "MultiGPU", "GPT")),
    _runnable("keras_torch", "Keras_Torch", "torch", ("CNN", "Inference", "RNN", "FCN5", "GPT")),
    _runnable("jax_flax", "JAX_Flax", "jax", ("CNN", "Inference", "RNN", "FCN5", "MultiGPU", "GPT")),
    _runnable("onnxruntime", "ONNXRuntime", "onnxruntime", ("Inference",)),
    _runnable("gluon", "Gluon", "mxnet", ("CNN", "Inference", "RNN", "FCN5", "MultiGPU", "GPT")),
    _runnable("mxnet", "MXNet", "mxnet", ("CNN", "Inference", "RNN")),
    _runnable("chainer", "Chainer", "chainer", ("CNN", "Inference", "RNN", "FCN5", "GPT")),
    _runnable("paddle", "Paddle", "paddle", ("CNN", "Inference", "RNN", "FCN5", "MultiGPU", "GPT")),
    _runnable("lasagne", "Lasagne", "theano", ("CNN", "RNN", "FCN5", "GPT")),
    _runnable("keras_theano", "Keras_Theano", "theano", ("CNN",)),
    _runnable("keras_r", "KerasR_TF", "tensorflow", ("CNN", "Inference", "RNN"), language="r"),
)

# Rows of the 2018 repository that no machine reachable today can run, with what a user would need.
UNAVAILABLE = (
    Framework("cntk", "CNTK", "CNTK", None, ("CNN", "Inference", "RNN", "FCN5"),
              "CNTK wheels exist only for CPython 2.7/3.5/3.6 (plus OpenMPI 1.10); "
              "needs such an interpreter, none is installable here"),
    Framework("keras_cntk", "Keras (CNTK)", "Keras_CNTK", None, ("CNN", "RNN"),
              "needs CNTK (CPython ≤ 3.6 wheels only)"),
    Framework("caffe2", "Caffe2", "Caffe2", None, ("CNN", "Inference"),
              "removed from PyTorch; PyPI 'caffe2' is an empty 2018 placeholder, "
              "no installable build for Python 3.11"),
    Framework("caffe", "Caffe", "Caffe", None, ("FCN5",),
              "BVLC Caffe has no wheel for Python 3, and Debian dropped its caffe-cpu package "
              "after Debian 11; needs an old distribution or a source build"),
    Framework("knet", "Julia (Knet)", "Knet", None, ("CNN", "Inference", "RNN"),
              "needs a Julia install; no Julia in any reachable package registry"),
)

# Runnable frameworks that have no notebook for a task, and why: the task's table says so in their row.
NOT_WRITTEN = {
    "MultiGPU": {
        "keras_tf": "no notebook yet: Keras 3 on TensorFlow would train under tf.distribute.MirroredStrategy, "
                    "the engine of the TensorFlow row",
        "chainer": "no notebook: ChainerMN needs MPI (mpi4py built against Open MPI, launched by mpiexec); "
                   "not attempted",
        "mxnet": "no notebook: the Module API's data parallelism is the context list and kvstore of the Gluon row",
    },
}

FRAMEWORKS = {framework.name: framework for framework in _RUNNABLE + UNAVAILABLE}
RUNNABLE = {framework.name: framework for framework in _RUNNABLE}


def notebook_name(framework, task):
    return f"{framework.prefix}_{task}.ipynb"


def variants(framework, task):
    """The default variant, then the task's extra ones, of a runnable framework."""
    return notebook_variants(framework.name, task)
