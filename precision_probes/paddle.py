"""PaddlePaddle: `paddle.matmul` and `F.conv2d` (NCHW) on the device `paddle.set_device` chose."""
import paddle
from paddle.nn import functional as F

from common import precision


def measure(run):
    return precision.checks(
        run.task, matmul=lambda a, b: paddle.matmul(paddle.to_tensor(a), paddle.to_tensor(b)).numpy(),
        convolution=lambda x, w: F.conv2d(paddle.to_tensor(x), paddle.to_tensor(w)).numpy())
