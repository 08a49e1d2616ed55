"""What the project knows about each framework: its notebooks' name prefix, its environment, the
tasks it has notebooks for, and, for the ones that cannot run on today's stack, why."""
from collections import namedtuple

Framework = namedtuple("Framework", "name title prefix environment tasks reason variants language")
Framework.__new__.__defaults__ = ((), None, None, "python")

DEFAULT_VARIANT = "default"

# Runnable frameworks. `environment` names envs/<environment>.txt; `tasks` are the notebooks
# that exist (notebooks/<prefix>_<task>.ipynb), checked against the folder by a test; `variants`
# maps a task to the variants its notebook runs besides the default (its `variant` parameter),
# each a row of its own in the tables; `language` is the notebooks' kernel language: an R
# notebook runs on IRkernel and reaches its environment's Python through reticulate.
_RUNNABLE = (
    Framework("pytorch", "PyTorch", "PyTorch", "torch", ("CNN", "Inference", "RNN", "FCN5", "MultiGPU"),
              variants={"CNN": ("compiled",), "Inference": ("compiled", "bf16")}),
    Framework("tensorflow", "TensorFlow", "Tensorflow", "tensorflow", ("CNN", "Inference", "RNN", "FCN5", "MultiGPU"),
              variants={"CNN": ("xla",), "Inference": ("xla", "bf16")}),
    Framework("keras_tf", "Keras 3 (TensorFlow)", "Keras_TF", "tensorflow", ("CNN", "Inference", "RNN", "FCN5"),
              variants={"CNN": ("xla",)}),
    Framework("keras_jax", "Keras 3 (JAX)", "Keras_JAX", "jax", ("CNN", "Inference", "RNN", "FCN5", "MultiGPU")),
    Framework("keras_torch", "Keras 3 (PyTorch)", "Keras_Torch", "torch", ("CNN", "Inference", "RNN", "FCN5")),
    Framework("jax_flax", "JAX + Flax NNX", "JAX_Flax", "jax", ("CNN", "Inference", "RNN", "FCN5", "MultiGPU"),
              variants={"Inference": ("bf16",)}),
    Framework("onnxruntime", "ONNX Runtime", "ONNXRuntime", "onnxruntime", ("Inference",)),
    Framework("gluon", "MXNet (Gluon)", "Gluon", "mxnet", ("CNN", "Inference", "RNN", "FCN5", "MultiGPU")),
    Framework("mxnet", "MXNet (Module API)", "MXNet", "mxnet", ("CNN", "Inference", "RNN")),
    Framework("chainer", "Chainer", "Chainer", "chainer", ("CNN", "Inference", "RNN", "FCN5")),
    Framework("paddle", "PaddlePaddle", "Paddle", "paddle", ("CNN", "Inference", "RNN", "FCN5", "MultiGPU"),
              variants={"CNN": ("to_static",)}),
    Framework("lasagne", "Theano + Lasagne", "Lasagne", "theano", ("CNN", "RNN", "FCN5")),
    Framework("keras_theano", "Keras 2 (Theano)", "Keras_Theano", "theano", ("CNN",)),
    Framework("keras_r", "R + Python Keras 3 (TF, via reticulate)", "KerasR_TF", "tensorflow", ("CNN", "Inference", "RNN"),
              language="r"),
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
    """The default variant, then the task's extra ones."""
    return (DEFAULT_VARIANT,) + tuple((framework.variants or {}).get(task, ()))
