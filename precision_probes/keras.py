"""Keras 3: `keras.ops.matmul` and `keras.ops.conv` (channels last) on whichever engine it runs
(TensorFlow, JAX or PyTorch), placed where that engine places tensors."""
import keras

from common import precision


def measure(run):
    ops = keras.ops
    return precision.checks(
        run.task, matmul=lambda a, b: ops.convert_to_numpy(ops.matmul(a, b)),
        convolution=lambda x, w: ops.convert_to_numpy(ops.conv(x, w, padding="valid", data_format="channels_last")),
        layout="NHWC")
