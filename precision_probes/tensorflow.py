"""TensorFlow: `tf.linalg.matmul` and `tf.nn.conv2d` (NHWC) on the device TensorFlow places them on
(the GPU unless the notebook hid it). One switch, enable_tensor_float_32_execution, governs its
products, convolutions and cuDNN RNNs alike."""
import tensorflow as tf

from common import precision


def measure(run):
    return precision.checks(
        run.task, matmul=lambda a, b: tf.linalg.matmul(a, b).numpy(),
        convolution=lambda x, w: tf.nn.conv2d(x, w, strides=1, padding="VALID").numpy(), layout="NHWC")
